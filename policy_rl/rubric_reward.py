"""The rubric reward for the policy's GRPO loop: judge each completion, then remap and aggregate over its group.

The reward of a response depends on the other responses to the same prompt: the remapping (eq. 2-3) stretches each
criterion's raw scores between the group's minimum and maximum. So the work is cut in two:

1. :meth:`RubricReward.outcomes` judges completions where they were generated and keeps, per completion, what
   aggregation needs: the raw score of each criterion (``None`` when unscored), the response-level format
   violations and the length rule. Judging is the expensive part and stays local to each process.
2. :func:`group_rewards` remaps and aggregates (``genrm.methods.rubric.aggregation.aggregate_group``) over whole
   groups.

Called as a TRL reward function, :class:`RubricReward` does both on the completions it is handed, with groups read
from consecutive rows of the same instance: right when each process holds whole groups (one process, or a batch
size that is a multiple of the group size on every process). When a group's completions are spread over processes,
:class:`policy_rl.trainer.RubricGRPOTrainer` gathers the outcomes of every process and recomputes the rewards over
the whole groups (see there for why at that place).

A completion whose judgement failed (the judge unreachable, an output that could not be read, a criterion nobody
scored) gets ``None``: TRL turns it into NaN and leaves it out of the group statistics; it is never a 0 or a 1.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from genrm.choices import DEFAULT_TAU
from genrm.methods.config import check_tau
from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group, length_conditional_mask
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.scoring import InstanceResult
from policy_rl.method_reward import INSTANCE_COLUMN, FailureStreak, completion_text

logger = logging.getLogger(__name__)


class InstanceScorer(Protocol):
    """Scores groups: one :class:`genrm.methods.rubric.scoring.InstanceResult` per instance, in order (an in-process
    judge, or the reward server through :class:`serving.client.RewardClient`)."""

    def __call__(self, instances: Sequence[Instance]) -> list[InstanceResult]: ...


@dataclass(frozen=True)
class Outcome:
    """What aggregation needs of one judged completion, or why it has none (``error``).

    Attributes:
        key: the group the completion belongs to (its instance id).
        slots: section and weight of each criterion, in rubric order.
        raw: raw score in [0, 1] of each criterion; None when unscored.
        violations: response-level format violations (empty when none).
        length_ok: whether the completion is within the task's length limits.
        error: why the completion could not be judged at all.
    """

    key: str
    slots: tuple[CriterionSlot, ...] = ()
    raw: tuple[float | None, ...] = ()
    violations: tuple[str, ...] = ()
    length_ok: bool = True
    error: str | None = None


def group_rewards(
    outcomes: Sequence[Outcome], group_size: int | None = None, tau: float = DEFAULT_TAU
) -> list[float | None]:
    """The reward of every completion, remapped and aggregated over its group (``None`` when it cannot be known).

    Args:
        outcomes: the judged completions, groups contiguous.
        group_size: completions per group (TRL's ``num_generations``): group ``i // group_size``; None to take runs
            of consecutive outcomes with the same key.
        tau: remapping threshold in (0, 1).
    """
    if group_size is not None and (group_size < 1 or len(outcomes) % group_size):
        raise ValueError(f"{len(outcomes)} completions do not split into groups of {group_size}")
    rewards: list[float | None] = []
    for group in _groups(outcomes, group_size):
        judged = [o for o in group if o.error is None]
        if judged and any(o.slots != judged[0].slots for o in judged):
            raise ValueError(f"group {group[0].key!r} mixes rubrics: its completions were not generated together")
        aggregates = iter(
            aggregate_group(judged[0].slots, [o.raw for o in judged], [o.violations for o in judged],
                            [o.length_ok for o in judged], tau) if judged else []
        )  # fmt: skip
        rewards.extend(None if o.error is not None else next(aggregates).reward for o in group)
    return rewards


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


@dataclass(frozen=True)
class LengthRule:
    """Length-conditional reward masking: a completion whose length over the reference answer's length is outside
    ``[low, high]`` gets reward 0 (lengths in characters; instances without a reference answer are not masked)."""

    low: float = 0.5
    high: float = 2.0

    def allows(self, completion: str, instance: Instance) -> bool:
        """Whether ``completion`` passes the rule for ``instance``."""
        if not instance.reference_answer:
            return True
        return length_conditional_mask(len(completion), len(instance.reference_answer), self.low, self.high)


class RubricReward:
    """A TRL reward function (``reward_funcs=[RubricReward(scorer)]``) scoring completions with the rubric of
    their prompt's instance (the ``genrm_instance`` column, see :mod:`policy_rl.data`).

    Args:
        scorer: scores groups (:mod:`policy_rl.scorers`: a judge in process, or the reward server).
        tau: remapping threshold in (0, 1).
        length_rule: optional length-conditional masking against the reference answer.
        name: the name TRL logs the reward under.
        max_failed_batches: stop (:class:`JudgeDown`) after this many batches in a row in which no completion could
            be judged: a judge that is down should end the run, not let it train on nothing.
    """

    def __init__(
        self,
        scorer: InstanceScorer,
        tau: float = DEFAULT_TAU,
        length_rule: LengthRule | None = None,
        name: str = "rubric",
        max_failed_batches: int = 3,
    ) -> None:
        check_tau(tau)
        self.scorer, self.tau, self.length_rule = scorer, tau, length_rule
        self.__name__ = name
        self.failures = FailureStreak(max_failed_batches)
        self.pending: list[Outcome] = []

    def outcomes(self, completions: Sequence[Any], instances: Sequence[str | dict[str, Any]]) -> list[Outcome]:
        """Judge each completion against its instance; consecutive completions of one instance are judged as one
        group (so a judge shares their prompt prefix). Never raises on what the policy wrote."""
        texts = [completion_text(c) for c in completions]
        outcomes: list[Outcome] = []
        start = 0
        for raw, run in itertools.groupby(instances):  # consecutive rows of one instance: parsed once, judged once
            end = start + len(list(run))
            instance = _instance(raw)
            if isinstance(instance, str):  # a bad instance column: every completion of it fails, with the reason
                outcomes.extend([Outcome("?", error=instance)] * (end - start))
            else:
                outcomes.extend(self._judge(instance, texts[start:end]))
            start = end
        return outcomes

    def _judge(self, instance: Instance, texts: list[str]) -> list[Outcome]:
        group = instance.model_copy(update={"responses": texts})
        try:
            (result,) = self.scorer([group])
        except Exception as exc:  # the judge is unreachable or broke: these completions have no reward
            logger.warning("judging %s failed: %s", instance.id, exc)
            return [Outcome(instance.id, error=f"judge failed: {exc}")] * len(texts)
        if result.error is not None:
            return [Outcome(instance.id, error=result.error)] * len(texts)
        outcomes = []
        for text, record in zip(texts, result.records, strict=True):
            slots = tuple(CriterionSlot(c.section, c.weight) for c in record.criteria)
            length_ok = record.length_ok and (self.length_rule is None or self.length_rule.allows(text, instance))
            raw = tuple(c.score for c in record.criteria)
            outcomes.append(Outcome(instance.id, slots, raw, tuple(record.format_violations), length_ok))
        return outcomes

    def rewards(self, outcomes: Sequence[Outcome], group_size: int | None = None) -> list[float | None]:
        """Rewards of judged completions over their groups (:func:`group_rewards` with this reward's ``tau``)."""
        return group_rewards(outcomes, group_size, self.tau)

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        *,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        """TRL's reward function contract: one reward (or None) per completion, from the ``genrm_instance`` column.

        Batch metrics go to ``log_metric`` (:func:`outcome_metrics`); each completion's raw criterion scores (or its
        failure) go to ``log_extra``, a column of TRL's completions table.
        """
        if INSTANCE_COLUMN not in columns:
            raise ValueError(f"the dataset has no {INSTANCE_COLUMN!r} column: build it with policy_rl.data")
        self.pending = self.outcomes(completions, columns[INSTANCE_COLUMN])
        self.failures.count([o.error for o in self.pending if o.error is not None], len(self.pending))
        rewards = self.rewards(self.pending)
        if log_metric is not None:
            for name, value in outcome_metrics(self.pending, rewards).items():
                log_metric(f"{self.__name__}/{name}", value)
        if log_extra is not None:
            log_extra(f"{self.__name__}_criteria", [o.error or json.dumps(list(o.raw)) for o in self.pending])
        return rewards


def outcome_metrics(outcomes: Sequence[Outcome], rewards: Sequence[float | None]) -> dict[str, float]:
    """Per-batch components worth watching: failures, unknown rewards, mean raw score per criterion position,
    format and length gates."""
    metrics = {
        "judge_failed": sum(o.error is not None for o in outcomes) / max(len(outcomes), 1),
        "reward_unknown": sum(r is None for r in rewards) / max(len(rewards), 1),
    }
    judged = [o for o in outcomes if o.error is None]
    if judged:
        metrics["format_violation"] = sum(bool(o.violations) for o in judged) / len(judged)
        metrics["length_masked"] = sum(not o.length_ok for o in judged) / len(judged)
        for section in ("essential", "additional"):
            scores = [s for o in judged for slot, s in zip(o.slots, o.raw, strict=True)
                      if slot.section == section and s is not None]  # fmt: skip
            if scores:
                metrics[f"raw_{section}"] = sum(scores) / len(scores)
    return {k: v for k, v in metrics.items() if not math.isnan(v)}


def _instance(raw: str | dict[str, Any]) -> Instance | str:
    try:
        return Instance.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
    except (ValueError, TypeError) as exc:
        return f"bad {INSTANCE_COLUMN} value: {exc}"
