"""Rule-based extraction of a response's final answer, and of one verifier's prediction from it.

This is the ``rule`` backend's reader: no model, the same for every response, and deliberately strict, so a response
that never states a final answer gets nothing.

**The final answer span**, first rule that applies (reasoning inside ``<think>...</think>`` is ignored):

1. ``boxed``: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced;
2. ``final_answer``: the rest of the last line that says ``final answer`` (``Final answer: 42``, ``The final answer
   is 42``); when that rest is empty, the lines that follow, up to a blank line;
3. ``answer``: the same for the last line that says ``answer:``, ``answer is`` or ``answer =``;
4. ``short_response``: the whole response, when it has at most ``SHORT_RESPONSE_CHARS`` characters.

Otherwise there is no span. :func:`extract_prediction` then gives the empty value a judge writes for a response that
states none (``''``, ``[]``); the rule judge itself calls the verifier with no prediction (``predict=None``: score 0),
since an empty value would match an empty target.

Every verifiable criterion of a rubric reads the same span: dates, times and coordinates are searched for inside it,
while text, expressions and lists take the whole of it. The rule backend therefore suits rubrics with one answer per
text, expression or list criterion (the RLVR case); a model judge is needed to pick several such values apart.

**The prediction of each verifier**, read from the span:

- ``text_verify``: the span without surrounding quotes, bold markers, ``$`` and a final period;
- ``expr_verify``: option letters as written (``B``, ``(B) 42``); else the right-hand side of the last ``=``; else the
  span. Words stay: the verifier reads a sentence itself (``about 3.5 km`` states 3.5 km), and refuses one whose
  words change its value (``at least 5``, ``not 5``, ``3/4 of them``) or that states several values;
- ``time_verify``: the first date or time found in the span, with its UTC offset (``18:15``, ``18:15 +05:00``,
  ``6:15 PM``, ``2024-03-01``, ``1 March 2024``, ``March 1, 2024``, ``01/03/2024``), when nothing else in the span
  moves it (a second date or time, ``not``, ``after``, ``tomorrow``, ``plus``); else the span, which the verifier's
  parser (no ``pformat``) reads whole or refuses;
- ``list_verify``: a JSON list in the span, else its items split on semicolons, commas, new lines or a final
  ``and``, with bullets and numbering removed;
- ``bbox_verify`` / ``point_verify``: every bracketed or parenthesized group of 4 (boxes) or 2 (points) numbers in
  the span.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from verifiers import get_spec
from verifiers.sentences import qualifying_words
from verifiers.text import bracket_depths

SpanSource = Literal["boxed", "final_answer", "answer", "short_response"]

SHORT_RESPONSE_CHARS = 200
MAX_SPAN_CHARS = 5_000
_MAX_FOLLOWING_LINES = 50

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_FINAL_LINE = re.compile(r"final\s+answer\b\s*(?:is\b|:|=|-)?\s*(?P<rest>.*)$", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"\banswer\s*(?:is\b|:|=)\s*(?P<rest>.*)$", re.IGNORECASE)
_OPTION_LEAD = re.compile(r"^(?:(?:option|choice)\s+)?(?:\(\s*[A-Z]\s*\)|[A-Z](?:\s*[.:)]|$))", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_NUM = r"-?\d+(?:\.\d+)?"
_GROUP4 = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")
_GROUP2 = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
# A UTC offset after a time belongs to it: dropping it would pay 18:15 +05:00 for a target of 18:15 +0000.
_OFFSET = r"(?:\s*(?:Z\b|(?:UTC|GMT)(?:\s*[+-]\d{1,2}(?::?\d{2})?)?|[+-]\d{2}:?\d{2}\b))?"
# words that move a time away from the one stated (after 18:15, 18:15 tomorrow, 3 days before 2024-03-05)
_RELATIVE_TIME = re.compile(
    r"\b(?:after|before|since|until|till|later|earlier|ago|next|previous|prior|tomorrow|yesterday|plus|minus|past)\b",
    re.IGNORECASE,
)
_TIME_PATTERNS = (
    re.compile(rf"\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:[T ]\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?{_OFFSET})?"),
    re.compile(rf"\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}", re.IGNORECASE),
    re.compile(rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}", re.IGNORECASE),
    re.compile(r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"),
    re.compile(rf"\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s*[AaPp]\.?\s?[Mm]\.?)?{_OFFSET}"),
    re.compile(r"\d{1,2}\s*[AaPp]\.?\s?[Mm]\.?"),
    re.compile(rf"{_MONTH}\s+\d{{4}}", re.IGNORECASE),
)


@dataclass(frozen=True, slots=True)
class AnswerSpan:
    """The final answer as written in the response, and the rule that found it."""

    text: str
    source: SpanSource


def _last_boxed(text: str) -> str | None:
    starts = [m.end() for m in _BOXED.finditer(text)]
    for start in reversed(starts):
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return text[start : i - 1]
    return None


def _answer_line(lines: list[str], pattern: re.Pattern[str]) -> str | None:
    for n in range(len(lines) - 1, -1, -1):
        match = pattern.search(lines[n])
        if match is None:
            continue
        rest = match.group("rest").strip()
        if rest.strip("*_ :"):
            return rest
        following: list[str] = []
        for line in lines[n + 1 : n + 1 + _MAX_FOLLOWING_LINES]:
            if not line.strip():
                if following:
                    break
                continue
            following.append(line)
        return "\n".join(following) if following else None
    return None


def final_answer_span(response: str) -> AnswerSpan | None:
    """The response's final answer by the precedence rules of the module docstring, or None when there is none."""
    text = _THINK.sub(" ", response)
    if "</think>" in text.lower():
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    text = text.strip()
    found: tuple[str | None, SpanSource] | None = None
    boxed = _last_boxed(text)
    if boxed is not None:
        found = (boxed, "boxed")
    else:
        lines = text.splitlines()
        for pattern, source in ((_FINAL_LINE, "final_answer"), (_ANSWER_LINE, "answer")):
            rest = _answer_line(lines, pattern)
            if rest is not None:
                found = (rest, source)
                break
        if found is None and 0 < len(text) <= SHORT_RESPONSE_CHARS:
            found = (text, "short_response")
    if found is None or not found[0] or not found[0].strip():
        return None
    return AnswerSpan(found[0].strip()[:MAX_SPAN_CHARS], found[1])


