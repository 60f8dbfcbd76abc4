"""ClaimDiff-RL's arithmetic: from a judge's claim-level differences to one reward in [min_reward, max_reward].

Everything here is deterministic and needs no model: the judge only lists the differences and rules on them
(:mod:`.models`); counting, severity weights, the reward modes, the hedging penalty and the format part are decided
here, as the method's public reward server defines them (ltl3A87/ClaimDiff-RL, ``utils_caption_diff.py``):

- **errors**: a caption has an error on a difference when its error type is not empty, ``none`` or ``na``; with
  severity weighting an error counts its severity's weight (1: 1.0, 2: 1.25, 3: 1.6 by default), the severity being the
  judge's own level when asked for (``judge_severity``) and given, else inferred from the error type's words;
- **modes** (``max_w`` is the largest severity weight when weighting, else 1; ``D`` the number of differences):

  - ``normalized_diff`` (default): ``d = (A - B) / (max_w * D)``, reward ``0.5 - 0.5 d``; no difference: 0.5;
  - ``normalized_a_only``: ``(eps + (1 - eps) (1 - rho)^alpha) * exp(-(A / max_w) / k) * (0.7 + 0.3 min(1,
    ln(1 + D) / ln(1 + D_max)))`` with ``rho = A / (max_w * D)`` clipped to [0, 1]; alpha 2, eps 0.05, k 4, D_max 10;
    no difference: 1;
  - ``a_only``: ``1 - min(A, E) / E`` with ``E = max_error_diff * max_w`` (``max_error_diff`` 10);
  - ``judgment_based``: ``j = (wins of A - wins of B) / D``, moved by 0.1 towards the overall winner (clipped to
    [-1, 1]), reward ``0.5 + 0.5 j``; no difference: 0.5;
  - ``raw_diff``: ``d = clip(A - B, +-max_error_diff) / max_error_diff``, reward ``0.5 - 0.5 d``;
  - ``hall_vs_miss`` (its own judge answer, :class:`.models.HallMissAnswer`): ``1 - (hallucinations + missing facts)
    / D``, a hallucination being a claim the image shows false; no difference: 1;

  then ``reward_scale`` multiplies, the result is clipped to [0, 1] and mapped linearly onto ``[min_reward,
  max_reward]``;
- **hedging** (``ambiguity_penalty``): the reward is multiplied by ``exp(-c * max(0, n - free))``, ``n`` the hedges in
  the caption (or, and/or, possibly, appears to, might be, could be, likely, x/y), ``c`` 0.1, ``free`` one hedge per
  90 words unless fixed; for ``hall_vs_miss`` the source applies it before the scale and mapping, for the other modes
  after, and so does this module;
- **format**: 1 when the caption is not empty (with ``require_think``: when the response has a ``<think>`` block and
  an ``<answer>`` block), else 0; the final reward is ``(accuracy + format_ratio * format) / (1 + format_ratio)``.

Not here: asking the judge and reading its answer (:mod:`.reading`), the method's plumbing (:mod:`.method`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import Field, Strict, field_validator, model_validator

from genrm.methods.captions import answer_text
from genrm.methods.options import MethodOptions

RewardMode = Literal["normalized_diff", "normalized_a_only", "a_only", "judgment_based", "raw_diff", "hall_vs_miss"]
"""How a judge's differences become a reward (see the module docstring)."""
REWARD_MODES: tuple[RewardMode, ...] = get_args(RewardMode)

Severity = Literal[1, 2, 3]

#: The source's default weight of an error of each severity (1 minor, 2 medium, 3 major).
DEFAULT_SEVERITY_WEIGHTS: dict[int, float] = {1: 1.0, 2: 1.25, 3: 1.6}

