"""Rewards of any reward method (the rubric method by default) for verl's custom reward function interface, scored
by our judge (in process or the server).

verl calls ``custom_reward_function.name`` from ``custom_reward_function.path`` with the keyword arguments in
``custom_reward_function.reward_kwargs``:

- :func:`compute_score_batch` for the ``batch`` reward manager (verl's legacy reward path,
  ``reward_model.use_reward_loop=False``), and for :class:`policy_rl.verl_reward_loop.GroupedRewardManager`, which
  hands it each whole group under verl's reward loop (the default): the whole batch
  (``data_sources, solution_strs, ground_truths, extra_infos``). The rows of one group are found by their key, not
  their place: verl's trainer reorders the batch before the reward is computed (``trainer.balance_batch``, on by
  default, sorts rows by length across data-parallel ranks), so rows of one prompt are rarely next to each other.
  The key is ``extra_info["uid"]`` when the rows carry it (verl's own group id, which a custom reward manager or
  data pipeline may copy there), else the instance id. All rows of a key in the batch are scored together as one
  group (:class:`policy_rl.method_reward.MethodReward`), and each row gets its own reward back in its own place.
- :func:`compute_score` for a per-response reward manager (``naive``, ``remote``): one response at a time
  (``data_source, solution_str, ground_truth, extra_info``), for a method whose rewards do not depend on the group.
  A method whose rewards do (the rubric method's remap) is refused there: a response alone would be a group of one.

Loaded by file path (``custom_reward_function.path=.../verl_reward.py``, not importable under the name verl gives
it), the module hands out this package's functions, so verl's Ray tasks and actors can pickle them by reference.

``ground_truth`` is the instance (rubric, task type, limits) as JSON, put into ``reward_model.ground_truth`` by
:func:`verl_row` when the parquet file is made. Both return verl's dict form: ``score`` plus ``judge_failed`` and
the figures the method logs with each reward (the rubric method: ``content_mask``, ``format_mask``, ``length_ok``),
which verl logs as reward extra info.

**Reward columns, decoupled (c-GDPO).** verl's advantage estimators see one scalar per response and normalize it
themselves, so for a method with reward columns (the balcap method) the whole advantage is formed here, where the whole
batch and its groups are seen: with ``aggregation: normalize_then_sum`` the ``score`` of a response is its c-GDPO
advantage, each column normalized over the response's group, weighted, summed and normalized over the batch (BalCapRL
eq. 2.4-2.6, TRL's arithmetic: :func:`genrm.methods.columns.decoupled_advantages`), less the method's advantage penalty
(the linear length rule, eq. A.5). Run it with ``algorithm.adv_estimator=genrm_cgdpo``
(:mod:`policy_rl.verl_advantage`, registered with verl when this module is loaded), which takes the score as the
advantage unchanged: any other estimator would normalize it again, and a penalty shared by a group would cancel. Each
column, the method's scalar ``reward`` and its figures (the penalty among them) go along as extra info (verl logs their
means, in validation too, where the score is an advantage, not a reward). A response whose judgement failed gets
advantage 0, as TRL gives it, and is left out of the batch's statistics. The default, ``aggregation: weighted_mean``,
scores with the method's scalar reward (plain GRPO on it) and refuses a method set to penalize advantages, which a
reward cannot carry. The per-response form cannot normalize over a group and refuses ``normalize_then_sum``.

verl's reward tensor has no "no reward": a response whose judgement failed raises unless ``unknown_reward`` is set
in the reward kwargs, in which case it gets that value (advantage 0 under ``normalize_then_sum``) and
``judge_failed: 1`` says so. Settings (reward kwargs): the judge settings as every policy trainer takes them
(:class:`policy_rl.judge_settings.JudgeSettings`: ``judge``, a reward server URL or a judge spec such as ``rule``,
``transformers:PATH``, ``sglang:MODEL@URL``, default ``rule``; ``judge_device``; ``image_dir``, the folder the
instances' image paths are read from by a judge run here, which sends their bytes; ``judge_image_pixels``, the most
pixels of an image that judge is shown, 0: no limit), ``api_key_env`` (the variable holding the key),
``unknown_reward``, the reward settings as every entry point takes them
(:class:`genrm.methods.settings.RewardSettings`: ``method``, default ``rubric``, ``method_options``, the rubric
method's ``tau`` among them, and ``exposure``) and ``aggregation``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from genrm.methods.columns import HasRewardColumns, decoupled_advantages, refuse_advantage_penalty
from genrm.methods.rubric.models import Instance
from genrm.methods.settings import default
from policy_rl.judge_settings import JudgeSettings, judge_settings
from policy_rl.judge_settings import default as judge_default
from policy_rl.method_reward import MethodReward, RowScore, group_key
from policy_rl.verl_advantage import ESTIMATOR, register_with_verl

# verl loads this file in its trainer's process (custom_reward_function.path), where it later forms the advantages:
# the estimator the decoupled score needs is registered there now.
register_with_verl()


class UnknownReward(RuntimeError):
    """A response could not be judged and no ``unknown_reward`` was configured."""


def verl_row(
    instance: Instance, index: int, data_source: str = "genrm", system_prompt: str | None = None, split: str = "train"
) -> dict:
    """One row of a verl RL parquet file for ``instance`` (``prompt`` messages, ``reward_model.ground_truth``);
    ``split`` (``train``, or ``test`` for a validation file) goes to ``extra_info``, where verl's reward loop learns
    a row's group size (:mod:`policy_rl.verl_reward_loop`)."""
    from policy_rl.data import policy_record
    from policy_rl.method_reward import INSTANCE_COLUMN

    record = policy_record(instance, system_prompt)
    return {"data_source": data_source, "prompt": record["prompt"], "ability": instance.task_type or "general",
            "reward_model": {"style": "rule", "ground_truth": record[INSTANCE_COLUMN]},
            "extra_info": {"index": index, "id": instance.id, "split": split}}  # fmt: skip


