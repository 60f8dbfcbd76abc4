"""RLVR of the judge with TRL's ``GRPOTrainer`` on the method's verifiable rewards (rubric: format and content;
claimdiff: format and the F1 of its differences, :mod:`genrm.methods.claimdiff.judge_training`).

    genrm train rlvr --config recipes/rlvr_tiny_cpu.yaml

Start from the SFT judge. The prompts are the scoring prompts of the examples
(:func:`genrm.methods.rubric.judge_data.rlvr_record`); each row carries its label in the ``judge_label`` column, which
TRL hands to the reward functions: :func:`genrm.methods.rubric.judge_rewards.format_reward_func` (1 only for one JSON
object filling every rubric slot with the right type) and
:func:`genrm.methods.rubric.judge_rewards.content_reward_func` (extracted values checked by each criterion's verifier
against the label, fuzzy credits against the label's). Free-text fields are not rewarded. Sampling is free (no
grammar): the judge has to learn the format, which constrained serving then only guarantees. Under the ``vlm`` exposure
the judge sees each input's image, and a batch may mix inputs with and without one (:mod:`genrm.training.grpo_images`).
Recipe fields are those of :class:`genrm.training.common.JudgeDataArguments`, ``trl.GRPOConfig`` (``num_generations``,
``max_completion_length``, ``beta``, ``reward_weights`` ...) and ``trl.ModelConfig``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from genrm.methods.base import LABEL_COLUMN
from genrm.training.common import JudgeDataArguments, judge_datasets, prepare_judge_model, train_and_save

logger = logging.getLogger(__name__)


def run_rlvr(data: JudgeDataArguments, training: Any, model_args: Any) -> Path:
    """Train and save the judge with GRPO; returns the output directory (model, tokenizer, ``training_curves.png``).

    Args:
        data: judge examples and exposure.
        training: a ``trl.GRPOConfig``.
        model_args: a ``trl.ModelConfig`` (model path, dtype, LoRA settings).
    """
    from transformers import AutoConfig
    from trl import get_peft_config

    from genrm.training.grpo_images import MixedImageGRPOTrainer

    path, processing = prepare_judge_model(data, training, model_args)
    config = AutoConfig.from_pretrained(path, trust_remote_code=training.trust_remote_code)
    positions = getattr(config.get_text_config(), "max_position_embeddings", None) or 32_768
    max_prompt_tokens = positions - training.max_completion_length
    method = data.training()
    train, evaluation = judge_datasets(data, method.rlvr_record, ("prompt", LABEL_COLUMN), processing,
                                       max_prompt_tokens)  # fmt: skip
    logger.info("RLVR of %s on %d prompts, %d samples each", path, len(train), training.num_generations)
    trainer = MixedImageGRPOTrainer(
        model=path, reward_funcs=list(method.reward_funcs), args=training, train_dataset=train,
        eval_dataset=evaluation, processing_class=processing, peft_config=get_peft_config(model_args),
    )  # fmt: skip
    keys = [f"rewards/{f.__name__}/mean" for f in method.reward_funcs] + ["reward", "loss"]
    return train_and_save(trainer, processing, data, keys, f"RLVR of {Path(path).name}")
