"""Rule-based extraction of a response's final answer, and of one verifier's prediction from it.

This is the ``rule`` backend's reader: no model, the same for every response, and deliberately strict, so a response
that never states a final answer gets nothing.

**The final answer span**, first rule that applies, read only where the response asserts it
(:mod:`verifiers.assertion`: not in reasoning, code, block quotes, comments or a quoted echo, nor under a negation, a
condition, reported speech, a disowning or retracted clause, nor in a question):

1. ``boxed``: the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) that holds an answer (a placeholder,
   ``\\boxed{}``, ``\\boxed{\\phantom{2}}``, ``\\boxed{?}``, holds none), braces balanced;
2. ``final_answer``: the rest of the last line that says ``final answer`` (``Final answer: 42``, ``The final answer
   is 42``); when that rest is empty, the lines that follow, up to a blank line;
3. ``answer``: the same for the last line that says ``answer:``, ``answer is`` or ``answer =``;
4. ``qa_answer``: the rest of the response's last line when that line begins with ``A:`` (the question-and-answer
   format: ``Q: ... A: 18``, GSM8K's model solutions), unless another line begins with a letter and a colon
   (``B: London``), which makes the lines a list of options;
5. ``short_response``: what the whole response asserts, when it has at most ``SHORT_RESPONSE_CHARS`` characters as
   written.

Otherwise there is no span.

**A criterion on one part** of a multi-part question (its text opens with the part: ``(b) Gives the speed.``,
``Part 2: ...``) reads that part's answer (:func:`part_span`): the piece after the part's label in a final answer that
labels parts inline (``Final answer: (a) 180, (b) 45``), else the final answer of the part's own section where lines
open with part labels (``(a) ...``, ``**Part b:**``). An answer written under another part never counts for it; a
response in parts without that part states none for it.

**No value stated** is its own value, ``predict=None``, which every verifier scores 0 whatever the target. It is
never the empty value (``''``, ``[]``), which matches an empty target (``bbox_verify(target=[])``: the object is not
in the image) and which a span gives only when it says there is nothing (``none``, ``[]``, ``no such object``, ``it
is not in the image``: :func:`states_emptiness`; a refusal, ``no idea``, never does). :func:`read_prediction` gives
``predict=None``:

- when there is no span;
- when the span reads as nothing for the verifier without saying so (no box in ``\\boxed{banana}``, nothing left of
  ``.``);
- when the response states **several final answers** that read differently for the criterion's verifier: two boxes,
  two final-answer lines, a box and a final-answer line (``\\boxed{8} or maybe \\boxed{12}``; the same value written
  twice is one answer); a box inside a box is several. Several answer lines count only where there is no box and no
  final-answer line, and an answer line after the last box counts with it (a template's box, then the response's own
  answer).

Every verifiable criterion of a rubric reads the same span: dates, times and coordinates are searched for inside it,
while text, expressions and lists take the whole of it. The rule backend therefore suits rubrics with one answer per
text, expression or list criterion (the RLVR case); a model judge is needed to pick several such values apart.

**The prediction of each verifier**, read from the span:

- ``text_verify``: the span as written (its own words of negation are the value: ``Do not enter``) without
  surrounding quotes, bold markers, ``$`` and a final period;
- ``expr_verify``: option letters as written (``B``, ``(B) 42``); else the right-hand side of the last ``=``, unless
  the span holds a relation (``x <= 12``, ``x != 12``, ``x =/= 12``: no value, read whole), several equations (``x =
  8, y = 12``, ``f(x) = x \\text{ and } f(x) = -x``) or writes a verifier's keyword (``predict='12'``: call syntax,
  which is content); else the span. Words stay: the verifier reads a sentence itself (``about 3.5 km`` states
  3.5 km), and refuses one whose words change its value (``at least 5``, ``not 5``, ``3/4 of them``) or that states
  several values;
- ``time_verify``: the first date or time found in the span, with its UTC offset (``18:15``, ``18:15 +05:00``,
  ``6:15 PM``, ``2024-03-01``, ``1 March 2024``, ``March 1, 2024``, ``01/03/2024``), when nothing else in the span
  moves it (a second date or time, ``not``, ``after``, ``tomorrow``, ``plus``); else the span, which the verifier's
  parser (no ``pformat``) reads whole or refuses;
- ``list_verify``: as written, a JSON list in the span, else its items split on semicolons, commas, new lines or a
  final ``and``, with bullets and numbering removed;
- ``bbox_verify`` / ``point_verify``: every bracketed or parenthesized group of two or more numbers in the span, as
  written: a group of the wrong size (``[5, 5, 5]`` among boxes) is left for the verifier, which counts it as a miss,
  never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from verifiers import format_call, verify_call_result
from verifiers.assertion import asserted_view, states_absence, written_view
from verifiers.registry import call_keywords, get_spec
from verifiers.sentences import qualifying_words
from verifiers.text import bracket_depths

SpanSource = Literal["boxed", "final_answer", "answer", "qa_answer", "short_response"]

SHORT_RESPONSE_CHARS = 200
MAX_SPAN_CHARS = 5_000
_MAX_FOLLOWING_LINES = 50

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_FINAL_LINE = re.compile(r"final\s+answer\b\s*(?:is\b|:|=|-)?\s*(?P<rest>.*)$", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"\banswer\s*(?:is\b|:|=)\s*(?P<rest>.*)$", re.IGNORECASE)
# the question-and-answer format's answer line, and the option lines that make "A:" a list of options instead
_QA_LINE = re.compile(r"^\s*(?:\*\*)?A(?:\*\*)?\s*:(?:\*\*)?\s*(?P<rest>\S.*)$")
_LETTER_LINE = re.compile(r"^\s*(?:\*\*)?[B-Z](?:\*\*)?\s*:", re.MULTILINE)
_OPTION_LEAD = re.compile(r"^(?:(?:option|choice)\s+)?(?:\(\s*[A-Z]\s*\)|[A-Z](?:\s*[.:)]|$))", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_NUM = r"-?\d+(?:\.\d+)?"
_GROUP = re.compile(rf"[\[(]\s*{_NUM}(?:\s*,\s*{_NUM})+\s*[\])]")
_NUMBER = re.compile(_NUM)
# a final-answer line that states one (Final answer: 12; not "we now compute the final answer by ...")
_FINAL_STATED = re.compile(r"final\s+answer\b\s*(?:is\b|:|=|-)\s*(?P<rest>.*)$", re.IGNORECASE)
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
    """The final answer as the response asserts it, the rule that found it, and the other final answers the response
    states (other boxes and final-answer lines, as asserted; :func:`read_prediction` decides whether they read as the
    same value).

    ``text`` is read from :func:`verifiers.assertion.asserted_view` (a negated, disowned or reported part blanked);
    ``written`` is the same stretch as the response writes it (:func:`verifiers.assertion.written_view`), from which
    a text value is read (its words, ``Do not enter``, are the value) and a statement that the thing is absent is
    recognised. ``nested``: a box holds another box, which is several answers."""

    text: str
    source: SpanSource
    others: tuple[str, ...] = ()
    written: str = ""
    nested: bool = False


_BRACES = re.compile(r"[{}]")
# what a template's box holds in place of an answer: nothing, spacing, a phantom, dots, a question mark, a blank
_PLACEHOLDER = re.compile(
    r"(?:\s|\\phantom\s*\{[^{}]*\}|\\[hv]?phantom|\\[,;:! ]|\\q?quad|~|\?|\.|\\[lc]?dots|\\square|\\Box|"
    r"\\blacksquare|_|\\_|\\underline\s*\{\s*\}|\\text\s*\{\s*\}|\\(?:text|mathrm)\s*\{\s*(?:answer|your\s+answer)\s*\})*"
)


def _all_boxed(text: str) -> list[tuple[int, int, str]]:
    """Every balanced ``\\boxed{...}`` (``\\fbox``) that holds an answer, as ``(start, end, content)`` of its
    content, in order of where they open; one pass over the text (a response of many unclosed boxes costs no more
    than its length). A placeholder box (``\\boxed{}``, ``\\boxed{\\phantom{2}}``, ``\\boxed{?}``) holds none."""
    openers = {match.end() - 1 for match in _BOXED.finditer(text)}  # where each box's brace is
    if not openers:
        return []
    stack: list[tuple[int, bool]] = []
    found: list[tuple[int, int, str]] = []
    for brace in _BRACES.finditer(text):  # from brace to brace (in C), not character by character
        index, char = brace.start(), brace.group()
        if char == "{":
            stack.append((index + 1, index in openers))
        elif char == "}" and stack:
            start, boxed = stack.pop()
            if boxed and not _PLACEHOLDER.fullmatch(text[start:index]):
                found.append((start, index, text[start:index]))
    return sorted(found)


def _answer_lines(
    lines: list[str], written: list[str], pattern: re.Pattern[str], first: int = 0
) -> list[tuple[str, str]]:
    """What every line from ``first`` on that matches ``pattern`` states, as asserted and as written, in order: the
    rest of the line, or when that is empty the lines that follow up to a blank one (a line stating nothing at all is
    left out). ``lines`` and ``written`` are the two views' lines, of equal lengths."""
    found = []
    for n in range(first, len(lines)):
        match = pattern.search(lines[n])
        if match is None:
            continue
        rest = match.group("rest").strip()
        if rest.strip("*_ :"):
            found.append((rest, written[n][match.start("rest") :].strip()))
            continue
        following: list[int] = []
        for index in range(n + 1, min(len(lines), n + 1 + _MAX_FOLLOWING_LINES)):
            if not lines[index].strip():
                if following:
                    break
                continue
            following.append(index)
        if following:
            found.append(("\n".join(lines[i] for i in following), "\n".join(written[i] for i in following)))
    return found


