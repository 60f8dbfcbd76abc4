"""Supervised fine-tuning of the judge with TRL's ``SFTTrainer`` (LoRA through peft, or full fine-tuning).

    genrm train sft --config recipes/sft_tiny_cpu.yaml [--max_steps 20 ...]

The recipe is read the way TRL's own scripts read theirs (``trl.TrlParser``): YAML keys and ``--flags`` are the fields
of :class:`genrm.training.common.JudgeDataArguments`, ``trl.SFTConfig`` and ``trl.ModelConfig`` (``use_peft``,
``lora_r`` ...). The examples become conversational prompt-completion records (the method's:
:func:`genrm.methods.rubric.judge_data.sft_record` for the rubric method, ``--method claimdiff`` for its diff judge),
so the prompt is rendered by the model's own chat template and the loss is on the completion only. Examples longer than
``max_length`` are dropped, not truncated (a cut answer would teach the judge to stop mid-JSON), and the log says how
many. Several GPUs or nodes: launch the same command with ``accelerate launch --config_file ...`` (DeepSpeed ZeRO or
FSDP configs are in ``recipes/accelerate/``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from genrm.training.common import JudgeDataArguments, judge_datasets, prepare_judge_model, train_and_save

logger = logging.getLogger(__name__)


def run_sft(data: JudgeDataArguments, training: Any, model_args: Any) -> Path:
    """Train and save the judge; returns the output directory (model, tokenizer, ``training_curves.png``).

    Args:
        data: judge examples and exposure.
        training: a ``trl.SFTConfig``.
        model_args: a ``trl.ModelConfig`` (model path, dtype, LoRA settings).
    """
    from trl import SFTTrainer, get_peft_config

    path, processing = prepare_judge_model(data, training, model_args)
    build = data.training().sft_record
    train, evaluation = judge_datasets(data, build, ("prompt", "completion"), processing, training.max_length)
    logger.info("SFT of %s on %d %s examples (%s exposure)", path, len(train), data.method, data.exposure)
    trainer = SFTTrainer(
        model=path, args=training, train_dataset=train, eval_dataset=evaluation, processing_class=processing,
        peft_config=get_peft_config(model_args),
    )  # fmt: skip
    keys = ["loss", "eval_loss", "mean_token_accuracy"]
    return train_and_save(trainer, processing, data, keys, f"SFT of {Path(path).name}")