@functools.lru_cache(maxsize=8)
def _reward(judging: JudgeSettings, settings: str) -> MethodReward:
    # verl calls the function for every batch: the method and its scorer (a loaded judge, a connection pool) are
    # made once per settings (hashable: the judge settings are frozen, the reward settings a JSON text).
    from genrm.methods.settings import reward_settings

    configured = reward_settings(json.loads(settings), "verl's reward kwargs").make()
    return MethodReward(configured, judging.scorer(configured))


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[str],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    judge: str = judge_default("judge"),
    api_key_env: str | None = None,
    unknown_reward: float | None = None,
    method: str = default("method"),
    method_options: Mapping[str, Any] | None = None,
    exposure: str = default("exposure"),
    aggregation: str = "weighted_mean",
    image_dir: str | None = None,
    judge_image_pixels: int = judge_default("judge_image_pixels"),
    judge_device: str = judge_default("judge_device"),
    **others: Any,
) -> list[dict[str, float]]:
    """verl's batch reward function: one ``{"score": ..., ...}`` per response, in the batch's order, each group
    (found by key, see the module docstring, wherever its rows are) scored together by the reward method;
    ``aggregation`` (``weighted_mean`` or ``normalize_then_sum``) for a method with reward columns."""
    if aggregation not in _AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(_AGGREGATIONS)}; got {aggregation!r:.40}")
    if "tau" in others:  # verl hands on reward kwargs of its own too, so the rest pass unread: this one would mislead
        raise ValueError("verl's reward kwargs: tau is the rubric method's option: set method_options.tau")
    # verl hands the options as a config mapping
    settings = {"method": method, "method_options": dict(method_options or {}), "exposure": exposure}
    where = "verl's reward kwargs"
    judging = judge_settings({"judge": judge, "image_dir": image_dir, "judge_image_pixels": judge_image_pixels,
                              "judge_device": judge_device}, where, api_key_env)  # fmt: skip
    reward = _reward(judging, json.dumps(settings, sort_keys=True))
    decoupled = aggregation == "normalize_then_sum"
    if decoupled and not isinstance(reward.method, HasRewardColumns):
        raise ValueError(f"aggregation normalize_then_sum needs a method with reward columns; the "
                         f"{reward.method.name} method has one reward")  # fmt: skip
    if not decoupled:
        refuse_advantage_penalty(
            reward.method,
            "verl's estimators with aggregation weighted_mean",
            f"use aggregation normalize_then_sum with algorithm.adv_estimator={ESTIMATOR}",
        )
    infos = [None] * len(ground_truths) if extra_infos is None else list(extra_infos)  # verl: a numpy object array
    keys = [group_key(truth, info.get("uid") if isinstance(info, dict) else None)
            for truth, info in zip(ground_truths, infos, strict=True)]  # fmt: skip
    scores = reward.score_rows(list(solution_strs), list(ground_truths), keys)
    if decoupled:
        scores = _decoupled(scores, keys, dict(reward.method.reward_columns))  # type: ignore[attr-defined]
    # verl gathers each figure into one list over the batch: every row gets every figure (NaN where it has none).
    names = sorted({name for score in scores for name in score.extra})
    return [_result(score, key, names, unknown_reward, decoupled) for score, key in zip(scores, keys, strict=True)]


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, float]:
    """verl's per-response reward function, for a method whose rewards do not depend on the group (see the module
    docstring for the settings); raises ValueError for one whose rewards do."""
    if kwargs.get("aggregation") == "normalize_then_sum":
        raise ValueError("aggregation normalize_then_sum normalizes over a group: use verl's batch reward manager "
                         "(reward_model.reward_manager=batch) with compute_score_batch")  # fmt: skip
    if _needs_group(kwargs):
        name = kwargs.get("method", default("method"))
        raise ValueError(f"the {name} method's rewards depend on the whole group, which a per-response reward "
                         f"function sees as a group of one: {_GROUPED_RECIPE}")  # fmt: skip
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


