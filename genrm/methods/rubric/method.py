"""The rubric method (RLR3) as a reward method: instance-specific rubrics, judged under minimal exposure, decided by
the verifiers, remapped over the group and gated by the content, format and length masks.

The pieces are in this package: :mod:`.models` (the instance and the rubric), :mod:`.planning` (checking a rubric and
planning each criterion), :mod:`.prompts` and :mod:`.answer_schema` (what the judge is sent), :mod:`.authoring` (what
teachers are sent to write rubrics), :mod:`.judges` (asking an engine, or the ``rule`` reader that needs none),
:mod:`.judge_output` (reading its answer), :mod:`.execution` (running the verifiers), :mod:`.aggregation` (remapping
and masks) and :mod:`.scoring` (records and results).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any, Literal

from pydantic import Field, model_validator

from genrm.choices import DEFAULT_SCORING_FORMAT, DEFAULT_TAU, ScoringFormat
from genrm.engine.judge import Judge
from genrm.methods.base import JudgeTraining, ResultTally, SetAudit, UnknownReward
from genrm.methods.config import MethodConfig
from genrm.methods.options import MethodOptions
from genrm.methods.rubric import group_outcomes
from genrm.methods.rubric.aggregation import LENGTH_BAND
from genrm.methods.rubric.group_outcomes import RubricOutcome
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.planning import CriterionPlan, plan_rubric, split_path
from genrm.methods.rubric.readers import rubric_reader
from genrm.methods.rubric.scoring import (
    CriterionRecord,
    InstanceResult,
    ScoringConfig,
    group_request,
    plan_instance,
    score_group,
)
from verifiers import warm_up
from verifiers.registry import uses_workers

# Criterion statuses that are the judge's failure, not a verifier's verdict (genrm.methods.rubric.judge_output).
_JUDGE_FAILURES = frozenset({"not_json", "schema", "criterion_mismatch", "wrong_path", "wrong_verifier", "bad_call",
                             "backend_error"})  # fmt: skip


class RubricOptions(MethodOptions):
    """The rubric method's own settings (its ``method_options``)."""

    tau: float = Field(DEFAULT_TAU, gt=0.0, lt=1.0, description="the remapping threshold (eq. 2-3)")
    answer_format: ScoringFormat = Field(
        DEFAULT_SCORING_FORMAT,
        description="the version of the judge's format (genrm.methods.rubric.models); a judge trained on one is asked "
        "for that one",
    )
    grounded_extraction: bool = Field(
        True,
        description="a model judge's value counts only where the response states it (genrm.methods.rubric.execution)",
    )
    length_rule: Literal["none", "mask"] = Field(
        "none",
        description="mask: reward 0 for a response whose length over the reference answer's, in characters, is "
        "outside [length_low, length_high]",
    )
    length_low: float = Field(LENGTH_BAND[0], ge=0.0, description="the band's low end (with length_rule mask)")
    length_high: float = Field(LENGTH_BAND[1], ge=0.0, description="the band's high end (with length_rule mask)")

    @model_validator(mode="after")
    def _band(self) -> RubricOptions:
        if self.length_rule == "none" and {"length_low", "length_high"} & self.model_fields_set:
            raise ValueError("length_low and length_high need length_rule mask")
        if self.length_low > self.length_high:
            raise ValueError(f"the length band needs length_low <= length_high, got {self.length_low} and "
                             f"{self.length_high}")  # fmt: skip
        return self


@dataclass(frozen=True)
class PreparedInstance:
    """An instance whose rubric passed its checks, with the plans its judgements are read against."""

    instance: Instance
    plans: list[CriterionPlan]


