"""Supervised fine-tuning of the judge with TRL's ``SFTTrainer`` (LoRA through peft, or full fine-tuning).

    genrm train sft --config recipes/sft_tiny_cpu.yaml [--max_steps 20 ...]

The recipe is read the way TRL's own scripts read theirs (``trl.TrlParser``): YAML keys and ``--flags`` are the
fields of :class:`genrm.train_common.JudgeDataArguments`, ``trl.SFTConfig`` and ``trl.ModelConfig`` (``use_peft``,
``lora_r`` ...). The examples become conversational prompt-completion records (:func:`genrm.judge_data.sft_record`),
so the prompt is rendered by the model's own chat template and the loss is on the completion only. Examples longer
than ``max_length`` are dropped, not truncated (a cut answer would teach the judge to stop mid-JSON), and the log
says how many. Several GPUs or nodes: launch the same command with ``accelerate launch --config_file ...``
(DeepSpeed ZeRO or FSDP configs are in ``recipes/accelerate/``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from genrm.judge_data import sft_record
from genrm.train_common import (
    JudgeDataArguments,
    ensure_base_model,
    load_examples,
    plot_curves,
    records_dataset,
    save_judge,
)

logger = logging.getLogger(__name__)


def _dataset(path: str, data: JudgeDataArguments, tokenizer: Any, max_length: int, limit: int | None) -> Any:
    records = [sft_record(e, data.checked_exposure()) for e in load_examples(path, limit)]
    return records_dataset(records, ("prompt", "completion"), tokenizer, max_length, path)


def run_sft(data: JudgeDataArguments, training: Any, model_args: Any) -> Path:
    """Train and save the judge; returns the output directory (model, tokenizer, ``training_curves.png``).

    Args:
        data: judge examples and exposure.
        training: a ``trl.SFTConfig``.
        model_args: a ``trl.ModelConfig`` (model path, dtype, LoRA settings).
    """
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    path = ensure_base_model(model_args.model_name_or_path, data.build_tiny_model)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=training.trust_remote_code)
    train = _dataset(data.train_file, data, tokenizer, training.max_length, data.max_examples)
    evaluation = _dataset(data.eval_file, data, tokenizer, training.max_length, None) if data.eval_file else None
    training.model_init_kwargs = {**(training.model_init_kwargs or {}), "dtype": model_args.dtype}
    logger.info("SFT of %s on %d examples (%s exposure)", path, len(train), data.exposure)
    trainer = SFTTrainer(
        model=path, args=training, train_dataset=train, eval_dataset=evaluation, processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )  # fmt: skip
    trainer.train(resume_from_checkpoint=training.resume_from_checkpoint)
    out = save_judge(trainer, tokenizer, Path(training.output_dir), data.merge_lora)
    if data.plot:
        keys = ["loss", "eval_loss", "mean_token_accuracy"]
        plot_curves(trainer.state.log_history, keys, out / "training_curves.png", f"SFT of {Path(path).name}")
    logger.info("saved the SFT judge to %s", out)
    return out
