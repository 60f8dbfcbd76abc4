"""Rule-based extraction of a response's final answer, and of one verifier's prediction from it.

This is the ``rule`` backend's reader: no model, the same for every response, and deliberately strict, so a response
that never states a final answer gets nothing.

**The final answer span**, first rule that applies (reasoning inside ``<think>...</think>`` is ignored):

1. ``boxed``: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced;
2. ``final_answer``: the rest of the last line that says ``final answer`` (``Final answer: 42``, ``The final answer
   is 42``); when that rest is empty, the lines that follow, up to a blank line;
3. ``answer``: the same for the last line that says ``answer:``, ``answer is`` or ``answer =``;
4. ``short_response``: the whole response, when it has at most ``SHORT_RESPONSE_CHARS`` characters.

Otherwise there is no span.

**No value stated** is its own value, ``predict=None``, which every verifier scores 0 whatever the target. It is
never the empty value (``''``, ``[]``), which matches an empty target (``bbox_verify(target=[])``: the object is not
in the image) and which a span gives only when it says there is nothing (``none``, ``[]``, ``no such object``, ``it
is not in the image``: :func:`states_emptiness`). :func:`read_prediction` gives ``predict=None``:

- when there is no span;
- when the span reads as nothing for the verifier without saying so (no box in ``\\boxed{banana}``, nothing left of
  ``.``);
- when the response states **several final answers** that read differently for the criterion's verifier: two boxes,
  two final-answer lines, a box and a final-answer line (``\\boxed{8} or maybe \\boxed{12}``; the same value written
  twice is one answer). Several answer lines count only where there is no box and no final-answer line.

Every verifiable criterion of a rubric reads the same span: dates, times and coordinates are searched for inside it,
while text, expressions and lists take the whole of it. The rule backend therefore suits rubrics with one answer per
text, expression or list criterion (the RLVR case); a model judge is needed to pick several such values apart.

**The prediction of each verifier**, read from the span:

- ``text_verify``: the span without surrounding quotes, bold markers, ``$`` and a final period;
- ``expr_verify``: option letters as written (``B``, ``(B) 42``); else the right-hand side of the last ``=``, unless
  the span holds several equations (``x = 8, y = 12``) or writes a verifier's keyword (``predict='12'``: call syntax,
  which is content); else the span. Words stay: the verifier reads a sentence itself (``about 3.5 km`` states
  3.5 km), and refuses one whose words change its value (``at least 5``, ``not 5``, ``3/4 of them``) or that states
  several values;
- ``time_verify``: the first date or time found in the span, with its UTC offset (``18:15``, ``18:15 +05:00``,
  ``6:15 PM``, ``2024-03-01``, ``1 March 2024``, ``March 1, 2024``, ``01/03/2024``), when nothing else in the span
  moves it (a second date or time, ``not``, ``after``, ``tomorrow``, ``plus``); else the span, which the verifier's
  parser (no ``pformat``) reads whole or refuses;
- ``list_verify``: a JSON list in the span, else its items split on semicolons, commas, new lines or a final
  ``and``, with bullets and numbering removed;
- ``bbox_verify`` / ``point_verify``: every bracketed or parenthesized group of two or more numbers in the span, as
  written: a group of the wrong size (``[5, 5, 5]`` among boxes) is left for the verifier, which counts it as a miss,
  never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from genrm.methods.answer_json import strip_reasoning
from verifiers import format_call, get_spec, verify_call_result
from verifiers.registry import call_keywords
from verifiers.sentences import qualifying_words
from verifiers.text import bracket_depths

SpanSource = Literal["boxed", "final_answer", "answer", "short_response"]

SHORT_RESPONSE_CHARS = 200
MAX_SPAN_CHARS = 5_000
_MAX_FOLLOWING_LINES = 50

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_FINAL_LINE = re.compile(r"final\s+answer\b\s*(?:is\b|:|=|-)?\s*(?P<rest>.*)$", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"\banswer\s*(?:is\b|:|=)\s*(?P<rest>.*)$", re.IGNORECASE)
_OPTION_LEAD = re.compile(r"^(?:(?:option|choice)\s+)?(?:\(\s*[A-Z]\s*\)|[A-Z](?:\s*[.:)]|$))", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_NUM = r"-?\d+(?:\.\d+)?"
_GROUP = re.compile(rf"[\[(]\s*{_NUM}(?:\s*,\s*{_NUM})+\s*[\])]")
_NUMBER = re.compile(_NUM)
# a final-answer line that states one (Final answer: 12; not "we now compute the final answer by ...")
_FINAL_STATED = re.compile(r"final\s+answer\b\s*(?:is\b|:|=|-)\s*(?P<rest>.*)$", re.IGNORECASE)
# a span that says there is nothing: what meets an empty target (an object that is not in the image)
_EMPTINESS = re.compile(
    r"(?:\[\s*\]|\(\s*\)|\{\s*\}|none|nothing|empty|null|n/?a|no\b.*|(?:there|it|they|this|that|the\s+\w+)"
    r"(?:\s+is|\s+are|'s|'re)\s+(?:not\b|no\b|none\b|nothing\b|absent\b).*|there\s+(?:isn't|aren't)\b.*"
    r"|(?:not\s+(?:present|visible|shown|found|there|in\s+the\s+(?:image|picture|scene)))\b.*"
    r"|.*\b(?:does\s+not|doesn't|do\s+not|don't)\s+(?:appear|exist)\b.*)",
    re.IGNORECASE | re.DOTALL,
)
_MAX_EMPTINESS_CHARS = 120
# more different final answers than this are several whatever they read as (each comparison may run a verifier)
_MAX_OTHER_ANSWERS = 4
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
    """The final answer as written in the response, the rule that found it, and the other final answers the response
    states (other boxes and final-answer lines, as written; :func:`read_prediction` decides whether they read as the
    same value)."""

    text: str
    source: SpanSource
    others: tuple[str, ...] = ()


_BRACES = re.compile(r"[{}]")


def _all_boxed(text: str) -> list[str]:
    """The content of every balanced ``\\boxed{...}`` (``\\fbox``), in order of where they open; one pass over the
    text (a response of many unclosed boxes costs no more than its length)."""
    openers = {match.end() - 1 for match in _BOXED.finditer(text)}  # where each box's brace is
    if not openers:
        return []
    stack: list[tuple[int, bool]] = []
    found: list[tuple[int, str]] = []
    for brace in _BRACES.finditer(text):  # from brace to brace (in C), not character by character
        index, char = brace.start(), brace.group()
        if char == "{":
            stack.append((index + 1, index in openers))
        elif char == "}" and stack:
            start, boxed = stack.pop()
            if boxed:
                found.append((start, text[start:index]))
    return [content for _, content in sorted(found)]


def _last_boxed(text: str) -> str | None:
    boxes = _all_boxed(text)
    return boxes[-1] if boxes else None


def _answer_lines(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    """What every line matching ``pattern`` states, in order: the rest of the line, or when that is empty the lines
    that follow up to a blank one (a line stating nothing at all is left out)."""
    found = []
    for n, line in enumerate(lines):
        match = pattern.search(line)
        if match is None:
            continue
        rest = match.group("rest").strip()
        if rest.strip("*_ :"):
            found.append(rest)
            continue
        following: list[str] = []
        for line in lines[n + 1 : n + 1 + _MAX_FOLLOWING_LINES]:
            if not line.strip():
                if following:
                    break
                continue
            following.append(line)
        if following:
            found.append("\n".join(following))
    return found


def _answer_line(lines: list[str], pattern: re.Pattern[str]) -> str | None:
    found = _answer_lines(lines, pattern)
    return found[-1] if found else None


def _stated_answers(boxes: list[str], lines: list[str], source: SpanSource) -> list[str]:
    """Every final answer the response states, as written: its ``boxes`` and final-answer lines (a line holding a box
    counts as that box), or, when it has neither, its answer lines."""
    finals = [rest for rest in _answer_lines(lines, _FINAL_STATED) if not _all_boxed(rest)]
    if boxes or finals or source != "answer":
        return boxes + finals
    return _answer_lines(lines, _ANSWER_LINE)


def final_answer_span(response: str) -> AnswerSpan | None:
    """The response's final answer by the precedence rules of the module docstring, or None when there is none."""
    text = strip_reasoning(response).strip()
    found: tuple[str | None, SpanSource] | None = None
    boxes, lines = _all_boxed(text), text.split("\n")  # read once: the span and the other answers both need them
    if boxes:
        found = (boxes[-1], "boxed")
    else:
        for pattern, source in ((_FINAL_LINE, "final_answer"), (_ANSWER_LINE, "answer")):
            rest = _answer_line(lines, pattern)
            if rest is not None:
                found = (rest, source)
                break
        if found is None and 0 < len(text) <= SHORT_RESPONSE_CHARS:
            found = (text, "short_response")
    if found is None or not found[0] or not found[0].strip():
        return None
    chosen = found[0].strip()[:MAX_SPAN_CHARS]
    seen, others = {chosen}, []
    for answer in _stated_answers(boxes, lines, found[1]):
        answer = answer.strip()[:MAX_SPAN_CHARS]
        if answer and answer not in seen:
            seen.add(answer)
            others.append(answer)
    return AnswerSpan(chosen, found[1], tuple(others))


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