class RubricMethod:
    """The rubric method (see the module docstring); registered as ``rubric``.

    Args:
        config: the common settings; a :class:`ScoringConfig` is used as it is.
        options: this method's own settings (:class:`RubricOptions`; the registry validates them); those given
            change a :class:`ScoringConfig` handed over as ``config``.
    """

    name = "rubric"
    options_model = RubricOptions
    instance_model = Instance
    result_model = InstanceResult
    reads_without_engine = True

    def __init__(self, config: MethodConfig | None = None, options: RubricOptions | None = None) -> None:
        if config is None or isinstance(config, ScoringConfig):
            self.config = config or ScoringConfig()
        else:
            self.config = ScoringConfig(**{f.name: getattr(config, f.name) for f in fields(MethodConfig)})
        # the options given change a ScoringConfig handed over; those left out keep its values
        if options is not None and options.model_fields_set:
            given = options.model_fields_set
            changes: dict[str, Any] = {name: getattr(options, name) for name in ("tau", "answer_format",
                                       "grounded_extraction") if name in given}  # fmt: skip
            if {"length_rule", "length_low", "length_high"} & given:
                mask = options.length_rule == "mask"
                changes["reference_length"] = (options.length_low, options.length_high) if mask else None
            self.config = replace(self.config, **changes)
        self._workers_warming = False

    def prepare(self, instance: Instance) -> PreparedInstance:
        """Check the instance's rubric and plan it for its task type, as exposed; raises
        ``genrm.methods.rubric.planning.RubricError`` (a located input error) when the rubric fails its checks."""
        prepared = PreparedInstance(instance, plan_instance(instance, self.config))
        if not self._workers_warming and self.uses_workers(prepared):
            # the expression workers start (about a second) while the judge reads the responses, not in the first check
            self._workers_warming = True
            warm_up(wait=False)
        return prepared

    async def judge(self, prepared: PreparedInstance, judge: Judge) -> list[ParsedJudgement]:
        """One checked judgement per response: the judge's model asked (a group's requests together), or the rule
        reader when it has none."""
        request = group_request(prepared.instance, prepared.plans, self.config)
        return await rubric_reader(judge).read(request)

    def uses_workers(self, prepared: PreparedInstance) -> bool:
        """Whether a criterion's verifier runs in the expression workers."""
        return any(uses_workers(plan.verifier) for plan in prepared.plans)

    def score(self, prepared: PreparedInstance, readings: Sequence[ParsedJudgement]) -> InstanceResult:
        """Execute the judgements, remap over the group, and apply the masks."""
        if not prepared.instance.responses:
            return InstanceResult(id=prepared.instance.id, rewards=[], records=[])
        return score_group(prepared.instance, prepared.plans, readings, self.config)

    def unknown_reward(self, result: InstanceResult, index: int) -> UnknownReward:
        """Why response ``index`` has no reward: the judge failed on it (retry), a verifier could not run (retry), a
        rubric target that cannot be checked (the input's fault), or a criterion nobody scored."""
        record = result.records[index]
        if record.judge_failure:
            return UnknownReward("the judge failed on this response; retry", True, kind="judge_failure")
        for criterion in record.criteria:
            if criterion.status in ("busy", "error"):  # the server's failure, not the input's
                return UnknownReward(f"not judged: {criterion.reason}; retry", True, kind=criterion.status)
            if criterion.status in _JUDGE_FAILURES:
                return UnknownReward(f"the judge failed on {criterion.path}: {criterion.reason}; retry", True,
                                     kind="judge_failure")  # fmt: skip
            if criterion.status == "unparseable_target":
                return UnknownReward(f"the rubric's target cannot be checked: {criterion.reason}", False,
                                     ("rubric", *split_path(criterion.path)), "rubric")  # fmt: skip
        return UnknownReward("the reward depends on criteria this judge does not score (fuzzy criteria need a "
                             "model backend)", False, kind="unscored")  # fmt: skip

    def explain(self, result: InstanceResult, index: int) -> str:
        """How response ``index`` got its reward: the judge's failure, or each criterion it did not fully meet
        (path, status, raw score, reason) and the rules that decided (masks, length)."""
        record = result.records[index]
        if record.judge_failure:
            return f"judge answer {record.judge_failure}: {record.judge_reason}"
        lowered = [_shortfall(c) for c in record.criteria if c.status != "ok" or c.remapped is None or c.remapped < 1]
        return "; ".join([*lowered, *record.explanation])

    def extra_logs(self, result: InstanceResult, index: int) -> dict[str, float]:
        """The response's content mask, format mask and length rule, as 0/1."""
        record = result.records[index]
        return {"content_mask": float(record.content_mask or 0), "format_mask": float(record.format_mask),
                "length_ok": float(record.length_ok)}  # fmt: skip

    def outcome_values(self, result: InstanceResult) -> list[RubricOutcome]:
        """Per response, what its reward over a whole group needs (:mod:`.group_outcomes`)."""
        return group_outcomes.outcome_values(result)

    def group_rewards(self, values: Sequence[RubricOutcome]) -> list[float | None]:
        """The rewards of one whole group's judged responses: remapped with this method's ``tau``, then masked."""
        return group_outcomes.group_rewards(values, self.config.tau)

    def outcome_logs(self, values: Sequence[RubricOutcome]) -> dict[str, float]:
        """Format violations, length masks and the mean raw score per rubric section (:mod:`.group_outcomes`)."""
        return group_outcomes.outcome_logs(values)

    def answer_texts(self, instance: Instance) -> list[str]:
        """The text targets of the instance's verifiable criteria (a right answer states them)."""
        texts = []
        for plan in plan_rubric(instance.rubric, instance.task_type):
            target = plan.target_kwargs.get("target") if plan.target_kwargs else None
            if isinstance(target, str):
                texts.append(target)
        return texts

    def judge_training(self) -> JudgeTraining:
        """The rubric judge's training: labelled criteria (:mod:`.judge_data`), the format and content rewards
        (:mod:`.judge_rewards`), labels from several teachers (:mod:`.teacher_labels`), the tokenizer corpus of a
        tiny judge (:mod:`.judge_corpus`)."""
        from genrm.methods.rubric.judge_corpus import judge_corpus
        from genrm.methods.rubric.judge_data import JudgeExample, rlvr_record, sft_record
        from genrm.methods.rubric.judge_rewards import content_reward_func, format_reward_func
        from genrm.methods.rubric.teacher_labels import label_with_teachers

        # The judge is trained on the answer format it will be asked for.
        answer_format = self.config.answer_format
        sft, rlvr = partial(sft_record, answer_format=answer_format), partial(rlvr_record, answer_format=answer_format)
        return JudgeTraining(JudgeExample, sft, rlvr, (format_reward_func, content_reward_func), False,
                             label_with_teachers, corpus=judge_corpus)  # fmt: skip

    def set_audit(self) -> SetAudit:
        """The rubric judge's audit on labelled audit sets (:mod:`genrm.methods.rubric.evaluation.audit_run`)."""
        from genrm.methods.rubric.evaluation.audit_run import SETTINGS, plot_audit, read_audit_file, run_set_audit

        return SetAudit(settings=tuple(SETTINGS), read=read_audit_file, run=run_set_audit, plot=plot_audit)

    def tally(self, result: InstanceResult) -> ResultTally:
        """Judge failures (of whole answers and of criteria) and the verifier statuses of the other criteria."""
        tally = ResultTally()
        for record in result.records:
            if record.judge_failure:
                tally.judge_failures.append(record.judge_failure)
                continue
            for criterion in record.criteria:
                (tally.judge_failures if criterion.status in _JUDGE_FAILURES else tally.verifier_statuses).append(
                    criterion.status
                )
        return tally


def _shortfall(criterion: CriterionRecord) -> str:
    # what a criterion a response did not fully meet says in a row: "essential[0] ok 0: plain numbers different"
    if criterion.score is None and criterion.status == "unscored":
        return f"{criterion.path} unscored"
    score = "" if criterion.score is None else f" {criterion.score:g}"
    return f"{criterion.path} {criterion.status}{score}: {criterion.reason.removeprefix(criterion.path + ': ')}"


def score_instance(
    instance: Instance, judge: Judge | None = None, config: ScoringConfig | None = None
) -> InstanceResult:
    """The rubric method's result for ``instance`` (:func:`genrm.methods.run.score_instance`), judged by ``judge``
    (default: ``rule``, no model).

    Raises ``genrm.methods.rubric.planning.RubricError`` when the rubric fails its checks (nothing is scored).
    """
    from genrm.methods.run import score_instance as run_method

    return run_method(RubricMethod(config), instance, judge or Judge())  # type: ignore[return-value]