#: How verl scores whole groups, for the messages that refuse groups of one.
_GROUPED_RECIPE = (
    "set custom_reward_function.name=compute_score_batch with reward_model.reward_loop_source=importlib, "
    "reward_model.reward_loop_module_path=pkg://policy_rl.verl_reward_loop and "
    "reward_model.reward_loop_class_name=GroupedRewardManager (or reward_model.use_reward_loop=False with "
    "reward_model.reward_manager=batch)"
)


def _needs_group(kwargs: Mapping[str, Any]) -> bool:
    known = {k: kwargs[k] for k in ("method", "method_options", "exposure") if k in kwargs}
    if "method_options" in known:  # verl hands the options as a config mapping
        known["method_options"] = dict(known["method_options"] or {})
    return _method_needs_group(json.dumps(known, sort_keys=True))


@functools.lru_cache(maxsize=8)
def _method_needs_group(settings: str) -> bool:
    # the per-response form asks for every row: the method is made once per settings
    from genrm.methods.group_rewards import RewardsOverGroups
    from genrm.methods.settings import reward_settings

    return isinstance(reward_settings(json.loads(settings), "verl's reward kwargs").make(), RewardsOverGroups)


def refuse_reward_loop_settings(kwargs: Mapping[str, Any]) -> bool:
    """Check ``kwargs`` (``custom_reward_function.reward_kwargs``) for scoring under verl's reward loop, where groups
    are scored one by one: raises ValueError for ``aggregation normalize_then_sum`` (it normalizes over the whole
    batch); whether the method's rewards depend on the whole group (then rows are gathered into groups)."""
    if kwargs.get("aggregation", "weighted_mean") == "normalize_then_sum":
        raise ValueError("custom_reward_function.reward_kwargs.aggregation=normalize_then_sum normalizes over the "
                         "whole batch, which verl's reward loop never sees: set reward_model.use_reward_loop=False "
                         "with reward_model.reward_manager=batch")  # fmt: skip
    return _needs_group(kwargs)


_AGGREGATIONS = ("weighted_mean", "normalize_then_sum")


def _decoupled(scores: list[RowScore], keys: list[str], weights: dict[str, float]) -> list[RowScore]:
    # Each response's c-GDPO advantage over the whole batch (eq. 2.4-2.6), less its penalty (eq. A.5); the scalar
    # reward kept as extra info.
    groups: dict[str, list[int]] = {}
    for row, key in enumerate(keys):
        groups.setdefault(key, []).append(row)
    columns = [[[None if scores[r].reward is None else scores[r].columns.get(name) for name in weights] for r in rows]
               for rows in groups.values()]  # fmt: skip
    out = list(scores)
    for rows, advantages in zip(groups.values(), decoupled_advantages(columns, list(weights.values())), strict=True):
        for row, value in zip(rows, advantages, strict=True):
            score = scores[row]
            if score.reward is not None:
                extra = {**score.extra, "reward": score.reward}
                out[row] = RowScore(value - score.penalty, score.error, extra, score.columns, score.penalty)
    return out


def _result(
    score: RowScore, key: str, names: Sequence[str], unknown_reward: float | None, decoupled: bool
) -> dict[str, float]:
    extra = {"judge_failed": float(score.reward is None), **{n: score.extra.get(n, float("nan")) for n in names}}
    if score.reward is not None:
        return {"score": score.reward, **extra}
    if unknown_reward is None:
        setting = "custom_reward_function.reward_kwargs.unknown_reward"
        raise UnknownReward(f"no reward for a response of {key}: {score.error}; set {setting} to the value to use")
    # Decoupled, the score is an advantage: a response that could not be judged gets none, as TRL gives it.
    return {"score": 0.0 if decoupled else float(unknown_reward), **extra}


if __name__ != "policy_rl.verl_reward":
    # Loaded by file path (verl's custom_reward_function.path), this module is not importable under its name: its
    # functions would be pickled by value with what they refer to, the judge cache among them, which cannot be. The
    # package's own functions are pickled by reference.
    from policy_rl.verl_reward import compute_score, compute_score_batch, refuse_reward_loop_settings  # noqa: F401, F811