def clean_text(span: str) -> str:
    """The span without surrounding markup: bold/italic markers, quotes, ``$``, ``\\text{}`` and a final period."""
    text = span.strip()
    text = re.sub(r"^\\text\{(.*)\}$", r"\1", text, flags=re.DOTALL)
    for _ in range(3):
        before = text
        text = text.strip().strip("*_").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`$":
            text = text[1:-1]
        text = re.sub(r"(?<!\.)\.$", "", text).strip()
        if text == before:
            break
    return text


def _last_top_level_equals(text: str) -> int | None:
    """Where the last ``=`` outside every bracket is (``x = 5``: 2), or None: an ``=`` in a subscript or a set
    (``\\sum_{n=1}^{10} n``, ``\\{x : x = 1\\}``) belongs to the expression, not to an equation that states it."""
    found = None
    for index, (char, depth) in enumerate(zip(text, bracket_depths(text), strict=True)):
        if char == "=" and depth == 0:
            found = index
    return found


def extract_expr(span: str) -> str:
    """The value an ``expr_verify`` criterion reads from a final answer span (module docstring)."""
    text = clean_text(span)
    if _OPTION_LEAD.match(text):
        return text
    equals = _last_top_level_equals(text)
    if equals is not None:
        text = clean_text(text[equals + 1 :])
    return text


def extract_time(span: str) -> str:
    """The date or time a ``time_verify`` criterion reads from a final answer span (module docstring)."""
    text = clean_text(span)
    for pattern in _TIME_PATTERNS:
        match = pattern.search(text)
        if match:
            rest = f"{text[: match.start()]} {text[match.end() :]}"
            if _RELATIVE_TIME.search(rest) or qualifying_words(rest) or any(p.search(rest) for p in _TIME_PATTERNS):
                return text  # what else the span says may move the time: the verifier reads it whole, or refuses it
            return match.group(0).strip()
    return text


def _json_list(text: str) -> list[str] | None:
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    return None


def extract_list(span: str) -> list[str]:
    """The items a ``list_verify`` criterion reads from a final answer span (module docstring)."""
    text = clean_text(span)
    parsed = _json_list(text)
    if parsed is not None:
        return parsed
    separator = ";" if ";" in text else ("\n" if "\n" in text else ",")
    parts = re.split(rf"\s*{re.escape(separator)}\s*", text)
    # "a, b and c" and "a and b": the last separator is often a word.
    parts[-1:] = re.split(r"\s+(?:and|&)\s+", re.sub(r"^(?:and|&)\s+", "", parts[-1], flags=re.IGNORECASE))
    items = [clean_text(_BULLET.sub("", p)) for p in parts]
    return [item for item in items if item]


def _numbers(match: re.Match[str]) -> list[float | int]:
    return [int(v) if re.fullmatch(r"-?\d+", v) else float(v) for v in match.groups()]


def extract_coords(span: str, size: int) -> list[list[float | int]]:
    """Every group of ``size`` (4 for boxes, 2 for points) numbers in brackets or parentheses, in order."""
    pattern = _GROUP4 if size == 4 else _GROUP2
    return [_numbers(m) for m in pattern.finditer(span)]


def extract_prediction(verifier: str, span: AnswerSpan | None) -> dict[str, Any]:
    """The scoring-side keywords of ``verifier`` for a final answer span; empty values when there is no span."""
    spec = get_spec(verifier)
    if span is None:
        return {"predict": [] if spec.list_valued else ""}
    if spec.arity is not None:
        return {"predict": extract_coords(span.text, spec.arity)}
    return {"predict": _READERS[spec.value](span.text)}


#: How a final answer is read for each kind of prediction (coordinates are read by arity, see extract_prediction).
_READERS = {"text": clean_text, "expression": extract_expr, "time": extract_time, "list": extract_list}
