"""The rubicap method's data, as pydantic models: the instance with its caption rubric, the judge's answers, and the
records.

An instance is a caption instance (:mod:`genrm.methods.captions`) with a per-image rubric of binary criteria, each
with a severity weight (1 minor, 2 important, 3 critical); the reference caption is optional (the Reference-Likert
baseline needs one):

    {"id": str, "image": str, "prompt": str, "reference": str|null,
     "rubric": [{"criterion": str, "description": str, "evaluation_rule": str, "weight": 1|2|3}],
     "responses": [str]}

``genrm data caption-rubrics`` writes such instances from a committee of captioners and a rubric writer
(:mod:`genrm.methods.rubicap.caption_rubrics`).

The judge's answers: :class:`CriterionVerdict` (one criterion: reasoning, score 0 or 1), :class:`RubricVerdicts` (all
criteria in one call: one verdict per criterion, in order) and :class:`LikertScore` (the baselines: 0-10).

Sizes are bounded, and every model forbids unknown fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from genrm.methods.base import GroupResult
from genrm.methods.captions import CaptionInstance

#: The most criteria one rubric may hold.
MAX_CRITERIA = 32
_TEXT = 2_000

Severity = Literal[1, 2, 3]


def integer_weight(value: object) -> object:
    """A severity weight as the integer 1, 2 or 3 (``2.0`` is 2; ``2.5``, ``True`` and ``"2"`` are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"weight must be 1, 2 or 3, got {value!r:.40}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"weight must be 1, 2 or 3, got {value!r:.40}")
        value = int(value)
    return value


class CaptionCriterion(BaseModel):
    """One binary criterion of a caption rubric: what it asks, why, the pass/fail rule, and its severity weight."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(min_length=1, max_length=_TEXT)
    description: str = Field(default="", max_length=_TEXT)
    evaluation_rule: str = Field(min_length=1, max_length=_TEXT)
    weight: Severity = Field(description="1 minor, 2 important, 3 critical")

    @field_validator("weight", mode="before")
    @classmethod
    def _integer_weight(cls, value: object) -> object:
        return integer_weight(value)


class RubiCapInstance(CaptionInstance):
    """One image, its caption rubric, and the policy's captions of it (one line of the instance JSONL)."""

    reference: str | None = Field(  # type: ignore[assignment]
        default=None, max_length=100_000, description="a reference caption (the Reference-Likert baseline's)"
    )
    rubric: list[CaptionCriterion] = Field(min_length=1, max_length=MAX_CRITERIA)


class CriterionVerdict(BaseModel):
    """The judge's verdict on one criterion: why, and 1 (fully satisfied) or 0."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(default="", max_length=_TEXT)
    score: StrictInt = Field(ge=0, le=1)  # strict: true, "1" and 1.0 are not the integer the judge is asked for


class RubricVerdicts(BaseModel):
    """The judge's verdicts on every criterion of a rubric at once, in the rubric's order."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[CriterionVerdict] = Field(max_length=MAX_CRITERIA)


class LikertScore(BaseModel):
    """A Likert baseline's answer: one score from 0 to 10."""

    model_config = ConfigDict(extra="forbid")

    score: int = Field(ge=0, le=10)


class RubiCapRecord(BaseModel):
    """How one caption's reward came about (or why it has none: ``failure``)."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="G, or the Likert score / 10; null when the judge failed")
    mode: str
    satisfied: list[int | None] = Field(default_factory=list, description="per criterion: 1, 0, or null if unjudged")
    weights: list[int] = Field(default_factory=list)
    likert: int | None = Field(default=None, description="the Likert baselines' 0-10 score")
    failure: str | None = None
    failure_reason: str | None = None


class RubiCapResult(GroupResult):
    """One scored group."""

    records: list[RubiCapRecord] = Field(default_factory=list)