def _qa_answer(lines: list[str], written: list[str], view: str) -> tuple[str, str, SpanSource] | None:
    """The question-and-answer format's answer (rule 4 of the module docstring), as asserted and as written."""
    last = next((n for n in range(len(lines) - 1, -1, -1) if lines[n].strip()), None)
    if last is None or _LETTER_LINE.search(view):
        return None
    match = _QA_LINE.match(lines[last])
    if match is None:
        return None
    return match.group("rest"), written[last][match.start("rest") :], "qa_answer"


def _stated_answers(
    boxes: list[tuple[int, int, str]], lines: list[str], written: list[str], source: SpanSource, view: str
) -> list[str]:
    """Every final answer the response asserts, as asserted: its ``boxes``, its final-answer lines (a line holding a
    box counts as that box) and the answer lines after its last box, or, when it has neither boxes nor final-answer
    lines, its answer lines."""
    finals = [rest for rest, _ in _answer_lines(lines, written, _FINAL_STATED) if not _all_boxed(rest)]
    if boxes:
        after = view.count("\n", 0, boxes[-1][1]) + 1  # an answer line after the last box is the response's own
        later = [rest for rest, _ in _answer_lines(lines, written, _ANSWER_LINE, after) if not _all_boxed(rest)]
        return [content for _, _, content in boxes] + finals + later
    if finals or source != "answer":
        return finals
    return [rest for rest, _ in _answer_lines(lines, written, _ANSWER_LINE)]


