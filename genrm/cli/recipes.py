"""The commands whose options are TRL's (``genrm train sft|rlvr``, ``genrm rl``, ``genrm pairs train``): a recipe and
flags, read by ``trl.TrlParser``, behind one front door.

Each says in its help that a recipe is ``--config FILE.yaml`` (TRL reads it before argparse sees the rest, so argparse
would not list it), answers a call with no arguments with the line to type, and reports a recipe that is missing or a
setting TRL refuses in one line, before any model is loaded.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from genrm.cli.paths import input_file


def recipe_parser(types: tuple[type, ...], prog: str, example: str) -> Any:
    """The ``trl.TrlParser`` of ``types`` (dataclasses of fields) for the command ``prog``, whose help starts with how
    to give a recipe (``example``: a full command line)."""
    from trl import TrlParser

    description = (f"A recipe is --config FILE.yaml (its keys: the fields below), e.g. {example}; any field given as "
                   "--field value overrides it.")  # fmt: skip
    return TrlParser(types, prog=prog, description=description)


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


def read_recipe(parser: Any, rest: list[str], command: str, example: str) -> tuple | None:
    """The dataclasses ``parser`` fills from ``rest`` (a recipe and flags); None after one line on standard error
    when there are no arguments, the recipe is not a readable file, or TRL refuses a setting (an unknown field, bf16
    on a machine without a GPU)."""
    if not rest:
        print(f"{command}: give a recipe: {example} (--help lists every field)", file=sys.stderr)
        return None
    problem = _config_problem(rest)
    if problem:
        print(f"{command}: error: {problem}", file=sys.stderr)
        return None
    from genrm.training.callbacks import quiet_upstream_deprecations

    quiet_upstream_deprecations()  # before the configs are made: TRL's defaults set the deprecated names
    try:
        return tuple(parser.parse_args_and_config(args=rest))
    except ValueError as exc:
        message = " ".join(str(exc).split())
        if "bf16" in message:
            message += " (on a machine without a GPU give --use_cpu true --bf16 false, as the recipes/*_cpu.yaml do)"
        print(f"{command}: error: {message}", file=sys.stderr)
        return None
