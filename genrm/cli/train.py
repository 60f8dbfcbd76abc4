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

from genrm.cli.recipes import FieldStore, own_defaults, read_recipe, recipe_parser, run_files_problem, stored_command

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
    """What is wrong with the files a judge-training recipe names, before TRL is imported: the data files, the
    checkpoint to resume and the base model (unless the tiny one is made there)."""
    settings = {**own_defaults(_own_type()), **values}
    return run_files_problem(settings, ("train_file", "eval_file"), "build_tiny_model")


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
