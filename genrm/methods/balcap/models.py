"""The balcap method's data, as pydantic models: the instance, the judge's answer, and the records.

An instance is a caption instance (:mod:`genrm.methods.captions`): one image, its reference caption and the G
captions of the policy to score.

The judge's answer (:class:`BalCapAnswer`) has the source's structure (BalCapRL, appendix A.2): the caption's atomic
assertions, each with ``is_verified`` (visually verified *and* pointable), three 1-10 scores (clarity, fluency,
coherency) with a short explanation, and the reference caption's atomic assertions, each with ``is_covered``. With
the ``split_checks`` option the judge answers the two tests of an assertion apart (``is_pointable``, ``is_visible``)
and ``is_verified`` is their conjunction, so that an audit can tell meta-commentary from hallucination.

Sizes are bounded, and every model forbids unknown fields.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genrm.methods.base import GroupResult
from genrm.methods.captions import CaptionInstance, UngroundedClaim

#: The most assertions one side of an answer may list (an answer with more is not read: a judge that loops).
MAX_ASSERTIONS = 128
_TEXT = 2_000


class BalCapInstance(CaptionInstance):
    """One image, its reference caption, and the policy's captions of it (one line of the instance JSONL)."""


class Assertion(BaseModel):
    """One atomic assertion of the caption, and whether it passes both tests (pointable, true of the image).

    ``is_pointable`` and ``is_visible`` are there only when the judge was asked for the two tests apart
    (``split_checks``); ``is_verified`` is then their conjunction, whatever the judge wrote for it.
    """

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=_TEXT)
    is_verified: bool
    is_pointable: bool | None = None
    is_visible: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _conjunction(cls, data: object) -> object:
        if isinstance(data, dict) and "is_pointable" in data and "is_visible" in data:
            data = {**data, "is_verified": data["is_pointable"] is True and data["is_visible"] is True}
        return data


class ReferenceAssertion(BaseModel):
    """One atomic assertion of the reference caption, and whether the caption covers it."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=_TEXT)
    is_covered: bool


class CaptionFeatures(BaseModel):
    """What the judge found in the caption under evaluation."""

    model_config = ConfigDict(extra="forbid")

    atomic_assertions: list[Assertion] = Field(max_length=MAX_ASSERTIONS)
    clarity_score: int = Field(ge=1, le=10, strict=True)
    fluency_score: int = Field(ge=1, le=10, strict=True)
    coherency_score: int = Field(ge=1, le=10, strict=True)
    linguistic_scores_explanation: str = Field(default="", max_length=_TEXT)


class ReferenceFeatures(BaseModel):
    """What the judge found in the reference caption: at least one assertion (a reference with none is a failed
    decomposition, and the caption's recall would be undefined)."""

    model_config = ConfigDict(extra="forbid")

    atomic_assertions: list[ReferenceAssertion] = Field(min_length=1, max_length=MAX_ASSERTIONS)


class BalCapAnswer(BaseModel):
    """The judge's answer about one caption (the source's ``synthetic_features`` and ``gt_features``)."""

    model_config = ConfigDict(extra="forbid")

    synthetic_features: CaptionFeatures
    gt_features: ReferenceFeatures


class BalCapRecord(BaseModel):
    """How one caption's rewards came about (or why it has none: ``failure``)."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="the weighted mean of the three rewards, or null when the judge failed")
    precision: float | None = Field(default=None, description="R_prec: verified and pointable assertions / all")
    recall: float | None = Field(default=None, description="R_rec: covered reference assertions / all")
    linguistic: float | None = Field(default=None, description="R_ling after the length mask")
    linguistic_unmasked: float | None = Field(default=None, description="R_ling before the length mask")
    length_ratio: float = Field(description="rho: the caption's length over the reference's, in tokens")
    length_in_band: bool = Field(description="whether rho lies in [length_low, length_high]")
    length_penalty: float = Field(default=0.0, description="lambda * d(rho) of the linear length rule (else 0)")
    caption_tokens: int
    reference_tokens: int
    assertions: int | None = None
    verified: int | None = None
    pointable: int | None = Field(default=None, description="with split_checks: assertions that pass the point test")
    reference_assertions: int | None = None
    covered: int | None = None
    failure: str | None = Field(default=None, description="why the judge's answer could not be used")
    failure_reason: str | None = None
    ungrounded: list[UngroundedClaim] = Field(
        default_factory=list, description="assertions not found in their caption: not counted"
    )
    no_content: bool = Field(default=False, description="the caption holds no content word: nothing, unjudged")
    answer: BalCapAnswer | None = Field(default=None, description="the judge's answer, as read")


class BalCapResult(GroupResult):
    """One scored group: ``rewards`` (the weighted mean), and each reward column apart."""

    records: list[BalCapRecord] = Field(default_factory=list)
    precision: list[float | None] = Field(default_factory=list)
    recall: list[float | None] = Field(default_factory=list)
    linguistic: list[float | None] = Field(default_factory=list)
