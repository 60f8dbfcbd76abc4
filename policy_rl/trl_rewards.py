"""Reward functions for TRL's own command line, set up from the environment.

    genrm policy-data datasets/examples/reward_core.jsonl --out data/policy      # the prompt dataset, a folder
    GENRM_JUDGE=http://127.0.0.1:8000 trl grpo --model_name_or_path Qwen/Qwen3-0.6B \\
        --dataset_name data/policy --reward_funcs policy_rl.trl_rewards.rubric_reward --num_generations 8 ...

``trl grpo --reward_funcs a.b.name`` imports ``name`` from module ``a.b`` and calls it with TRL's keyword arguments
(``prompts``, ``completions``, the dataset's columns, ``log_metric``, ``log_extra``); it cannot pass settings. So
:func:`rubric_reward` reads them from the environment at its first call:

- ``GENRM_JUDGE``: a reward server URL (``http://127.0.0.1:8000``: ``genrm serve``, SGLang behind it), or a judge
  run from the trainer's process: ``rule`` (the default: verifiable criteria only), ``transformers:PATH`` (a
  checkpoint), ``sglang:MODEL@URL`` or ``openai:MODEL@URL`` (a judge endpoint);
- ``GENRM_JUDGE_API_KEY``: the server's bearer token; ``GENRM_JUDGE_DEVICE``: ``auto``, ``cpu`` or ``cuda``;
- ``GENRM_METHOD_OPTIONS``: the rubric method's options as JSON (``{"tau": 0.4}``: its remapping threshold, 0.5 by
  default), read when ``GENRM_METHOD`` is unset or ``rubric``; ``GENRM_EXPOSURE``: what a model judge sees of the
  targets (``minimal``).
- ``GENRM_IMAGE_DIR``: the folder the instances' image paths are read from by a judge spec run here, which sends the
  judge their bytes (never the path); a reward server reads images itself.
- ``GENRM_JUDGE_IMAGE_PIXELS``: the most pixels of an image that judge is shown (1,003,520 by default; 0: no limit).

:func:`method_reward` is the same for any reward method: ``GENRM_METHOD`` names it (``rubric`` by default; a method
installed as a plug-in), ``GENRM_METHOD_OPTIONS`` holds its own settings as JSON, and each completion gets its
group's reward as the method (or the server behind ``GENRM_JUDGE``, which must serve that method) computed it.

The dataset needs the ``genrm_instance`` column (``genrm policy-data`` writes it).

**Reward columns.** For a method with several rewards per response (``GENRM_METHOD=balcap``: precision, recall,
linguistic quality), :func:`reward_column_1`, :func:`reward_column_2` and :func:`reward_column_3` are its columns in
order, sharing one judge call per completion; c-GDPO is then TRL's own::

    GENRM_METHOD=balcap GENRM_JUDGE=http://127.0.0.1:8000 trl grpo ... --reward_funcs \
        policy_rl.trl_rewards.reward_column_1 policy_rl.trl_rewards.reward_column_2 \
        policy_rl.trl_rewards.reward_column_3 --reward_weights 0.1 0.3 0.3 \
        --multi_objective_aggregation normalize_then_sum

A method set to subtract a penalty from the normalized advantage (the balcap method's ``length_rule: linear``) is
refused here: a reward function cannot carry it, and TRL would train without it. ``genrm rl`` applies it.

**Groups and processes.** The remap of a response depends on its whole group (the prompt's ``num_generations``
completions). TRL calls a reward function on each process with that process's slice of the batch, in which a
group's rows are consecutive; a group cut by a slice boundary is remapped in two parts, silently. Plain ``trl grpo``
keeps groups whole when ``per_device_train_batch_size`` is a multiple of ``num_generations`` (one process: always).
``genrm rl`` (:class:`policy_rl.trainer.MethodGRPOTrainer`) instead gathers every process's judgements and remaps
over whole groups whatever the batch sizes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policy_rl.method_reward import MethodReward

if TYPE_CHECKING:
    from genrm.methods import RewardMethod


def _scorer(method: RewardMethod) -> Any:
    from policy_rl.judge_settings import judge_settings_from_env

    return judge_settings_from_env(os.environ).scorer(method)


@functools.lru_cache(maxsize=1)
def _reward() -> MethodReward:
    # Made once per process: a judge loaded, or a connection pool to the server.
    from genrm.methods.settings import reward_settings_from_env

    # The rubric method whatever GENRM_METHOD names (that is method_reward's, which may run beside this one); the
    # options are the rubric's only when GENRM_METHOD names it too.
    settings = reward_settings_from_env(os.environ)
    if settings.method != "rubric":
        settings = settings.model_copy(update={"method": "rubric", "method_options": {}})
    method = settings.make()
    return MethodReward(method, _scorer(method), name="rubric_reward")


@functools.lru_cache(maxsize=1)
def _method_reward() -> MethodReward:
    from genrm.methods.columns import refuse_advantage_penalty
    from genrm.methods.settings import reward_settings_from_env

    method = reward_settings_from_env(os.environ).make()
    refuse_advantage_penalty(method, "trl grpo's reward functions",
                             "run genrm rl, which subtracts it from TRL's advantages")  # fmt: skip
    return MethodReward(method, _scorer(method), name="method_reward")


def rubric_reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the rubric reward of each completion (None when it could not be judged: TRL leaves it
    out of the group statistics), with the judge named by ``GENRM_JUDGE`` (see the module docstring)."""
    return _reward()(prompts, completions, **kwargs)


def method_reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function for any reward method (``GENRM_METHOD``, default ``rubric``; its own settings in
    ``GENRM_METHOD_OPTIONS`` as JSON): each group's rewards as the method computes them (None when unknown), with the
    judge named by ``GENRM_JUDGE``. Groups must be whole on each process (see the module docstring)."""
    return _method_reward()(prompts, completions, **kwargs)


@functools.lru_cache(maxsize=1)
def _columns() -> list[Any]:
    return _method_reward().columns()


def _column(number: int, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
    columns = _columns()
    if number > len(columns):
        raise ValueError(f"the {_method_reward().method.name} method has {len(columns)} reward columns, not {number}")
    return columns[number - 1](prompts, completions, **kwargs)


def reward_column_1(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the first reward column of ``GENRM_METHOD`` (balcap: precision), None when unknown."""
    return _column(1, prompts, completions, kwargs)


def reward_column_2(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the second reward column of ``GENRM_METHOD`` (balcap: recall), None when unknown."""
    return _column(2, prompts, completions, kwargs)


def reward_column_3(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the third reward column of ``GENRM_METHOD`` (balcap: linguistic quality), None when
    unknown."""
    return _column(3, prompts, completions, kwargs)
