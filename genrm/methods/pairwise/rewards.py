"""The pairwise judge's training rewards (MJ1 eq. 2) and its group advantages (eq. 3).

- **Format** ``R_format`` in [0, 0.2]: ``0.2 / 11`` for each of the eleven tags that is well formed
  (:mod:`.reading`).
- **Correctness** ``R_correct`` in {0, 1}: the sign of ``s_A - s_B`` agrees with the label (ties are not answers).
- **Consistency** ``R_cons`` in {0, 1}: the judgement resumed on the swapped pair (:mod:`.swap`) prefers the same
  response, now in the other position, *and* that response is the labelled one. The source says the preference must
  "correctly invert"; a consistency that ignored the label would pay a judge for being wrong in both orders, so this
  follows J1, which rewards a correct verdict under both orderings.
- **Total** ``R = R_format + R_correct + R_cons``, and 0 when the original answer has no usable scores, whatever its
  format: no reward without a judgement.

**Advantages** (eq. 3): each completion and its swapped continuation join one group of 2G; ``A_i = R_i - mean(R)``,
with no division by the standard deviation; sequences with ``|A_i| <= 0.01`` are left out of the update, and a group
whose original completions are all wrong is skipped entirely (so format alone is never what is learnt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from genrm.methods.pairwise.models import Side
from genrm.methods.pairwise.prompts import TAGS
from genrm.methods.pairwise.reading import PairJudgement

FORMAT_MAX = 0.2
#: Advantages at or below this size are not worth a forward-backward pass (the source's filter).
MIN_ADVANTAGE = 0.01


def format_reward(judgement: PairJudgement) -> float:
    """R_format: 0.2 / 11 per well-formed tag, in [0, 0.2]."""
    return min(FORMAT_MAX, FORMAT_MAX / len(TAGS) * sum(judgement.tags.values()))


def correctness(judgement: PairJudgement, label: Side) -> float:
    """R_correct: 1 when the judgement prefers the labelled response, else 0 (also without scores)."""
    return float(judgement.preference == label)


def consistency(judgement: PairJudgement, swapped: PairJudgement, label: Side) -> float:
    """R_cons: 1 when both the judgement and the one on the swapped pair prefer the labelled response."""
    flipped: Side = "B" if label == "A" else "A"
    return float(judgement.preference == label and swapped.preference == flipped)


def total_reward(judgement: PairJudgement, swapped: PairJudgement, label: Side) -> float:
    """R = R_format + R_correct + R_cons, or 0 when the judgement has no usable scores; in [0, 2.2]."""
    if judgement.scores is None:
        return 0.0
    return format_reward(judgement) + correctness(judgement, label) + consistency(judgement, swapped, label)


@dataclass(frozen=True)
class GroupAdvantages:
    """The advantages of one group of originals and their swapped continuations.

    Attributes:
        advantages: one per sequence, the originals first, then their continuations in the same order.
        train: per sequence, whether it enters the update (``|A| > 0.01`` and the group not skipped).
        skipped: the group's originals were all wrong, so nothing of it is trained on.
    """

    advantages: list[float]
    train: list[bool]
    skipped: bool


def group_advantages(
    originals: Sequence[float], continuations: Sequence[float], originals_correct: Sequence[bool]
) -> GroupAdvantages:
    """Eq. 3 over the pooled group (see the module docstring)."""
    if len(originals) != len(continuations) or len(originals) != len(originals_correct) or not originals:
        raise ValueError("need one continuation and one correctness flag per original completion")
    rewards = [*originals, *continuations]
    mean = sum(rewards) / len(rewards)
    advantages = [r - mean for r in rewards]
    skipped = not any(originals_correct)
    return GroupAdvantages(advantages, [not skipped and abs(a) > MIN_ADVANTAGE for a in advantages], skipped)
