"""``genrm train sft|rlvr``: train the judge from a recipe (TRL's YAML and flag conventions).

    genrm train sft --config recipes/sft_tiny_cpu.yaml
    genrm train rlvr --config recipes/rlvr_tiny_cpu.yaml --max_steps 10

Everything after the job name goes to ``trl.TrlParser``; ``genrm train sft --help`` lists every field.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from genrm.cli.paths import input_file


def train_parser(job: str) -> Any:
    """The ``trl.TrlParser`` of a judge-training job (``sft`` or ``rlvr``): recipe keys and ``--flags`` of
    ``JudgeDataArguments``, ``SFTConfig`` or ``GRPOConfig``, and ``ModelConfig``."""
    from trl import GRPOConfig, ModelConfig, SFTConfig, TrlParser

    from genrm.training.common import JudgeDataArguments

    config_type = {"sft": SFTConfig, "rlvr": GRPOConfig}[job]
    return TrlParser((JudgeDataArguments, config_type, ModelConfig), prog=f"genrm train {job}")


def _config_problem(rest: list[str]) -> str | None:
    """What is wrong with the recipe ``--config`` names in ``rest`` (TRL would raise on it), or None."""
    for index, arg in enumerate(rest):
        path = None
        if arg == "--config" and index + 1 < len(rest):
            path = rest[index + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        if path is not None:
            try:
                input_file(path)
            except argparse.ArgumentTypeError as exc:
                return f"--config: {exc}"
    return None


def _cmd_train(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.job == "sft":
        from genrm.training.sft import run_sft as run
    else:
        from genrm.training.rlvr import run_rlvr as run
    problem = _config_problem(args.rest)
    if problem:
        print(f"genrm train {args.job}: error: {problem}", file=sys.stderr)
        return 2
    data, training, model = train_parser(args.job).parse_args_and_config(args=args.rest)
    try:
        run(data, training, model)
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
    train.add_argument("-h", "--help", action="help", help="show this help; genrm train sft --help lists the fields")
    train.add_argument("job", choices=["sft", "rlvr"])
    train.add_argument("rest", nargs=argparse.REMAINDER)
    train.set_defaults(handler=_cmd_train)
