"""The claimdiff method (ClaimDiff-RL) as a reward method: a judge lists the claim-level differences between each of
the policy's captions and a reference caption, rules on each against the image, and the rules of :mod:`.rewards`
turn its rulings into a reward.

Options (``method_options``, :class:`ClaimDiffOptions`; ``genrm methods`` lists them): the reward settings of
:class:`.rewards.ClaimDiffConfig` (``mode``, severity weights, the hedging penalty, the range, the format part,
``grounded_claims``: :mod:`.grounding`), ``answer_format`` (``json`` or ``blocks``, see :mod:`.prompts`), and for judge
training ``f1_judge`` (a judge spec: the F1 reward's predictions checked by that judge with the image,
:mod:`.checked_f1`).

Choices this method makes where the source leaves room:

- **The judge sees the image** under every exposure it accepts (``minimal``, the default, and ``vlm`` are the same
  here); ``unlimited`` and ``no_verifier`` hide or show nothing more for this method and are refused, so that a
  setting never silently means nothing. A judge whose model cannot see images gets a failed judgement for each
  caption, with the reason.
- **A failed judgement is not a reward**: where the source's server gives 0.0 (no answer, an answer it cannot parse,
  no image), the caption's reward is null with the failure's class and reason; a caller that needs a number chooses
  one explicitly (verl's ``unknown_reward``, the ``/judge`` route's ``failure_reward``).
- **One call per caption**, as the source; the G captions of an image share the prompt's prefix (image, instructions,
  reference), for the judge server's prefix cache.
- **No group remap**: each caption is compared with the reference alone, so its reward does not depend on the others.
- **Grounded claims** (``grounded_claims``, on; not in the source): a difference whose claim the caption (or the
  reference) does not make is not counted, and a caption with no content word is not judged and gets the floor
  (:mod:`.grounding`).
- The format mask of the rubric method (repetition, language mixing) does not apply; the source's format part does
  (``format_ratio``, ``require_think``).

Not here: the formulas (:mod:`.rewards`), the prompts (:mod:`.prompts`), reading answers (:mod:`.reading`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from genrm.engine import Judge, ask
from genrm.engine.types import ChatRequest
from genrm.methods.base import (
    JudgeTraining,
    MethodInputError,
    ResponseAuditPlan,
    ResultTally,
    UnknownReward,
    judge_failed,
)
from genrm.methods.captions import NO_CONTENT, ask_with_content, caption_tally, check_caption_exposure
from genrm.methods.claimdiff import judge_payload
from genrm.methods.claimdiff.grounding import grounded_differences
from genrm.methods.claimdiff.models import ClaimDiffInstance, ClaimDiffRecord, ClaimDiffResult, DiffAnswer
from genrm.methods.claimdiff.prompts import AnswerFormat, caption_requests
from genrm.methods.claimdiff.reading import Reading, answer_reader
from genrm.methods.claimdiff.rewards import (
    ClaimDiffConfig,
    DiffTally,
    answer_text,
    count_errors,
    diff_base_reward,
    error_difference,
    final_reward,
    format_score,
    hall_vs_miss_base,
    hedging,
    map_to_range,
)
from genrm.methods.config import MethodConfig


@dataclass(frozen=True)
class PreparedCaptions:
    """An instance ready to judge: the captions cut from its responses (``<answer>`` blocks when present)."""

    instance: ClaimDiffInstance
    captions: list[str]


class ClaimDiffOptions(ClaimDiffConfig):
    """The claimdiff method's own settings (its ``method_options``): the reward settings, the judge's answer form,
    and the judge that checks the F1 reward's predictions in judge training."""

    answer_format: AnswerFormat = Field(
        "json", description="the judge's answer form (genrm.methods.claimdiff.prompts): json or blocks"
    )
    f1_judge: str | None = Field(
        None, min_length=1, max_length=2048,
        description="judge training: a judge spec (sglang:MODEL@URL, openai:MODEL@URL, transformers:PATH or "
        "scripted) that checks the F1 reward's predictions with the image (genrm.methods.claimdiff.checked_f1)",
    )  # fmt: skip

    @field_validator("f1_judge")
    @classmethod
    def _a_spec(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("f1_judge must be a judge spec (sglang:MODEL@URL, openai:MODEL@URL, transformers:PATH "
                             "or scripted)")  # fmt: skip
        return value


class ClaimDiffMethod:
    """The claimdiff method (see the module docstring); registered as ``claimdiff``.

    Args:
        config: the common settings (only ``exposure`` applies: ``minimal`` or ``vlm``).
        options: this method's settings (see the module docstring).
    """

    name = "claimdiff"
    options_model = ClaimDiffOptions
    instance_model = ClaimDiffInstance
    result_model = ClaimDiffResult
    reads_without_engine = False
    payload_model = judge_payload.JudgePayload
    #: The caption audit: the default mode with and without the hedging penalty, the modes that count only caption A's
    #: errors, and the judge's claims taken as given (no grounding, as the source).
    response_audit = ResponseAuditPlan(
        ("hallucinated_object", "missing_salient_fact", "hedged", "copied_reference", "self_praise"),
        {"normalized_diff": {}, "normalized_diff+hedging_penalty": {"ambiguity_penalty": True},
         "normalized_a_only": {"mode": "normalized_a_only"}, "a_only": {"mode": "a_only"},
         "no_grounding": {"grounded_claims": False}},
    )  # fmt: skip

    def __init__(self, config: MethodConfig | None = None, options: ClaimDiffOptions | None = None) -> None:
        config = config or MethodConfig()
        check_caption_exposure(self.name, config.exposure)
        self.config = config
        options = options or ClaimDiffOptions()
        self.rewards: ClaimDiffConfig = options
        self.answer_format, self.f1_judge = options.answer_format, options.f1_judge
        self.hall_vs_miss = self.rewards.mode == "hall_vs_miss"

    def prepare(self, instance: ClaimDiffInstance) -> PreparedCaptions:
        """Cut each response's caption; raises :class:`MethodInputError` for a reference caption that is blank."""
        if not instance.reference.strip():
            raise MethodInputError("the reference caption is blank", ["reference"], kind="reference")
        return PreparedCaptions(instance, [answer_text(response) for response in instance.responses])

    async def judge(self, prepared: PreparedCaptions, judge: Judge) -> list[Reading]:
        """One reading per caption: the judge asked once per caption (with the image), its answer read."""
        instance, engine = prepared.instance, judge.engine

        async def ask_about(captions: list[str]) -> list[Reading]:
            if engine is None or not judge.sees_images:
                reason = f"{judge.model} cannot see the image, and the claimdiff judge rules against it"
                return [Reading(None, "backend_error", reason)] * len(captions)
            requests = caption_requests(instance.image, instance.reference, captions, self.hall_vs_miss,
                                        self.rewards.judge_severity, self.answer_format)  # fmt: skip
            return await ask(engine, requests, answer_reader(self.hall_vs_miss), judge.parse_retries)

        not_asked = Reading(None, None, NO_CONTENT)
        return await ask_with_content(prepared.captions, self.rewards.grounded_claims, ask_about, not_asked)

    def uses_workers(self, prepared: PreparedCaptions) -> bool:
        """Never: no verifier of this method runs in the expression workers."""
        return False

    def score(self, prepared: PreparedCaptions, readings: Sequence[Reading]) -> ClaimDiffResult:
        """Each caption's reward from its reading (null where the judge failed)."""
        reference = prepared.instance.reference
        records = [self._record(response, caption, reference, reading) for response, caption, reading in
                   zip(prepared.instance.responses, prepared.captions, readings, strict=True)]  # fmt: skip
        return ClaimDiffResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records,
                               accuracy=[r.accuracy for r in records], format=[r.format for r in records])  # fmt: skip

    def _record(self, response: str, caption: str, reference: str, reading: Reading) -> ClaimDiffRecord:
        config = self.rewards
        form = format_score(response, config)
        hedges = hedging(caption, config)
        common: dict[str, Any] = {"format": form, "hedges": hedges.count, "hedging_penalty": hedges.penalty}
        answer = reading.answer
        if reading.failure is None and answer is None:  # not asked: the caption holds no content word
            floor = map_to_range(0.0, config)
            return ClaimDiffRecord(reward=final_reward(floor, form, config.format_ratio), accuracy=floor,
                                   no_content=True, **common)  # fmt: skip
        if answer is None:
            return ClaimDiffRecord(reward=None, failure=reading.failure, failure_reason=reading.reason, **common)
        differences: list[Any] = list(answer.differences)
        if config.grounded_claims:
            differences, common["ungrounded"] = grounded_differences(answer, caption, reference)
        if isinstance(answer, DiffAnswer):
            a_errors = [(d.caption_a_error.error_type, d.caption_a_error.severity) for d in differences]
            b_errors = [(d.caption_b_error.error_type, d.caption_b_error.severity) for d in differences]
            tally = DiffTally(
                differences=len(differences),
                a=count_errors(a_errors, config),
                b=count_errors(b_errors, config),
                a_wins=sum(d.judgment == "A" for d in differences),
                b_wins=sum(d.judgment == "B" for d in differences),
                winner=answer.overall_winner,
            )  # fmt: skip
            accuracy = map_to_range(diff_base_reward(tally, config), config) * hedges.penalty
            figures: dict[str, Any] = {
                "differences": tally.differences, "caption_a_errors": tally.a.count, "caption_b_errors": tally.b.count,
                "caption_a_weighted": tally.a.weighted, "caption_b_weighted": tally.b.weighted,
                "caption_a_by_severity": tally.a.by_severity, "caption_b_by_severity": tally.b.by_severity,
                "judgment_a_wins": tally.a_wins, "judgment_b_wins": tally.b_wins,
                "overall_winner": tally.winner, "error_difference": error_difference(tally, config),
            }  # fmt: skip
        else:
            total = len(differences)
            hallucinations = sum(d.verification == "false" for d in differences)
            missing = sum(d.type == "missing_fact" for d in differences)
            base = hall_vs_miss_base(total, hallucinations, missing)
            accuracy = map_to_range(base * hedges.penalty, config)
            figures = {"differences": total, "hallucinations": hallucinations, "missing_facts": missing,
                       "extra_info": sum(d.type == "extra_info" for d in differences),
                       "error_difference": (hallucinations + missing) / total if total else 0.0}  # fmt: skip
        reward = final_reward(accuracy, form, config.format_ratio)
        return ClaimDiffRecord(reward=reward, accuracy=accuracy, answer=answer, **figures, **common)

    def unknown_reward(self, result: ClaimDiffResult, index: int) -> UnknownReward:
        """Every unknown reward of this method is the judge's failure (retry)."""
        record = result.records[index]
        return judge_failed(record.failure, record.failure_reason, "this caption")

    def extra_logs(self, result: ClaimDiffResult, index: int) -> dict[str, float]:
        """The caption's accuracy and format parts, error counts, differences and hedging penalty (the counts of a
        caption the judge failed on are left out)."""
        record = result.records[index]
        logs = {"format": record.format, "hedging_penalty": record.hedging_penalty}
        for name in ("accuracy", "differences", "caption_a_errors", "caption_b_errors", "hallucinations",
                     "missing_facts"):  # fmt: skip
            value = getattr(record, name)
            if value is not None:
                logs[name] = float(value)
        return logs

    def instance_from_payload(self, payload: judge_payload.JudgePayload) -> ClaimDiffInstance:
        """The one-caption instance of a payload of the source's ``/judge`` route (:mod:`.judge_payload`)."""
        return judge_payload.instance_from_payload(payload)

    def payload_reply(
        self, payload: judge_payload.JudgePayload, result: ClaimDiffResult, failure_reward: float | None
    ) -> dict[str, Any]:
        """The source's reply for the payload's caption (:mod:`.judge_payload`)."""
        return judge_payload.payload_reply(payload, result, failure_reward, self.rewards.format_ratio)

    def judge_training(self) -> JudgeTraining:
        """The claimdiff judge's training: teacher differences as labels, the format and F1 rewards
        (:mod:`.judge_training`); every record shows the image."""
        from genrm.methods.claimdiff import judge_training as training

        if self.answer_format != "json":
            raise ValueError(f"the claimdiff judge is trained on the json answer format, not {self.answer_format}")
        f1: Any = training.f1_reward_func
        if self.f1_judge is not None:
            from genrm.methods.claimdiff.checked_f1 import CheckedF1Reward

            f1 = CheckedF1Reward(self.f1_judge)
        rewards = (training.format_reward_func, f1)
        return JudgeTraining(training.DiffExample, training.sft_record, training.rlvr_record, rewards, True,
                             training.label_captions)  # fmt: skip

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The scripted scene judge (:mod:`.scene_judge`): ``--judge scripted``, to try the method offline.
        Relative image paths are read against ``image_dir``."""
        import functools

        from genrm.methods.claimdiff.scene_judge import scripted

        return functools.partial(scripted, base_dir=image_dir)

    def tally(self, result: ClaimDiffResult) -> ResultTally:
        """The judge failures met, and one ``ungrounded`` status per claim left out (this method runs no
        verifier)."""
        return caption_tally(result.records)
