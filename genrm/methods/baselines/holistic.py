"""The ``holistic`` method: ClaimDiff-RL's holistic baseline (B1), a vision-language judge scoring the whole caption
from 0 to 10 against the image and the reference caption, without decomposing it into claims; reward = score / 10.

It asks the same question as the rubicap method's Likert baselines (the same requests, reader and mapping:
:mod:`genrm.methods.rubicap.prompts`), on any caption instance (id, image, reference, responses: a claimdiff or
balcap file), so that a decomposed reward and the holistic one can be compared on one file and in one training loop.
Option ``reference`` (true): show the reference caption (false: the image alone, Direct-Likert).

A judge that cannot see images fails every caption, with the reason; a failed judgement is no reward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from genrm.engine import Judge, ask
from genrm.engine.types import ChatRequest
from genrm.methods.base import ResponseAuditPlan, ResultTally, UnknownReward, judge_failed
from genrm.methods.baselines.models import BaselineRecord, BaselineResult, PreparedCaptions
from genrm.methods.captions import CaptionInstance, answer_text, check_caption_exposure
from genrm.methods.config import MethodConfig
from genrm.methods.options import MethodOptions
from genrm.methods.rubicap.models import LikertScore
from genrm.methods.rubicap.prompts import likert_requests
from genrm.methods.rubicap.reading import Reading, read_likert, reader
from genrm.methods.rubicap.rewards import likert_reward


class HolisticOptions(MethodOptions):
    """The holistic baseline's own settings (its ``method_options``)."""

    reference: bool = Field(True, description="show the judge the reference caption beside the image")


class HolisticMethod:
    """The holistic caption baseline (see the module docstring); registered as ``holistic``."""

    name = "holistic"
    options_model = HolisticOptions
    instance_model = CaptionInstance
    result_model = BaselineResult
    reads_without_engine = False
    #: The caption audit: the attacks a holistic judge is known to fall for.
    response_audit = ResponseAuditPlan(
        ("self_praise", "meta_commentary", "hedged", "repetition", "copied_reference"),
        {"with_reference": {}, "image_only": {"reference": False}},
    )

    def __init__(self, config: MethodConfig | None = None, options: HolisticOptions | None = None) -> None:
        config = config or MethodConfig()
        check_caption_exposure(self.name, config.exposure)
        self.with_reference: bool = (options or HolisticOptions()).reference

    def prepare(self, instance: CaptionInstance) -> PreparedCaptions:
        """The instance and its captions (``<answer>`` blocks cut out when present)."""
        return PreparedCaptions(instance, [answer_text(response) for response in instance.responses])

    async def judge(self, prepared: PreparedCaptions, judge: Judge) -> list[Reading]:
        """One 0-10 reading per caption, one call each."""
        instance, captions = prepared.instance, prepared.captions
        if judge.engine is None or not judge.sees_images:
            return [Reading(None, "backend_error", f"{judge.model} cannot see the image, which the holistic judge "
                                                   "scores the caption against")] * len(captions)  # fmt: skip
        reference = instance.reference if self.with_reference else None
        requests = likert_requests(captions, instance.image, reference)
        return await ask(judge.engine, requests, reader(read_likert), judge.parse_retries)

    def uses_workers(self, prepared: Any) -> bool:
        """Never: no verifier runs."""
        return False

    def score(self, prepared: PreparedCaptions, readings: Sequence[Reading]) -> BaselineResult:
        """Each caption's reward: its score / 10 (null where the judge failed)."""
        records = []
        for reading in readings:
            if isinstance(reading.answer, LikertScore):
                score = reading.answer.score
                records.append(BaselineRecord(reward=likert_reward(score), score=float(score)))
            else:
                records.append(BaselineRecord(reward=None, failure=reading.failure, failure_reason=reading.reason))
        return BaselineResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records)

    def unknown_reward(self, result: BaselineResult, index: int) -> UnknownReward:
        """Every unknown reward of this method is the judge's failure (retry)."""
        record = result.records[index]
        return judge_failed(record.failure, record.failure_reason, "this caption")

    def extra_logs(self, result: BaselineResult, index: int) -> dict[str, float]:
        """The 0-10 score, when known."""
        score = result.records[index].score
        return {} if score is None else {"holistic_score": score}

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The rubicap method's scripted Likert judges over the example scenes (``--judge scripted``)."""
        from genrm.methods.rubicap.scene_judge import scripted

        return functools.partial(scripted, base_dir=image_dir)

    def tally(self, result: BaselineResult) -> ResultTally:
        """The judge failures met."""
        return ResultTally(judge_failures=[r.failure for r in result.records if r.failure])
