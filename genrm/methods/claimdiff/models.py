"""The claimdiff method's data, as pydantic models: the instance, the judge's two answer forms, and the records.

An instance is one image, its reference caption (caption B) and the G captions of the policy to score (each is
caption A of its own comparison); one line of the instance JSONL that ``genrm score`` and ``/v1/score`` read:

    {"id": str, "image": str, "reference": str, "prompt": str, "responses": [str]}

``prompt`` is what the policy is asked (the common caption instance, :mod:`genrm.methods.captions`); the judge is not
shown it.

The judge's answer (:class:`DiffAnswer`) carries what the source's plain-text blocks carry: per difference an aspect,
the claim of each caption, a judgment (``A``, ``B``, ``both_wrong``, ``both_supported``), each caption's error (its
type, ``none`` when there is none, a detail and a severity, 0 for none); then the overall winner (``A``, ``B`` or
``tie``). The ``hall_vs_miss`` mode asks a different question and gets :class:`HallMissAnswer`: per difference its type
(``contradiction``, ``extra_info``, ``missing_fact``), the content, a category (``natural`` or ``design``), the
verification against the image (``verified``, ``false``, ``ambiguous``, ``missing``), a reason and whether it is a
hallucination.

Sizes are bounded, and every model forbids unknown fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from genrm.methods.base import GroupResult
from genrm.methods.captions import CaptionInstance, UngroundedClaim

#: The most differences one answer may list (an answer with more is not read: a judge that loops).
MAX_DIFFERENCES = 64
_TEXT = 2_000

Judgment = Literal["A", "B", "both_wrong", "both_supported"]
Winner = Literal["A", "B", "tie"]
DiffType = Literal["contradiction", "extra_info", "missing_fact"]
Verification = Literal["verified", "false", "ambiguous", "missing"]


class ClaimDiffInstance(CaptionInstance):
    """One image, its reference caption (caption B), and the policy's captions of it (each is caption A of its own
    comparison)."""


class CaptionError(BaseModel):
    """One caption's error on one difference: its type (``none`` when there is none), a detail, a severity (1 minor,
    2 medium, 3 major; 0 when there is no error or none was asked for)."""

    model_config = ConfigDict(extra="forbid")

    error_type: str = Field(max_length=200)
    error_detail: str = Field(default="", max_length=_TEXT)
    severity: Literal[0, 1, 2, 3] = 0


class Difference(BaseModel):
    """One claim-level difference between caption A (the policy's) and caption B (the reference)."""

    model_config = ConfigDict(extra="forbid")

    aspect: str = Field(max_length=200)
    caption_a_claim: str = Field(max_length=_TEXT)
    caption_b_claim: str = Field(max_length=_TEXT)
    judgment: Judgment
    caption_a_error: CaptionError
    caption_b_error: CaptionError


class DiffAnswer(BaseModel):
    """The judge's answer for the diff modes: the differences (none when the captions agree) and the winner."""

    model_config = ConfigDict(extra="forbid")

    differences: list[Difference] = Field(max_length=MAX_DIFFERENCES)
    overall_winner: Winner


class HallMissDifference(BaseModel):
    """One difference of the ``hall_vs_miss`` question: what the policy's caption says, checked against the image."""

    model_config = ConfigDict(extra="forbid")

    type: DiffType
    content: str = Field(max_length=_TEXT)
    category: Literal["natural", "design"]
    verification: Verification
    reason: str = Field(default="", max_length=_TEXT)
    is_hallucination: bool


class HallMissAnswer(BaseModel):
    """The judge's answer for the ``hall_vs_miss`` mode."""

    model_config = ConfigDict(extra="forbid")

    differences: list[HallMissDifference] = Field(max_length=MAX_DIFFERENCES)


class ClaimDiffRecord(BaseModel):
    """How one caption's reward came about (or why it has none: ``failure``)."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="the final reward, or null when the judge failed")
    accuracy: float | None = Field(default=None, description="the mode's reward, hedging penalty applied")
    format: float = Field(description="1.0 when the response has the form asked for")
    failure: str | None = Field(default=None, description="why the judge's answer could not be used")
    failure_reason: str | None = None
    differences: int | None = None
    caption_a_errors: int | None = None
    caption_b_errors: int | None = None
    caption_a_weighted: float | None = None
    caption_b_weighted: float | None = None
    caption_a_by_severity: tuple[int, int, int] | None = None
    caption_b_by_severity: tuple[int, int, int] | None = None
    judgment_a_wins: int | None = None
    judgment_b_wins: int | None = None
    overall_winner: Winner | None = None
    hallucinations: int | None = None
    missing_facts: int | None = None
    extra_info: int | None = None
    error_difference: float | None = Field(default=None, description="the mode's signed error figure")
    hedges: int = 0
    hedging_penalty: float = 1.0
    ungrounded: list[UngroundedClaim] = Field(
        default_factory=list, description="claims not found in their caption: their differences are not counted"
    )
    no_content: bool = Field(default=False, description="the caption holds no content word: the floor, unjudged")
    answer: DiffAnswer | HallMissAnswer | None = Field(default=None, description="the judge's answer, as read")


class ClaimDiffResult(GroupResult):
    """One scored group: ``rewards`` (final), and the accuracy and format parts of each caption."""

    records: list[ClaimDiffRecord] = Field(default_factory=list)
    accuracy: list[float | None] = Field(default_factory=list)
    format: list[float] = Field(default_factory=list)
