"""A reward method's own settings: one pydantic model per method, validated by the registry and listed by
``genrm methods``.

A method declares its model as the class attribute ``options_model`` (a subclass of :class:`MethodOptions`: unknown
keys are refused, values are checked by their field's type and range, and the model is frozen). Whatever the way in
(``--method-options``, ``GENRM_METHOD_OPTIONS``, a recipe's ``method_options``, verl's reward kwargs, an audit's
settings), the options reach the method as one validated value of that model, checked once, by
:func:`validate_options`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticUndefined

OptionsT = TypeVar("OptionsT", bound="MethodOptions")


class MethodOptions(BaseModel):
    """The base of every method's options model: no unknown key, values checked strictly (a JSON number for a number,
    ``true`` or ``false`` for a switch: ``"yes"`` is refused, not read as true), frozen once made."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NoOptions(MethodOptions):
    """The options of a method that takes none."""


def _problem(method: str, model: type[MethodOptions], exc: ValidationError) -> str:
    """One line naming the option ``exc`` refuses first, and why."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(map(str, error["loc"]))
    if error["type"] == "extra_forbidden":
        takes = ", ".join(model.model_fields) or "none"
        return f"the {method} method takes no option {where:.60}; it takes {takes}"
    reason = error["msg"].removeprefix("Value error, ")
    # a check over several options already names them; a field's check does not
    return f"the {method} option {where}: {reason}" if where else f"the {method} options: {reason}"


def validate_options(
    method: str, model: type[OptionsT], options: Mapping[str, Any] | MethodOptions | None
) -> OptionsT:
    """``options`` as ``model`` (a value of it is taken as it is); raises ValueError with one line naming the option
    that is unknown or refused (``method``: the method's registered name)."""
    if isinstance(options, model):
        return options
    if isinstance(options, MethodOptions):
        options = options.model_dump(exclude_unset=True)
    try:
        return model.model_validate(_plain(options or {}))
    except ValidationError as exc:
        raise ValueError(_problem(method, model, exc)) from None


def _type_name(annotation: Any) -> str:
    # what a user writes in JSON: a choice among words, a number, a mapping; "or null" where none is taken
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "|".join(map(str, arguments))
    if origin in (Union, UnionType):
        named = [_type_name(a) for a in arguments if a is not type(None)]
        return " or ".join(named) + (" or null" if type(None) in arguments else "")
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(_type_name(a) for a in arguments)}]"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(metadata: list[Any]) -> str:
    signs = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    return ", ".join(f"{sign} {getattr(m, key)}" for m in metadata for key, sign in signs.items() if hasattr(m, key))


def _plain(value: Any) -> Any:
    # A framework may hand its own containers (verl: OmegaConf's DictConfig and ListConfig); strict validation takes
    # JSON's, so mappings and sequences other than strings become dicts and lists, all the way down.
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(item) for item in value]
    return value


def describe_options(model: type[MethodOptions]) -> list[dict[str, Any]]:
    """Each option of ``model``: its ``name``, its ``type`` as JSON is written (``a|b`` for a choice), its
    ``bounds`` (e.g. ``> 0.0, < 1.0``; empty when none), its ``default`` (JSON data; None when it is required) and
    its ``help`` (the field's description)."""
    described = []
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        described.append({
            "name": name,
            "type": _type_name(field.annotation),
            "bounds": _bounds(field.metadata),
            "default": None if default is PydanticUndefined else _json_default(default),
            "help": field.description or "",
        })  # fmt: skip
    return described


def _json_default(value: Any) -> Any:
    # defaults are plain values (numbers, strings, booleans, None, small dicts and tuples); tuples read as lists
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {str(key): _json_default(item) for key, item in value.items()}
    return value
