"""Sides written in words, read down to the value they state, and the math spans of a text.

**A sentence** (:func:`sentence`: words of letters outside math spans and text groups, other than a formula's) is read
down to the one value it states: ``There are 5 apples.``, ``I think it is $5$.``, ``The largest $n$ is 34.`` state 5,
5 and 34: what comes before the last "is" names the value, and the words after it are the claim. What the claim
says of its value (``not``, ``n't``, ``at least``, ``less than``, ``between``, ``minus``, ``million``, ``half``) must
be the same on both sides, and an alternative before it (``It is 5, or is it 6``) leaves it in doubt: ``the number is
not 10, which is 1,000.99`` claims 1,000.99. A prediction that states several values (``12 apples and 2 oranges``,
``5 or 3``) is unparseable (``expr_verify`` reads a prediction as it asserts its value first,
:mod:`verifiers.assertion`, so ``5, not 3`` states 5). Math-Verify alone reads the last number of any sentence that
ends with a period (``not 5.``, ``It is less than 5.``, ``x > 5.``, ``y = 2x + 5.`` are each 5 to it), so a side that
is no sentence loses a final period (``x > 5`` is read whole) and a worked solution of several sentences keeps the
words of its last one that states a value. A closing remark in brackets that explains the value (``5 (since 2 + 3 =
5)``) is dropped first (:func:`without_remark`); one that offers another value or qualifies it (``5 (or 6)``) is not.

Math spans (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``) are found by :func:`math_spans` in time that
grows with the text's length.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from verifiers.answer_forms import TEXT_WRAPPER, UNIT_ABBREVIATION, unit_text

_SPAN_OPENING = re.compile(r"\$\$|\$|\\\(|\\\[")
_SPAN_CLOSING = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
# Words a formula may hold written out: they neither make a side a sentence nor split its values (3 or 5, 2 sqrt(3)).
_MATH_WORDS = frozenset(
    "and or pi sqrt sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh log ln lg exp mod infty infinity inf "
    "max min gcd lcm".split()
)
# A connective that opens a bracket starts a remark in words: 5 (or 6) states two values.
_REMARK = re.compile(r"(?<=[(\[])\s*(?:or|and)\b", re.IGNORECASE)
# A word of a sentence (contractions whole: isn't), or a lone "I" or "a" before a word. Capitals alone (AB, CD) are
# symbols, and letters against a digit, an operator or a brace (10cm^2, km/h, f(x), ext{13} of a broken \text) are a
# formula's.
_PROSE_WORD = re.compile(
    r"(?<![\\A-Za-z0-9/^_{])"
    r"(?:[A-Za-z]+(?:['\u2019][A-Za-z]+)+|(?=[A-Z]?[a-z])[A-Za-z]{2,}(?![A-Za-z0-9/^_({])|(?:I|a|A)(?=\s+[a-z]{2,}))"
)
# What a sentence says that bounds, negates or scales the value it states. Math-Verify reads past all of it: alone, it
# pays "not 5.", "at least 5.", "between 3 and 5." as 5. The ambiguous words count only right before a value (the
# area under the curve is 12; under 12).
_SENTENCE_QUALIFIER = re.compile(
    r"n['\u2019]t\b|\b(?:not|never|no|none|neither|nor|between|except|excluding|besides|"
    r"millions?|billions?|trillions?|thousands?|hundreds?|dozens?|half|halves|thirds|quarters?|squared|cubed|"
    r"factorial|reciprocal|inverse|double|twice|triple|thrice|negative)\b"
    r"|\b(?:more|less|fewer|greater|larger|smaller|bigger|higher|lower|other)\s+than\b|\bat\s+(?:least|most)\b"
    r"|\bup\s+to\b|\bor\s+(?:more|less|fewer|greater|higher|lower|above|below|so)\b"
    r"|\b(?:over|under|above|below|beyond|within|exceeds?|exceeding|nearly|almost|minus|minimum|maximum|min|"
    r"max|less|more|fewer|greater|least|most)\s*(?=[-+$\\(\d])",
    re.IGNORECASE,
)
_COPULAS = frozenset(
    "is are was were be equals equal gives makes becomes get gets got it's that's there's here's what's".split()
)
# "!" neither ends nor breaks a sentence here: 5! is a factorial
_SENTENCE_BREAK = re.compile(r"(?<=[.?])\s+(?=\S)|\n")
_PHRASE_STARTS = frozenset("of in on at the an for to from with by is are was were be that which".split())
# a closing remark in brackets that gives the reason for a value, not another one
_EXPLAINING_REMARK = re.compile(
    r"\((?:since|because|as|from|by|using|via|given|where|which|see|note|i\.e\.|e\.g\.|rounded|exact|exactly|"
    r"approx\w*)\b[^()]*\)\s*\.?\s*$",
    re.IGNORECASE,
)
_OTHER_VALUE = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably|else|otherwise)\b", re.IGNORECASE)
_HELD = re.compile(r"([\x00\x01])(\d+)\1")
_HELD_TEXT = re.compile(r"\x01\d+\x01")
_STATES_VALUE = re.compile(r"[0-9A-Za-z\x00\\]")


@dataclass(frozen=True, slots=True)
class Sentence:
    """What a side written as a sentence states: its values (usually one) with the unit words right after each, and
    what it says around them that bounds, negates or scales them (lower case, single spaces; "" for nothing)."""

    values: tuple[str, ...]
    qualifiers: str
    #: whether the text has several sentences: its values are then those of the last sentence that states any
    several_sentences: bool = False


def _positions(text: str, needle: str) -> list[int]:
    found, index = [], text.find(needle)
    while index >= 0:
        found.append(index)
        index = text.find(needle, index + 1)
    return found


def math_spans(text: str) -> list[tuple[int, int, str]]:
    """The math spans of ``text`` (``$$...$$``, ``$...$``, ``\\(...\\)``, ``\\[...\\]``, none empty), left to right,
    as ``(start, end, content)``: the spans the regular expression ``\\$\\$(.+?)\\$\\$|\\$(.+?)\\$|...`` finds,
    found in time that grows with the text's length, not its square (a regular expression would scan to the end
    from each of 100,000 unclosed ``\\(``, for minutes)."""
    closings = {closing: _positions(text, closing) for closing in _SPAN_CLOSING.values()}
    spans, index = [], 0
    while (opening := _SPAN_OPENING.search(text, index)) is not None:
        start, kind = opening.start(), opening.group(0)
        # "$$" with no closing "$$" is read as "$" followed by content that starts with "$", as the regex does
        for form in (kind, "$") if kind == "$$" else (kind,):
            closing = _SPAN_CLOSING[form]
            begin = start + len(form)
            candidates = closings[closing]
            at = bisect.bisect_left(candidates, begin + 1)  # the content holds at least one character
            if at < len(candidates):
                end = candidates[at]
                spans.append((start, end + len(closing), text[begin:end]))
                index = end + len(closing)
                break
        else:
            index = start + 1
    return spans


def _hold(pattern: re.Pattern[str] | None, text: str, held: list[str], mark: str) -> str:
    """``text`` with each match of ``pattern`` (each math span when None) replaced by ``mark``, its number, ``mark``;
    the matches are appended to ``held``."""
    found = [(m.start(), m.end()) for m in pattern.finditer(text)] if pattern is not None else math_spans(text)
    pieces, last = [], 0
    for start, end, *_ in found:
        held.append(text[start:end])
        pieces += [text[last:start], f"{mark}{len(held) - 1}{mark}"]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _restore(text: str, held: list[str]) -> str:
    return _HELD.sub(lambda m: held[int(m.group(2))], text)


def _unit_after(pieces: list[str], index: int) -> list[str]:
    """The words after the value ``pieces[index]`` that read as its unit: up to three, one right after another, up
    to a word that starts a phrase (5 apples in the basket: apples; 3/4 of the class: none)."""
    if pieces[index].rstrip()[-1:] in tuple(".,;:?"):
        return []  # the value ends a clause: the next word is not its unit
    unit: list[str] = []
    for word_index in range(index + 1, min(index + 6, len(pieces)), 2):
        word = pieces[word_index]
        if (unit and pieces[word_index - 1].strip()) or word.lower() in _PHRASE_STARTS:
            break
        if unit_text(" ".join([*unit, word])) is None:
            break
        unit.append(word)
    return unit


def _claim(masked: str, words: list[re.Match[str]]) -> int:
    """Where the claim of a masked sentence starts: after its last "is" (``the largest $n$ is 34``, ``it's 6``), which
    names the value before it, or at its start."""
    copulas = [match for match in words if match.group(0).lower().replace("\u2019", "'") in _COPULAS]
    return copulas[-1].end() if copulas else 0


def _values(masked: str, words: list[re.Match[str]], held: list[str]) -> list[str]:
    """The values of one masked sentence's claim (:func:`_claim`): the stretches between its words, each with its unit
    words."""
    start = _claim(masked, words)
    words = [match for match in words if match.start() >= start]
    # pieces alternate: the text before the first word, a word, the text up to the next word, ...
    pieces, last = [], start
    for match in words:
        pieces += [masked[last : match.start()], match.group(0)]
        last = match.end()
    pieces.append(masked[last:])
    values = []
    for index in range(0, len(pieces), 2):
        # a bracket a remark opened or closed is no part of the value: "5 (" of "5 (or 6)"
        value = without_sentence_end(pieces[index]).strip(" ,;:?").removesuffix("(").lstrip(")").strip()
        if not _STATES_VALUE.search(_HELD_TEXT.sub("", value)):
            continue  # punctuation, or a text group between words (the \text{area} is), or markup (<|im_end|>)
        values.append(_restore(" ".join([value, *_unit_after(pieces, index)]), held).strip())
    return values


def _prose_words(masked: str) -> list[re.Match[str]]:
    # a unit's abbreviation (cm, kg) is no word of a sentence: {35 cm, 4} is a set; "in" is English first
    remarks = {m.end() for m in _REMARK.finditer(masked)}
    return [m for m in _PROSE_WORD.finditer(masked)
            if (m.group(0).lower() not in _MATH_WORDS or m.end() in remarks)
            and (m.group(0) == "in" or not UNIT_ABBREVIATION.match(m.group(0)))]  # fmt: skip


def sentence(text: str) -> Sentence | None:
    """What ``text`` states when it is written in words (a word with a lower-case letter outside its math spans and
    text groups that is not a formula's, ``pi``, ``sqrt``, ``and``), else None; a box is left to the parser.

    Of several sentences, the last that holds a value is read (a worked solution's conclusion). Its words are taken
    out: each stretch between them that holds anything else is a value, with the words right after it when they read
    as a unit (``It is 3.5 km.`` states ``3.5 km``); what comes before its last "is" names the value (``the largest
    $n$ is 34`` states 34). A sentence stating one value states that one; several values (``12 apples and 2
    oranges``) or none are for the caller to judge. What the sentence says that bounds, negates or scales a value
    (``at least``, ``not``,
    ``million``) is returned with it.
    """
    if "\\boxed" in text or "\\fbox" in text:
        return None
    held: list[str] = []
    masked = _hold(TEXT_WRAPPER, _hold(None, text, held, "\x00"), held, "\x01")
    if not _prose_words(masked):
        return None
    sentences = _SENTENCE_BREAK.split(masked.strip())
    chosen, values = masked, []
    for part in reversed(sentences):
        found = _values(part, _prose_words(part), held)
        if found:
            chosen, values = part, found
            break
    # the claim's words qualify its value ("the number is not 10, which is 1,000.99" claims 1,000.99); an alternative
    # before it ("It is 5, or is it 6") leaves the claim in doubt
    start = _claim(chosen, _prose_words(chosen))
    unwrapped = _HELD.sub(lambda m: TEXT_WRAPPER.sub(r" \1 ", held[int(m.group(2))]) if m.group(1) == "\x01"
                          else m.group(0), chosen[start:])  # fmt: skip
    said = [" ".join(phrase.lower().split()) for phrase in _SENTENCE_QUALIFIER.findall(unwrapped)]
    if _OTHER_VALUE.search(chosen[:start]):
        said.append("or")
    return Sentence(tuple(values), " ".join(said), len(sentences) > 1)


def qualifying_words(text: str) -> str:
    """What ``text`` says that bounds, negates or scales a value (``not``, ``at least``, ``between``, ``million``),
    lower case, single spaces; "" for nothing. Words only: math spans are not read."""
    prose = _hold(None, text, [], "\x00")
    return " ".join(" ".join(phrase.lower().split()) for phrase in _SENTENCE_QUALIFIER.findall(prose))


def without_remark(text: str) -> str:
    """``text`` without a closing remark in brackets that explains its value (``5 (since 2 + 3 = 5)``,
    ``5 (rounded)``): the reasons are not a second value. A remark that offers another value or qualifies this one
    (``5 (or 6)``, ``5 (not 6)``, ``5 (at least)``) stays, to be judged."""
    match = _EXPLAINING_REMARK.search(text)
    if match is None or _OTHER_VALUE.search(match.group(0)) or qualifying_words(match.group(0)):
        return text
    return text[: match.start()].rstrip()


def without_sentence_end(text: str) -> str:
    """``text`` stripped, without a final period that ends it as a sentence: ``x > 5.`` is ``x > 5``, which Math-Verify
    reads whole, where with the period it reads only the last number. An ellipsis stays, and so does ``!`` (``5!``)."""
    text = text.strip()
    if text.endswith(".") and not text.endswith(".."):
        return text[:-1].rstrip()
    return text