# Words of an error type that decide its severity when the judge gives none, most severe first (the source's lists).
_SEVERITY_WORDS: tuple[tuple[Severity, tuple[str, ...]], ...] = (
    (3, ("hallucination", "mismatch", "incorrect", "wrong", "nonexistent", "fabricated", "overreach")),
    (2, ("omission", "missing", "truncation", "incomplete", "partial", "error")),
    (1, ("style", "aesthetic", "misinterpretation", "subjective")),
)
_NO_ERROR = frozenset({"", "none", "na"})

# The source's hedge pattern. The look-behind keeps the slash alternative from being tried at every position inside
# a run of word characters (quadratic on a long word); a match can only start where a run starts, so the counts are
# the source's.
_HEDGES = re.compile(r"\b(?:or|and/or|possibly|appears to|might be|could be|likely)\b|(?<!\w)\w+/\w+", re.IGNORECASE)
_THINK_OPEN, _THINK_CLOSE = re.compile("<think>", re.I), re.compile("</think>", re.I)
_ANSWER_OPEN, _ANSWER_CLOSE = re.compile("<answer>", re.I), re.compile("</answer>", re.I)


class ClaimDiffConfig(MethodOptions):
    """The reward settings of the claimdiff method (the source's environment variables, same defaults); the method's
    options are these and two more (:class:`genrm.methods.claimdiff.method.ClaimDiffOptions`)."""

    mode: RewardMode = Field(
        "normalized_diff", description="how the differences become a reward (genrm.methods.claimdiff.rewards)"
    )
    severity_weighted: bool = Field(
        False, description="weight each error by its severity (USE_SEVERITY_WEIGHTED_REWARD)"
    )
    severity_weights: dict[Annotated[int, Strict(False)], float] = Field(  # JSON keys are strings
        default_factory=lambda: dict(DEFAULT_SEVERITY_WEIGHTS), description="weight of severity 1, 2 and 3 (each > 0)"
    )
    judge_severity: bool = Field(
        False,
        description="ask the judge for each error's severity and use it (USE_MODEL_JUDGE_SEVERITY); else it is "
        "inferred from the error type",
    )
    ambiguity_penalty: bool = Field(False, description="multiply by the hedging penalty (USE_AMBIGUITY_PENALTY)")
    ambiguity_decay: float = Field(0.1, ge=0.0, description="c of the hedging penalty")
    ambiguity_words_per_free: float = Field(90.0, gt=0.0, description="caption words per hedge that goes unpenalized")
    ambiguity_free: float | None = Field(None, ge=0.0, description="a fixed number of free hedges instead")
    max_error_diff: float = Field(
        10.0, gt=0.0, description="the error count (a_only) or difference (raw_diff) that maps to the worst reward"
    )
    reward_scale: float = Field(1.0, ge=0.0, description="multiplies the reward in [0, 1] before it is clipped")
    min_reward: float = Field(0.0, description="the low end of the range the reward is mapped onto")
    max_reward: float = Field(1.0, description="the high end of the range the reward is mapped onto")
    alpha: float = Field(2.0, description="normalized_a_only: the density exponent")
    epsilon: float = Field(0.05, ge=0.0, le=1.0, description="normalized_a_only: the floor")
    k: float = Field(4.0, gt=0.0, description="normalized_a_only: the absolute decay")
    d_max: int = Field(
        10, ge=1, description="normalized_a_only: the differences at which the difficulty bonus is full"
    )
    format_ratio: float = Field(
        0.0, ge=0.0, description="weight of the format part against the accuracy part (0: the reward is the accuracy)"
    )
    require_think: bool = Field(False, description="the format part asks for <think> and <answer> blocks")
    grounded_claims: bool = Field(
        True,
        description="leave out a difference whose claim the caption (or the reference) does not make, and give a "
        "caption with no content word the floor without asking the judge (genrm.methods.claimdiff.grounding; not in "
        "the source)",
    )

    @field_validator("severity_weights")
    @classmethod
    def _three_positive_weights(cls, weights: dict[int, float]) -> dict[int, float]:
        if sorted(weights) != [1, 2, 3] or min(weights.values()) <= 0:
            raise ValueError(f"must give a positive weight to each of 1, 2 and 3; got {weights}")
        return weights

    @model_validator(mode="after")
    def _range_in_order(self) -> ClaimDiffConfig:
        if self.max_reward < self.min_reward:
            raise ValueError(f"max_reward ({self.max_reward}) is below min_reward ({self.min_reward})")
        return self

    @property
    def max_weight(self) -> float:
        """The largest weight an error can count for: the largest severity weight when weighting, else 1."""
        return max(self.severity_weights.values()) if self.severity_weighted else 1.0

    @property
    def count_scale(self) -> float:
        """What ``normalized_a_only`` and ``a_only`` divide weighted counts by: the largest weight when it is above 1,
        else 1 (the source's rule, so weights all at or below 1 leave the counts as they are)."""
        return max(self.max_weight, 1.0)


