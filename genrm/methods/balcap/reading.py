"""Reading the balcap judge's answer (a JSON object of :class:`.models.BalCapAnswer`'s form), with every failure
classed and never turned into a reward.

Accepted around the object: a reasoning block before it, a code fence, text before or after (the source's judge is
told to answer JSON only; a model that adds a sentence still has its object read). Refused: a score outside 1-10 or
not an integer, a missing field, an unknown field, a reference with no assertion, more than
:data:`.models.MAX_ASSERTIONS` assertions on a side.

Failure classes: ``unreadable`` (no JSON object), ``schema`` (an object, not of the answer's form), ``backend_error``
(the engine gave no answer). Bounded: at most ``MAX_OUTPUT_CHARS`` characters are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from genrm.engine import Reader, Reply
from genrm.methods.answer_json import MAX_OUTPUT_CHARS, extract_json_object, validation_problems
from genrm.methods.balcap.models import BalCapAnswer

Failure = Literal["unreadable", "schema", "backend_error"]


@dataclass(frozen=True)
class Reading:
    """One judge answer, read: the answer, or why there is none."""

    answer: BalCapAnswer | None
    failure: Failure | None = None
    reason: str = "read"


def read_answer(text: str) -> Reading:
    """Read one judge answer; never raises on any string."""
    if not isinstance(text, str):
        return Reading(None, "unreadable", f"the judge's answer is a {type(text).__name__}, not text")
    found = extract_json_object(text[:MAX_OUTPUT_CHARS])
    if found is None:
        return Reading(None, "unreadable", "no JSON object in the judge's answer")
    try:
        return Reading(BalCapAnswer.model_validate(found))
    except ValidationError as exc:
        return Reading(None, "schema", f"the judge's answer is not of the expected form: {validation_problems(exc)}")


def answer_reader() -> Reader[Reading]:
    """How :func:`genrm.engine.ask` reads the judge's replies: an unreadable answer is asked for again, a failed call
    is a ``backend_error`` reading with the engine's reason."""

    def read(reply: Reply) -> tuple[Reading, bool]:
        reading = read_answer(reply.text)
        return reading, reading.failure is None

    return Reader(read, lambda reason: Reading(None, "backend_error", reason))
