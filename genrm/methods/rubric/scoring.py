"""The rubric method's rewards: plan the rubric, judge the group, execute, aggregate, and explain.

One :class:`InstanceResult` per instance (one output line of ``genrm score``): the reward of each response (``None``
when it depends on a criterion nobody scored) and a :class:`ResponseRecord` per response that says, criterion by
criterion and mask by mask, how the reward came about.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from genrm.choices import DEFAULT_SCORING_FORMAT, DEFAULT_TAU, ScoringFormat, check_scoring_format, quotes_evidence
from genrm.methods.base import GroupResult
from genrm.methods.config import MethodConfig
from genrm.methods.format_checks import format_violations
from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group, length_conditional_mask
from genrm.methods.rubric.execution import CriterionScore, execute
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.models import Instance, SectionName
from genrm.methods.rubric.planning import CriterionPlan, RubricPolicy, plan_rubric
from genrm.methods.rubric.prompts import exposed_plans
from genrm.methods.rubric.readers import GroupRequest
from verifiers import VerifyConfig
from verifiers.expressions.pool import cut_checks, expression_workers
from verifiers.registry import uses_workers


@dataclass(frozen=True)
class ScoringConfig(MethodConfig):
    """How rubric rewards are computed: the common settings (:class:`genrm.methods.config.MethodConfig`: ``exposure``;
    the format mask; the verifiers' bounds), the remapping threshold ``tau`` in (0, 1) (eq. 2-3), which verifiers
    each task type may use (``policy``), the version of the answer format the judge is asked for
    (``answer_format``), whether a model judge's values count only where the response states them
    (``grounded_extraction``, :mod:`genrm.methods.rubric.execution`), and the length band against the reference
    answer (``reference_length``: ``(low, high)``, a response whose length over the reference answer's, in
    characters, is outside it gets reward 0; None: no band; an instance without a reference answer is not banded)."""

    tau: float = DEFAULT_TAU
    policy: RubricPolicy = field(default_factory=RubricPolicy)
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT
    grounded_extraction: bool = True
    reference_length: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.tau < 1.0:
            raise ValueError(f"tau must be in (0, 1), got {self.tau}")
        check_scoring_format(self.answer_format)
        if self.reference_length is not None:
            low, high = self.reference_length
            if not 0 <= low <= high:
                raise ValueError(f"the length band needs 0 <= low <= high, got low={low}, high={high}")


def _length_ok(response: str, instance: Instance, band: tuple[float, float] | None) -> bool:
    """Whether ``response`` is within the instance's ``max_response_chars`` and, with a band, within it against the
    reference answer's length."""
    if instance.max_response_chars is not None and len(response) > instance.max_response_chars:
        return False
    if band is None or not instance.reference_answer:
        return True
    return length_conditional_mask(len(response), len(instance.reference_answer), *band)


class CriterionRecord(BaseModel):
    """One criterion on one response: raw score, remapped score, and where they came from.

    The criterion is named by its ``path`` in the instance's rubric, not by its text: a group's records would
    otherwise repeat every criterion's text once per response (64 responses x 128 criteria of 2,000 characters made a
    16 MB answer of a 0.3 MB request)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="where the criterion sits in the instance's rubric, e.g. essential[0]")
    section: SectionName = Field(description="the rubric section of the criterion")
    weight: int
    verifier: str | None = Field(description="the verifier that decided it; null for a fuzzy criterion")
    score: float | None = Field(description="raw score in [0, 1]; null when unscored")
    remapped: float | None = Field(description="score after group-wise remapping; null when unscored")
    status: str = Field(
        description="ok, a verifier status, ungrounded (a value the response does not state), or a judge failure "
        "class (unscored, bad_call, ...)"
    )
    reason: str
    extracted: str | float | None = Field(default=None, description="the judge's call string or credit")


class ResponseRecord(BaseModel):
    """How one response's reward came about."""

    model_config = ConfigDict(extra="forbid")

    index: int
    reward: float | None = Field(description="final reward in [0, 1]; null when it depends on unscored criteria")
    base: float | None = Field(description="weighted sum of remapped scores before the masks")
    content_mask: int | None
    format_mask: int
    length_ok: bool
    format_violations: list[str]
    judge_failure: str | None = Field(description="a failure of the whole judge output (not_json, schema, ...)")
    judge_reason: str
    criteria: list[CriterionRecord]
    explanation: list[str]


class InstanceResult(GroupResult):
    """One output line of ``genrm score`` for the rubric method: an instance's rewards and records, or the error that
    stopped it."""

    records: list[ResponseRecord] = Field(default_factory=list)


def _references(instance: Instance) -> list[str]:
    # Scripts of the references are allowed in responses (a response may quote the text it was asked to read).
    texts = [c.reference for _, _, c in instance.rubric.criteria()]
    return texts + ([instance.reference_answer] if instance.reference_answer else [])


def _criterion_record(score: CriterionScore, remapped: float | None) -> CriterionRecord:
    plan = score.plan
    return CriterionRecord(
        path=plan.path,
        section=plan.section,
        weight=plan.criterion.weight,
        verifier=plan.verifier,
        score=score.score,
        remapped=remapped,
        status=score.status,
        reason=score.reason,
        extracted=score.extracted,
    )


def score_group(
    instance: Instance,
    plans: Sequence[CriterionPlan],
    judgements: Sequence[ParsedJudgement],
    config: ScoringConfig | None = None,
) -> InstanceResult:
    """Execute and aggregate the judge's judgements of an instance's responses (one per response, in order).

    ``plans`` are the plans the judgements were read against (``genrm.methods.rubric.prompts.exposed_plans``).
    """
    config = config or ScoringConfig()
    responses = instance.responses
    if len(judgements) != len(responses):
        raise ValueError(f"{len(judgements)} judgements for {len(responses)} responses")
    evidence = quotes_evidence(config.answer_format)
    scores = _execute_all(judgements, plans, config.verify, responses, config.grounded_extraction, evidence)
    references = _references(instance)
    violations = [
        format_violations(r, instance.prompt, references, config.format) if config.check_format else []
        for r in responses
    ]
    length_ok = [_length_ok(r, instance, config.reference_length) for r in responses]
    slots = [CriterionSlot(p.section, p.criterion.weight) for p in plans]
    aggregates = aggregate_group(slots, [[s.score for s in row] for row in scores], violations, length_ok, config.tau)
    records = [
        ResponseRecord(
            index=i,
            reward=agg.reward,
            base=agg.base,
            content_mask=agg.content_mask,
            format_mask=agg.format_mask,
            length_ok=agg.length_ok,
            format_violations=violations[i],
            judge_failure=parsed.failure,
            judge_reason=parsed.reason,
            criteria=[_criterion_record(s, r) for s, r in zip(scores[i], agg.remapped, strict=True)],
            explanation=agg.explanation,
        )
        for i, (parsed, agg) in enumerate(zip(judgements, aggregates, strict=True))
    ]
    return InstanceResult(id=instance.id, rewards=[agg.reward for agg in aggregates], records=records)


def _execute_all(
    judgements: Sequence[ParsedJudgement],
    plans: Sequence[CriterionPlan],
    verify: VerifyConfig,
    responses: Sequence[object],
    grounded: bool,
    evidence: bool,
) -> list[list[CriterionScore]]:
    # Checks that wait for expression workers run concurrently, one thread per worker, so that a group's hostile
    # expressions cost its slowest check per worker rather than their sum; each thread keeps the caller's context
    # (the server's tenant and budget). In-process checks are fast and stay in this thread.
    if len(judgements) < 2 or not any(uses_workers(plan.verifier) for plan in plans):
        pairs = zip(judgements, responses, strict=True)
        return [execute(parsed, plans, verify, response, grounded, evidence) for parsed, response in pairs]  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=min(len(judgements), expression_workers())) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, execute, parsed, plans, verify, response, grounded, evidence)
            for parsed, response in zip(judgements, responses, strict=True)
        ]
        try:
            return [future.result() for future in futures]
        except BaseException:  # cut (Ctrl-C, a stop signal): the checks under way end now, not at their deadlines
            with cut_checks():
                pool.shutdown(wait=True, cancel_futures=True)
            raise


def plan_instance(instance: Instance, config: ScoringConfig) -> list[CriterionPlan]:
    """The plans an instance's judgements are read against: its rubric planned for its task type, as exposed.

    Raises ``genrm.methods.rubric.planning.RubricError`` when the rubric fails its checks.
    """
    return exposed_plans(plan_rubric(instance.rubric, instance.task_type, config.policy), config.exposure)


def group_request(instance: Instance, plans: Sequence[CriterionPlan], config: ScoringConfig) -> GroupRequest:
    """What the judge is asked about ``instance``'s responses."""
    return GroupRequest(instance.prompt, plans, instance.responses, instance.image, config.exposure,
                        config.answer_format)  # fmt: skip
