"""The rubicap method's reward (RubiCap section 3.3) and its Likert baselines (appendix C).

- **Rubric reward** ``G = sum_m w_m y_m / sum_m w_m``: ``y_m`` is the judge's binary verdict on criterion m (1 when
  fully satisfied), ``w_m`` its severity (1, 2, 3). The share of the student's diagnosed gaps a caption closes,
  weighted by severity, in [0, 1]. No group remap and no essential gate: the criteria are already the gaps.
- **Likert baselines**: the judge's 0-10 score divided by 10 (Direct-Likert without a reference, Reference-Likert
  with one).

Not here: the judge's prompts (:mod:`.prompts`), reading its answers (:mod:`.reading`).
"""

from __future__ import annotations

from collections.abc import Sequence


def severity_weighted_mean(satisfied: Sequence[float], weights: Sequence[float]) -> float:
    """G: the severity-weighted share of criteria satisfied, ``sum w_m y_m / sum w_m``, in [0, 1].

    Args:
        satisfied: per criterion, 1 when fully satisfied and 0 otherwise (values in [0, 1] are weighted as given).
        weights: per criterion, its severity weight (1 minor, 2 important, 3 critical); positive.
    """
    if len(satisfied) != len(weights) or not weights or min(weights) <= 0:
        raise ValueError(f"need one positive weight per criterion, got {list(weights)} for {len(satisfied)}")
    return sum(w * y for w, y in zip(weights, satisfied, strict=True)) / sum(weights)


def likert_reward(score: int) -> float:
    """A Likert baseline's reward: its 0-10 score over 10."""
    return score / 10
