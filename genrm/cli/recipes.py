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
import difflib
import json
import sys
from collections.abc import Callable
from pathlib import Path
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


def _options(parser: Any) -> list[argparse.Action]:
    return [action for action in parser._actions if action.option_strings and action.dest != "help"]


def _shown(parser: Any) -> tuple[list[argparse.Action], list[argparse.Action]]:
    """The actions the short help lists: the command's own fields, then those of :data:`COMMON_FIELDS` it has."""
    own, fields = _own_fields(tuple(parser.dataclass_types)), _options(parser)
    mine, shown = [], set()
    for action in fields:
        if action.dest in own and action.dest not in shown:
            mine.append(action)
            shown.add(action.dest)
    common = []
    for name in COMMON_FIELDS:
        action = next((a for a in fields if a.dest == name), None)
        if action is not None and name not in shown:
            common.append(action)
            shown.add(name)
    return mine, common


def _render_help(prog: str, description: str, own_title: str, mine: list[argparse.Action],
                 common: list[argparse.Action], total: int) -> str:  # fmt: skip
    short = argparse.ArgumentParser(prog=prog, description=description, add_help=False,
                                    usage=f"{prog} --config RECIPE.yaml [--FIELD VALUE ...]",
                                    formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    for title, actions in ((f"the fields of {own_title} (this command's own)", mine),
                           ("the fields of TRL and the model that a recipe sets most", common)):  # fmt: skip
        group = short.add_argument_group(title)
        for action in actions:
            group._add_action(action)
    return short.format_help() + f"\n--help-all lists every field ({total}).\n"


def short_help(parser: Any) -> str:
    """``parser``'s help with the command's own fields and :data:`COMMON_FIELDS` of TRL's, and how to see every
    field (``parser``: a ``trl.TrlParser``)."""
    mine, common = _shown(parser)
    return _render_help(parser.prog, parser.description, parser.dataclass_types[0].__name__, mine, common,
                        len(_options(parser)))  # fmt: skip


#: The packages whose configs a stored field list describes: a list stored under other versions is not used.
FIELD_PACKAGES = ("trl", "transformers", "peft")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in FIELD_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def _action_spec(action: argparse.Action) -> dict[str, Any]:
    # what the short help shows of a field; the default as the help prints it
    return {"flags": list(action.option_strings), "dest": action.dest, "help": action.help,
            "default": None if action.default is None else str(action.default), "nargs": action.nargs,
            "const": None if action.const is None else str(action.const),
            "choices": None if action.choices is None else [str(c) for c in action.choices],
            "metavar": action.metavar, "required": action.required}  # fmt: skip


def _spec_action(spec: dict[str, Any]) -> argparse.Action:
    holder = argparse.ArgumentParser(add_help=False)
    options = {k: spec[k] for k in ("help", "default", "nargs", "choices", "metavar", "required")}
    if spec["nargs"] == "?":
        options["const"] = spec["const"]
    return holder.add_argument(*spec["flags"], dest=spec["dest"], **options)


@dataclasses.dataclass(frozen=True)
class FieldStore:
    """Where a recipe command's fields are stored (a JSON file beside its module, one entry per command), so that its
    ``--help`` and the check of its recipe keys and flags need no import of TRL (seconds). ``own`` gives the
    command's own dataclass (cheap to import): a stored list whose own fields differ, or that was made under other
    versions of :data:`FIELD_PACKAGES`, is not used, and the command falls back to TRL's parser.

    ``python -m genrm.cli.store_fields`` writes every command's list again; a test checks that each is current."""

    path: Path
    command: str
    own: Callable[[], type]

    @staticmethod
    def describe(parser: Any) -> dict[str, Any]:
        """The stored form of ``parser`` (a ``trl.TrlParser`` of :func:`recipe_parser`)."""
        (mine, common), options, types = _shown(parser), _options(parser), tuple(parser.dataclass_types)
        return {"versions": _versions(), "prog": parser.prog, "description": parser.description,
                "own_title": types[0].__name__, "own": sorted(_own_fields(types)),
                "fields": sorted({a.dest for a in options}),
                "flags": sorted({f for a in options for f in a.option_strings}), "options": len(options),
                "own_help": [_action_spec(a) for a in mine],
                "common_help": [_action_spec(a) for a in common]}  # fmt: skip

    def write(self, parser: Any) -> None:
        """Store ``parser``'s fields under :attr:`command` (the file's other commands kept)."""
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            stored = {}
        stored[self.command] = self.describe(parser)
        self.path.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    def load(self) -> dict[str, Any] | None:
        """The stored fields, or None when there are none, or they do not describe the installed packages and the
        command's own fields."""
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8")).get(self.command)
        except (OSError, ValueError, AttributeError):
            return None
        if not isinstance(stored, dict) or stored.get("versions") != _versions():
            return None
        if stored.get("own") != sorted(field.name for field in dataclasses.fields(self.own())):
            return None
        return stored

    def help(self, stored: dict[str, Any]) -> str:
        """The short help of the stored fields, as :func:`short_help` renders it from the parser."""
        return _render_help(stored["prog"], stored["description"], stored["own_title"],
                            [_spec_action(s) for s in stored["own_help"]],
                            [_spec_action(s) for s in stored["common_help"]], stored["options"])  # fmt: skip


def _config_problem(rest: list[str]) -> str | None:
    """What is wrong with the recipe ``--config`` names in ``rest`` (TRL would raise on it), or None."""
    path = _recipe_path(rest)
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


def _read_mapping(path: str) -> tuple[dict[str, Any] | None, str | None]:
    """The recipe at ``path`` as a mapping, or what is wrong with it."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            recipe = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, f"the recipe {path} cannot be read as YAML: {' '.join(str(exc).split())[:300]}"
    if recipe is None:
        return None, f"the recipe {path} is empty: give its fields as key: value lines"
    if not isinstance(recipe, dict):
        return None, f"the recipe {path} is not a mapping of fields (key: value lines)"
    return recipe, None


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _recipe_key_problem(fields: set[str], prog: str, rest: list[str]) -> str | None:
    """What is wrong with the keys of the recipe ``rest`` names (a key that is none of ``fields``, with the closest
    field; a file that is not a mapping), or None; the file itself was checked before."""
    path = _recipe_path(rest)
    if path is None:
        return None
    recipe, problem = _read_mapping(path)
    if recipe is None:
        return problem
    unknown = [str(key) for key in recipe if str(key) not in fields and key != "env"]  # env: TRL's variables
    if not unknown:
        return None
    said = [_did_you_mean(key, sorted(fields)) for key in unknown]
    return (
        f"the recipe {path} has {'keys' if len(said) > 1 else 'a key'} that {prog} does not take: "
        f"{', '.join(said)} ({prog} --help-all lists every field)"
    )


def _flag_problem(flags: set[str], prog: str, rest: list[str]) -> str | None:
    """What is wrong with the ``--flags`` of ``rest``: one that is no flag of ``flags``, nor the start of one (argparse
    takes an unambiguous start as the flag), with the closest flag; or None."""
    for arg in rest:
        if not arg.startswith("--") or arg == "--":
            continue
        name = arg.split("=", 1)[0]
        if name == "--config" or name in flags or any(flag.startswith(name) for flag in flags):
            continue
        return f"{prog} takes no option {_did_you_mean(name, sorted(flags))} ({prog} --help-all lists every field)"
    return None


def recipe_values(rest: list[str]) -> dict[str, Any]:
    """The settings ``rest`` gives before TRL reads them: the recipe's keys, then each ``--field value`` over them
    (a flag with no value is ``True``; values as typed). For the checks a command makes before TRL is imported."""
    path = _recipe_path(rest)
    values: dict[str, Any] = {}
    if path is not None:
        recipe, _ = _read_mapping(path)
        values.update({str(k): v for k, v in (recipe or {}).items()})
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if not arg.startswith("--") or arg == "--config" or arg.startswith("--config="):
            continue
        name, equals, value = arg[2:].partition("=")
        if not equals:
            if index < len(rest) and not rest[index].startswith("--"):
                value, index = rest[index], index + 1
            else:
                value = True
        values[name] = value
    return values


def _settings_fine(fields: set[str], flags: set[str], command: str, rest: list[str],
                   precheck: Callable[[dict[str, Any]], str | None] | None) -> bool:  # fmt: skip
    """Whether the recipe keys, the flags and ``precheck`` find nothing wrong; otherwise the first problem is said."""
    problem = _recipe_key_problem(fields, command, rest) or _flag_problem(flags, command, rest)
    if problem is None and precheck is not None:
        problem = precheck(recipe_values(rest))
    if problem:
        print(f"{command}: error: {problem}", file=sys.stderr)
        return False
    return True


def run_files_problem(settings: dict[str, Any], data_keys: tuple[str, ...], tiny_key: str) -> str | None:
    """What is wrong with the files a training recipe names in ``settings`` (:func:`recipe_values` over the command's
    own defaults), or None, for a recipe command's ``precheck``: a data file of ``data_keys`` that cannot be read, a
    ``resume_from_checkpoint`` with no checkpoint, a ``model_name_or_path`` that is neither a model folder nor a hub
    model (unless ``tiny_key`` is set and the folder is missing: the command makes the tiny model there)."""
    from genrm.engine.checkpoints import reachable_checkpoint
    from genrm.training.common import resume_point

    for key in data_keys:
        if settings.get(key) is not None:
            try:
                input_file(str(settings[key]))
            except argparse.ArgumentTypeError as exc:
                return f"{key}: {exc}"
    try:
        resume_point(settings.get("resume_from_checkpoint"), str(settings.get("output_dir", "")), say=False)
    except ValueError as exc:
        return str(exc)
    model = settings.get("model_name_or_path")
    if model is None:
        return "model_name_or_path is required (a checkpoint folder or a hub id)"
    if truthy(settings.get(tiny_key, False)) and not Path(str(model)).exists():
        return None
    try:
        reachable_checkpoint(str(model))
    except (FileNotFoundError, ValueError) as exc:
        return f"model_name_or_path: {exc}"
    return None


def own_defaults(own: type) -> dict[str, Any]:
    """The defaults of the dataclass ``own`` (a recipe command's own fields), under :func:`recipe_values`."""
    return {f.name: f.default for f in dataclasses.fields(own) if f.default is not dataclasses.MISSING}


def truthy(value: Any) -> bool:
    """A recipe or flag value read as TRL reads a boolean (``true``, ``yes``, ``1``, a bare flag)."""
    return value is True or str(value).strip().lower() in ("true", "yes", "y", "1")


def read_recipe(make_parser: Callable[[], Any], rest: list[str], command: str, example: str,
                store: FieldStore | None = None,
                precheck: Callable[[dict[str, Any]], str | None] | None = None) -> tuple | None:  # fmt: skip
    """The dataclasses the parser ``make_parser()`` makes fills from ``rest`` (a recipe and flags); None after one
    line on standard error when there are no arguments, the recipe is not a readable file, has a key or ``rest`` a
    flag that is no field, ``precheck`` finds a problem in :func:`recipe_values` (a path that is not there: it
    returns the line), or TRL refuses a setting (bf16 on a machine without a GPU).

    With a current ``store`` all but the last are found, and ``--help`` is answered, before the parser is made (it
    imports TRL: seconds); ``--help-all`` always makes it."""
    if not rest:
        print(f"{command}: give a recipe: {example} (--help lists the fields)", file=sys.stderr)
        return None
    asks_help = "--help-all" in rest or "-h" in rest or "--help" in rest
    problem = None if asks_help else _config_problem(rest)
    if problem:
        print(f"{command}: error: {problem}", file=sys.stderr)
        return None
    stored = store.load() if store is not None and "--help-all" not in rest else None
    if stored is not None:
        if asks_help:
            print(store.help(stored))
            raise SystemExit(0)
        if not _settings_fine(set(stored["fields"]), set(stored["flags"]), command, rest, precheck):
            return None
    parser = make_parser()
    if "--help-all" in rest:
        parser.print_help()
        raise SystemExit(0)
    if asks_help:
        print(short_help(parser))
        raise SystemExit(0)
    options = _options(parser)
    if stored is None and not _settings_fine({a.dest for a in options}, {f for a in options for f in a.option_strings},
                                             command, rest, precheck):  # fmt: skip
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


#: Every recipe command with stored fields and the maker of its parser, as its module declares it at import.
STORED_COMMANDS: list[tuple[FieldStore, Callable[[], Any]]] = []


def stored_command(store: FieldStore, make_parser: Callable[[], Any]) -> FieldStore:
    """Declare that ``store`` keeps the fields of the parser ``make_parser()`` (see :data:`STORED_COMMANDS`)."""
    STORED_COMMANDS.append((store, make_parser))
    return store
