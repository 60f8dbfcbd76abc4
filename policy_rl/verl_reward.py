"""Rubric rewards for verl's custom reward function interface, scored by our judge (in process or the server).

verl calls ``custom_reward_function.name`` from ``custom_reward_function.path`` with the keyword arguments in
``custom_reward_function.reward_kwargs``:

- :func:`compute_score` for the ``naive`` reward manager: one response at a time
  (``data_source, solution_str, ground_truth, extra_info``). A response alone is its own group, so the remap only
  keeps or drops it around ``tau``; use the batch form for the method's group remap.
- :func:`compute_score_batch` for the ``batch`` reward manager: the whole batch
  (``data_sources, solution_strs, ground_truths, extra_infos``). verl repeats each prompt ``rollout.n`` times in a
  row, so consecutive rows with the same instance form a group, remapped and aggregated together.

``ground_truth`` is the instance (rubric, task type, limits) as JSON, put into ``reward_model.ground_truth`` by
:func:`verl_row` when the parquet file is made. Both return verl's dict form: ``score`` plus per-criterion
components (``raw_essential``, ``judge_failed``), which verl logs as reward extra info.

verl's reward tensor has no "no reward": a response whose judgement failed raises unless ``unknown_reward`` is set
in the reward kwargs, in which case it gets that value and ``judge_failed: 1`` says so. Settings (reward kwargs):
``judge`` (``rule``, ``transformers:PATH`` or a server URL; default ``rule``), ``api_key_env``, ``tau``,
``unknown_reward``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

from genrm.schemas import Instance
from policy_rl.rubric_reward import Outcome, RubricReward


class UnknownReward(RuntimeError):
    """A response could not be judged and no ``unknown_reward`` was configured."""


def verl_row(instance: Instance, index: int, data_source: str = "genrm", system_prompt: str | None = None) -> dict:
    """One row of a verl RL parquet file for ``instance`` (``prompt`` messages, ``reward_model.ground_truth``)."""
    from policy_rl.data import policy_record
    from policy_rl.rubric_reward import INSTANCE_COLUMN

    record = policy_record(instance, system_prompt)
    return {"data_source": data_source, "prompt": record["prompt"], "ability": instance.task_type or "general",
            "reward_model": {"style": "rule", "ground_truth": record[INSTANCE_COLUMN]},
            "extra_info": {"index": index, "id": instance.id}}  # fmt: skip


@functools.lru_cache(maxsize=8)
def _reward(judge: str, api_key_env: str | None, tau: float) -> RubricReward:
    # verl calls the function for every batch: the scorer (a loaded judge, a connection pool) is made once.
    from genrm.scoring import ScoringConfig
    from policy_rl.scorers import make_scorer

    api_key = os.environ.get(api_key_env) if api_key_env else None
    return RubricReward(make_scorer(judge, ScoringConfig(tau=tau), api_key), tau, max_failed_batches=1 << 30)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[str],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    judge: str = "rule",
    api_key_env: str | None = None,
    tau: float = 0.5,
    unknown_reward: float | None = None,
    **_: Any,
) -> list[dict[str, float]]:
    """verl's batch reward function: one ``{"score": ..., ...}`` per response, remapped over consecutive groups."""
    reward = _reward(judge, api_key_env, tau)
    outcomes = reward.outcomes(list(solution_strs), list(ground_truths))
    rewards = reward.rewards(outcomes)
    return [_result(o, r, unknown_reward) for o, r in zip(outcomes, rewards, strict=True)]


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, float]:
    """verl's per-response reward function (see the module docstring for the settings)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def _result(outcome: Outcome, reward: float | None, unknown_reward: float | None) -> dict[str, float]:
    scored = [s for s in outcome.raw if s is not None]
    extra = {"judge_failed": float(reward is None),
             "raw_essential": sum(scored) / len(scored) if scored else float("nan")}  # fmt: skip
    if reward is not None:
        return {"score": reward, **extra}
    if unknown_reward is None:
        why = outcome.error or "a criterion the judge could not score"
        setting = "custom_reward_function.reward_kwargs.unknown_reward"
        raise UnknownReward(f"no reward for a response of {outcome.key}: {why}; set {setting} to the value to use")
    return {"score": float(unknown_reward), **extra}
