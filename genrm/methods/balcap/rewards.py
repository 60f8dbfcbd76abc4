"""The balcap method's rewards (BalCapRL, section 2 and appendix A.5, A.9), from one judge answer per caption.

For a caption with N atomic assertions, of which V pass both tests (pointable, and true of the image), and a reference
with M atomic assertions, of which C the caption covers:

- **Precision** ``R_prec = V / N``. A caption with no assertion (empty, or only filler the judge could not cut into
  claims) gets ``empty_precision`` (0 by default): it asserts nothing correct, and an empty caption must not earn
  full precision. The source does not say; this is our choice, a setting.
- **Recall** ``R_rec = C / M``. M is at least 1: a judge answer whose reference has no assertion is not read (a
  failed decomposition of a reference the method checked to be non-blank), so recall is never 0/0.
- **Linguistic** ``R_ling``: the mean of clarity, fluency and coherency (each 1-10) mapped to [0, 1]. The source says
  only "normalized to [0, 1]"; ``ling_scale`` chooses: ``affine`` (default) ``(s - 1) / 9``, so 1 is 0 and 10 is 1
  and the whole range is used; ``tenths`` ``s / 10``, whose floor is 0.1.
- **Length** ``rho = l_pred / l_ref``, in tokens (:mod:`.lengths`). ``length_rule``:

  - ``mask`` (default, eq. in section 2.3): ``R_ling`` is 0 when rho is outside ``[length_low, length_high]``
    (0.5 and 2 by default); precision and recall are never masked.
  - ``linear`` (the baseline of A.9): no mask; ``length_penalty = lambda * d(rho)`` with
    ``d(rho) = max(rho - length_high, 0) + max(length_low - rho, 0)``, which the source subtracts from the
    normalized advantage. It is reported beside the rewards and applied where the advantage is formed
    (``genrm rl`` subtracts it from TRL's advantages; the verl adapter from the c-GDPO advantage it hands verl's
    ``genrm_cgdpo`` estimator); the scalar reward does not include it, so a consumer that takes rewards only (TRL's
    own command line, verl's ``weighted_mean``, OpenRLHF) refuses the rule rather than drop the penalty.
  - ``none``: neither.

- **The scalar reward** (for callers that take one number): the weighted mean
  ``(w_prec R_prec + w_rec R_rec + w_ling R~_ling) / (w_prec + w_rec + w_ling)``, in [0, 1]. Training uses the three
  columns instead, normalized apart (:mod:`genrm.methods.columns`), with the same weights (0.1, 0.3, 0.3 by default,
  the source's A.1).
- **b-CapScore** (A.5): the harmonic mean of the three, ``3 / (1/R_prec + 1/R_rec + 1/R_ling)``, 0 when any is 0.
- **DCScore-style F1** (an evaluation figure, after DCScore's decomposition into primitive units): the harmonic mean
  of precision and recall, ``2 R_prec R_rec / (R_prec + R_rec)``. DCScore's precision counts the units that are
  wrong; this one also fails the units that are not pointable (with the evaluation prompt, visible evidence that
  justifies an inference passes), so it is DCScore's shape on this method's decomposition, not DCScore's figure.

Not here: the judge's prompt (:mod:`.prompts`), reading its answer (:mod:`.reading`), counting tokens
(:mod:`.lengths`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from genrm.methods.balcap.models import BalCapAnswer
from genrm.methods.options import MethodOptions

LingScale = Literal["affine", "tenths"]
LengthRule = Literal["mask", "linear", "none"]
PromptKind = Literal["train", "eval"]


class BalCapConfig(MethodOptions):
    """The balcap method's settings (its ``method_options``)."""

    w_prec: float = Field(0.1, ge=0.0, description="the weight of precision (the source's 0.1)")
    w_rec: float = Field(0.3, ge=0.0, description="the weight of recall (the source's 0.3)")
    w_ling: float = Field(0.3, ge=0.0, description="the weight of linguistic quality (the source's 0.3)")
    ling_scale: LingScale = Field(
        "affine", description="how a 1-10 score maps to [0, 1] (genrm.methods.balcap.rewards)"
    )
    empty_precision: float = Field(0.0, ge=0.0, le=1.0, description="the precision of a caption with no assertion")
    length_rule: LengthRule = Field("mask", description="mask, linear or none (genrm.methods.balcap.rewards)")
    length_low: float = Field(0.5, ge=0.0, description="the low end of the band of rho (the source's 0.5)")
    length_high: float = Field(2.0, ge=0.0, description="the high end of the band of rho (the source's 2)")
    length_lambda: float = Field(1.0, ge=0.0, description="lambda of the linear rule")
    length_tokenizer: str | None = Field(
        None, min_length=1, max_length=4096,
        description="a tokenizer (path or hub id) to count tokens with; none counts words and punctuation marks "
        "(genrm.methods.balcap.lengths)",
    )  # fmt: skip
    split_checks: bool = Field(
        False, description="ask the judge for the two tests of an assertion apart (is_pointable, is_visible)"
    )
    prompt: PromptKind = Field(
        "train",
        description="train (the source's A.2 rubric: strict pointability) or eval (A.4: visible evidence that "
        "justifies an inference passes too; b-CapScore's)",
    )
    grounded_claims: bool = Field(
        True,
        description="count only the assertions found in the caption they are said to come from, and give a caption "
        "with no content word nothing without asking the judge (genrm.methods.balcap.grounding; not in the source)",
    )

    @model_validator(mode="after")
    def _weights_and_band(self) -> BalCapConfig:
        if sum(self.weights) <= 0:
            raise ValueError("w_prec, w_rec, w_ling are all 0: one must weigh")
        if self.length_low > self.length_high:
            raise ValueError(f"length_low, length_high out of order: {self.length_low!r}, "
                             f"{self.length_high!r}")  # fmt: skip
        return self

    @property
    def weights(self) -> tuple[float, float, float]:
        """The weights of precision, recall and linguistic quality, in that order."""
        return (float(self.w_prec), float(self.w_rec), float(self.w_ling))


