"""Methods with several rewards per response (reward columns), and the decoupled group normalization that trains on
them (c-GDPO: BalCapRL eq. 2.4-2.6, after GDPO).

A method with columns (:class:`HasRewardColumns`) judges each response once and reports several rewards for it (the
balcap method: precision, recall, linguistic quality), each with a default weight. Its scalar ``rewards`` are for
callers that take one number per response; a trainer that can take several (TRL's ``reward_funcs`` with
``multi_objective_aggregation: normalize_then_sum``, or verl through :func:`decoupled_advantages` in the reward
function) gets the columns.

**Why decoupled.** Summing the rewards before normalizing them over the group makes a response's advantage depend on
its reward vector only through the weighted sum: two responses whose sums tie are the same to the optimizer whatever
their trade-off (the source's proposition 1). Normalizing each column over the group first keeps them apart.

:func:`decoupled_advantages` is TRL's ``normalize_then_sum`` arithmetic (``GRPOTrainer``, TRL 1.x), written out so
that a trainer without it (verl) computes the same figures: per group and column, ``(r - mean) / (std + eps)`` with
the sample standard deviation (Bessel's correction, as ``torch.std``) and ``eps = 1e-4``; the weighted sum over
columns; then one normalization over the whole batch. An unknown value (None) is left out of its column's statistics
and adds nothing to the sum; a response with no known value at all gets advantage 0. The source writes ``σ`` without
saying which standard deviation; TRL's choice is taken so that the two trainers agree.

Not here: what a method's columns mean (its module), how a trainer is set up with them (``policy_rl``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

#: TRL's constant in ``normalize_then_sum`` (added to each standard deviation).
EPS = 1e-4


@runtime_checkable
class HasRewardColumns(Protocol):
    """A method that reports several rewards per response.

    Attributes:
        reward_columns: column name -> its weight in the advantage (the method's options set them), in the order a
            trainer lists them.
    """

    reward_columns: Mapping[str, float]

    def column_values(self, result: Any, index: int) -> dict[str, float | None]:
        """Response ``index``'s value in each column of ``result`` (None where unknown)."""
        ...


@runtime_checkable
class PenalizesAdvantages(Protocol):
    """A method that subtracts a penalty from a response's advantage after normalization (the balcap method's linear
    length rule, BalCapRL A.5), which no reward value can express."""

    def advantage_penalty(self, result: Any, index: int) -> float:
        """What to subtract from response ``index``'s normalized advantage (>= 0; 0 for none)."""
        ...

    def advantage_penalty_setting(self) -> str | None:
        """The setting that makes this method penalize advantages (e.g. ``length_rule linear``), None when its
        settings subtract nothing."""
        ...


def refuse_advantage_penalty(method: Any, consumer: str, instead: str) -> None:
    """Raise ValueError when ``method`` is set to subtract a penalty from the normalized advantage, which
    ``consumer`` (a trainer or protocol that takes rewards only) cannot apply: the penalty would be dropped without
    a word. ``instead`` says what to run instead."""
    setting = method.advantage_penalty_setting() if isinstance(method, PenalizesAdvantages) else None
    if setting is not None:
        raise ValueError(
            f"the {method.name} method with {setting} subtracts a penalty from the normalized advantage, "
            f"which {consumer} cannot apply: a reward cannot carry it; {instead}"
        )


def _std(values: Sequence[float]) -> float:
    # The sample standard deviation (torch.std, TRL's nanstd); 0 for fewer than two values, as a column with no spread.
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def group_normalized_sum(
    rewards: Sequence[Sequence[float | None]], weights: Sequence[float], eps: float = EPS
) -> list[float | None]:
    """Eq. 2.4-2.5 for one group: ``A_sum = sum_k w_k (r_k - mean_k) / (std_k + eps)``; None for a response with no
    known value.

    Args:
        rewards: G x K: per response, its value in each of the K columns (None where unknown).
        weights: K weights.
        eps: added to each column's standard deviation (> 0).
    """
    k = len(weights)
    if any(len(row) != k for row in rewards):
        raise ValueError(f"every response needs one value per reward column ({k})")
    sums: list[float | None] = [None if all(v is None for v in row) else 0.0 for row in rewards]
    for j in range(k):
        known = [row[j] for row in rewards if row[j] is not None]
        if not known:
            continue
        mean, std = sum(known) / len(known), _std(known)  # type: ignore[arg-type]
        for i, row in enumerate(rewards):
            value = row[j]
            if value is not None and sums[i] is not None:
                sums[i] += weights[j] * (value - mean) / (std + eps)  # type: ignore[operator]
    return sums


def batch_normalized(values: Sequence[float | None], eps: float = EPS) -> list[float]:
    """Eq. 2.6: ``(A - mean) / (std + eps)`` over the batch (known values only); an unknown one becomes 0."""
    known = [v for v in values if v is not None]
    if not known:
        return [0.0] * len(values)
    mean, std = sum(known) / len(known), _std(known)
    return [0.0 if v is None else (v - mean) / (std + eps) for v in values]


def decoupled_advantages(
    groups: Sequence[Sequence[Sequence[float | None]]], weights: Sequence[float], eps: float = EPS
) -> list[list[float]]:
    """c-GDPO advantages of a batch (eq. 2.4-2.6): each group normalized per column, summed with ``weights``, then
    normalized over the batch. ``groups[g][i][k]`` is response ``i`` of group ``g`` in column ``k``; the result has
    the same shape less the column axis."""
    sums = [group_normalized_sum(group, weights, eps) for group in groups]
    flat = batch_normalized([value for group in sums for value in group], eps)
    out, start = [], 0
    for group in sums:
        out.append(flat[start : start + len(group)])
        start += len(group)
    return out


def summed_advantages(
    groups: Sequence[Sequence[Sequence[float | None]]], weights: Sequence[float], eps: float = EPS
) -> list[list[float]]:
    """Vanilla GRPO's advantages of a batch, for comparison: the weighted sum of the columns, normalized over each
    group (``(s - mean) / (std + eps)``)."""
    out = []
    for group in groups:
        sums = [None if all(v is None for v in row) else sum(w * v for w, v in zip(weights, row, strict=True)
                if v is not None) for row in group]  # fmt: skip
        known = [s for s in sums if s is not None]
        mean, std = (sum(known) / len(known), _std(known)) if known else (0.0, 0.0)
        out.append([0.0 if s is None else (s - mean) / (std + eps) for s in sums])
    return out
