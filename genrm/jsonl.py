"""Reading JSONL files of pydantic models, with one wording for a refused line wherever a command reads one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def read_models(lines: Iterable[str], model: type[M], source: str = "") -> list[M]:
    """Every non-blank line of ``lines`` (a JSONL file's lines, or an open file) as ``model``.

    Raises ValueError for the first line refused, on one line: ``SOURCE line N: FIELD: why`` (``FIELD`` is the
    dotted path of the first field at fault, ``line`` for a line that is not a JSON object of the model at all).
    """
    items = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate_json(line))
        except ValidationError as exc:
            prefix = f"{source} line" if source else "line"
            raise ValueError(f"{prefix} {number}: {first_error(exc)}") from None
    return items


def first_error(exc: ValidationError, whole: str = "line") -> str:
    """``FIELD: why`` for the first error of ``exc`` (``whole`` for the FIELD of an error about the whole item)."""
    first = exc.errors(include_url=False)[0]
    # a validator's own ValueError already says what is wrong; pydantic's prefix only says it was a ValueError
    return f"{'.'.join(map(str, first['loc'])) or whole}: {first['msg'].removeprefix('Value error, ')}"
