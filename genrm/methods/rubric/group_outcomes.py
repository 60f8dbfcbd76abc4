"""The rubric method's rewards over whole groups (:class:`genrm.methods.group_rewards.RewardsOverGroups`): what one
judged response carries to its group (its criteria's raw scores and the gates), and the group's rewards from them
(the remap, eq. 2-3, and the masks: :func:`.aggregation.aggregate_group`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group
from genrm.methods.rubric.scoring import InstanceResult

_SECTIONS = ("essential", "additional")


@dataclass(frozen=True)
class RubricOutcome:
    """What the reward of one judged response needs.

    Attributes:
        slots: section and weight of each criterion, in rubric order.
        raw: raw score in [0, 1] of each criterion; None when unscored.
        violations: response-level format violations (empty when none).
        length_ok: whether the response is within the task's length limits.
    """

    slots: tuple[CriterionSlot, ...]
    raw: tuple[float | None, ...]
    violations: tuple[str, ...] = ()
    length_ok: bool = True


def outcome_values(result: InstanceResult) -> list[RubricOutcome]:
    """Per response of ``result``, its :class:`RubricOutcome`."""
    return [
        RubricOutcome(tuple(CriterionSlot(c.section, c.weight) for c in record.criteria),
                      tuple(c.score for c in record.criteria), tuple(record.format_violations), record.length_ok)
        for record in result.records
    ]  # fmt: skip


def group_rewards(values: Sequence[RubricOutcome], tau: float) -> list[float | None]:
    """The rewards of one whole group's judged responses, remapped with threshold ``tau`` in (0, 1); raises
    ValueError when they were judged against different rubrics."""
    if any(v.slots != values[0].slots for v in values):
        raise ValueError("it mixes rubrics: its completions were not generated together")
    aggregates = aggregate_group(values[0].slots, [v.raw for v in values], [v.violations for v in values],
                                 [v.length_ok for v in values], tau)  # fmt: skip
    return [a.reward for a in aggregates]


def outcome_logs(values: Sequence[RubricOutcome]) -> dict[str, float]:
    """The share of responses with a format violation and over the length limits, and the mean raw score of each
    rubric section's scored criteria (``raw_essential``, ``raw_additional``)."""
    logs = {
        "format_violation": sum(bool(v.violations) for v in values) / len(values),
        "length_masked": sum(not v.length_ok for v in values) / len(values),
    }
    for section in _SECTIONS:
        scores = [s for v in values for slot, s in zip(v.slots, v.raw, strict=True)
                  if slot.section == section and s is not None]  # fmt: skip
        if scores:
            logs[f"raw_{section}"] = sum(scores) / len(scores)
    return logs
