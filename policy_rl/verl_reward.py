"""Rubric rewards for verl's custom reward function interface, scored by our judge (in process or the server).

verl calls ``custom_reward_function.name`` from ``custom_reward_function.path`` with the keyword arguments in
``custom_reward_function.reward_kwargs``:

- :func:`compute_score` for the ``naive`` reward manager: one response at a time
  (``data_source, solution_str, ground_truth, extra_info``). A response alone is its own group, so the remap only
  keeps or drops it around ``tau``; use the batch form for the method's group remap.
- :func:`compute_score_batch` for the ``batch`` reward manager: the whole batch
  (``data_sources, solution_strs, ground_truths, extra_infos``). The rows of one group are found by their key, not
  their place: verl's trainer reorders the batch before the reward is computed (``trainer.balance_batch``, on by
  default, sorts rows by length across data-parallel ranks), so rows of one prompt are rarely next to each other.
  The key is ``extra_info["uid"]`` when the rows carry it (verl's own group id, which a custom reward manager or
  data pipeline may copy there), else the instance id. All rows of a key in the batch are judged, remapped and
  aggregated together, and each row gets its own reward back in its own place.

``ground_truth`` is the instance (rubric, task type, limits) as JSON, put into ``reward_model.ground_truth`` by
:func:`verl_row` when the parquet file is made. Both return verl's dict form: ``score`` plus per-criterion
components (``raw_essential``, ``judge_failed``), which verl logs as reward extra info.

verl's reward tensor has no "no reward": a response whose judgement failed raises unless ``unknown_reward`` is set
in the reward kwargs, in which case it gets that value and ``judge_failed: 1`` says so. Settings (reward kwargs):
``judge`` (a reward server URL, or a judge spec: ``rule``, ``transformers:PATH``, ``sglang:MODEL@URL``; default
``rule``), ``api_key_env``, ``tau``, ``unknown_reward``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Sequence
from typing import Any

from genrm.methods.rubric.models import Instance
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
    from genrm.methods.rubric.scoring import ScoringConfig
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
    """verl's batch reward function: one ``{"score": ..., ...}`` per response, in the batch's order, remapped over the
    groups found by key (see the module docstring), wherever their rows are."""
    reward = _reward(judge, api_key_env, tau)
    infos = [None] * len(ground_truths) if extra_infos is None else list(extra_infos)  # verl: a numpy object array
    keys = [_group_key(truth, info) for truth, info in zip(ground_truths, infos, strict=True)]
    rank = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    order = sorted(range(len(keys)), key=lambda i: rank[keys[i]])
    # Rows of a group made contiguous (stable: each group keeps its rows' order), judged and remapped as groups.
    outcomes = reward.outcomes([solution_strs[i] for i in order], [ground_truths[i] for i in order])
    outcomes = [dataclasses.replace(outcome, key=keys[i]) for outcome, i in zip(outcomes, order, strict=True)]
    rewards = reward.rewards(outcomes)
    results: list[dict[str, float]] = [{}] * len(keys)
    for outcome, value, i in zip(outcomes, rewards, order, strict=True):
        results[i] = _result(outcome, value, unknown_reward)
    return results


def _group_key(ground_truth: str, extra_info: dict[str, Any] | None) -> str:
    """The group a row belongs to: verl's ``uid`` when the row carries it, else its instance (its id, or the whole
    ground truth when that is not an instance: such a row fails with the reason, alone)."""
    if isinstance(extra_info, dict) and extra_info.get("uid") is not None:
        return f"uid:{extra_info['uid']}"
    try:
        return f"id:{json.loads(ground_truth)['id']}"
    except (TypeError, ValueError, KeyError):
        return f"truth:{ground_truth}"


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
