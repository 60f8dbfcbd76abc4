"""The rubicap method (RubiCap) as a reward method: a judge rules on each criterion of an image's rubric (binary, with
a severity weight) for each caption, and the reward is the severity-weighted share of criteria met; the source's
Likert baselines are reward modes of their own, to compare against.

Options (``method_options``):

- ``mode``: ``rubric`` (default: ``G = sum w y / sum w``), ``direct_likert`` (a VLM judge scores the caption 0-10
  with the image), ``reference_likert`` (the same with the instance's reference caption);
- ``layout`` (rubric mode): ``per_criterion`` (default, the source's: one call per criterion and caption, the
  criterion first and the caption last) or ``all_criteria`` (one call per caption with every criterion; fewer calls
  and less prompt, one longer answer; ``benchmarks/rubicap.py`` measures both).

Choices this method makes where the source leaves room:

- **Binary credit, no remap, no gate.** The rubric method's group remap and essential gate do not apply: a criterion
  here is a diagnosed gap, and a caption is rewarded for each it closes. This is a mode of this method, not a flag
  that changes the rubric method.
- **The rubric judge is text-only** (``minimal`` exposure, the source's LLM judge): the criteria carry what the
  committee saw. The ``vlm`` exposure shows it the image too. The Likert baselines always see the image (they are
  VLM judges); ``reference_likert`` refuses an instance without a reference caption, naming the field.
- **A failed judgement is not a reward**: a caption with a criterion the judge could not rule on has a null reward,
  with the failure; never a 0 for that criterion.

Not here: the prompts (:mod:`.prompts`), reading answers (:mod:`.reading`), writing rubrics (:mod:`.writer`,
``genrm data caption-rubrics``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field

from genrm.engine import Judge, ask
from genrm.engine.types import ChatRequest
from genrm.methods.base import MethodInputError, ResponseAuditPlan, ResultTally, UnknownReward, judge_failed
from genrm.methods.captions import answer_text, check_caption_exposure
from genrm.methods.config import MethodConfig
from genrm.methods.options import MethodOptions
from genrm.methods.rubicap.models import CriterionVerdict, LikertScore, RubiCapInstance, RubiCapRecord, RubiCapResult
from genrm.methods.rubicap.prompts import criterion_requests, likert_requests, rubric_requests
from genrm.methods.rubicap.reading import Reading, read_likert, read_verdict, read_verdicts, reader
from genrm.methods.rubicap.rewards import likert_reward, severity_weighted_mean

Mode = Literal["rubric", "direct_likert", "reference_likert"]
Layout = Literal["per_criterion", "all_criteria"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)


class RubiCapOptions(MethodOptions):
    """The rubicap method's own settings (its ``method_options``; the module docstring says what each does)."""

    mode: Mode = Field("rubric", description="rubric, direct_likert or reference_likert")
    layout: Layout = Field(
        "per_criterion", description="rubric mode: per_criterion (a call per criterion and caption) or all_criteria"
    )


@dataclass(frozen=True)
class CaptionReading:
    """What the judge said about one caption: a verdict per criterion (a reading each), or a Likert reading."""

    criteria: tuple[Reading, ...] = ()
    likert: Reading | None = None


@dataclass(frozen=True)
class PreparedCaptions:
    """An instance ready to judge: the captions cut from its responses."""

    instance: RubiCapInstance
    captions: list[str]


