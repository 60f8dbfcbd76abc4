"""Reading the rubicap judge's answers: one criterion's verdict, every criterion's verdicts at once, or a Likert
score, each failure classed and never turned into a score.

Accepted around a JSON object: a reasoning block, a code fence (the source asks for a fenced object), text after it.
A Likert answer may also be the bare number the source's baselines ask for (``7``). Refused: a score that is not
exactly 0 or 1 (a verdict) or an integer from 0 to 10 (Likert), a verdict list of another length than the rubric's.

Failure classes: ``unreadable`` (nothing of the answer's form), ``schema`` (found, but not of the form),
``backend_error`` (the engine gave no answer). Bounded: at most ``MAX_OUTPUT_CHARS`` characters are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from genrm.engine import Reader, Reply
from genrm.methods.answer_json import MAX_OUTPUT_CHARS, extract_json_object, validation_problems
from genrm.methods.rubicap.models import CriterionVerdict, LikertScore, RubricVerdicts

Failure = Literal["unreadable", "schema", "backend_error"]
_BARE_NUMBER = re.compile(r"^\s*(\d{1,2})\s*$")


@dataclass(frozen=True)
class Reading:
    """One judge answer, read: the answer (a verdict, the verdicts, or a Likert score), or why there is none."""

    answer: CriterionVerdict | RubricVerdicts | LikertScore | None
    failure: Failure | None = None
    reason: str = "read"


def _validated(model: type[BaseModel], raw: object) -> Reading:
    try:
        return Reading(model.model_validate(raw))  # type: ignore[arg-type]
    except ValidationError as exc:
        return Reading(None, "schema", f"the judge's answer is not of the expected form: {validation_problems(exc)}")


def read_verdict(text: str) -> Reading:
    """Read one criterion's verdict; never raises on any string."""
    found = extract_json_object(text[:MAX_OUTPUT_CHARS]) if isinstance(text, str) else None
    if found is None:
        return Reading(None, "unreadable", "no JSON object in the judge's answer")
    return _validated(CriterionVerdict, found)


def read_verdicts(text: str, count: int) -> Reading:
    """Read the verdicts on ``count`` criteria; never raises on any string."""
    found = extract_json_object(text[:MAX_OUTPUT_CHARS]) if isinstance(text, str) else None
    if found is None:
        return Reading(None, "unreadable", "no JSON object in the judge's answer")
    reading = _validated(RubricVerdicts, found)
    if reading.answer is not None and len(reading.answer.verdicts) != count:  # type: ignore[union-attr]
        got = len(reading.answer.verdicts)  # type: ignore[union-attr]
        return Reading(None, "schema", f"the judge gave {got} verdicts for {count} criteria")
    return reading


def read_likert(text: str) -> Reading:
    """Read a Likert score (a JSON object or a bare number); never raises on any string."""
    if not isinstance(text, str):
        return Reading(None, "unreadable", f"the judge's answer is a {type(text).__name__}, not text")
    bare = _BARE_NUMBER.match(text[:100])
    if bare is not None:
        return _validated(LikertScore, {"score": int(bare.group(1))})
    found = extract_json_object(text[:MAX_OUTPUT_CHARS])
    if found is None:
        return Reading(None, "unreadable", "no score in the judge's answer")
    return _validated(LikertScore, found)


def reader(read: object) -> Reader[Reading]:
    """How :func:`genrm.engine.ask` reads replies with ``read`` (a function of the answer's text): an unreadable
    answer is asked for again, a failed call is a ``backend_error`` reading with the engine's reason."""

    def on_reply(reply: Reply) -> tuple[Reading, bool]:
        reading = read(reply.text)  # type: ignore[operator]
        return reading, reading.failure is None

    return Reader(on_reply, lambda reason: Reading(None, "backend_error", reason))
