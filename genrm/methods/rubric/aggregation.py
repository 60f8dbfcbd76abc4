"""From criterion scores to one reward per response: group-wise remapping and hierarchical aggregation.

The method's rules (RLR3, eq. 2-4), for one prompt's group of G responses and its K criteria:

1. **Remap** each criterion's raw scores over the group (threshold ``tau``, 0.5 by default). The lower bound is 0
   when some response fails (min < tau), else 0.5; the upper bound is 1 when some response passes (max > tau), else
   0.5. Equal scores all map to the upper bound when above tau, else to the lower bound; otherwise scores are
   min-max stretched into [lower, upper]. A group that all fails stays at or below 0.5 (only its best response
   reaches 0.5, partial credit), one that all passes stays at or above 0.5, and within a group one edit and ten edits
   become distinguishable.
2. **Weighted sum** ``r = sum_k w_k * s~_k`` with the weights (1-3) normalized to sum to 1 over all criteria.
3. **Content mask**: 0 when an essential criterion has s~ < 0.5 or when two or more essential criteria are only
   partially met (0.5 <= s~ < 1); else 1. Additional criteria can never make up for an essential failure.
4. **Format mask**: 0 on a response-level violation (repetition loop, language mixing; see
   ``genrm.methods.format_checks``).
5. **Length rule**: a response longer than the task's maximum gets 0.
6. Reward = content mask x format mask x r (x the length rule).

Unscored criteria (a fuzzy criterion under the rule backend, a failed judge call) have score ``None``. They are left
out of the group statistics of step 1, and a response's reward is ``None`` whenever it depends on them. It is 0 only
when a rule that does not depend on them already decides it (a format or length violation, or a scored essential
criterion that fails), and the explanation says so.

Also here, for the policy side: the length-conditional mask of the rubric method's length rule (c-GDPO is in
:mod:`genrm.methods.columns`, RubiCap's severity-weighted pass rate in :mod:`genrm.methods.rubicap.rewards`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from genrm.choices import DEFAULT_TAU
from genrm.methods.rubric.models import SectionName as Section

_DIGITS = 12


def remap_group(scores: Sequence[float | None], tau: float = DEFAULT_TAU) -> list[float | None]:
    """Remap one criterion's raw scores (in [0, 1]) over the responses of a group (eq. 2-3); ``None`` stays ``None``.

    Args:
        scores: the criterion's raw score for each response of the group; ``None`` for unscored responses.
        tau: the pass threshold in (0, 1).

    Returns:
        The remapped scores, in the same order, each in [0, 1].
    """
    known = [s for s in scores if s is not None]
    if not known:
        return [None] * len(scores)
    low, high = min(known), max(known)
    lower = 0.0 if low < tau else 0.5
    upper = 1.0 if high > tau else 0.5
    if low == high:
        value = upper if low > tau else lower
        return [None if s is None else value for s in scores]
    span = high - low
    # Rounded so that float noise never moves a score across the 0.5 and 1.0 lines of the content mask
    # ((0.6 - 0.2) / 0.8 is 0.49999999999999994 in floating point).
    return [None if s is None else round((s - low) / span * (upper - lower) + lower, _DIGITS) for s in scores]


def content_mask(essential: Sequence[float]) -> tuple[int, str]:
    """The content mask (eq. 4) from the remapped scores of the essential criteria, with the reason in words."""
    failed = [i for i, s in enumerate(essential) if s < 0.5]
    if failed:
        return 0, f"essential criteria {_numbers(failed)} fail (remapped score < 0.5)"
    partial = [i for i, s in enumerate(essential) if s < 1.0]
    if len(partial) >= 2:
        return 0, f"essential criteria {_numbers(partial)} are only partially met (two or more)"
    if partial:
        return 1, f"essential criterion {_numbers(partial)} is partially met (one is allowed)"
    return 1, "every essential criterion is fully met"


def _numbers(indices: Sequence[int]) -> str:
    return ", ".join(f"#{i + 1}" for i in indices)


def normalized_weights(weights: Sequence[float]) -> list[float]:
    """Weights scaled to sum to 1; raises ValueError when they are empty, negative or all zero."""
    total = sum(weights)
    if not weights or any(w < 0 for w in weights) or total <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {list(weights)}")
    return [w / total for w in weights]


@dataclass(frozen=True, slots=True)
class CriterionSlot:
    """What aggregation needs to know of a criterion: its section and its weight (1-3)."""

    section: Section
    weight: float


@dataclass(slots=True)
class Aggregate:
    """One response's reward and how it came about.

    Attributes:
        reward: final reward in [0, 1], or None when it depends on an unscored criterion.
        base: the weighted sum r of the remapped scores, or None when a criterion is unscored.
        remapped: the remapped score of each criterion (None when unscored).
        content_mask, format_mask, length_ok: the three gates; content_mask is None when undecided.
        explanation: one sentence per rule that mattered.
    """

    reward: float | None
    base: float | None
    remapped: list[float | None]
    content_mask: int | None
    format_mask: int
    length_ok: bool
    explanation: list[str] = field(default_factory=list)


def aggregate_response(
    slots: Sequence[CriterionSlot],
    remapped: Sequence[float | None],
    format_violations: Sequence[str] = (),
    length_ok: bool = True,
) -> Aggregate:
    """Aggregate one response's remapped criterion scores into its reward (steps 2-6 of the module docstring)."""
    weights = normalized_weights([slot.weight for slot in slots])
    format_mask = 0 if format_violations else 1
    notes = [f"format violation: {v}" for v in format_violations]
    if not length_ok:
        notes.append("the response is outside the task's length limits: reward 0")

    scored_essential = [(i, s) for i, (slot, s) in enumerate(zip(slots, remapped, strict=True))
                        if slot.section == "essential" and s is not None]  # fmt: skip
    unscored = [i for i, s in enumerate(remapped) if s is None]
    if unscored:
        one = len(unscored) == 1
        notes.append(f"{'criterion' if one else 'criteria'} {_numbers(unscored)} {'is' if one else 'are'} unscored")
        mask_known, reason = content_mask([s for _, s in scored_essential])
        # Only a failure among the scored essentials decides the mask without the unscored ones.
        mask = 0 if mask_known == 0 else None
        if mask == 0:
            notes.append(f"content mask 0: {reason}")
        decided_zero = mask == 0 or format_mask == 0 or not length_ok
        if decided_zero:
            notes.append("reward 0 whatever the unscored criteria would score")
        else:
            notes.append("reward unknown: it depends on the unscored criteria")
        return Aggregate(0.0 if decided_zero else None, None, list(remapped), mask, format_mask, length_ok, notes)

    base = sum(w * s for w, s in zip(weights, remapped, strict=True))
    mask, reason = content_mask([s for _, s in scored_essential])
    notes.insert(0, f"content mask {mask}: {reason}")
    reward = mask * format_mask * (1.0 if length_ok else 0.0) * base
    return Aggregate(reward, base, list(remapped), mask, format_mask, length_ok, notes)


