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
- ``GENRM_TAU``: the remapping threshold (0.5).

The dataset needs the ``genrm_instance`` column (``genrm policy-data`` writes it).

**Groups and processes.** The remap of a response depends on its whole group (the prompt's ``num_generations``
completions). TRL calls a reward function on each process with that process's slice of the batch, in which a
group's rows are consecutive; a group cut by a slice boundary is remapped in two parts, silently. Plain ``trl grpo``
keeps groups whole when ``per_device_train_batch_size`` is a multiple of ``num_generations`` (one process: always).
``genrm rl`` (:class:`policy_rl.trainer.RubricGRPOTrainer`) instead gathers every process's judgements and remaps
over whole groups whatever the batch sizes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

from policy_rl.rubric_reward import RubricReward


@functools.lru_cache(maxsize=1)
def _reward() -> RubricReward:
    # Made once per process: a judge loaded, or a connection pool to the server.
    from genrm.methods.rubric.scoring import ScoringConfig
    from policy_rl.scorers import make_scorer

    judge = os.environ.get("GENRM_JUDGE", "rule")
    try:
        tau = float(os.environ.get("GENRM_TAU", "0.5"))
    except ValueError:
        raise ValueError(f"GENRM_TAU must be a number in (0, 1), got {os.environ['GENRM_TAU']!r}") from None
    device = os.environ.get("GENRM_JUDGE_DEVICE", "auto")
    scorer = make_scorer(judge, ScoringConfig(tau=tau), os.environ.get("GENRM_JUDGE_API_KEY"), device)
    return RubricReward(scorer, tau, name="rubric_reward")


def rubric_reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """TRL reward function: the rubric reward of each completion (None when it could not be judged: TRL leaves it
    out of the group statistics), with the judge named by ``GENRM_JUDGE`` (see the module docstring)."""
    return _reward()(prompts, completions, **kwargs)
