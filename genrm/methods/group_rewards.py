"""Methods whose reward of a response depends on its whole group, and their rewards computed over groups put together
from parts.

A trainer may judge one group's responses in parts, where each part was generated (TRL hands every process a slice of
the batch, and a group can straddle two slices), yet the reward of a response depends on the others (the rubric
method's remap, RLR3 eq. 2-3, stretches each criterion's scores between the group's extremes). A method with
:class:`RewardsOverGroups` splits its scoring in two so that such a trainer gets the rewards of whole groups:

1. :meth:`RewardsOverGroups.outcome_values`: from the result of one part, per response, what its reward needs (small
   and picklable: it travels between processes);
2. :meth:`RewardsOverGroups.group_rewards`: the rewards of one whole group from those values.

:func:`rewards_over_groups` is the driver (groups of a fixed size, or runs of one key; a response that could not be
judged has no value and gets no reward). Not here: how a trainer gathers the parts (``policy_rl.trainer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Outcome:
    """One judged response, as a trainer carries it to its group: the group it belongs to (``key``, its instance id),
    and the method's value for it, or why it has none (``error``)."""

    key: str
    value: Any = None
    error: str | None = None


@runtime_checkable
class RewardsOverGroups(Protocol):
    """A method whose reward of a response depends on the other responses of its group (see the module docstring)."""

    def outcome_values(self, result: Any) -> list[Any]:
        """Per response of ``result`` (a result of this method without ``error``), what its reward needs."""
        ...

    def group_rewards(self, values: Sequence[Any]) -> list[float | None]:
        """The rewards of one whole group's judged responses (None where unknown); raises ValueError for values that
        cannot be one group."""
        ...

    def outcome_logs(self, values: Sequence[Any]) -> dict[str, float]:
        """Batch figures worth logging over judged responses' values (means in [0, 1])."""
        ...


def _groups(outcomes: Sequence[Outcome], group_size: int | None) -> list[Sequence[Outcome]]:
    if group_size is not None:
        return [outcomes[i : i + group_size] for i in range(0, len(outcomes), group_size)]
    groups: list[list[Outcome]] = []
    for outcome in outcomes:
        if groups and groups[-1][0].key == outcome.key:
            groups[-1].append(outcome)
        else:
            groups.append([outcome])
    return groups


def rewards_over_groups(
    method: RewardsOverGroups, outcomes: Sequence[Outcome], group_size: int | None = None
) -> list[float | None]:
    """The reward of every outcome over its whole group (None for one that could not be judged or whose reward is
    unknown).

    Args:
        method: the method that judged them.
        outcomes: the judged responses, groups contiguous.
        group_size: responses per group (TRL's ``num_generations``): group ``i // group_size``; None to take runs of
            consecutive outcomes with the same key.

    Raises ValueError when the outcomes do not split into groups of ``group_size``, or a group's values cannot be one
    group (the method says why).
    """
    if group_size is not None and (group_size < 1 or len(outcomes) % group_size):
        raise ValueError(f"{len(outcomes)} completions do not split into groups of {group_size}")
    rewards: list[float | None] = []
    for group in _groups(outcomes, group_size):
        judged = [o.value for o in group if o.error is None]
        try:
            computed = iter(method.group_rewards(judged) if judged else [])
        except ValueError as exc:
            raise ValueError(f"group {group[0].key!r}: {exc}") from None
        rewards.extend(None if o.error is not None else next(computed) for o in group)
    return rewards
