"""Command-line options generated from a pydantic settings model, so that a setting is declared once.

Each field ``name`` of the model becomes ``--name-with-dashes`` (plus the spellings given as aliases), with the
field's description as its help and its type read from the annotation: numbers and strings as such, a ``Literal``
as choices, a ``bool`` as ``--name/--no-name``, a list as a repeatable option, a dict as JSON. Every option defaults
to None, meaning "not given", so :func:`given_settings` passes on only what the user wrote, and the model's own
precedence (defaults < YAML < environment < options) and validation decide the rest.

Not covered: nested models (a field whose type is a model is skipped; set it in the YAML file).
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr


def _unwrap(annotation: Any) -> Any:
    """``X`` for ``X | None`` (and ``Optional[X]``)."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def json_object(text: str) -> dict[str, Any]:
    """A command-line value read as a JSON object (argparse type); anything else is an argparse error."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r:.60}")
    return value


def _option(annotation: Any) -> dict[str, Any] | None:
    """argparse keywords for a field of this type; None for a type the command line does not take."""
    kind = _unwrap(annotation)
    origin = get_origin(kind)
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is Literal:
        choices = list(get_args(kind))
        return {"choices": choices, "type": type(choices[0])}
    if kind in (int, float):
        return {"type": kind}
    if kind in (str, Path, SecretStr):
        return {"type": str}
    if isinstance(kind, type) and callable(getattr(kind, "parse", None)):  # a value spelled in one string (a judge)
        return {"type": str, "metavar": "SPEC"}
    if origin is list and get_args(kind) and _unwrap(get_args(kind)[0]) in (str, Path):
        return {"action": "append", "type": str}
    if origin is dict or kind is dict:
        return {"type": json_object, "metavar": "JSON"}
    return None


def add_settings_options(
    parser: argparse.ArgumentParser,
    model: type[BaseModel],
    aliases: Mapping[str, Sequence[str]] | None = None,
    skip: Sequence[str] = (),
) -> list[str]:
    """Add an option for every field of ``model`` (but ``skip``) to ``parser``; returns the field names added.

    Args:
        aliases: further option strings of a field, e.g. ``{"judge_urls": ["--judge-url"]}``: the spelling other
            commands give the same setting.
    """
    aliases = aliases or {}
    added = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        keywords = _option(field.annotation)
        if keywords is None:
            continue
        default = field.get_default(call_default_factory=True)
        shown = "" if default in (None, [], {}) or isinstance(default, SecretStr) else f" (default: {default})"
        flags = ["--" + name.replace("_", "-"), *aliases.get(name, ())]
        parser.add_argument(*flags, dest=name, default=None, help=(field.description or "") + shown, **keywords)
        added.append(name)
    return added


def given_settings(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The settings among ``names`` that were given on the command line (not None)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
