"""Reading a pydantic settings model from the entry points that declare their own parameters.

A setting is declared once, as a field of a pydantic model (its name, type, default, range and help); a recipe's
dataclass field, a function's keyword argument and an environment variable take their default and help from it
(:func:`field_default`, :func:`field_help`) and are validated by it (:func:`validated`, :func:`validated_env`), so a
bad value is refused with one line naming the setting, or the variable, wherever it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from genrm.jsonl import first_error

M = TypeVar("M", bound=BaseModel)

#: Environment variables of settings that are no longer read, and what took each one's place: a variable that is
#: set is otherwise ignored without a word, and a run would go on with a setting it was not given.
REMOVED_VARIABLES = {
    "GENRM_TAU": "the rubric method's option tau, in GENRM_METHOD_OPTIONS (e.g. '{\"tau\": 0.4}')",
    "GENRM_SGLANG_PORT": "GENRM_ENGINE_PORT",
    "GENRM_SGLANG_ARGS": "GENRM_ENGINE_ARGS",
    "GENRM_SGLANG_COMMAND": "GENRM_ENGINE_COMMAND",
}


def refuse_removed_variables(environ: Mapping[str, str]) -> None:
    """Raise ValueError naming the first variable of :data:`REMOVED_VARIABLES` set in ``environ``, and its
    replacement."""
    for variable, replacement in REMOVED_VARIABLES.items():
        if variable in environ:
            raise ValueError(f"{variable} is no longer read: use {replacement}")


def field_default(model: type[BaseModel], name: str) -> Any:
    """The default of ``model``'s field ``name`` (KeyError for a name it has not)."""
    info = model.model_fields[name]
    return info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]


def field_help(model: type[BaseModel], name: str) -> str:
    """The help text of ``model``'s field ``name`` (its description; the name when it has none)."""
    return model.model_fields[name].description or name


def validated(model: type[M], values: Mapping[str, Any], where: str = "") -> M:
    """``values`` validated by ``model`` (None values left to their defaults); raises ValueError with one line naming
    the setting (``where`` says how it was given, e.g. ``verl's reward kwargs``)."""
    given = {name: value for name, value in values.items() if value is not None}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        problem = first_error(exc, "settings")
        raise ValueError(f"{where}: {problem}" if where else problem) from None


def validated_env(model: type[M], environ: Mapping[str, str], variables: Mapping[str, str]) -> M:
    """``model`` read from the environment: ``variables`` maps each field to the variable it is read from (an unset
    variable leaves the default); raises ValueError naming the variable of the first value refused."""
    given = {name: environ[variable] for name, variable in variables.items() if variable in environ}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        variable = variables.get(str(error["loc"][0]) if error["loc"] else "", "GENRM_*")
        raise ValueError(f"{variable}: {error['msg'].removeprefix('Value error, ')}") from None
