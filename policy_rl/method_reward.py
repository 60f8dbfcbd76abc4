"""Rewards of any reward method for the policy's RL loop: completions in, one reward per completion out.

Each completion comes with its prompt's instance (the ``genrm_instance`` column, JSON of the method's instance model:
see :mod:`policy_rl.data`). The completions of one group are scored together (the method may compare them, as the
rubric method's remap does), by a scorer (:mod:`policy_rl.scorers`: the method run in this process, or the reward
server), and each completion gets its group result's reward, as the method computed it; nothing is recomputed here.

Rows of a group are found by a key (the instance id, or a caller's own group id), not by their place, so a batch
whose rows were reordered is still scored group by group. A group must be whole in the batch handed over: TRL's
reward function sees one process's slice (whole groups when ``per_device_train_batch_size`` is a multiple of
``num_generations``); verl's batch reward function sees the whole batch. For a method whose rewards depend on the
whole group (:class:`genrm.methods.group_rewards.RewardsOverGroups`, the rubric method's remap), each batch's
per-response outcomes are kept (:attr:`MethodReward.pending`), and ``genrm rl`` gathers them from every process and
recomputes the rewards over whole groups (:class:`policy_rl.trainer.MethodGRPOTrainer`), whatever the batch sizes.

A completion whose group could not be scored, or whose reward the method left unknown, gets ``None`` with the reason;
it is never a 0 or a 1.

**Reward columns.** A method with several rewards per response (:class:`genrm.methods.columns.HasRewardColumns`, the
balcap method) gives TRL one reward function per column (:meth:`MethodReward.columns`). TRL calls them one after the
other on the same batch; the first call scores the batch (one judge call per completion), the others read the same
results, so the columns never cost more judging than the scalar reward.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from genrm.methods.base import GroupResult, RewardMethod
from genrm.methods.columns import HasRewardColumns, PenalizesAdvantages
from genrm.methods.completions import completion_text
from genrm.methods.group_rewards import Outcome, RewardsOverGroups, rewards_over_groups

logger = logging.getLogger(__name__)

#: The dataset column that carries each prompt's instance as a JSON string.
INSTANCE_COLUMN = "genrm_instance"


class GroupScorer(Protocol):
    """Scores groups: one result of the method per instance, in order (an in-process judge, or the reward server)."""

    def __call__(self, instances: Sequence[BaseModel]) -> list[GroupResult]: ...


@dataclass(frozen=True)
class RowScore:
    """One completion's reward (None when unknown), why it is unknown, and the figures its method logs with it.

    ``failed``: its group could not be judged at all (the judge unreachable or broken, a bad instance). ``outcome``:
    what its reward over a whole group needs (:mod:`genrm.methods.group_rewards`), its value set for a method with
    rewards over groups."""

    reward: float | None
    error: str | None = None
    extra: dict[str, float] = field(default_factory=dict)
    columns: dict[str, float | None] = field(default_factory=dict)
    penalty: float = 0.0
    failed: bool = False
    outcome: Outcome | None = None


def group_key(raw: str | dict[str, Any], own_key: Any = None) -> str:
    """The group a row belongs to: the caller's own group id when it has one (verl's ``uid``), else its instance's
    id, else the whole instance text (a row that is not an instance then fails alone, with the reason)."""
    if own_key is not None:
        return f"uid:{own_key}"
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        return f"id:{value['id']}"
    except (TypeError, ValueError, KeyError):
        return f"truth:{raw}"


class MethodReward:
    """Scores completions group by group with a reward method (see the module docstring).

    Used as a TRL reward function (``reward_funcs=[MethodReward(method, scorer)]``), the rows of a group are the
    consecutive rows of one instance, as TRL lays out a prompt's ``num_generations`` completions.

    Args:
        method: the reward method (its instance model reads the instance column; its ``unknown_reward`` and
            ``extra_logs`` explain and annotate each reward).
        scorer: scores groups with that method (:func:`policy_rl.scorers.make_scorer`).
        name: the name TRL logs the reward under (default: the method's name).
        max_failed_batches: stop (:class:`JudgeDown`) after this many batches in a row in which no completion got a
            reward: a judge that is down should end the run, not let it train on nothing.
    """

    def __init__(
        self, method: RewardMethod, scorer: GroupScorer, name: str | None = None, max_failed_batches: int = 3
    ) -> None:
        self.method, self.scorer = method, scorer
        self.__name__ = name or method.name
        self.failures = FailureStreak(max_failed_batches)
        #: The last batch's outcomes, in row order (see the module docstring).
        self.pending: list[Outcome] = []

    def score_rows(
        self, texts: Sequence[str], instances: Sequence[str | dict[str, Any]], keys: Sequence[str] | None = None
    ) -> list[RowScore]:
        """One score per row, in the rows' order; the rows of a key (default: :func:`group_key`) are one group.
        Never raises on what the policy wrote or on a bad instance."""
        keys = list(keys) if keys is not None else [group_key(raw) for raw in instances]
        groups: dict[str, list[int]] = {}
        for row, key in enumerate(keys):
            groups.setdefault(key, []).append(row)
        scores: list[RowScore] = [RowScore(None, "not scored")] * len(texts)
        for key, rows in groups.items():
            for row, score in zip(rows, self._score_group(key, [texts[r] for r in rows], instances[rows[0]]),
                                  strict=True):  # fmt: skip
                scores[row] = score
        return scores

    def _score_group(self, key: str, texts: list[str], raw: str | dict[str, Any]) -> list[RowScore]:
        def failed(error: str) -> list[RowScore]:
            return [RowScore(None, error, failed=True, outcome=Outcome(key, error=error))] * len(texts)

        try:
            value = json.loads(raw) if isinstance(raw, str) else dict(raw)
            instance = self.method.instance_model.model_validate({**value, "responses": texts})
        except (ValueError, TypeError) as exc:
            return failed(f"bad {INSTANCE_COLUMN} value: {exc}")
        try:
            (result,) = self.scorer([instance])
        except Exception as exc:  # the judge is unreachable or broke: these completions have no reward
            logger.warning("scoring %s failed: %s", key, exc)
            return failed(f"judge failed: {exc}")
        if result.error is not None or result.rewards is None:
            return failed(result.error or "no rewards")
        method, scores = self.method, []
        values = method.outcome_values(result) if isinstance(method, RewardsOverGroups) else [None] * len(texts)
        for index, reward in enumerate(result.rewards):
            error = None if reward is not None else method.unknown_reward(result, index).message
            columns = method.column_values(result, index) if isinstance(method, HasRewardColumns) else {}
            # A completion with no reward gets no advantage from TRL, so no penalty either.
            penalized = isinstance(method, PenalizesAdvantages) and reward is not None
            penalty = method.advantage_penalty(result, index) if penalized else 0.0
            outcome = Outcome(getattr(instance, "id", None) or key, values[index])
            scores.append(RowScore(reward, error, method.extra_logs(result, index), columns, penalty, False, outcome))
        return scores

    def rewards(self, outcomes: Sequence[Outcome], group_size: int | None = None) -> list[float | None]:
        """The rewards of ``outcomes`` (every process's, gathered) over whole groups of ``group_size`` (None: runs of
        one key), for a method with rewards over groups; raises ValueError for any other method."""
        if not isinstance(self.method, RewardsOverGroups):
            raise ValueError(f"the {self.method.name} method computes each group's rewards itself")
        return rewards_over_groups(self.method, outcomes, group_size)

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        *,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        """TRL's reward function contract: one reward (or None) per completion, from the ``genrm_instance`` column;
        consecutive rows of one instance are one group. Batch means of the method's figures and the share of
        unknown rewards go to ``log_metric``; each unknown reward's reason goes to ``log_extra``."""
        return [s.reward for s in self.score_batch(completions, log_metric=log_metric, log_extra=log_extra, **columns)]

    def score_batch(
        self,
        completions: Sequence[Any],
        *,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        **columns: Any,
    ) -> list[RowScore]:
        """Score one TRL batch (see :meth:`__call__`), logging as it does; every row's :class:`RowScore`."""
        if INSTANCE_COLUMN not in columns:
            raise ValueError(f"the dataset has no {INSTANCE_COLUMN!r} column: build it with policy_rl.data")
        instances = list(columns[INSTANCE_COLUMN])
        keys, run = [], 0
        for row, raw in enumerate(instances):  # consecutive rows of one instance are one group, as TRL lays them
            run += row > 0 and raw != instances[row - 1]
            keys.append(str(run))
        scores = self.score_rows([completion_text(c) for c in completions], instances, keys)
        self.pending = [s.outcome or Outcome("?", error=s.error) for s in scores]
        unknown = [s.error for s in scores if s.reward is None]
        self.failures.count(unknown, len(scores), judged=any(not s.failed for s in scores))
        name = self.__name__
        if log_metric is not None:
            metrics = row_metrics(scores)
            if isinstance(self.method, RewardsOverGroups):
                judged = [s.outcome.value for s in scores if s.outcome is not None and s.outcome.error is None]
                metrics.update(self.method.outcome_logs(judged) if judged else {})
            for metric, value in metrics.items():
                log_metric(f"{name}/{metric}", value)
        if log_extra is not None:
            log_extra(f"{name}_unknown", [s.error or "" for s in scores])
        return scores

    def columns(self) -> list[ColumnReward]:
        """One TRL reward function per reward column of the method, in its order, sharing one scoring per batch
        (their weights: ``method.reward_columns``). Raises ValueError for a method with one reward."""
        if not isinstance(self.method, HasRewardColumns):
            raise ValueError(f"the {self.method.name} method has one reward per response, not reward columns")
        return ColumnBatch(self, list(self.method.reward_columns)).functions


class ColumnBatch:
    """The column reward functions of one :class:`MethodReward`, and the batch they share (scored at the first
    column's call, handed to each column once, then dropped).

    Attributes:
        functions: one :class:`ColumnReward` per column.
        penalties: the advantage penalty of each row of the last batch scored
            (:class:`genrm.methods.columns.PenalizesAdvantages`; 0 for none).
    """

    def __init__(self, reward: MethodReward, names: Sequence[str]) -> None:
        self.reward = reward
        self.functions = [ColumnReward(self, name) for name in names]
        self.penalties: list[float] = []
        self._scores: list[RowScore] | None = None
        self._left: set[str] = set()
        self._batch: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def column(self, name: str, completions: Sequence[Any], kwargs: dict[str, Any]) -> list[float | None]:
        """Column ``name`` of the batch (scored now when no column of it was asked for yet, or when the
        completions or instances differ from the batch held)."""
        batch = (tuple(completion_text(c) for c in completions), tuple(map(str, kwargs.get(INSTANCE_COLUMN, ()))))
        if self._scores is None or name not in self._left or self._batch != batch:
            self._scores = self.reward.score_batch(completions, **kwargs)
            self._batch = batch
            self._left = {f.column for f in self.functions}
            self.penalties = [s.penalty for s in self._scores]
        self._left.discard(name)
        scores = self._scores
        if not self._left:
            self._scores = None
        return [s.columns.get(name) if s.reward is not None else None for s in scores]


class ColumnReward:
    """One reward column as a TRL reward function (``__name__`` is the column's name)."""

    def __init__(self, batch: ColumnBatch, column: str) -> None:
        self.batch, self.column = batch, column
        self.__name__ = column

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        """TRL's reward function contract: this column's value (or None) per completion."""
        return self.batch.column(self.column, completions, kwargs)


class JudgeDown(RuntimeError):
    """No completion got a reward in several batches in a row: the judge failed on them, or judged them without a
    reward it could know (the message says which)."""


class FailureStreak:
    """Counts batches in a row in which no completion got a reward, and raises :class:`JudgeDown` at ``limit``: a
    judge that is down should end the run, not let it train on nothing."""

    def __init__(self, limit: int = 3) -> None:
        self.limit, self.batches, self.judged = limit, 0, False

    def count(self, errors: Sequence[str | None], size: int, judged: bool = False) -> None:
        """Count one batch of ``size`` completions, ``errors`` being the reasons of those without a reward;
        ``judged``: some of them were judged (their rewards are unknown, the judge is not down)."""
        if size == 0 or len(errors) < size:
            self.batches, self.judged = 0, False
            return
        self.batches += 1
        self.judged = self.judged or judged
        if self.batches >= self.limit:
            what = ("no completion got a reward it could know" if self.judged
                    else "the judge is down: no completion could be judged")  # fmt: skip
            raise JudgeDown(f"{what} in {self.batches} batches in a row; last error: {errors[-1]}")


def row_metrics(scores: Sequence[RowScore]) -> dict[str, float]:
    """Per-batch figures: the share of completions that could not be judged and of unknown rewards, and the mean of
    each figure the method logs."""
    count = max(len(scores), 1)
    metrics = {"judge_failed": sum(s.failed for s in scores) / count,
               "reward_unknown": sum(s.reward is None for s in scores) / count}  # fmt: skip
    names = sorted({name for s in scores for name in s.extra})
    for name in names:
        values = [s.extra[name] for s in scores if name in s.extra]
        metrics[name] = sum(values) / len(values)
    return metrics