def has_error(error_type: str) -> bool:
    """Whether a caption's error type names an error (not empty, ``none`` or ``na``, in any case)."""
    return error_type.strip().lower() not in _NO_ERROR


def infer_severity(error_type: str) -> Severity:
    """The severity of an error type from its words: 3 for a false claim (hallucination, mismatch, wrong, ...), 2 for
    a factual gap (omission, missing, truncation, ``*_error``), 1 for a matter of style; 2 when no word tells."""
    words = error_type.strip().lower()
    for severity, keys in _SEVERITY_WORDS:
        if any(key in words for key in keys):
            return severity
    return 2


@dataclass(frozen=True)
class ErrorCounts:
    """One caption's errors over the differences: how many, their weighted sum, and how many of each severity."""

    count: int = 0
    weighted: float = 0.0
    by_severity: tuple[int, int, int] = (0, 0, 0)


def count_errors(errors: Sequence[tuple[str, int | None]], config: ClaimDiffConfig) -> ErrorCounts:
    """The errors of one caption, from ``(error_type, judge's severity or None)`` per difference.

    The judge's severity counts only with ``judge_severity``; the weighted sum is the plain count unless
    ``severity_weighted``."""
    count, weighted, by_severity = 0, 0.0, [0, 0, 0]
    for error_type, judged in errors:
        if not has_error(error_type):
            continue
        severity = judged if config.judge_severity and judged in (1, 2, 3) else infer_severity(error_type)
        count += 1
        by_severity[severity - 1] += 1
        weighted += config.severity_weights[severity] if config.severity_weighted else 1.0
    return ErrorCounts(count, weighted, (by_severity[0], by_severity[1], by_severity[2]))


def normalized_a_only_reward(errors: float, differences: int, config: ClaimDiffConfig) -> float:
    """The ``normalized_a_only`` curve for ``errors`` (weighted when weighting) of caption A over ``differences``
    (>= 1); in (0, 1]."""
    differences = max(differences, 1)
    density = min(max(errors / (config.count_scale * differences), 0.0), 1.0)
    base = config.epsilon + (1 - config.epsilon) * (1 - density) ** config.alpha
    absolute = math.exp(-(errors / config.count_scale) / config.k)
    bonus = min(1.0, math.log(1 + differences) / math.log(1 + config.d_max))
    return base * absolute * (0.7 + 0.3 * bonus)


def map_to_range(base: float, config: ClaimDiffConfig) -> float:
    """``base`` (a reward in [0, 1] before scaling) scaled, clipped to [0, 1] and mapped onto the reward range."""
    scaled = min(max(base * config.reward_scale, 0.0), 1.0)
    return config.min_reward + scaled * (config.max_reward - config.min_reward)


@dataclass(frozen=True)
class DiffTally:
    """What the reward of a diff answer is computed from: both captions' errors, the judgments, the winner."""

    differences: int
    a: ErrorCounts
    b: ErrorCounts
    a_wins: int
    b_wins: int
    winner: Literal["A", "B", "tie"]


