"""``genrm train sft|rlvr``: train the judge from a recipe (TRL's YAML and flag conventions).

    genrm train sft --config recipes/sft_tiny_cpu.yaml
    genrm train rlvr --config recipes/rlvr_tiny_cpu.yaml --max_steps 10

Everything after the job name goes to ``trl.TrlParser``; ``genrm train sft --help`` lists its own fields and the
common ones, ``--help-all`` every field.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from genrm.cli.recipes import FieldStore, read_recipe, recipe_parser, resume_problem, stored_command, truthy

_EXAMPLES = {"sft": "genrm train sft --config recipes/sft_tiny_cpu.yaml",
             "rlvr": "genrm train rlvr --config recipes/rlvr_tiny_cpu.yaml --max_steps 10"}  # fmt: skip


def train_parser(job: str) -> Any:
    """The ``trl.TrlParser`` of a judge-training job (``sft`` or ``rlvr``): recipe keys and ``--flags`` of
    ``JudgeDataArguments``, ``SFTConfig`` or ``GRPOConfig``, and ``ModelConfig``."""
    from trl import GRPOConfig, ModelConfig, SFTConfig

    from genrm.training.common import JudgeDataArguments

    config_type = {"sft": SFTConfig, "rlvr": GRPOConfig}[job]
    return recipe_parser((JudgeDataArguments, config_type, ModelConfig), f"genrm train {job}", _EXAMPLES[job])


def _own_type() -> type:
    from genrm.training.common import JudgeDataArguments

    return JudgeDataArguments


_STORES = {job: stored_command(FieldStore(Path(__file__).with_name("train.fields.json"), f"genrm train {job}",
                                          _own_type), lambda job=job: train_parser(job))
           for job in _EXAMPLES}  # fmt: skip


def _precheck(values: dict[str, Any]) -> str | None:
    """What is wrong with the files a judge-training recipe names, before TRL is imported: the base model (unless
    the tiny one is made there) and the data files."""
    from genrm.cli.paths import input_file
    from genrm.engine.checkpoints import reachable_checkpoint

    for key in ("train_file", "eval_file"):
        if values.get(key) is not None:
            try:
                input_file(str(values[key]))
            except argparse.ArgumentTypeError as exc:
                return f"{key}: {exc}"
    problem = resume_problem(values)
    if problem:
        return problem
    model = values.get("model_name_or_path")
    if model is None:
        return "model_name_or_path is required (a checkpoint folder or a hub id)"
    if truthy(values.get("build_tiny_model", False)):
        return None
    try:
        reachable_checkpoint(str(model))
    except (FileNotFoundError, ValueError) as exc:
        return f"model_name_or_path: {exc}"
    return None


def _cmd_train(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    read = read_recipe(lambda: train_parser(args.job), args.rest, f"genrm train {args.job}", _EXAMPLES[args.job],
                       _STORES[args.job], _precheck)  # fmt: skip
    if read is None:
        return 2
    if args.job == "sft":  # imported once the recipe is read: torch and TRL take seconds
        from genrm.training.sft import run_sft as run
    else:
        from genrm.training.rlvr import run_rlvr as run
    try:
        run(*read)
    except (ValueError, FileNotFoundError) as exc:  # bad data or a recipe that does not fit the model
        print(f"genrm train {args.job}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def register(sub: Any) -> None:
    """Add ``train`` to the ``genrm`` command."""
    train = sub.add_parser(
        "train", help="train the judge: sft, then rlvr (TRL + peft)", add_help=False,
        description="Train the judge. Arguments after the job go to TRL's parser: --config recipe.yaml and any field "
        "of JudgeDataArguments, SFTConfig/GRPOConfig and ModelConfig as --flag value.",
    )  # fmt: skip
    train.add_argument(
        "-h",
        "--help",
        action="help",
        help="show this help; genrm train sft --help lists the fields (--help-all: every field)",
    )
    train.add_argument("job", choices=["sft", "rlvr"])
    train.add_argument("rest", nargs=argparse.REMAINDER)
    train.set_defaults(handler=_cmd_train)