def precision(answer: BalCapAnswer, empty_precision: float = 0.0) -> float:
    """R_prec: the share of the caption's assertions that are verified and pointable (``empty_precision`` when it
    has none)."""
    assertions = answer.synthetic_features.atomic_assertions
    if not assertions:
        return empty_precision
    return sum(a.is_verified for a in assertions) / len(assertions)


def recall(answer: BalCapAnswer) -> float:
    """R_rec: the share of the reference's assertions that the caption covers (the answer has at least one)."""
    found = answer.gt_features.atomic_assertions
    return sum(a.is_covered for a in found) / len(found)


def linguistic(answer: BalCapAnswer, scale: LingScale = "affine") -> float:
    """R_ling before the length mask: the mean of the three 1-10 scores, mapped to [0, 1] by ``scale``."""
    features = answer.synthetic_features
    mean = (features.clarity_score + features.fluency_score + features.coherency_score) / 3
    return (mean - 1) / 9 if scale == "affine" else mean / 10


def length_ratio(caption_tokens: int, reference_tokens: int) -> float:
    """rho = caption tokens / reference tokens (the reference has at least one token)."""
    if reference_tokens <= 0:
        raise ValueError(f"the reference has {reference_tokens} tokens; a ratio needs at least one")
    return caption_tokens / reference_tokens


def in_band(rho: float, low: float, high: float) -> bool:
    """Whether ``low <= rho <= high`` (the linguistic reward is kept under the mask rule)."""
    return low <= rho <= high


def band_deviation(rho: float, low: float, high: float) -> float:
    """d(rho) of A.3: how far rho lies outside ``[low, high]`` (0 inside)."""
    return max(rho - high, 0.0) + max(low - rho, 0.0)


def weighted_mean(values: tuple[float, float, float], weights: tuple[float, float, float]) -> float:
    """The scalar reward: the weighted mean of (precision, recall, linguistic), in [0, 1]."""
    return sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)


def decomposition_f1(prec: float, rec: float) -> float:
    """The DCScore-style F1 of a decomposed caption: the harmonic mean of its precision and recall (each in [0, 1]);
    0 when both are 0."""
    return 0.0 if prec + rec <= 0 else 2 * prec * rec / (prec + rec)


def b_capscore(prec: float, rec: float, ling: float) -> float:
    """b-CapScore (A.5): the harmonic mean of the three rewards, each in [0, 1]; 0 when any of them is 0."""
    if min(prec, rec, ling) <= 0:
        return 0.0
    return 3 / (1 / prec + 1 / rec + 1 / ling)
