"""Finding a judge's JSON object in its raw output, for any reward method.

Models wrap the object in code fences, put a reasoning block (``<think>...</think>``) before it, or add text after
it; all of that is accepted. Checking the object against a method's answer model is the method's job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from genrm.engine.asking import Reader
from genrm.engine.types import Reply

M = TypeVar("M", bound=BaseModel)

#: The most characters of a judge's output that are read.
MAX_OUTPUT_CHARS = 200_000
_MAX_JSON_STARTS = 64


def without_thinking(text: str) -> str:
    """``text`` with every ``<think>...</think>`` block (any case, the nearest closing tag) replaced by a space, as
    ``re.sub(r"<think>.*?</think>", " ", text, flags=re.DOTALL | re.IGNORECASE)`` does, in one pass: the pattern took
    1.4 s over 40,000 unclosed ``<think>`` tags."""
    lower, out, at = text.lower(), [], 0
    while (start := lower.find("<think>", at)) >= 0 and (end := lower.find("</think>", start + 7)) >= 0:
        out += [text[at:start], " "]
        at = end + len("</think>")
    return "".join(out) + text[at:]


def strip_reasoning(text: str) -> str:
    """``text`` without its reasoning: every ``<think>...</think>`` block, and everything up to a closing tag left
    without its opening (one cut off by the prompt template: what follows the close is the answer)."""
    text = without_thinking(text)
    lower = text.lower()
    if "</think>" in lower:
        text = text[lower.rindex("</think>") + len("</think>") :]
    return text


def fenced_blocks(text: str) -> list[str]:
    """The contents of the code fences of ``text`` (```` ``` ```` to the next ```` ``` ````, a ``json`` tag dropped),
    as ``re.findall(r"```(?:json)?\\s*\\n?(.*?)```", text, re.DOTALL | re.IGNORECASE)`` finds them up to white
    space at the start, in one pass."""
    blocks, at = [], 0
    while (start := text.find("```", at)) >= 0 and (end := text.find("```", start + 3)) >= 0:
        inner = text[start + 3 : end]
        blocks.append(inner[4:] if inner[:4].lower() == "json" else inner)
        at = end + 3
    return blocks


def extract_json_object(text: str) -> dict | None:
    """The judge's JSON object in ``text``: the last fenced block that holds one, else the last object that parses
    outside any other (a judge that revises its answer writes the revision last, fenced or not).

    Returns None when there is none. Bounded: at most ``MAX_OUTPUT_CHARS`` characters are read, and decoding is tried
    from at most 64 opening braces. Parsed strictly: a raw control character inside a string is not JSON, so an object
    holding one is not read (the answer grammar admits none: :mod:`genrm.engine.answer_grammar`).
    """
    text = strip_reasoning(text[:MAX_OUTPUT_CHARS])
    for block in reversed(fenced_blocks(text)):
        try:
            value = json.loads(block)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    found, start, tried = None, text.find("{"), 0
    while start != -1 and tried < _MAX_JSON_STARTS:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            found = value  # an object written after another revises it, as a later fenced block does
        else:
            end = start + 1
        start, tried = text.find("{", end), tried + 1
    return found


def validation_problems(exc: ValidationError, whole: str = "answer", most: int = 5) -> str:
    """The first ``most`` problems of a pydantic validation error, each as ``where: what`` (``whole`` when the problem
    is the object itself), joined by semicolons, with a count of the rest."""
    errors = exc.errors(include_url=False)
    shown = "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in errors[:most])
    return shown + (f" (and {len(errors) - most} more)" if len(errors) > most else "")


@dataclass(frozen=True)
class ModelReading(Generic[M]):
    """A judge's answer read as a pydantic model, or why it could not be (``unreadable: ...``, ``schema: ...``,
    ``backend_error: ...``)."""

    answer: M | None
    failure: str | None = None


def read_model(text: object, model: type[M], found: object = None) -> ModelReading[M]:
    """Read ``model`` from a judge's answer ``text`` (the JSON object in it, or ``found`` when the caller already
    extracted one); never raises on any input."""
    if found is None:
        found = extract_json_object(text[:MAX_OUTPUT_CHARS]) if isinstance(text, str) else None
    if found is None:
        return ModelReading(None, "unreadable: no JSON object in the judge's answer")
    try:
        return ModelReading(model.model_validate(found))
    except ValidationError as exc:
        return ModelReading(None, f"schema: {validation_problems(exc)}")


def model_reader(model: type[M], check: Callable[[M], str | None] | None = None) -> Reader[ModelReading[M]]:
    """How :func:`genrm.engine.ask` reads ``model`` answers: an answer that does not read, or that ``check`` (when
    given) faults, is asked for again; a failed call is a ``backend_error`` reading with the engine's reason."""

    def read(reply: Reply) -> tuple[ModelReading[M], bool]:
        reading = read_model(reply.text, model)
        if reading.answer is not None and check is not None and (problem := check(reading.answer)) is not None:
            reading = ModelReading(None, f"schema: {problem}")
        return reading, reading.answer is not None

    return Reader(read, lambda reason: ModelReading(None, f"backend_error: {reason}"))
