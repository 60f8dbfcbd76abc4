"""``genrm rl``: GRPO on a policy against a local judge, with the rewards of any reward method (TRL).

    genrm rl --config recipes/rl_tiny_cpu.yaml
    accelerate launch --config_file recipes/accelerate/zero2.yaml -m genrm.cli rl --config recipes/rl_qwen3.yaml

The recipe is read as TRL's scripts read theirs: fields of :class:`PolicyRLArguments`, ``trl.GRPOConfig`` and
``trl.ModelConfig``, from YAML and ``--flags``. The prompts are instance JSONL (:mod:`policy_rl.data`); the judge is
the rule backend, a checkpoint run in process or a reward server (:mod:`policy_rl.scorers`). The reward is the
``method``'s (``rubric`` by default, with ``method_options``), through :class:`policy_rl.method_reward.MethodReward`.
A method whose rewards depend on the whole group in a way it declares
(:class:`genrm.methods.group_rewards.RewardsOverGroups`: the rubric method's remap) gets them over whole groups from
:class:`policy_rl.trainer.MethodGRPOTrainer`, even when a group spans processes; any other method's rewards are kept
as it computed them, with the completions each process holds (the claimdiff and balcap methods' do not depend on the
group). A method with reward columns (balcap) gives TRL one reward function per column, all from one
judge call per completion, with its weights as ``reward_weights`` and ``multi_objective_aggregation:
normalize_then_sum`` when ``decoupled`` (c-GDPO); its advantage penalty is subtracted from TRL's advantages. A method
that counts tokens gets the policy's tokenizer. The method's defaults are TRL's where they agree (``beta: 0``, no
reference model; ``num_iterations: 1``, strictly on-policy) and the recipe's otherwise. Length rules are the
method's: the instance's ``max_response_chars``, and the rubric method's ``length_rule: mask`` against the reference
answer (``method_options``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genrm.methods.base import CountsPolicyTokens, NamesAnswerTexts, RewardMethod
from genrm.methods.columns import HasRewardColumns
from genrm.methods.settings import default, describe, reward_settings
from policy_rl.judge_settings import default as judge_default
from policy_rl.judge_settings import describe as judge_help
from policy_rl.judge_settings import judge_settings

logger = logging.getLogger(__name__)


@dataclass
class PolicyRLArguments:
    """The prompts, the judge and the reward (YAML keys of a recipe, or ``--flags``)."""

    train_file: str = field(default="datasets/policy_rl/yes_no.jsonl", metadata={"help": "instance JSONL"})
    # The judge settings: names, defaults and meaning are policy_rl.judge_settings.JudgeSettings' (declared once for
    # genrm rl, TRL's reward functions and verl), mirrored here as the fields TRL's parser reads.
    judge: str = field(default=judge_default("judge"), metadata={"help": judge_help("judge")})
    judge_api_key_env: str | None = field(
        default=None, metadata={"help": "env variable holding " + judge_help("api_key").removeprefix("the ")}
    )
    judge_device: str = field(default=judge_default("judge_device"), metadata={"help": judge_help("judge_device")})
    # The reward settings: names, defaults and meaning are genrm.methods.settings.RewardSettings' (one declaration
    # for every entry point), mirrored here as the fields TRL's parser reads.
    method: str = field(default=default("method"), metadata={"help": describe("method")})
    method_options: str | None = field(
        default=None, metadata={"help": describe("method_options") + " (a mapping in a YAML recipe)"}
    )
    exposure: str = field(default=default("exposure"), metadata={"help": describe("exposure")})
    judge_image_pixels: int = field(
        default=judge_default("judge_image_pixels"), metadata={"help": judge_help("judge_image_pixels")}
    )
    system_prompt: str | None = field(default=None, metadata={"help": "system message before every prompt"})
    vision: bool = field(default=False, metadata={"help": "feed each instance's image to the policy (VLM policies)"})
    decoupled: bool = field(
        default=True,
        metadata={
            "help": "a method with several reward columns (balcap): normalize each column over its group before the "
            "weighted sum (c-GDPO: TRL's multi_objective_aggregation normalize_then_sum); false sums first (GRPO)"
        },
    )
    max_prompts: int | None = field(default=None, metadata={"help": "use only the first N instances"})
    build_tiny_policy: bool = field(
        default=False, metadata={"help": "when model_name_or_path does not exist, save a tiny random policy there"}
    )
    merge_lora: bool = field(
        default=True, metadata={"help": "with LoRA, save the merged policy (adapter in adapter/)"}
    )
    plot: bool = field(default=True, metadata={"help": "save training_curves.png next to the run"})


def build_method(args: PolicyRLArguments) -> RewardMethod:
    """The reward method the arguments name, configured (its settings validated as every entry point's:
    :class:`genrm.methods.settings.RewardSettings`). Raises ValueError naming a bad setting."""
    names = ("method", "method_options", "exposure")
    return reward_settings({name: getattr(args, name) for name in names}).make()


def build_rewards(args: PolicyRLArguments, method: RewardMethod | None = None) -> list[Any]:
    """The TRL reward functions the arguments describe (their scorer connected): one function per reward column of a
    method that has columns (one judging per batch), else the method's reward."""
    from policy_rl.method_reward import MethodReward

    method = method or build_method(args)
    values = {"judge": args.judge, "judge_device": args.judge_device, "judge_image_pixels": args.judge_image_pixels,
              "image_dir": str(Path(args.train_file).parent)}  # fmt: skip
    scorer = judge_settings(values, api_key_env=args.judge_api_key_env, key_field="judge_api_key_env").scorer(method)
    reward = MethodReward(method, scorer)
    return reward.columns() if isinstance(method, HasRewardColumns) else [reward]