def error_difference(tally: DiffTally, config: ClaimDiffConfig) -> float:
    """The mode's signed error figure (the source's ``normalized_error_difference``): lower is better for caption A.

    Not for ``hall_vs_miss`` (see :func:`hall_vs_miss_base`)."""
    a, b, n, mode = tally.a.weighted, tally.b.weighted, tally.differences, config.mode
    if mode == "judgment_based":
        if n == 0:
            return 0.0
        shift = {"A": 0.1, "B": -0.1}.get(tally.winner, 0.0)
        return -min(1.0, max(-1.0, (tally.a_wins - tally.b_wins) / n + shift))
    if mode == "raw_diff":
        return a - b
    if mode == "a_only":
        return a
    if mode in ("normalized_diff", "normalized_a_only"):
        subtract = b if mode == "normalized_diff" else 0.0
        return (a - subtract) / (config.max_weight * n) if n else 0.0
    raise ValueError(f"error_difference has no meaning in mode {mode}")


def diff_base_reward(tally: DiffTally, config: ClaimDiffConfig) -> float:
    """The reward in [0, 1] of a diff answer before scaling, mapping and the hedging penalty (modes other than
    ``hall_vs_miss``)."""
    difference = error_difference(tally, config)
    if config.mode == "normalized_a_only":
        if tally.differences == 0:
            return 1.0
        return normalized_a_only_reward(tally.a.weighted, tally.differences, config)
    if config.mode == "a_only":
        ceiling = config.max_error_diff * config.count_scale
        return 1.0 - max(0.0, min(ceiling, difference)) / ceiling
    if config.mode == "raw_diff":
        difference = max(-config.max_error_diff, min(config.max_error_diff, difference)) / config.max_error_diff
    return 0.5 - 0.5 * max(-1.0, min(1.0, difference))


def hall_vs_miss_base(differences: int, hallucinations: int, missing: int) -> float:
    """``1 - (hallucinations + missing) / differences`` clipped to [0, 1]; 1 with no difference."""
    if differences == 0:
        return 1.0
    return 1.0 - max(0.0, min(1.0, (hallucinations + missing) / differences))


@dataclass(frozen=True)
class Hedging:
    """The hedges of a caption and the penalty they cost (1.0 when the penalty is off)."""

    count: int
    free: float
    penalty: float


def count_hedges(caption: str) -> int:
    """How many hedges (or, and/or, possibly, appears to, might be, could be, likely, x/y) ``caption`` has."""
    return sum(1 for _ in _HEDGES.finditer(caption))


def hedging(caption: str, config: ClaimDiffConfig) -> Hedging:
    """The hedges of ``caption`` and, with ``ambiguity_penalty``, ``exp(-c * max(0, count - free))``."""
    count = count_hedges(caption)
    if not config.ambiguity_penalty:
        return Hedging(count, 0.0, 1.0)
    if config.ambiguity_free is not None:
        free = config.ambiguity_free
    else:
        free = len(caption.split()) / config.ambiguity_words_per_free
    return Hedging(count, free, math.exp(-config.ambiguity_decay * max(0.0, count - free)))


def _has_block(response: str, opening: re.Pattern[str], closing: re.Pattern[str]) -> bool:
    start = opening.search(response)
    return start is not None and closing.search(response, start.end()) is not None


def format_score(response: str, config: ClaimDiffConfig) -> float:
    """1.0 when the response has the form asked for (a non-empty caption; with ``require_think`` a ``<think>``
    block and an ``<answer>`` block), else 0.0."""
    if config.require_think:
        return float(_has_block(response, _THINK_OPEN, _THINK_CLOSE) and _has_block(response, _ANSWER_OPEN,
                                                                                    _ANSWER_CLOSE))  # fmt: skip
    return float(bool(answer_text(response)))


def final_reward(accuracy: float, format_part: float, format_ratio: float) -> float:
    """``(accuracy + format_ratio * format) / (1 + format_ratio)``: the source's mix of the two parts."""
    return (accuracy + format_ratio * format_part) / (1.0 + format_ratio)
