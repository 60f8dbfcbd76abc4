"""Reading the claimdiff judge's answer: a JSON object (:class:`.models.DiffAnswer` or :class:`.models.HallMissAnswer`)
or the source's plain-text blocks, into the same model, with every failure classed and never turned into a verdict.

The plain-text form is ``[DIFFERENCE n]`` blocks of ``KEY: value`` lines (``ASPECT``, ``CAPTION_A_CLAIM``,
``CAPTION_B_CLAIM``, ``JUDGMENT``, then ``CAPTION_A_ERROR:`` and ``CAPTION_B_ERROR:`` each followed by ``ERROR_TYPE``,
``ERROR_DETAIL`` and optionally ``SEVERITY_LEVEL``), ended by ``[OVERALL_WINNER]`` and the winner on the next line;
for ``hall_vs_miss``, blocks of ``TYPE``, ``CONTENT``, ``CATEGORY``, ``VERIFICATION``, ``REASON``,
``IS_HALLUCINATION``. Keys and enumerated values are read in any case; a code fence around the answer and a reasoning
block before it are accepted.

Stricter than the source's reader, on purpose: a difference without a valid judgment or without both error types, an
answer without a valid winner, or a value outside its enumeration is a ``schema`` failure (the source counts an
unknown judgment as neutral and a missing error type as no error, so a garbled answer could still earn a reward).
Failure classes: ``unreadable`` (neither a JSON object nor a block), ``schema`` (found, but not of the answer's form),
``backend_error`` (the engine gave no answer). Bounded: at most ``MAX_OUTPUT_CHARS`` characters are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from genrm.engine import Reader, Reply
from genrm.methods.answer_json import MAX_OUTPUT_CHARS, extract_json_object, validation_problems
from genrm.methods.claimdiff.models import DiffAnswer, HallMissAnswer

Failure = Literal["unreadable", "schema", "backend_error"]
Answer = DiffAnswer | HallMissAnswer

_BLOCK = re.compile(r"^\s*\[DIFFERENCE\s+\d+\]\s*$", re.IGNORECASE)
_WINNER = re.compile(r"^\s*\[OVERALL_WINNER\]\s*$", re.IGNORECASE)
_KEY = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.*?)\s*$")
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_JUDGMENTS = {"a": "A", "b": "B", "both_wrong": "both_wrong", "both_supported": "both_supported"}
_WINNERS = {"a": "A", "b": "B", "tie": "tie"}


@dataclass(frozen=True)
class Reading:
    """One judge answer, read: the answer, or why there is none."""

    answer: Answer | None
    failure: Failure | None = None
    reason: str = "read"


def _severity(value: str) -> int:
    return int(value) if value in ("1", "2", "3") else 0


def _diff_blocks(lines: list[str]) -> dict[str, Any]:
    differences: list[dict[str, Any]] = []
    winner: str | None = None
    current: dict[str, Any] | None = None
    side = ""
    for number, line in enumerate(lines):
        if _BLOCK.match(line):
            current, side = {"caption_a_error": {}, "caption_b_error": {}}, ""
            differences.append(current)
            continue
        if _WINNER.match(line):
            winner = next((rest.strip() for rest in lines[number + 1 :] if rest.strip()), "")
            current = None
            continue
        match = _KEY.match(line)
        if current is None or match is None:
            continue
        key, value = match.group(1).upper(), match.group(2)
        if key in ("CAPTION_A_ERROR", "CAPTION_B_ERROR"):
            side = key.lower()
        elif key in ("ERROR_TYPE", "ERROR_DETAIL", "SEVERITY_LEVEL") and side:
            field = {"ERROR_TYPE": "error_type", "ERROR_DETAIL": "error_detail", "SEVERITY_LEVEL": "severity"}[key]
            current[side][field] = _severity(value.upper()) if field == "severity" else value
        elif key == "JUDGMENT":
            current["judgment"] = _JUDGMENTS.get(value.lower(), value)
        elif key in ("ASPECT", "CAPTION_A_CLAIM", "CAPTION_B_CLAIM"):
            current[key.lower()] = value
    for difference in differences:
        for key in ("aspect", "caption_a_claim", "caption_b_claim"):
            difference.setdefault(key, "")
    return {"differences": differences, "overall_winner": _WINNERS.get((winner or "").lower(), winner)}


def _hall_blocks(lines: list[str]) -> dict[str, Any]:
    differences: list[dict[str, Any]] = []
    for line in lines:
        if _BLOCK.match(line):
            differences.append({})
            continue
        match = _KEY.match(line)
        if not differences or match is None:
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key in ("type", "category", "verification"):
            differences[-1][key] = value.lower()
        elif key in ("content", "reason"):
            differences[-1][key] = value
        elif key == "is_hallucination":
            differences[-1][key] = {"true": True, "false": False}.get(value.lower(), value)
    return {"differences": differences}


def _normalized_json(raw: dict[str, Any]) -> dict[str, Any]:
    # Enumerated values in another case ("Tie", "a") mean the same; anything else is left for the model to refuse.
    raw = dict(raw)
    if isinstance(raw.get("overall_winner"), str):
        raw["overall_winner"] = _WINNERS.get(raw["overall_winner"].lower(), raw["overall_winner"])
    if isinstance(raw.get("differences"), list):
        items = []
        for item in raw["differences"]:
            if isinstance(item, dict) and isinstance(item.get("judgment"), str):
                item = {**item, "judgment": _JUDGMENTS.get(item["judgment"].lower(), item["judgment"])}
            items.append(item)
        raw["differences"] = items
    return raw


def read_answer(text: str, hall_vs_miss: bool = False) -> Reading:
    """Read one judge answer (JSON or blocks) for the diff modes, or for ``hall_vs_miss``; never raises on any
    string."""
    if not isinstance(text, str):
        return Reading(None, "unreadable", f"the judge's answer is a {type(text).__name__}, not text")
    text = text[:MAX_OUTPUT_CHARS]
    ends = [match.end() for match in _THINK_CLOSE.finditer(text)]
    body = text[ends[-1] :] if ends else text  # what follows the last reasoning block
    model: type[BaseModel] = HallMissAnswer if hall_vs_miss else DiffAnswer
    lines = body.splitlines()
    # A judge that finds no difference writes no [DIFFERENCE n] block, only [OVERALL_WINNER]: still the blocks form.
    if any(_BLOCK.match(line) or (not hall_vs_miss and _WINNER.match(line)) for line in lines):
        raw, form = (_hall_blocks(lines) if hall_vs_miss else _diff_blocks(lines)), "blocks"
    else:
        found = extract_json_object(text)
        if found is None:
            return Reading(None, "unreadable", "no JSON object and no [DIFFERENCE n] block in the judge's answer")
        raw, form = _normalized_json(found), "JSON"
    try:
        return Reading(model.model_validate(raw))  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = validation_problems(exc)
        return Reading(None, "schema", f"the judge's {form} answer is not of the expected form: {problems}")


def answer_reader(hall_vs_miss: bool = False) -> Reader[Reading]:
    """How :func:`genrm.engine.ask` reads the judge's replies: an unreadable answer is asked for again, a failed call
    is a ``backend_error`` reading with the engine's reason."""

    def read(reply: Reply) -> tuple[Reading, bool]:
        reading = read_answer(reply.text, hall_vs_miss)
        return reading, reading.failure is None

    return Reader(read, lambda reason: Reading(None, "backend_error", reason))
