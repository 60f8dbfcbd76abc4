"""The commands whose options are TRL's (``genrm train sft|rlvr``, ``genrm rl``, ``genrm pairs train``): a recipe and
flags, read by ``trl.TrlParser``, behind one front door.

Each says in its help that a recipe is ``--config FILE.yaml`` (TRL reads it before argparse sees the rest, so argparse
would not list it), answers a call with no arguments with the line to type, and reports a recipe that is missing or a
setting TRL refuses in one line, before any model is loaded. ``--help`` is short: genrm's own fields, then the TRL
and model fields a recipe sets most; ``--help-all`` lists every field (hundreds: TRL's configs).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from genrm.cli.paths import input_file


def recipe_parser(types: tuple[type, ...], prog: str, example: str) -> Any:
    """The ``trl.TrlParser`` of ``types`` (dataclasses of fields) for the command ``prog``, whose help starts with how
    to give a recipe (``example``: a full command line)."""
    from trl import TrlParser

    description = (f"A recipe is --config FILE.yaml (its keys: the fields below), e.g. {example}; any field given as "
                   "--field value overrides it.")  # fmt: skip
    return TrlParser(types, prog=prog, description=description)


#: The TRL and model fields a recipe sets most, which the short help lists after the command's own.
COMMON_FIELDS = ("model_name_or_path", "output_dir", "max_steps", "learning_rate", "per_device_train_batch_size",
                 "num_generations", "max_completion_length", "logging_steps", "save_steps", "resume_from_checkpoint",
                 "use_cpu", "bf16", "seed")  # fmt: skip


def _own_fields(types: tuple[type, ...]) -> set[str]:
    """The fields a recipe command declares itself: its first dataclass's when TRL's come in others, else those its
    one dataclass declares on top of the TRL config it extends."""
    if len(types) > 1:
        return {field.name for field in dataclasses.fields(types[0])}
    return set(vars(types[0]).get("__annotations__", {}))


def short_help(parser: Any) -> str:
    """``parser``'s help with the command's own fields and :data:`COMMON_FIELDS` of TRL's, and how to see every
    field (``parser``: a ``trl.TrlParser``)."""
    types = tuple(parser.dataclass_types)
    short = argparse.ArgumentParser(prog=parser.prog, description=parser.description, add_help=False,
                                    usage=f"{parser.prog} --config RECIPE.yaml [--FIELD VALUE ...]",
                                    formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    own, fields = _own_fields(types), [a for a in parser._actions if a.option_strings and a.dest != "help"]
    mine = short.add_argument_group(f"the fields of {types[0].__name__} (this command's own)")
    common = short.add_argument_group("the fields of TRL and the model that a recipe sets most")
    shown = set()
    for action in fields:
        if action.dest in own and action.dest not in shown:
            mine._add_action(action)
            shown.add(action.dest)
    for name in COMMON_FIELDS:
        action = next((a for a in fields if a.dest == name), None)
        if action is not None and name not in shown:
            common._add_action(action)
            shown.add(name)
    return short.format_help() + f"\n--help-all lists every field ({len(fields)}).\n"


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


def _recipe_path(rest: list[str]) -> str | None:
    for index, arg in enumerate(rest):
        if arg == "--config" and index + 1 < len(rest):
            return rest[index + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def _recipe_key_problem(parser: Any, rest: list[str]) -> str | None:
    """What is wrong with the keys of the recipe ``rest`` names (a key that is no field of ``parser``, with the
    closest field; a file that is not a mapping), or None; the file itself was checked before."""
    import difflib

    import yaml

    path = _recipe_path(rest)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            recipe = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return f"the recipe {path} cannot be read as YAML: {' '.join(str(exc).split())[:300]}"
    if recipe is None:
        return f"the recipe {path} is empty: give its fields as key: value lines"
    if not isinstance(recipe, dict):
        return f"the recipe {path} is not a mapping of fields (key: value lines)"
    fields = {action.dest for action in parser._actions if action.option_strings}
    unknown = [str(key) for key in recipe if str(key) not in fields and key != "env"]  # env: TRL's variables
    if not unknown:
        return None
    said = []
    for key in unknown:
        close = difflib.get_close_matches(key, sorted(fields), n=1, cutoff=0.75)
        said.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (
        f"the recipe {path} has {'keys' if len(said) > 1 else 'a key'} that {parser.prog} does not take: "
        f"{', '.join(said)} ({parser.prog} --help-all lists every field)"
    )


def read_recipe(make_parser: Callable[[], Any], rest: list[str], command: str, example: str) -> tuple | None:
    """The dataclasses the parser ``make_parser()`` makes fills from ``rest`` (a recipe and flags); None after one
    line on standard error when there are no arguments, the recipe is not a readable file, has a key that is no
    field, or TRL refuses a setting (bf16 on a machine without a GPU). The first two are found before the parser is
    made (it imports TRL: seconds)."""
    if not rest:
        print(f"{command}: give a recipe: {example} (--help lists the fields)", file=sys.stderr)
        return None
    asks_help = "--help-all" in rest or "-h" in rest or "--help" in rest
    problem = None if asks_help else _config_problem(rest)
    if problem:
        print(f"{command}: error: {problem}", file=sys.stderr)
        return None
    parser = make_parser()
    if "--help-all" in rest:
        parser.print_help()
        raise SystemExit(0)
    if asks_help:
        print(short_help(parser))
        raise SystemExit(0)
    problem = _recipe_key_problem(parser, rest)
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