def final_answer_span(response: str) -> AnswerSpan | None:
    """The response's final answer by the precedence rules of the module docstring, read where the response asserts
    it (:mod:`verifiers.assertion`), or None when there is none."""
    view, as_written = asserted_view(response), written_view(response)
    found: tuple[str, str, SpanSource] | None = None
    boxes = _all_boxed(view)
    lines, written = view.split("\n"), as_written.split("\n")  # read once: the span and the other answers need them
    nested = False
    if boxes:
        start, end, content = boxes[-1]
        found = (content, as_written[start:end], "boxed")
        nested = any(_BOXED.search(box) for _, _, box in boxes)
    else:
        for pattern, source in ((_FINAL_LINE, "final_answer"), (_ANSWER_LINE, "answer")):
            stated = _answer_lines(lines, written, pattern)
            if stated:
                found = (*stated[-1], source)
                break
        if found is None:
            found = _qa_answer(lines, written, view)
        short = _SPACES.sub(" ", _PLACEHOLDER_BOX.sub(" ", view)).strip()
        # the length that counts is the response's as written: blanking a long text does not make it a short answer
        if found is None and short and len(_SPACES.sub(" ", as_written).strip()) <= SHORT_RESPONSE_CHARS:
            found = (short, _SPACES.sub(" ", as_written).strip(), "short_response")
    if found is None or not found[0].strip():
        return None
    chosen = _tidy(found[0])
    if not chosen:
        return None  # what is asserted there is only separators (":" left of "Answer: ...")
    seen, others = {chosen}, []
    for answer in _stated_answers(boxes, lines, written, found[2], view):
        answer = _tidy(answer)
        if answer and answer not in seen:
            seen.add(answer)
            others.append(answer)
    return AnswerSpan(chosen, found[2], tuple(others), found[1].strip()[:MAX_SPAN_CHARS], nested)