def aggregate_group(
    slots: Sequence[CriterionSlot],
    raw_scores: Sequence[Sequence[float | None]],
    format_violations: Sequence[Sequence[str]] | None = None,
    length_ok: Sequence[bool] | None = None,
    tau: float = DEFAULT_TAU,
) -> list[Aggregate]:
    """Rewards of a group of responses to one prompt.

    Args:
        slots: the rubric's criteria, in order (section and weight).
        raw_scores: per response, the raw score in [0, 1] of each criterion (None when unscored).
        format_violations: per response, the response-level violations found (empty when none).
        length_ok: per response, whether it is within the task's maximum length.
        tau: the remapping threshold in (0, 1).

    Returns:
        One Aggregate per response, in order.
    """
    n = len(raw_scores)
    format_violations = format_violations if format_violations is not None else [()] * n
    length_ok = length_ok if length_ok is not None else [True] * n
    for i, row in enumerate(raw_scores):
        if len(row) != len(slots):
            raise ValueError(f"response {i} has {len(row)} criterion scores; the rubric has {len(slots)} criteria")
    columns = [remap_group([row[k] for row in raw_scores], tau) for k in range(len(slots))]
    return [
        aggregate_response(slots, [columns[k][i] for k in range(len(slots))], format_violations[i], length_ok[i])
        for i in range(n)
    ]


#: The length band of BalCapRL's gate, ``(low, high)``: a length from half to twice the reference's.
LENGTH_BAND = (0.5, 2.0)


def length_conditional_mask(
    length: float, reference_length: float, low: float = LENGTH_BAND[0], high: float = LENGTH_BAND[1]
) -> bool:
    """BalCapRL's two-sided length gate: True when ``low <= length / reference_length <= high``.

    Lengths are in any common unit (tokens or characters); a reward is kept when this is True and set to 0 otherwise.
    """
    if reference_length <= 0:
        raise ValueError(f"reference_length must be positive, got {reference_length}")
    if not 0 <= low <= high:
        raise ValueError(f"need 0 <= low <= high, got low={low}, high={high}")
    return low <= length / reference_length <= high
