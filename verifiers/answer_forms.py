"""Answer forms people and policies write around a value, read down to the value before it is compared.

Each rule is narrow on purpose: it fires only on the form it names, so that an expression that merely looks alike is
left to the comparison as written.

- **A short final-answer phrase** without a box: ``Therefore the answer is +7``, ``Answer: 2x + 3`` are ``+7``,
  ``2x + 3`` (what follows the last "answer is" or "answer:" on its line; boxes are left to the parser).
- **Currency**: ``\\$10``, ``$10`` (a lone dollar sign, not a math delimiter), ``€5``, ``£5``, ``¥5``, ``US$5``.
- **A unit after a number**: ``10 weeks``, ``42 dollars``, ``10 square units``, ``10cm^2``, ``10\\text{ cm}^2``,
  ``5\\,\\mathrm{m/s}``. A unit is up to three words of letters, or one of the usual abbreviations with an optional
  power or ``/`` unit; a one-letter abbreviation (``m``, ``s``, ``g``) needs a space or a ``\\text{}`` so that ``10m``
  stays a product. Only a value with no letters of its own is read this way (``2x cm`` is not). When both sides carry
  units and the units differ, the unit rule steps aside (``10 cm`` against ``0.1 m`` is compared as written).
- **A unit in text after any value**: ``2\\sqrt{3}\\text{ cm}``, ``\\frac{\\pi}{2}\\,\\mathrm{rad}`` (a unit in a text
  wrapper is a unit, whatever comes before it), with the same rule for units on both sides.
- **A named quantity**: an equation whose left side only names what the right side gives is its right side:
  ``f(x) = 2x + 3``, ``P(A) = 0.3``, ``\\text{area} = 12``, ``any text = 12``. A left side of one or two letters
  (``y = 2x + 3``, ``xy = 6``) is an equation and stays one. When both sides name a function at its arguments and the
  arguments differ, they state different quantities (``f(2) = 5`` is not ``f(3) = 5``).
- **Unicode mathematics** (:func:`unicode_math`): ``5²`` is ``5^{2}``, ``x₁`` is ``x_{1}``, ``1½`` is ``1 1/2``, a dash
  between two values is a range (``3–5``: two values), another dash a minus sign (``–5``).
- **Digit groups in LaTeX**: ``11,\\!111,\\!100`` is ``11111100``.
- **Degrees inside a trigonometric function**: ``\\sin(90^\\circ - x)`` is ``\\sin(\\frac{90\\pi}{180} - x)``, so that
  the identity holds; a bare ``30^\\circ`` is left alone (a degree answer matches its number).
- **Option letters in a font or with their text** (as the target too): ``\\mathcal{B}``, ``\\textbf{A}``,
  ``\\text{(C)}``, ``C. x = 42``.

What changes a value is never dropped (:func:`qualifiers`): a relation before it with nothing on its left
(``\\geq 5``, ``< 5``, ``\\neq 5``: Math-Verify alone reads each as ``5``) and words after it that change it, a
scale, a bound, a negation or an operation (``3\\text{ million}``, ``3\\text{ or more}``, ``2\\text{ squared}``,
``5 or more``, ``5+``: Math-Verify alone drops them as if they were units, or reads past them). Both sides must
state the same ones, or they differ whatever their values. Percent in text (``5\\text{ percent}``, ``5 percent``) is
a percent sign.

**A sentence** (:func:`sentence`: words of letters outside math spans and text groups, other than a formula's) is read
down to the one value it states: ``There are 5 apples.``, ``I think it is $5$.``, ``The largest $n$ is 34.`` state 5,
5 and 34. What its words say of that value (``not``, ``n't``, ``at least``, ``less than``, ``between``, ``minus``,
``million``, ``half``) must be the same on both sides, and a prediction that states several values (``12 apples and 2
oranges``, ``5, not 3``) is unparseable. Math-Verify alone reads the last number of any sentence that ends with a
period (``not 5.``, ``It is less than 5.``, ``x > 5.``, ``y = 2x + 5.`` are each 5 to it), so a side that is no
sentence loses a final period (``x > 5`` is read whole) and a worked solution of several sentences keeps the words of
its last one that states a value.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

_ANSWER_MARK = re.compile(r"answer\s*(?:is\b|:)", re.IGNORECASE)
_BOXED = "\\boxed"

_CURRENCY = re.compile(r"^\s*([+-]?)\s*(?:\\\$|\\\\\$|US\$|\$|€|£|¥|\\euro\b|\\pounds\b)\s*(?=[\d.])")
_TEXT_WRAPPER = re.compile(r"\\(?:text|textrm|mathrm|mbox|operatorname|textnormal|mathit|textit)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|~")
_POWER = r"(?:\s*\^\s*(?:\{\s*[23]\s*\}|[23]))?"
_SHORT_UNITS = (
    "mm|cm|km|dm|nm|um|kg|mg|ms|ns|min|hr|hrs|mL|ml|kL|ft|yd|mi|in|lb|lbs|oz|mph|kph|km/h|m/s|cm/s|km/hr|sq|cu|"
    "kWh|kW|MW|Hz|kHz|MHz|GHz|kJ|J|N|Pa|kPa|atm|mol|V|W|A|K|L|m|s|g|h|l"
)
_UNIT_ABBREVIATION = re.compile(rf"^(?:(?:{_SHORT_UNITS}){_POWER})(?:\s*/\s*(?:{_SHORT_UNITS}){_POWER})?$")
# LaTeX commands that write a unit (degrees, angstroms, ohms); any other command is mathematics
_UNIT_COMMANDS = frozenset({"\\degree", "\\AA", "\\ohm"})
# words after a number that bound, negate or scale it, besides those of _NOT_UNITS: never its unit (5 never, 5 max)
_NOT_UNIT_WORDS = frozenset(
    "no not never none negative minimum maximum min max least most double twice triple over under above below beyond "
    "within between except excluding".split()
)
_UNIT_WORDS = re.compile(r"^[A-Za-z]{2,}(?:[\s-]+[A-Za-z]{2,}){0,2}\.?$")
# Words after a number that are mathematics, not a unit: a product with pi, a root, a logarithm, a connective.
_NOT_UNITS = frozenset(
    "pi sqrt sin cos tan sec csc cot log ln exp and or not to times cdot over plus minus mod infty infinity "
    "alpha beta gamma delta theta lambda mu sigma omega phi psi rho tau epsilon "
    # words that change the number they follow: 10 factorial, 2 squared, 5 million, 2 thirds
    "factorial squared cubed root roots power powers inverse less more than divided half halves third thirds quarter "
    "quarters fourth fourths fifth fifths sixth sixths seventh sevenths eighth eighths ninth ninths tenth tenths "
    "hundred hundreds thousand thousands million millions billion billions trillion trillions dozen dozens "
    "hundredth hundredths thousandth thousandths percent".split()
)
_NUMBER_PART = re.compile(
    r"^(?P<value>[+-]?(?:\d[\d,\s]*(?:\.\d*)?|\.\d+)(?:\s*(?:\\times|\\cdot)\s*10\s*\^\s*\{?[+-]?\d+\}?)?"
    r"(?:\s*\\?%)?|[+-]?\\[dt]?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\})"
    r"\s*(?P<unit>.*)$",
    re.DOTALL,
)

_NAMED_EQUATION = re.compile(
    r"^\s*(?P<name>[A-Za-z](?:_\{?\w+\}?)?'*\s*\([^()=]{0,40}\)"  # f(x), P(A), h_1(t)
    r"|\\(?:text|mathrm|textrm|operatorname)\s*\{[^{}=]{1,60}\}"  # \text{area}
    r"|[A-Za-z]{3,}(?:\s+[A-Za-z]+){0,6}"  # area, any text
    r"|[A-Za-z]{1,2}(?:\s+[A-Za-z]+){1,6})"  # the area
    r"\s*=\s*(?P<value>[^=<>]+?)\s*$"
)
_LATEX_WORDS = re.compile(r"\\[A-Za-z]+")
_APPLIED = re.compile(r"^\s*(?P<head>[A-Za-z](?:_\{?\w+\}?)?'*)\s*\((?P<arguments>[^()=]*)\)\s*$")

# a relation that opens a side with nothing on its left: what follows is a bound, not the value
_RELATIONS = {
    "<": "<", "\\lt": "<", ">": ">", "\\gt": ">", "\\nless": "not <", "\\ngtr": "not >",
    "\\le": "≤", "\\leq": "≤", "\\leqslant": "≤", "≤": "≤", "\\ge": "≥", "\\geq": "≥", "\\geqslant": "≥", "≥": "≥",
    "\\ne": "≠", "\\neq": "≠", "≠": "≠", "\\neg": "not", "\\lnot": "not", "¬": "not",
}  # fmt: skip
# Logical connectives written in LaTeX: Math-Verify reads "5 \lor 6" as 6; in words it reads a set of both
_OPENING_EQUALS = re.compile(r"^\s*=\s*(?=\S)")
_CONNECTIVES = re.compile(r"\\(?:lor|vee)(?![A-Za-z])|∨")
_CONJUNCTIVES = re.compile(r"\\(?:land|wedge)(?![A-Za-z])|∧")
_OPENING_RELATION = re.compile(
    r"^\s*(" + "|".join(re.escape(r) for r in sorted(_RELATIONS, key=len, reverse=True)) + r")(?![A-Za-z])\s*"
)
# a text group that closes a side (with a power of it: \text{cm}^2), after a value
_CLOSING_TEXT = re.compile(
    r"^(?P<value>.*?[\w)}\]!%.'])(?:\\[,;:! ]|\\quad|~|\s)*"
    r"\\(?:text|textrm|textnormal|textbf|textit|mathrm|mathit|mathbf|mbox|operatorname)\s*\{(?P<words>[^{}]*)\}"
    rf"(?P<power>{_POWER})\s*$",
    re.DOTALL,
)
# words that are not a unit but say something of the value before them: a scale, a bound, a negation, an operation
# (last, a few count things: "2 times" is twice, "2 roots" two roots)
_VALUE_WORDS = (_NOT_UNITS - {"times", "roots", "powers"}) | frozenset(
    "fewer least most above below under except excluding never maximum minimum max min".split()
)
# plain words that close a side after a number or a bracket (5 or more, 5less), and a closing plus (5+, not 3^{2+})
_CLOSING_WORDS = re.compile(r"^(?P<value>.*?[\d)}\]%])\s*(?P<words>[A-Za-z]+(?:[\s-]+[A-Za-z]+)*)\s*\.?$", re.DOTALL)
_CLOSING_PLUS = re.compile(r"^(?P<value>.*?[\d)\]])\s*\+$", re.DOTALL)
_PERCENT_TEXT = re.compile(r"\s*\\text\s*\{\s*percent\s*\}\s*$")
# "5 percent" in a sentence is 5% (Math-Verify rewrites it too, but only where it reads the whole side)
_PERCENT_WORD = re.compile(r"(?<=\d)\s*(?:percent|per\s+cent|pct)\b", re.IGNORECASE)

_TRIG = re.compile(r"\\(?:sin|cos|tan|sec|csc|cot)\b")
_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*\^\s*(?:\{\s*\\circ\s*\}|\\circ)")

_DIGIT_GROUP = re.compile(r"(?<=\d),\\!\s*(?=\d{3}(?!\d))")
_FONT_LETTER = re.compile(
    r"^\s*\\(?:mathcal|mathbf|mathrm|textbf|text|mathit|textit|mathsf|mathbb|mathscr|mathfrak|boxed|textrm)\s*"
    r"\{\s*([\(\[]?\s*[A-Za-z]\s*[\)\]]?\.?)\s*\}\s*$"
)
_ANOTHER_OPTION = re.compile(
    r"\(\s*[A-Z]\s*\)|\b(?i:or|and|maybe|perhaps|possibly|probably)\s+\(?[A-Z]\b(?![a-z'])"
)
_LEADING_OPTION_TEXT = re.compile(r"^\s*(?:\(\s*([A-Z])\s*\)|([A-Z])\s*[.)])\s+\S")

_SPAN_OPENING = re.compile(r"\$\$|\$|\\\(|\\\[")
_SPAN_CLOSING = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
# Words a formula may hold written out: they neither make a side a sentence nor split its values (3 or 5, 2 sqrt(3)).
_MATH_WORDS = frozenset(
    "and or pi sqrt sin cos tan sec csc cot arcsin arccos arctan sinh cosh tanh log ln lg exp mod infty infinity inf "
    "max min gcd lcm".split()
)
# A connective that opens a bracket starts a remark in words: 5 (or 6) states two values.
_REMARK = re.compile(r"(?<=[(\[])\s*(?:or|and)\b", re.IGNORECASE)
# A word of a sentence (contractions whole: isn't), or a lone "I" or "a" before a word.
# A connective that opens a bracket starts a remark in words: 5 (or 6) states two values.
_REMARK = re.compile(r"(?<=[(\[])\s*(?:or|and)\b", re.IGNORECASE)
# A word of a sentence (contractions whole: isn't), or a lone "I" or "a" before a word. Capitals alone (AB, CD) are
# symbols, and letters against a digit or an operator (10cm^2, km/h, f(x)) a formula's.
_PROSE_WORD = re.compile(
    r"(?<![\\A-Za-z0-9/^_{])"
    r"(?:[A-Za-z]+(?:['\u2019][A-Za-z]+)+|(?=[A-Z]?[a-z])[A-Za-z]{2,}(?![A-Za-z0-9/^_(])|(?:I|a|A)(?=\s+[a-z]{2,}))"
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
    r"max|double|twice|triple|less|more|fewer|greater|least|most)\s*(?=[-+$\\(\d])",
    re.IGNORECASE,
)
_COPULAS = frozenset("is are was were be equals equal gives makes becomes get gets got".split())
# "!" neither ends nor breaks a sentence here: 5! is a factorial
_SENTENCE_BREAK = re.compile(r"(?<=[.?])\s+(?=\S)|\n")
_PHRASE_STARTS = frozenset("of in on at the an for to from with by is are was were be that which".split())
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
        if _unit_text(" ".join([*unit, word])) is None:
            break
        unit.append(word)
    return unit


def _values(masked: str, words: list[re.Match[str]], held: list[str]) -> list[str]:
    """The values of one masked sentence: the stretches between its words, each with its unit words."""
    # pieces alternate: the text before the first word, a word, the text up to the next word, ...
    pieces, last = [], 0
    for match in words:
        pieces += [masked[last : match.start()], match.group(0)]
        last = match.end()
    pieces.append(masked[last:])
    # "the largest $n$ is 34", "x is 5": what comes before the last "is" names the value
    copulas = [index for index in range(1, len(pieces), 2) if pieces[index].lower() in _COPULAS]
    first = copulas[-1] + 1 if copulas else 0
    values = []
    for index in range(first, len(pieces), 2):
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
            and (m.group(0) == "in" or not _UNIT_ABBREVIATION.match(m.group(0)))]  # fmt: skip


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
    masked = _hold(_TEXT_WRAPPER, _hold(None, text, held, "\x00"), held, "\x01")
    if not _prose_words(masked):
        return None
    sentences = _SENTENCE_BREAK.split(masked.strip())
    chosen, values = masked, []
    for part in reversed(sentences):
        found = _values(part, _prose_words(part), held)
        if found:
            chosen, values = part, found
            break
    unwrapped = _HELD.sub(lambda m: _TEXT_WRAPPER.sub(r" \1 ", held[int(m.group(2))]) if m.group(1) == "\x01"
                          else m.group(0), chosen)  # fmt: skip
    qualifying = " ".join(" ".join(phrase.lower().split()) for phrase in _SENTENCE_QUALIFIER.findall(unwrapped))
    return Sentence(tuple(values), qualifying, len(sentences) > 1)


def qualifying_words(text: str) -> str:
    """What ``text`` says that bounds, negates or scales a value (``not``, ``at least``, ``between``, ``million``),
    lower case, single spaces; "" for nothing. Words only: math spans are not read."""
    prose = _hold(None, text, [], "\x00")
    return " ".join(" ".join(phrase.lower().split()) for phrase in _SENTENCE_QUALIFIER.findall(prose))


def without_sentence_end(text: str) -> str:
    """``text`` stripped, without a final period that ends it as a sentence: ``x > 5.`` is ``x > 5``, which Math-Verify
    reads whole, where with the period it reads only the last number. An ellipsis stays, and so does ``!`` (``5!``)."""
    text = text.strip()
    if text.endswith(".") and not text.endswith(".."):
        return text[:-1].rstrip()
    return text


def stated_answer(text: str) -> str | None:
    """What follows the last "answer is" or "answer:" of ``text``, up to the end of that line (a sentence's period
    dropped); None when it has no such mark, or nothing follows it."""
    marks = list(_ANSWER_MARK.finditer(text))
    if not marks:
        return None
    line = text[marks[-1].end() :].strip().split("\n", 1)[0].strip().rstrip(".").strip()
    return line or None


def answer_phrase(text: str) -> str:
    """The value a short phrase states (see the module docstring), or ``text`` when it states none."""
    if _BOXED in text:
        return text  # boxes are read by the parser, which knows what several of them mean
    return stated_answer(text) or text


def without_currency(text: str) -> str:
    """``text`` without a currency sign before its number (``\\$10`` is ``10``)."""
    if text.count("$") > 1 and not text.lstrip().startswith(("\\$", "US$")):
        return text  # "$10$" is a math span, not ten dollars
    return _CURRENCY.sub(lambda m: m.group(1), text, count=1)


def _unit_text(unit: str) -> str | None:
    """The unit ``unit`` names, normalised (lower case, no wrappers or spaces), or None when it is not a unit."""
    unit = _SPACING.sub(" ", unit).strip()
    unit = _TEXT_WRAPPER.sub(lambda m: " " + m.group(1) + " ", unit).replace("{", "").replace("}", "")
    if any(command not in _UNIT_COMMANDS for command in _LATEX_WORDS.findall(unit)):
        return None  # a LaTeX command outside a text group is mathematics (5 \pm, 5 \in), not a unit
    unit = unit.replace("\\", "").strip().rstrip(".").strip()
    if not unit:
        return None
    if _UNIT_ABBREVIATION.match(unit.replace(" ", "")):
        return unit.replace(" ", "")
    if _UNIT_WORDS.match(unit):
        words = unit.lower().rstrip(".").replace("-", " ").split()
        if any(word in _NOT_UNITS or word in _NOT_UNIT_WORDS for word in words):
            return None
        return " ".join(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words)
    return None


def _closing_text(text: str) -> tuple[str, str, str] | None:
    """``(value, words, power)`` when ``text`` ends with a text group after a value, else None."""
    match = _CLOSING_TEXT.match(text.strip())
    if match is None or not match.group("words").strip():
        return None
    return match.group("value").strip(), match.group("words"), match.group("power")


def qualifiers(text: str) -> tuple[str, tuple[str, str]]:
    """``(value, (relation, words))``: ``text`` without a relation that opens it with nothing on its left
    (``\\geq 5``; the relation normalised, ``\\ge`` and ``\\geq`` alike) and without words after it, in text or plain,
    that change the value (``3\\text{ million}``, ``5 or more``; lower case, single spaces; a closing ``+`` is
    ``or more``), and what they were ("" for none). Two sides compare equal only when they state the same ones (see
    the module docstring)."""
    relation, words = "", ""
    opening = _OPENING_RELATION.match(text)
    rest = text[opening.end() :] if opening else text
    if opening and rest.strip() and "<" not in rest and ">" not in rest:  # <1, 2> is a vector, not a bound
        relation, text = _RELATIONS[opening.group(1)], rest
    closing = _closing_text(text)
    plain_words = _CLOSING_WORDS.match(text.strip()) if closing is None else None
    if closing is not None or plain_words is not None:
        value, said = (closing[0], closing[1]) if closing is not None else plain_words.group("value", "words")
        plain = [w for w in re.split(r"[^a-z]+", said.lower()) if w]
        if any(word in _VALUE_WORDS for word in plain) and plain != ["percent"]:
            words, text = " ".join(plain), value.strip()
    elif (plus := _CLOSING_PLUS.match(text.strip())) is not None:
        words, text = "or more", plus.group("value")
    return text, (relation, words)


def split_unit(text: str) -> tuple[str, str | None]:
    """``(value, unit)`` for a number followed by a unit, or any value followed by a unit in text (see the module
    docstring), else ``(text, None)``."""
    match = _NUMBER_PART.match(text.strip())
    if match is not None and match.group("unit"):
        value, rest = match.group("value"), match.group("unit")
        # a space before the unit: inside the value (5 m: the digits take it), or between them (3.5 m)
        spaced = value != value.rstrip() or match.start("unit") > match.end("value") or rest.startswith("\\")
        unit = _unit_text(rest)
        if unit is not None and (len(unit) > 1 or spaced):
            return value.strip(), unit
    closing = _closing_text(text)
    if closing is not None and (unit := _unit_text(closing[1] + closing[2])) is not None:
        return closing[0], unit
    return text, None


def named_parts(text: str) -> tuple[str | None, str]:
    """``(name, value)`` for an equation whose left side only names its right side (see the module docstring), else
    ``(None, text)``."""
    if text.count("=") != 1:
        return None, text
    match = _NAMED_EQUATION.match(text)
    if match is None:
        return None, text
    name = match.group("name")
    if not name.startswith("\\") and "(" not in name:
        words = _LATEX_WORDS.sub("", name).split()
        if any(word.lower() in _NOT_UNITS for word in words):
            return None, text
    return name.strip(), match.group("value")


def named_value(text: str) -> str:
    """The right side of an equation whose left side only names it (see the module docstring), else ``text``."""
    return named_parts(text)[1]


def different_arguments(name: str | None, other: str | None) -> bool:
    """Whether two names are one function at different arguments (``f(2)`` and ``f(3)``; spaces aside)."""
    first, second = (_APPLIED.match(n) if n else None for n in (name, other))
    if first is None or second is None or first.group("head") != second.group("head"):
        return False
    return first.group("arguments").replace(" ", "") != second.group("arguments").replace(" ", "")


def trig_degrees(text: str) -> str:
    """``text`` with degrees inside trigonometric functions written in radians (see the module docstring)."""
    if "circ" not in text or not _TRIG.search(text):
        return text
    return _DEGREES.sub(lambda m: f"\\frac{{{m.group(1)}\\pi}}{{180}}", text)


def digit_groups(text: str) -> str:
    """``text`` with LaTeX digit groups joined (``11,\\!111`` is ``11111``)."""
    return _DIGIT_GROUP.sub("", text) if ",\\!" in text else text


def option_letter(text: str) -> str:
    """``text`` as a bare option letter when it is one in a font (``\\mathcal{B}``) or followed by the option's text
    (``C. x = 42``), else ``text``."""
    font = _FONT_LETTER.match(text)
    if font is not None:
        return font.group(1).strip()
    leading = _LEADING_OPTION_TEXT.match(text)
    if leading is not None and not offers_another_option(text[leading.end() - 1 :]):
        return leading.group(1) or leading.group(2)
    return text


def offers_another_option(text: str) -> bool:
    """Whether ``text``, what follows a leading option letter, names another option: ``(B) or (C)``, ``A. But maybe
    C``. The option's own text may hold a capital (``B. Vitamin C``), so only a letter in brackets or after "or",
    "and", "maybe" counts."""
    return _ANOTHER_OPTION.search(text) is not None


_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎", "0123456789+-=()", strict=True))
_SUPERSCRIPT_RUN = re.compile(f"[{''.join(_SUPERSCRIPTS)}]+")
_SUBSCRIPT_RUN = re.compile(f"[{''.join(_SUBSCRIPTS)}]+")
_VULGAR_FRACTION = re.compile("(\\d?)([\u00bc-\u00be\u2150-\u215e])")
# a dash between two values is a range (3–5), one before a value a minus sign (–5)
_RANGE_DASH = re.compile("(?<=[\\w)}\\]])\\s*[\u2013\u2014]\\s*(?=[\\w(\\\\{$.])")
# a root sign before a number, a symbol or a bracketed group: √2, 2√3, √x, √(x+1)
_ROOT_SIGN = re.compile(r"√\s*(\d+(?:\.\d+)?|[A-Za-z]|\([^()]*\)|\{[^{}]*\})")
_SYMBOLS = {"∞": "\\infty ", "⌊": "\\lfloor ", "⌋": "\\rfloor ", "⌈": "\\lceil ", "⌉": "\\rceil "}
_MINUS_LIKE = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2212]")


def unicode_math(text: str) -> str:
    """``text`` with the Unicode forms of mathematics written as LaTeX, which Math-Verify reads (alone, it drops
    them: ``5²`` was 5, ``10⁻³`` was 10, ``3–5`` was 3): superscripts and subscripts (``x^{2}``, ``x_{1}``), vulgar
    fractions (``1½`` is ``1 1/2``), root signs (``2√3``), ``∞`` and floor and ceiling brackets, a dash between two
    values as the range it is (``3 to 5``, two values) and other dashes as minus signs."""
    if text.isascii():
        return text
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + "".join(_SUPERSCRIPTS[c] for c in m.group(0)) + "}", text)
    text = _SUBSCRIPT_RUN.sub(lambda m: "_{" + "".join(_SUBSCRIPTS[c] for c in m.group(0)) + "}", text)
    text = _VULGAR_FRACTION.sub(
        lambda m: (
            m.group(1) + (" " if m.group(1) else "") + unicodedata.normalize("NFKC", m.group(2)).replace("\u2044", "/")
        ),
        text,
    )
    text = _ROOT_SIGN.sub(lambda m: "\\sqrt{" + m.group(1).strip("(){}") + "}", text)
    for symbol, latex in _SYMBOLS.items():
        text = text.replace(symbol, latex)
    return _MINUS_LIKE.sub("-", _RANGE_DASH.sub(" to ", text))


def read_named(text: str) -> tuple[str | None, str]:
    """``(name, value)``: ``text`` read down to the value it states (a phrase, currency, LaTeX digit groups, a named
    quantity, degrees in trigonometric functions, percent in text), and the name it gave the value (None when it gave
    none). Units are split apart by :func:`split_unit` and qualifiers by :func:`qualifiers`, since what they mean
    depends on the other side."""
    # "= 5" states 5, and a backslash left at the end ("185\\") is a stray keystroke
    text = _OPENING_EQUALS.sub("", answer_phrase(unicode_math(text.strip()))).removesuffix("\\")
    text = _CONJUNCTIVES.sub(" and ", _CONNECTIVES.sub(" or ", text.replace("+/-", "\\pm ")))
    text = without_currency(text)
    text = digit_groups(text)
    name, text = named_parts(text)
    text = _PERCENT_WORD.sub("\\\\%", _PERCENT_TEXT.sub("\\\\%", text))
    return name, trig_degrees(text).strip()


def read_forms(text: str) -> str:
    """``text`` read down to the value it states (see :func:`read_named`)."""
    return read_named(text)[1]