def _equations(text: str) -> int:
    """How many of ``text``'s top-level parts (split at commas, semicolons and ``and`` outside brackets) hold an
    ``=``: ``x = 8, y = 12`` holds two equations, ``x = 2 + 3 = 5`` one."""
    count, holds = 0, False
    depths = bracket_depths(text)
    for index, (char, depth) in enumerate(zip(text, depths, strict=True)):
        if depth:
            continue
        if char in ",;" or (text.startswith(" and ", index) and char == " "):
            count, holds = count + holds, False
        elif char == "=":
            holds = True
    return count + holds


def extract_expr(span: str) -> str:
    """The value an ``expr_verify`` criterion reads from a final answer span (module docstring): the right-hand side
    of its equation, unless it states several (``x = 8, y = 12``) or writes a verifier's keyword (``predict='12'``,
    call syntax, which is content): then the whole span, for the verifier to read or refuse."""
    text = clean_text(span)
    if _OPTION_LEAD.match(text):
        return text
    equals = _last_top_level_equals(text)
    if equals is None:
        return text
    left = text[:equals].split()
    if (left and left[-1].casefold() in call_keywords()) or _equations(text) > 1:
        return text
    return clean_text(text[equals + 1 :])


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


def extract_coords(span: str, size: int) -> list[list[float | int]]:
    """Every group of two or more numbers in brackets or parentheses, in order and as written: a group of another
    size than ``size`` (4 for boxes, 2 for points) is kept, for the verifier to count as the miss it is."""
    del size  # the verifier checks each group's size; the reader never drops one
    return [[int(v) if re.fullmatch(r"-?\d+", v) else float(v) for v in _NUMBER.findall(m.group(0))]
            for m in _GROUP.finditer(span)]  # fmt: skip