def set_column_aggregation(args: PolicyRLArguments, training: Any, method: RewardMethod) -> None:
    """For a method with reward columns: TRL's ``reward_weights`` (the method's weights unless the recipe gives
    some) and ``multi_objective_aggregation`` (``normalize_then_sum`` when ``decoupled``)."""
    if not isinstance(method, HasRewardColumns):
        return
    weights = list(method.reward_columns.values())
    if training.reward_weights is None:
        training.reward_weights = weights
    elif len(training.reward_weights) != len(weights):
        raise ValueError(f"reward_weights has {len(training.reward_weights)} weights; the {method.name} method has "
                         f"{len(weights)} reward columns ({', '.join(method.reward_columns)})")  # fmt: skip
    training.multi_objective_aggregation = "normalize_then_sum" if args.decoupled else "sum_then_normalize"
    logger.info("%s reward columns %s, weights %s, %s", method.name, ", ".join(method.reward_columns),
                training.reward_weights, training.multi_objective_aggregation)  # fmt: skip


#: Seconds a reward server has to answer the health probe made before training starts.
PROBE_TIMEOUT_S = 5.0


def probe_judge(judge: str, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Check the ``judge`` setting once, before any model is loaded, so that a judge that is not there stops the run in
    seconds, not after its first steps: a reward server URL is asked its ``/health``, a judge endpoint
    (``sglang:MODEL@URL``, ``openai:MODEL@URL``) its health route, and a checkpoint run here must be found (a folder,
    or a hub model: :func:`genrm.engine.checkpoints.reachable_checkpoint`). Raises
    :class:`policy_rl.method_reward.JudgeDown` for a judge that does not answer, ValueError for a checkpoint that is
    not found or a setting of no known form; ``rule`` and the scripted judges need nothing."""
    from policy_rl.method_reward import JudgeDown

    if judge.startswith(("http://", "https://")):
        _probe_reward_server(judge, api_key, timeout_s)
        return
    from genrm.engine import JudgeSpec
    from genrm.engine.backends import backend, spec_forms

    try:
        spec = JudgeSpec.parse(judge)
    except ValueError:
        raise ValueError(f"judge {judge!r:.80}: expected a reward server URL (http://...) or {spec_forms()}") from None
    kind = backend(spec.backend).model
    if kind == "checkpoint" and spec.model:
        from genrm.engine.checkpoints import reachable_checkpoint

        try:
            reachable_checkpoint(spec.model)
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
    elif kind == "served":
        reachable, detail = _endpoint_health(spec, api_key, timeout_s)
        if not reachable:
            raise JudgeDown(f"no judge endpoint answered at {', '.join(spec.urls)} ({detail}); start the judge's "
                            "server, or give another judge")  # fmt: skip


def _endpoint_health(spec: Any, api_key: str | None, timeout_s: float) -> tuple[bool, str]:
    # the engine's own health probe (the route of its backend), on a short-lived engine that makes no chat call
    from genrm.engine import EngineOptions, run_blocking
    from genrm.engine.http import make_http_engine

    engine = make_http_engine(spec, EngineOptions(api_key=api_key, timeout_s=timeout_s, retries=0))

    async def probe() -> tuple[bool, str]:
        try:
            return await asyncio.wait_for(engine.health(), timeout_s * max(len(spec.urls), 1))
        except TimeoutError:
            return False, f"no answer within {timeout_s:g} s"
        finally:
            await engine.aclose()

    return run_blocking(probe())


def _probe_reward_server(judge: str, api_key: str | None, timeout_s: float) -> None:
    # a reward server, and the judge behind it
    from policy_rl.method_reward import JudgeDown
    from serving.client import RewardClient, RewardServerError

    try:
        with RewardClient(judge, api_key=api_key, timeout_s=timeout_s, retries=0) as client:
            health = client.health()
    except RewardServerError as exc:
        raise JudgeDown(f"no reward server answered at {judge} within {timeout_s:g} s ({exc}); start it with "
                        "genrm serve, or give another judge") from None  # fmt: skip
    if not health.backend_reachable:
        raise JudgeDown(f"the reward server at {judge} answers, but its {health.backend} judge cannot be reached: "
                        f"{health.detail or 'no detail'}")  # fmt: skip


def run_rl(args: PolicyRLArguments, training: Any, model_args: Any) -> Path:
    """Run GRPO and save the policy; returns the output directory (model, tokenizer, curves, ``log_history.json``).

    Args:
        args: prompts, judge and reward.
        training: a ``trl.GRPOConfig``.
        model_args: a ``trl.ModelConfig`` (policy path, dtype, LoRA).
    """
    from transformers import AutoProcessor, AutoTokenizer
    from trl import get_peft_config

    from genrm.training.common import train_and_save
    from policy_rl.data import policy_dataset, read_instances
    from policy_rl.trainer import MethodGRPOTrainer

    path = model_args.model_name_or_path
    if not path:
        raise ValueError("model_name_or_path is required (a policy checkpoint directory or a hub id)")
    method = build_method(args)
    probe_judge(args.judge, os.environ.get(args.judge_api_key_env) if args.judge_api_key_env else None)
    if args.build_tiny_policy and not Path(path).exists():
        from policy_rl.tiny_policy import save_tiny_policy

        with open(args.train_file, encoding="utf-8") as source:
            instances = read_instances(source, args.train_file, method.instance_model)
        logger.info("saving a tiny random policy to %s", path)
        save_tiny_policy(
            path, [i.prompt for i in instances] + [t for i in instances for t in _answer_words(method, i)]
        )
    dataset = policy_dataset(args.train_file, args.system_prompt, args.vision, args.max_prompts,
                             method.instance_model)  # fmt: skip
    loader = AutoProcessor if args.vision else AutoTokenizer
    processing = loader.from_pretrained(path, trust_remote_code=training.trust_remote_code)
    if isinstance(method, CountsPolicyTokens):  # lengths in the policy's own tokens
        method.count_tokens_with(processing)
    rewards = build_rewards(args, method)
    set_column_aggregation(args, training, method)
    training.model_init_kwargs = {**(training.model_init_kwargs or {}), "dtype": model_args.dtype}
    logger.info("GRPO of %s on %d prompts x %d samples, judge %s", path, len(dataset), training.num_generations,
                args.judge)  # fmt: skip
    trainer = MethodGRPOTrainer(
        model=path, reward_funcs=rewards, args=training, train_dataset=dataset, processing_class=processing,
        peft_config=get_peft_config(model_args),
    )  # fmt: skip
    name = method.name if isinstance(method, HasRewardColumns) else rewards[0].__name__
    keys = ["reward", *(f"rewards/{r.__name__}/mean" for r in rewards), f"{name}/raw_essential", f"{name}/accuracy",
            f"{name}/judge_failed", f"{name}/reward_unknown", "completions/mean_length"]  # fmt: skip
    try:
        return train_and_save(trainer, processing, args, keys, f"GRPO of {Path(path).name} ({args.judge} judge)")
    finally:
        trainer.accelerator.end_training()  # trackers closed, process group torn down before interpreter exit


def _answer_words(method: RewardMethod, instance: Any) -> list[str]:
    # The tiny policy's vocabulary must hold the words a right answer needs (a text target, a reference caption), or
    # no sample can win.
    if isinstance(method, NamesAnswerTexts):
        return method.answer_texts(instance)
    return [value for key, value in instance.model_dump().items() if isinstance(value, str) and key != "image"]