_SPACES = re.compile(r"[ \t]{2,}")
# what a blanked part leaves at the end of an answer: "12, not 8." is asserted as "12,      ."
_DANGLING = re.compile(r"[\s,;:]+(?=[.!]?\s*$)")


# A part of a multi-part question: (b), b), Part (b), Part b, (ii), (2)
_PART = r"(?:[a-h]|viii|vii|vi|iv|v|ix|iii|ii|i|[1-9])"
_CRITERION_PART = re.compile(
    rf"^\s*(?:\*\*)?(?:part\s*)?(?:\(\s*(?P<p>{_PART})\s*\)|(?P<q>{_PART})\))|^\s*(?:\*\*)?part\s+(?P<r>{_PART})\b",
    re.IGNORECASE,
)
_PART_HEADER = re.compile(
    rf"^[ \t#*]*(?:part\s*)?(?:\(\s*(?P<p>{_PART})\s*\)|(?P<q>{_PART})\))[*:.]*"
    rf"|^[ \t#*]*part\s+(?P<r>{_PART})\b[*:.]*",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_PART = re.compile(rf"(?:^|(?<=[\s,;]))(?:part\s*)?\(\s*(?P<p>{_PART})\s*\)[:.]?", re.IGNORECASE)


def _label(match: re.Match[str]) -> str:
    return next(match.group(name) for name in ("p", "q", "r") if match.group(name) is not None).lower()


def criterion_part(criterion: str) -> str | None:
    """The part of a multi-part question a criterion opens with (``(b) Gives the speed.``, ``Part 2: ...``), in
    lower case, or None."""
    match = _CRITERION_PART.match(criterion)
    return _label(match) if match else None


def _inline_piece(text: str, part: str) -> str | None:
    """What ``text`` states after the label of ``part`` and before the next label, when it labels at least two
    parts inline (``(a) 180 km, (b) 45 km/h``), else None."""
    labels = list(_INLINE_PART.finditer(text))
    if len({_label(m) for m in labels}) < 2:
        return None
    mine = [n for n, m in enumerate(labels) if _label(m) == part]
    if not mine:
        return ""
    n = mine[-1]
    end = labels[n + 1].start() if n + 1 < len(labels) else len(text)
    return text[labels[n].end() : end].strip().strip(",;").strip()


def part_span(response: str, part: str, whole: AnswerSpan | None) -> AnswerSpan | None:
    """The final answer to ``part`` of a multi-part response, or ``whole`` (the response's own span) when the
    response is not written in parts.

    A final answer that labels parts inline (``Final answer: (a) 180, (b) 45``) gives the piece after the part's label.
    Otherwise, where lines open with at least two part labels (``(a) ...``, ``**Part b:**``), the part's section runs
    from its last such line to the next one and its own final answer is read from it alone: an answer written under
    another part never counts, and a part with no answer states none. A response in parts that lacks the part states
    none."""
    if whole is not None:
        piece, piece_written = _inline_piece(whole.text, part), _inline_piece(whole.written, part)
        if piece is not None:
            if not piece:
                return None
            return AnswerSpan(_tidy(piece), whole.source, (), (piece_written or piece)[:MAX_SPAN_CHARS])
    headers = list(_PART_HEADER.finditer(asserted_view(response)))
    labels = [_label(m) for m in headers]
    if len(set(labels)) < 2:
        return whole
    if part not in labels:
        return None
    n = len(labels) - 1 - labels[::-1].index(part)
    end = headers[n + 1].start() if n + 1 < len(headers) else len(response)
    return final_answer_span(response[headers[n].end() : end])


def _tidy(answer: str) -> str:
    """An answer as asserted, its blanks one space and the separators a blanked ending left dropped, bounded."""
    return _DANGLING.sub("", _SPACES.sub(" ", answer.strip())).strip()[:MAX_SPAN_CHARS]


_PLACEHOLDER_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{(?:" + _PLACEHOLDER.pattern + r")\}")


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


# an "=" inside a relation (!=, <=, >=, =/=, ==, =<, =>) is no equation's
_RELATION_EQUALS = re.compile(r"[!<>]=|=[/\\]=|==|=[<>]")
# a relation at the top level of an answer: what follows it is a bound, not the value
_RELATION = re.compile(r"[<>≤≥≠]|[!<>]=|=[/\\]=|\\(?:neq?|leq?|geq?|lt|gt|leqslant|geqslant|nless|ngtr)(?![A-Za-z])")


def _last_top_level_equals(text: str) -> int | None:
    """Where the last ``=`` outside every bracket and every relation is (``x = 5``: 2), or None: an ``=`` in a
    subscript or a set (``\\sum_{n=1}^{10} n``, ``\\{x : x = 1\\}``) belongs to the expression, and one in ``!=``,
    ``<=``, ``>=`` or ``=/=`` to a relation, not to an equation that states a value."""
    in_relation = {index for match in _RELATION_EQUALS.finditer(text) for index in range(*match.span())}
    found = None
    for index, (char, depth) in enumerate(zip(text, bracket_depths(text), strict=True)):
        if char == "=" and depth == 0 and index not in in_relation:
            found = index
    return found


def _top_level_relation(text: str) -> bool:
    """Whether ``text`` holds a relation (``<``, ``≤``, ``!=``, ``=/=``, ``\\neq``...) outside every bracket."""
    depths = list(bracket_depths(text))
    return any(depths[match.start()] == 0 for match in _RELATION.finditer(text))


_TEXT_CONNECTIVE = re.compile(r"\\(?:text|mathrm|textrm|mbox)\s*\{\s*(?:and|or)\s*\}")


def _equations(text: str) -> int:
    """How many of ``text``'s top-level parts (split at commas, semicolons, ``and`` and ``\\text{ and }`` outside
    brackets) hold an ``=``: ``x = 8, y = 12`` and ``f(x) = x \\text{ and } f(x) = -x`` hold two equations,
    ``x = 2 + 3 = 5`` one."""
    count, holds = 0, False
    depths = bracket_depths(text)
    for index, (char, depth) in enumerate(zip(text, depths, strict=True)):
        if depth:
            continue
        if (
            char in ",;"
            or (char == " " and text.startswith(" and ", index))
            or (char == "\\" and _TEXT_CONNECTIVE.match(text, index))
        ):
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
    if equals is None or _top_level_relation(text):
        return text  # a relation is no value: x <= 12 is read whole, and never as 12
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
    image``): the one answer an empty target (``[]``, ``''``) is met by. A refusal (``no idea``, ``it is not possible
    to determine``) states no value, and never this (:func:`verifiers.assertion.states_absence`)."""
    return states_absence(clean_text(span))


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
    answers that read differently (a box inside a box is several), or when the span reads as the empty value without
    saying there is nothing. A text or list value is read as written (its own words of negation are the value's);
    every other value as asserted."""
    spec = get_spec(verifier)  # an unknown verifier is refused whatever the span
    if span is None:
        return {"predict": None}, "no final answer found"
    where = f"from the {span.source.replace('_', ' ')} span {span.text!r:.80}"
    if span.nested:
        return {"predict": None}, f"several final answers: a box holds another box ({span.text!r:.40})"
    if len(span.others) > _MAX_OTHER_ANSWERS:
        return {"predict": None}, f"{len(span.others) + 1} final answers"
    different = [other for other in span.others if not _reads_alike(verifier, span.text, other)]
    if different:
        return {"predict": None}, f"several final answers: {span.text!r:.40} and {different[0]!r:.40}"
    as_written = spec.arity is None and spec.value in _READ_AS_WRITTEN
    value = _read(verifier, span.written if as_written and span.written else span.text)
    if spec.list_valued and spec.arity is None and len(value) == 1 and states_emptiness(span.written):
        value = []  # "none" for a list: the empty list, not a list of the word
    if value in ("", []) and not states_emptiness(span.written):
        return {"predict": None}, f"no value in the {span.source.replace('_', ' ')} span {span.text!r:.80}"
    return {"predict": value}, where


def extract_prediction(verifier: str, span: AnswerSpan | None) -> dict[str, Any]:
    """The scoring-side keywords of ``verifier`` for a final answer span (:func:`read_prediction`)."""
    return read_prediction(verifier, span)[0]


#: The kinds of value whose words are the value, read from the span as written.
_READ_AS_WRITTEN = frozenset({"text", "list"})
#: How a final answer is read for each kind of prediction (coordinates are read by arity, see extract_prediction).
_READERS = {"text": clean_text, "expression": extract_expr, "time": extract_time, "list": extract_list}