def states_emptiness(span: str) -> bool:
    """Whether a final answer says there is nothing (``none``, ``[]``, ``no such object``, ``it is not in the
    image``): the one answer an empty target (``[]``, ``''``) is met by."""
    text = clean_text(span)
    return len(text) <= _MAX_EMPTINESS_CHARS and _EMPTINESS.fullmatch(text.strip().rstrip(".!")) is not None


def _read(verifier: str, text: str) -> Any:
    spec = get_spec(verifier)
    return extract_coords(text, spec.arity) if spec.arity is not None else _READERS[spec.value](text)


def _reads_alike(verifier: str, first: str, second: str) -> bool:
    """Whether two final answers state the same value for ``verifier``: the same reading, or (expressions)
    equivalent by ``expr_verify``."""
    a, b = _read(verifier, first), _read(verifier, second)
    if isinstance(a, str) and isinstance(b, str):
        a, b = " ".join(a.split()).casefold(), " ".join(b.split()).casefold()
        if a == b:
            return True
        if get_spec(verifier).value == "expression" and a and b:
            result = verify_call_result(
                format_call("expr_verify", {"target": a}), format_call("expr_verify", {"predict": b})
            )
            return result.status == "ok" and result.score == 1.0
        return False
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(v, str) for v in a + b):
        return sorted(" ".join(v.split()).casefold() for v in a) == sorted(" ".join(v.split()).casefold() for v in b)
    return a == b


def read_prediction(verifier: str, span: AnswerSpan | None) -> tuple[dict[str, Any], str]:
    """The scoring-side keywords of ``verifier`` for a final answer span, and where they come from: ``predict=None``
    (no value stated: score 0 whatever the target) when there is no span, when the response states several final
    answers that read differently, or when the span reads as the empty value without saying there is nothing."""
    spec = get_spec(verifier)  # an unknown verifier is refused whatever the span
    if span is None:
        return {"predict": None}, "no final answer found"
    where = f"from the {span.source.replace('_', ' ')} span {span.text!r:.80}"
    if len(span.others) > _MAX_OTHER_ANSWERS:
        return {"predict": None}, f"{len(span.others) + 1} final answers"
    different = [other for other in span.others if not _reads_alike(verifier, span.text, other)]
    if different:
        return {"predict": None}, f"several final answers: {span.text!r:.40} and {different[0]!r:.40}"
    value = _read(verifier, span.text)
    if spec.list_valued and spec.arity is None and len(value) == 1 and states_emptiness(span.text):
        value = []  # "none" for a list: the empty list, not a list of the word
    if value in ("", []) and not states_emptiness(span.text):
        return {"predict": None}, f"no value in the {span.source.replace('_', ' ')} span {span.text!r:.80}"
    return {"predict": value}, where


def extract_prediction(verifier: str, span: AnswerSpan | None) -> dict[str, Any]:
    """The scoring-side keywords of ``verifier`` for a final answer span (:func:`read_prediction`)."""
    return read_prediction(verifier, span)[0]


#: How a final answer is read for each kind of prediction (coordinates are read by arity, see extract_prediction).
_READERS = {"text": clean_text, "expression": extract_expr, "time": extract_time, "list": extract_list}
