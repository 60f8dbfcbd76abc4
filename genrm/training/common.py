"""What the judge's SFT and RLVR runs share: data arguments, the tiny base model, length checks, reward plots."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genrm.choices import Exposure, check_exposure
from genrm.jsonl import read_models
from genrm.methods.base import IMAGES_COLUMN, JudgeTraining
from genrm.methods.settings import default, describe, reward_settings

logger = logging.getLogger(__name__)


@dataclass
class JudgeDataArguments:
    """Where the judge examples are and how they are shown (YAML keys of a recipe, or ``--flags``)."""

    # The method's settings: names, defaults and meaning are genrm.methods.settings.RewardSettings' (one declaration
    # for every entry point), mirrored here as the fields TRL's parser reads.
    method: str = field(default=default("method"), metadata={"help": "whose judge is trained: " + describe("method")})
    train_file: str = field(default="datasets/judge_synth/train.jsonl", metadata={"help": "judge examples (JSONL)"})
    eval_file: str | None = field(default=None, metadata={"help": "judge examples for evaluation during training"})
    exposure: str = field(default=default("exposure"), metadata={"help": describe("exposure")})
    method_options: str = field(
        default="{}", metadata={"help": describe("method_options") + " (a mapping in a YAML recipe)"}
    )
    max_examples: int | None = field(default=None, metadata={"help": "use only the first N training examples"})
    build_tiny_model: bool = field(
        default=False,
        metadata={"help": "when model_name_or_path does not exist, save the untrained tiny judge there first"},
    )
    tiny_model_shape: str = field(
        default="{}",
        metadata={"help": "the shape of the model build_tiny_model saves, as a JSON object of TinyModelConfig fields, "
                  'e.g. {"hidden_size": 768, "num_hidden_layers": 12} (default: the tiny judge\'s)'},
    )  # fmt: skip
    merge_lora: bool = field(
        default=True, metadata={"help": "with LoRA, save the merged model (adapter in adapter/) so servers load it"}
    )
    stop_after_s: float | None = field(
        default=None,
        metadata={"help": "stop after this many seconds of training, at the end of the step under way, and save the "
                  "model as it is then (the steps done are in log_history.json); default: max_steps decides"},
    )  # fmt: skip
    plot: bool = field(default=True, metadata={"help": "save training_curves.png next to the run"})

    def checked_exposure(self) -> Exposure:
        """The exposure, validated."""
        return check_exposure(self.exposure)

    def training(self) -> JudgeTraining:
        """How the method's judge is trained; raises ValueError for an unknown method, one that refuses the exposure
        or an option, or one whose judge has no training."""
        from genrm.methods.base import TrainsItsJudge

        values = {"method": self.method, "method_options": self.method_options, "exposure": self.exposure}
        method = reward_settings(values).make()
        if not isinstance(method, TrainsItsJudge):
            raise ValueError(f"the {method.name} method has no judge training")
        return method.judge_training()

    def shows_images(self) -> bool:
        """Whether the judge is shown images: under the ``vlm`` exposure, or always for a method that rules on them."""
        return self.checked_exposure() == "vlm" or self.training().images


def load_examples(path: str, model: type[Any], limit: int | None = None) -> list[Any]:
    """Judge examples of ``model`` (the method's example model) from a JSONL file (the first ``limit`` when
    given); ValueError names the first bad line and field."""
    with open(path, encoding="utf-8") as source:
        examples = read_models(source, model, path)
    return examples[:limit] if limit else examples


def ensure_base_model(path: str | None, data: JudgeDataArguments) -> str:
    """``path``, after saving the tiny judge there when asked to and nothing is there yet (the tiny vision-language
    judge under the ``vlm`` exposure)."""
    if not path:
        raise ValueError("model_name_or_path is required (a checkpoint directory or a hub id)")
    if data.build_tiny_model and not Path(path).exists():
        from genrm.training.tiny_model import method_corpus, save_tiny_judge, save_tiny_vlm_judge

        config = tiny_model_config(data.tiny_model_shape)
        vision = data.shows_images()
        logger.info("saving the untrained tiny %sjudge to %s", "vision-language " if vision else "", path)
        (save_tiny_vlm_judge if vision else save_tiny_judge)(path, config, corpus=method_corpus(data.method))
    return path


def tiny_model_config(shape: str) -> Any:
    """The :class:`~genrm.training.tiny_model.TinyModelConfig` of a recipe's ``tiny_model_shape`` (a JSON object of
    its fields; the MLP twice the width unless given); ValueError names a field that is not one of them."""
    import dataclasses

    from genrm.training.tiny_model import TinyModelConfig

    try:
        fields = json.loads(shape)
    except json.JSONDecodeError as exc:
        raise ValueError(f"tiny_model_shape is not a JSON object: {exc}") from None
    known = {f.name for f in dataclasses.fields(TinyModelConfig)}
    if not isinstance(fields, dict) or set(fields) - known:
        raise ValueError(f"tiny_model_shape takes a JSON object of {', '.join(sorted(known))}; got {shape:.200}")
    if "hidden_size" in fields and "intermediate_size" not in fields:
        fields["intermediate_size"] = 2 * fields["hidden_size"]
    return TinyModelConfig(**fields)


def load_processing_class(path: str, data: JudgeDataArguments, trust_remote_code: bool = False) -> Any:
    """The judge's tokenizer, or under the ``vlm`` exposure its processor (tokenizer and image processor).

    Raises:
        ValueError: ``vlm`` with a checkpoint that has no image processor (a text-only judge cannot see the image).
    """
    from transformers import AutoProcessor, AutoTokenizer

    from genrm.engine.checkpoints import checkpoint_path

    path = checkpoint_path(path)
    if not data.shows_images():
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    processor = AutoProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
    if getattr(processor, "image_processor", None) is None:
        vlm = data.checked_exposure() == "vlm"
        why = "the vlm exposure" if vlm else f"the {data.method} method (its judge sees the image)"
        raise ValueError(f"{path} has no image processor: {why} needs a vision-language judge "
                         "(a Qwen3-VL checkpoint, say)")  # fmt: skip
    return processor


def token_count(processing: Any, record: dict[str, Any]) -> int:
    """The tokens of a record's ``prompt`` and ``completion`` (when it has one) as the trainer will see them: with
    its images (the ``images`` column) expanded by the processor into the image tokens the model reads."""
    import copy

    messages = list(record["prompt"]) + list(record.get("completion", []))
    if record.get(IMAGES_COLUMN):
        from trl.data_utils import prepare_multimodal_messages

        # TRL's own layout of a vision record (the image part before the user's text), on a copy
        shown = prepare_multimodal_messages(copy.deepcopy(messages), images=list(record[IMAGES_COLUMN]))
        ids = processing.apply_chat_template(shown, tokenize=True, return_dict=True)["input_ids"]
        return len(ids[0]) if ids and isinstance(ids[0], list) else len(ids)
    ids = getattr(processing, "tokenizer", processing).apply_chat_template(messages, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


def prepare_judge_model(data: JudgeDataArguments, training: Any, model_args: Any) -> tuple[str, Any]:
    """The base judge's path (the tiny judge saved there first when asked to) and its tokenizer or processor; the
    trainer will load the model with ``model_args.dtype``."""
    path = ensure_base_model(model_args.model_name_or_path, data)
    processing = load_processing_class(path, data, training.trust_remote_code)
    training.model_init_kwargs = {**(training.model_init_kwargs or {}), "dtype": model_args.dtype}
    return path, processing


def judge_datasets(
    data: JudgeDataArguments,
    build: Callable[[Any, Exposure], dict[str, Any]],
    columns: Sequence[str],
    processing: Any,
    max_tokens: int,
) -> tuple[Any, Any]:
    """The train dataset (and the eval one, when ``data.eval_file`` is set) of ``build`` records of the method's
    examples.

    When the judge is shown images (:meth:`JudgeDataArguments.shows_images`) the records keep an ``images`` column of
    decoded images (relative paths are read against the data file's folder); an unreadable image stops with a
    message naming its example.
    """
    exposure, example_model, images = data.checked_exposure(), data.training().example_model, data.shows_images()
    if images:
        columns = (*columns, IMAGES_COLUMN)

    def dataset(path: str, limit: int | None) -> Any:
        records = [build(example, exposure) for example in load_examples(path, example_model, limit)]
        if images:
            records = [_with_pixels(record, Path(path).parent) for record in records]
        return records_dataset(records, columns, processing, max_tokens, path)

    train = dataset(data.train_file, data.max_examples)
    return train, dataset(data.eval_file, None) if data.eval_file else None


def _with_pixels(record: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    from genrm.engine.images import ImageError, load_image

    try:
        images = [load_image(reference, base_dir) for reference in record[IMAGES_COLUMN]]
    except ImageError as exc:
        raise ValueError(f"example {record.get('id')}: {exc}") from None
    return {**record, IMAGES_COLUMN: images}


def resume_point(resume: str | bool | None, output_dir: str, say: bool = True) -> str | None:
    """The checkpoint a run resumes from: ``resume_from_checkpoint`` as given (a ``checkpoint-N`` folder), or for
    ``last`` (or ``true``) the last one saved in ``output_dir``; None to start afresh. ``say``: log which.

    Raises ValueError naming what is missing: no checkpoint in ``output_dir``, or a folder that does not exist.
    """
    from genrm.engine.checkpoints import last_checkpoint

    if resume is None or resume is False or (isinstance(resume, str) and resume.lower() in ("", "false", "no")):
        return None
    if resume is True or str(resume).lower() in ("last", "true", "yes"):
        last = last_checkpoint(output_dir)
        if last is None:
            raise ValueError(f"resume_from_checkpoint: {output_dir} holds no checkpoint-N folder to resume from "
                             "(save_strategy: steps and save_steps write them)")  # fmt: skip
        if say:
            logger.info("resuming from %s", last)
        return str(last)
    if not Path(str(resume), "trainer_state.json").is_file():
        raise ValueError(f"resume_from_checkpoint: {resume!r:.200} is not a checkpoint folder a trainer saved "
                         "(no trainer_state.json)")  # fmt: skip
    return str(resume)


def train_and_save(trainer: Any, tokenizer: Any, data: Any, plot_keys: Sequence[str], title: str) -> Path:
    """Run ``trainer``, save the model (:func:`save_judge`) and, when ``data.plot``, its curves; returns the output
    dir. ``data`` is any arguments object with ``merge_lora`` and ``plot`` (the judge's or the policy's), and
    optionally ``stop_after_s`` (:func:`genrm.training.callbacks.stop_after`).

    Every run logs one line a step (:mod:`genrm.training.step_log`), warns when GRPO's groups have no reward spread
    for several logs in a row, and saves a checkpoint on Ctrl-C (:mod:`genrm.training.callbacks`); an interrupted
    run raises KeyboardInterrupt once the checkpoint is saved, saying where it is and how to resume."""
    from genrm.training.callbacks import (
        InterruptCheckpoint,
        NoSpreadWarning,
        TiedWeightsNote,
        stop_after,
        ties_output_embeddings,
    )
    from genrm.training.step_log import compact_progress

    seconds = getattr(data, "stop_after_s", None)
    if seconds is not None:
        trainer.add_callback(stop_after(seconds))
    interrupt = InterruptCheckpoint()
    trainer.add_callback(interrupt.callback)
    trainer.add_callback(NoSpreadWarning().callback)
    compact_progress(trainer)
    trainer_log, note = logging.getLogger("transformers.trainer"), TiedWeightsNote()
    if ties_output_embeddings(trainer.model):
        trainer_log.addFilter(note)
    try:
        trainer.train(resume_from_checkpoint=resume_point(trainer.args.resume_from_checkpoint,
                                                          trainer.args.output_dir))  # fmt: skip
    finally:
        interrupt.restore()
        trainer_log.removeFilter(note)
    if interrupt.step is not None:  # a Ctrl-C after the last step changed nothing: the run is saved as usual
        folder = Path(trainer.args.output_dir) / f"checkpoint-{interrupt.step}"
        logger.warning("interrupted at step %s: checkpoint saved in %s; go on with the same command and "
                       "--resume_from_checkpoint last", interrupt.step, folder)  # fmt: skip
        raise KeyboardInterrupt
    out = save_judge(trainer, tokenizer, Path(trainer.args.output_dir), data.merge_lora)
    if data.plot:
        plot_curves(trainer.state.log_history, plot_keys, out / "training_curves.png", title)
    logger.info("saved the model to %s: %s", out, written_files(out))
    return out


def written_files(out: Path) -> str:
    """What a run left in its output folder ``out``, for its last line: each file by name, the curves and the
    training log first, then the checkpoint folders counted."""
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    first = [n for n in files if n in ("training_curves.png", "log_history.json")]
    rest = [n for n in files if n not in first]
    folders = [p.name for p in out.iterdir() if p.is_dir()]
    named = ", ".join([*first, *rest])
    return named + (f"; {len(folders)} folders ({', '.join(sorted(folders)[:3])}{', ...' if len(folders) > 3 else ''})"
                    if folders else "")  # fmt: skip


def records_dataset(
    records: Sequence[dict[str, Any]], columns: Sequence[str], processing: Any, max_tokens: int, source: str
) -> Any:
    """A ``datasets.Dataset`` of ``columns`` from the records that fit in ``max_tokens``.

    What is counted is the ``prompt`` plus the ``completion`` when there is one, with the image tokens of a record's
    ``images`` (:func:`token_count`; ``processing`` is the tokenizer, or the processor of a vision-language judge).
    Records that do not fit are dropped with a warning (never truncated: a cut answer would teach the judge to stop
    mid-JSON, and a cut image would not match its features); raises ValueError when none fits.
    """
    from datasets import Dataset

    kept = [record for record in records if token_count(processing, record) <= max_tokens]
    if len(kept) < len(records):
        logger.warning("dropped %d of %d records of %s longer than %d tokens", len(records) - len(kept),
                       len(records), source, max_tokens)  # fmt: skip
    if not kept:
        raise ValueError(f"no record of {source} fits in {max_tokens} tokens")
    return Dataset.from_list([{column: r[column] for column in columns} for r in kept])


def plot_curves(log_history: list[dict[str, Any]], keys: Sequence[str], path: Path, title: str) -> Path | None:
    """Plot the logged ``keys`` against the step into ``path`` (PNG); None when nothing of them was logged."""
    from genrm.figures import pyplot, save

    plt = pyplot()

    series = {key: [(e["step"], e[key]) for e in log_history if key in e and "step" in e] for key in keys}
    series = {key: points for key, points in series.items() if points}
    if not series:
        return None
    figure, axes = plt.subplots(len(series), 1, figsize=(7, 2.6 * len(series)), squeeze=False, sharex=True)
    for axis, (key, points) in zip(axes[:, 0], series.items(), strict=True):
        axis.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=3)
        axis.set_ylabel(key.replace("rewards/", "").replace("/mean", ""))
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    figure.suptitle(title)
    save(figure, path, dpi=110)
    return path


def save_judge(trainer: Any, tokenizer: Any, out: Path, merge_lora: bool) -> Path:
    """Save the trained judge with its tokenizer (or processor) and ``log_history.json`` to ``out``; LoRA merged
    when asked to.

    A merged checkpoint loads in every server (SGLang, the transformers backend) with no peft; the adapter alone is
    kept in ``out/adapter``.
    """
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1) + "\n", encoding="utf-8")
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "peft_config") and merge_lora:
        model.save_pretrained(str(out / "adapter"))
        model = model.merge_and_unload()
        model.save_pretrained(str(out))
    else:
        trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return out