class RubiCapMethod:
    """The rubicap method (see the module docstring); registered as ``rubicap``.

    Args:
        config: the common settings (``exposure``: ``minimal`` or ``vlm``).
        options: ``mode`` and ``layout`` (see the module docstring).
    """

    name = "rubicap"
    options_model = RubiCapOptions
    instance_model = RubiCapInstance
    result_model = RubiCapResult
    reads_without_engine = False
    #: The caption audit: the attacks a Likert judge is known to fall for (the source reports Reference-Likert
    #: collapsing into self-praise), under the rubric reward and both baselines.
    response_audit = ResponseAuditPlan(
        ("self_praise", "meta_commentary", "hedged", "repetition", "copied_reference"),
        {"rubric": {}, "direct_likert": {"mode": "direct_likert"}, "reference_likert": {"mode": "reference_likert"}},
    )

    def __init__(self, config: MethodConfig | None = None, options: RubiCapOptions | None = None) -> None:
        config = config or MethodConfig()
        check_caption_exposure(self.name, config.exposure)
        options = options or RubiCapOptions()
        self.mode: Mode = options.mode
        self.layout: Layout = options.layout
        self.config = config

    def prepare(self, instance: RubiCapInstance) -> PreparedCaptions:
        """Cut each response's caption; raises :class:`MethodInputError` when ``reference_likert`` has no reference
        caption to show."""
        if self.mode == "reference_likert" and not (instance.reference or "").strip():
            raise MethodInputError("the reference_likert mode needs the instance's reference caption", ["reference"],
                                   kind="reference")  # fmt: skip
        return PreparedCaptions(instance, [answer_text(response) for response in instance.responses])

    async def judge(self, prepared: PreparedCaptions, judge: Judge) -> list[CaptionReading]:
        """One reading per caption (see the module docstring for how many calls it takes)."""
        instance, captions = prepared.instance, prepared.captions
        likert = self.mode != "rubric"
        if judge.engine is None or (likert and not judge.sees_images):
            reason = f"{judge.model} cannot see the image, and the {self.mode} judge scores the caption against it"
            failed = Reading(None, "backend_error", reason)
            return [CaptionReading(likert=failed) if likert else CaptionReading((failed,) * len(instance.rubric))
                    for _ in captions]  # fmt: skip
        if likert:
            reference = instance.reference if self.mode == "reference_likert" else None
            readings = await ask(judge.engine, likert_requests(captions, instance.image, reference),
                                 reader(read_likert), judge.parse_retries)  # fmt: skip
            return [CaptionReading(likert=r) for r in readings]
        image = instance.image if self.config.exposure == "vlm" and judge.sees_images else None
        rubric = instance.rubric
        if self.layout == "all_criteria":
            readings = await ask(
                judge.engine,
                rubric_requests(rubric, captions, image),
                reader(functools.partial(read_verdicts, count=len(rubric))),
                judge.parse_retries,
            )
            return [CaptionReading(_split(r, len(rubric))) for r in readings]  # fmt: skip
        readings = await ask(judge.engine, criterion_requests(rubric, captions, image), reader(read_verdict),
                             judge.parse_retries)  # fmt: skip
        g = len(captions)  # criterion-major: reading m * G + i is criterion m of caption i
        return [CaptionReading(tuple(readings[m * g + i] for m in range(len(rubric)))) for i in range(g)]

    def uses_workers(self, prepared: PreparedCaptions) -> bool:
        """Never: no verifier of this method runs in the expression workers."""
        return False

    def score(self, prepared: PreparedCaptions, readings: Sequence[CaptionReading]) -> RubiCapResult:
        """Each caption's reward from its readings (null where the judge failed)."""
        weights = [c.weight for c in prepared.instance.rubric]
        records = [self._record(reading, weights) for reading in readings]
        return RubiCapResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records)

    def _record(self, reading: CaptionReading, weights: list[int]) -> RubiCapRecord:
        if reading.likert is not None:
            answer = reading.likert.answer
            if not isinstance(answer, LikertScore):
                return RubiCapRecord(reward=None, mode=self.mode, failure=reading.likert.failure,
                                     failure_reason=reading.likert.reason)  # fmt: skip
            return RubiCapRecord(reward=likert_reward(answer.score), mode=self.mode, likert=answer.score)
        satisfied = [r.answer.score if isinstance(r.answer, CriterionVerdict) else None for r in reading.criteria]
        failed = next((r for r in reading.criteria if r.answer is None), None)
        if failed is not None:
            why = f"criterion {reading.criteria.index(failed) + 1}: {failed.reason}"
            return RubiCapRecord(reward=None, mode=self.mode, satisfied=satisfied, weights=weights,
                                 failure=failed.failure, failure_reason=why)  # fmt: skip
        reward = severity_weighted_mean([float(s) for s in satisfied], weights)  # type: ignore[arg-type]
        return RubiCapRecord(reward=reward, mode=self.mode, satisfied=satisfied, weights=weights)

    def unknown_reward(self, result: RubiCapResult, index: int) -> UnknownReward:
        """Every unknown reward of this method is the judge's failure (retry)."""
        record = result.records[index]
        return judge_failed(record.failure, record.failure_reason, "this caption")

    def extra_logs(self, result: RubiCapResult, index: int) -> dict[str, float]:
        """The share of criteria met (unweighted) and, for the baselines, the Likert score."""
        record = result.records[index]
        logs: dict[str, float] = {}
        known = [s for s in record.satisfied if s is not None]
        if known and record.failure is None:
            logs["criteria_met"] = sum(known) / len(known)
        if record.likert is not None:
            logs["likert"] = float(record.likert)
        return logs

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The scripted scene judges (:mod:`.scene_judge`): ``--judge scripted``, to try the method offline.
        Relative image paths are read against ``image_dir``."""
        import functools

        from genrm.methods.rubicap.scene_judge import scripted

        return functools.partial(scripted, base_dir=image_dir)

    def tally(self, result: RubiCapResult) -> ResultTally:
        """The judge failures met (this method runs no verifier)."""
        return ResultTally(judge_failures=[r.failure for r in result.records if r.failure])


def _split(reading: Reading, count: int) -> tuple[Reading, ...]:
    # The verdicts of one all-criteria answer as one reading per criterion (the same failure for each when it failed).
    if reading.answer is None:
        return (reading,) * count
    return tuple(Reading(verdict) for verdict in reading.answer.verdicts)  # type: ignore[union-attr]
