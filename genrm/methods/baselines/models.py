"""The caption baselines' records and results (their instances are plain caption instances:
:class:`genrm.methods.captions.CaptionInstance`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from genrm.methods.base import GroupResult
from genrm.methods.captions import CaptionInstance


@dataclass(frozen=True)
class PreparedCaptions:
    """An instance ready to score: the captions cut from its responses (``<answer>`` blocks when present)."""

    instance: CaptionInstance
    captions: list[str]


class BaselineRecord(BaseModel):
    """How one caption's baseline reward came about (or why it has none: ``failure``)."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="in [0, 1]; null when the judge failed")
    score: float | None = Field(default=None, description="the holistic 0-10 score, or the ROUGE-L F-measure")
    failure: str | None = None
    failure_reason: str | None = None


class BaselineResult(GroupResult):
    """One scored group."""

    records: list[BaselineRecord] = Field(default_factory=list)
