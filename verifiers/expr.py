"""expr_verify: 1 when the prediction is mathematically equivalent to the target, else 0.

Three paths, tried in order:

1. **Option letters.** When the target is one or more capital letters written as options (``B``, ``(B)``, ``B.``,
   ``[B]``, ``Option B``, ``A, C``), the prediction is read the same way, case-insensitively, also when the letter
   leads an option text (``(B) 42``, ``B. Paris``) or a sentence states it (``The answer is B.``, ``Final answer:
   (C)``, ``Because B is valid``: the letter after "answer is" or "answer:", else the one capital letter standing
   alone, "A" and "I" before a lower-case word being words; a sentence that negates, ``not A``, ``B is wrong``,
   states none unless it says "answer is", and so does a leading option followed by another, ``(B) or (C)``); the
   sets of letters must be equal. A prediction with no option letter is unparseable.
2. **Plain numbers**, compared exactly in-process: integers, decimals, thousands separators (``1,234,567``: a comma
   followed by exactly three digits, the first group not starting with 0; ``1 000`` and ``1\\,000`` with spaces),
   scientific notation (``1.2e5``), percentages (``50%``, ``50\\%``, ``\\frac{1}{2}\\%``), and fractions of integers
   (``3/4``, ``\\frac{3}{4}``), with an optional sign. A decimal comma (``1000,99``, ``0,111``) is read as one when the
   other side is written with a decimal point; two comma forms (``1,2`` and ``2,1``) are left to the next path, which
   reads them as sets. When either side is written as a decimal, the two are compared after rounding to
   ``VerifyConfig.float_rounding`` places; a percentage matches both its value over 100 and its bare value (``50%``
   matches ``0.5`` and ``50``), since units belong to the criterion, not the target. Math delimiters or a box around
   the whole number (``$9$``, ``\\boxed{9}``) are looked through.
3. **Everything else** (LaTeX such as ``\\frac``, ``\\sqrt``, ``\\pi``, powers, ``\\text{}``, ``\\left``/``\\right``;
   intervals, sets, tuples, equations and inequalities) goes to Math-Verify (Hugging Face's sympy-based parser and
   grader; a formula is read as LaTeX, and Math-Verify's plain-expression extraction, which picks a number out of
   text it cannot parse, is asked only when that finds nothing or for text in words) in a worker process that is
   killed when the deadline passes (see ``verifiers.expressions.pool``), so a hostile
   expression such as ``10^{10^{10^{10}}}`` yields status ``timeout`` instead of hanging the caller. Math-Verify was
   chosen over bare sympy because it already handles LaTeX normalisation, set/interval/tuple comparison, equations
   (``x = 2`` matches ``2``) and numeric rounding; the fast paths above mirror its number rules. A set or interval
   and the relations that describe it are compared as the same set (``x \\in [-2, 7]`` matches ``-2 \\le x \\le 7``).
   A plain number compared with an expression is first written out as its exact value (Math-Verify reads ``1e6`` as
   ``1 * e * 6`` and ``1 000`` as ``1 * 0``), so ``1e6`` matches ``10^6`` and ``2e1`` is not ``2e``; a number in
   scientific notation is compared at the decimal places it states (``2e-8`` is not ``10^{-8}``), and one that needs
   more than 100 digits written out (``1e-300``) is unparseable there.

A prediction (or a target) longer than ``VerifyConfig.max_expr_chars`` (up to ``max_response_chars``) is a whole
response: it is cut to its final answer (:func:`final_answer`: the last ``\\boxed{}``, else what follows the last
"answer is" or "answer:", else its last math span) and that is compared. Not accepted: a response with no final answer
that short (a target's is a rubric error).

Before paths 2 and 3, both sides are read down to the value they state (:mod:`verifiers.answer_forms`): a short
"the answer is" phrase, a currency sign, a unit after a number or in text after any value (``10 weeks``,
``10cm^2``, ``2\\sqrt{3}\\text{ cm}``; different units on the two sides are a wrong answer), a named quantity
(``f(x) = 2x + 3`` is ``2x + 3``; ``f(2) = 5`` is not ``f(3) = 5``), LaTeX digit groups (``1,\\!000``), degrees
inside trigonometric functions, a sentence (``There are 5 apples.`` is 5; one that states several values is
unparseable). What changes a value is kept and must be the same on both sides: a relation that opens a side
(``\\geq 5``, ``\\neq 5`` are not ``5``), words in text after the value that change it (``3\\text{ million}``,
``3\\text{ or more}`` are not ``3``) and a sentence's words that do (``It is at least 5.``, ``not 5``), which
Math-Verify alone would drop. An expression loses a final period (``x > 5.`` is ``x > 5``: with it, Math-Verify reads
only the last number), and plain-text ``sqrt(2)``, ``pi``, ``log(3)`` are read as their LaTeX. Option letters in
a font or followed by their text (``\\mathcal{B}``, ``C. x = 42``) are option letters on either side, while a capital
next to an operator (``\\mathrm{E}*2``) is a symbol, and a lone primed symbol is not the symbol (``E'`` is not
``E``). Path 2 also reads mixed numbers (``1 1/2``, ``2\\frac58``) and scientific notation in LaTeX
(``2.3148\\times10^{-3}``), which is compared to the significant digits it states (it matches ``\\frac{1}{432}``). In
path 3, when ``i`` is the only symbol on both sides and they differ as written, they are compared once more with
``i`` as the imaginary unit (``i(2-i)`` matches ``1+2i``).
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from verifiers.answer_forms import (
    different_arguments,
    offers_another_option,
    option_letter,
    qualifiers,
    read_named,
    split_unit,
    stated_answer,
)
from verifiers.assertion import asserted_text
from verifiers.config import VerifyConfig
from verifiers.result import PredictionError, TargetError, VerifierError, VerifyResult
from verifiers.sentences import math_spans, sentence, without_remark, without_sentence_end

_OPTION_WORD = re.compile(r"\b(?:options?|choices?)\b", re.IGNORECASE)
_OPTION_TOKEN = re.compile(r"^[\(\[]?\s*([A-Za-z])\s*[\)\]]?\s*[.:]?$")
_OPTION_SPLIT = re.compile(r"\s*(?:,|;|/|&|\band\b|\s)\s*", re.IGNORECASE)
_LEADING_OPTION = re.compile(
    r"^(?:option\s+|choice\s+)?(?:\(\s*([A-Za-z])\s*\)|([A-Za-z])\s*[.:)])\s+\S", re.IGNORECASE
)
_MAX_OPTIONS = 26
_ANSWER_LETTER = re.compile(
    r"\banswer\s*(?:is|:)\s*(?:option\s+)?[\(\[]?\s*([A-Za-z])\s*[\)\]]?(?![\w])", re.IGNORECASE
)
_LONE_CAPITAL = re.compile(r"(?<![\w'-])[\(\[]?([A-Z])[\)\]]?(?![\w'-])")
_WORD_USE = re.compile(r"[AI]\s+[a-z]")
# a sentence that negates states no option: "not A", "B is wrong"
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|except|wrong|incorrect|false)\b|n't\b", re.IGNORECASE)
# Operators next to a capital make it a symbol in a formula (\mathrm{E}*2), not an option stated in a sentence.
_FORMULA_NEIGHBOUR = re.compile(r"[*^=+/_<>|]|\\(?:cdot|times|div)")
_FORMULA_BEFORE = re.compile(r"(?:[*^=+/_<>|]|\\(?:cdot|times|div))$")
_LONE_SYMBOL = re.compile(r"^[A-Za-z]'*$")

_DIGITS = r"(?:[1-9]\d{0,2}(?:,\d{3})+|[1-9]\d{0,2}(?: \d{3})+|\d+)"
_DECIMAL = rf"(?:{_DIGITS}(?:\.\d*)?|\.\d+)"
_NUMBER = re.compile(rf"^([+-])?({_DECIMAL})(?:[eE]([+-]?\d{{1,4}}))?(\\?%)?$")
_FRACTION = re.compile(
    r"^([+-])?(?:\\[dt]?frac\s*(?:\{\s*(\d{1,50})\s*\}|(\d))\s*(?:\{\s*(\d{1,50})\s*\}|(\d))"
    r"|(\d{1,50})\s*/\s*(\d{1,50}))$"
)
# 1 1/2, 918\frac{1}{2}, 2\frac58: a whole number and a proper fraction
_MIXED = re.compile(
    r"^([+-])?(\d{1,30})(?:\s+(\d{1,30})\s*/\s*(\d{1,30})|\s*\\[dt]?frac\s*(?:\{\s*(\d{1,30})\s*\}|(\d))"
    r"\s*(?:\{\s*(\d{1,30})\s*\}|(\d)))$"
)
# 2.3148\times10^{-3}, 6.02 \cdot 10^{23}: scientific notation written in LaTeX
_TIMES_TEN = re.compile(r"^(.+?)\s*(?:\\times|\\cdot|\*|\u00d7)\s*10\s*\^\s*(?:\{\s*([+-]?\d{1,4})\s*\}|([+-]?\d))$")
_PERCENT = re.compile(r"\s*\\?%$")
_COMMA_DECIMAL = re.compile(r"^([+-])?(\d+),(\d+)(\\?%)?$")
_THIN_SPACES = re.compile(r"\\[,; ]|[\u00a0\u2009\u202f]")
_MAX_NUMBER_CHARS = 60
_BOXED = "\\boxed{"


@dataclass(frozen=True, slots=True)
class Number:
    """A plainly written number: its exact value, whether it was written as a decimal, and whether with ``%``."""

    value: Fraction
    decimal: bool
    percent: bool
    #: significant digits, for a number written in scientific notation (its precision is stated in them)
    significant: int | None = None


def parse_options(text: str) -> frozenset[str] | None:
    """The set of option letters ``text`` consists of (upper-cased), or None when it is not only option letters."""
    tokens = [t for t in _OPTION_SPLIT.split(_OPTION_WORD.sub(" ", text).strip()) if t]
    if not tokens or len(tokens) > _MAX_OPTIONS:
        return None
    letters = set()
    for token in tokens:
        match = _OPTION_TOKEN.match(token)
        if match is None:
            return None
        letters.add(match.group(1).upper())
    return frozenset(letters)


def _target_options(target: str) -> frozenset[str] | None:
    # A target is in option mode only when written with capital letters; a lone "x" is a variable.
    stripped = _OPTION_WORD.sub("", target)
    if not re.search(r"[A-Z]", stripped) or re.search(r"[a-z]", stripped):
        return None
    return parse_options(target)


def _prediction_options(predict: str) -> frozenset[str] | None:
    options = parse_options(predict)
    if options is not None:
        return options
    match = _LEADING_OPTION.match(predict.strip())
    if match and not offers_another_option(predict.strip()[match.end() - 1 :]):
        return frozenset({(match.group(1) or match.group(2)).upper()})
    stated = _ANSWER_LETTER.findall(predict)
    if stated:
        return frozenset({stated[-1].upper()})
    if _NEGATION.search(predict):
        return None
    # "A" and "I" before a lower-case word are an article and a pronoun, not options
    capitals = {
        m.group(1)
        for m in _LONE_CAPITAL.finditer(predict)
        if not _WORD_USE.match(predict, m.start(1)) and not _in_formula(predict, m.start(), m.end())
    }
    return frozenset(capitals) if len(capitals) == 1 else None


def _in_formula(text: str, start: int, end: int) -> bool:
    before = text[:start].rstrip(" {")
    after = text[end:].lstrip(" }")
    return bool(_FORMULA_BEFORE.search(before) or _FORMULA_NEIGHBOUR.match(after))


def _significant_digits(written: str) -> int:
    # the digits a number is written with, leading zeros not counted (0.0023148 states 5)
    return len(re.sub(r"\D", "", written).lstrip("0")) or 1


@lru_cache(maxsize=16_384)
def parse_number(text: str) -> Number | None:
    """Read a plainly written number (see the module docstring), or None when ``text`` is anything else."""
    text = _THIN_SPACES.sub(" ", text.strip().replace("\\!", "").replace("{,}", ","))
    if len(text) > _MAX_NUMBER_CHARS:
        return None
    match = _NUMBER.match(text)
    if match:
        sign, digits, exponent, percent = match.groups()
        value = Fraction(digits.replace(",", "").replace(" ", "")) * Fraction(10) ** int(exponent or 0)
        significant = _significant_digits(digits) if exponent is not None else None
        return Number(
            -value if sign == "-" else value, "." in digits or exponent is not None, percent is not None, significant
        )
    text = text[:-1] if text.endswith(".") else text  # a sentence's period: "2/3."
    # a fraction, a mixed number or a power of ten of percent (\frac{1}{2}\%, 2\times 10^{3}\%): Math-Verify reads
    # the first as text and the last as 2
    percent = _PERCENT.search(text)
    stem = text[: percent.start()] if percent else text
    match = _FRACTION.match(stem)
    if match:
        sign, *parts = match.groups()
        numerator = int(parts[0] or parts[1] or parts[4])
        denominator = int(parts[2] or parts[3] or parts[5])
        if denominator == 0:
            return None
        value = Fraction(numerator, denominator)
        return Number(-value if sign == "-" else value, False, percent is not None)
    match = _MIXED.match(stem)
    if match:
        sign, whole, *parts = match.groups()
        numerator, denominator = int(parts[0] or parts[2] or parts[3]), int(parts[1] or parts[4] or parts[5])
        if not 0 < numerator < denominator:
            return None  # not a mixed number: "2 3/2" and "2\frac{0}{3}" are left to the parser
        value = int(whole) + Fraction(numerator, denominator)
        return Number(-value if sign == "-" else value, False, percent is not None)
    match = _TIMES_TEN.match(stem)
    if match:
        mantissa = parse_number(match.group(1))
        if mantissa is None or mantissa.percent or "e" in match.group(1).lower():
            return None
        value = mantissa.value * Fraction(10) ** int(match.group(2) or match.group(3))
        return Number(value, True, percent is not None, _significant_digits(match.group(1)))
    return None


def parse_comma_decimal(text: str) -> Number | None:
    """Read ``text`` as a number with a decimal comma (``1000,99``, ``0,111``), or None when it is not one."""
    match = _COMMA_DECIMAL.match(text.strip())
    if match is None:
        return None
    sign, whole, fraction, percent = match.groups()
    value = Fraction(f"{whole}.{fraction}")
    return Number(-value if sign == "-" else value, True, percent is not None)


def final_answer(response: str) -> str | None:
    """The final answer of a whole response: the content of its last ``\\boxed{}``, else what follows its last
    "answer is" or "answer:" up to the end of that line, else its last math span (``$...$``, ``\\(...\\)``,
    ``\\[...\\]``); None when it has none of them."""
    start = response.rfind(_BOXED)
    if start >= 0:
        depth, begin = 1, start + len(_BOXED)
        for index in range(begin, len(response)):
            depth += {"{": 1, "}": -1}.get(response[index], 0)
            if depth == 0:
                return response[begin:index].strip() or None
        return None
    stated = stated_answer(response)
    if stated:
        return stated
    spans = math_spans(response)
    if spans:
        return spans[-1][2].strip() or None
    return None


_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), (_BOXED, "}"))


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def bare(text: str) -> str:
    """``text`` without math delimiters or a box around the whole of it (``$9$``, ``\\(9\\)``, ``$\\boxed{9}$`` are
    ``9``), so that a plainly written number inside them takes the in-process path."""
    text = text.strip()
    while True:
        for opening, closing in _DELIMITERS:
            if len(text) < len(opening) + len(closing) or not (text.startswith(opening) and text.endswith(closing)):
                continue
            inner = text[len(opening) : -len(closing)]
            whole = _balanced(inner) if closing == "}" else closing not in inner
            if whole and opening not in inner:
                text = inner.strip()
                break
        else:
            return text


def _numbers(target: str, predict: str) -> tuple[Number | None, Number | None]:
    # A decimal comma is read as one only against a number written with a decimal point (see the module docstring).
    target, predict = bare(target), bare(predict)
    target_number, pred_number = parse_number(target), parse_number(predict)
    if target_number is None and pred_number is not None and pred_number.decimal:
        target_number = parse_comma_decimal(target)
    elif pred_number is None and target_number is not None and target_number.decimal:
        pred_number = parse_comma_decimal(predict)
    return target_number, pred_number


def _close(a: Fraction, b: Fraction, decimal: bool, places: int) -> bool:
    return a == b or (decimal and round(a, places) == round(b, places))


def _rounded_to(value: Fraction, significant: int) -> Fraction:
    if value == 0:
        return value
    scale = Fraction(10) ** (math.floor(math.log10(abs(value))) - significant + 1)
    return round(value / scale) * scale


# A prediction in scientific notation matches an exact target to the digits it states only when it states at least
# this many (2.3e-3 is not 1/432).
_MIN_SIGNIFICANT = 3


def numbers_equal(target: Number, pred: Number, places: int) -> bool:
    """Whether two plainly written numbers are equal under the rules of the module docstring."""
    if not (target.percent or pred.percent) and (target.significant or pred.significant):
        # Scientific notation states its precision in significant digits, not in decimal places: a target written so
        # is met by a prediction that rounds to it at those digits; an exact target by a prediction that states at
        # least _MIN_SIGNIFICANT digits and is the target rounded to them.
        if target.value == pred.value:
            return True
        if target.significant:
            return _rounded_to(pred.value, target.significant) == target.value
        return pred.significant >= _MIN_SIGNIFICANT and _rounded_to(target.value, pred.significant) == pred.value
    decimal = target.decimal or pred.decimal
    if target.percent == pred.percent:
        return _close(target.value, pred.value, decimal, places)
    percent, other = (target, pred) if target.percent else (pred, target)
    return _close(percent.value / 100, other.value, decimal, places) or _close(
        percent.value, other.value, decimal, places
    )


# Most digits a plain number is written out with for Math-Verify (1e-90 has 92 characters).
_MAX_WRITTEN_OUT = 100


def _decimal_places(value: Fraction) -> int:
    # the places a decimal's exact value needs: its denominator is 2^a 5^b
    twos = fives = 0
    denominator = value.denominator
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    return max(twos, fives)


def _written_out(text: str, error: type[VerifierError]) -> tuple[str, int]:
    """``text`` as Math-Verify should read it, and the decimal places it is to be compared at (0: as configured).

    A plain number (see the module docstring) is written as its exact value: an integer, ``\\frac{p}{q}``, or a
    decimal, with ``\\%`` after it when it had one (a fraction of percent as its value over 100: Math-Verify reads
    a percent sign after a number only). Math-Verify misreads several forms the fast path reads: ``1.5e-3`` as
    ``1.5 * e - 3`` (Euler's number), ``1 000`` as ``1 * 0``, ``1 1/2`` as ``1``, ``\\frac{1}{2}\\%`` as text;
    against an expression (``10^{-3}``, ``2e``, ``\\sin 0``) they would be wrong both ways. A number in scientific
    notation is compared at the places it states (``2e-8`` is not ``10^{-8}``), as the fast path compares it at its
    significant digits. Anything else is returned as it is. Raises ``error`` for a number too large or too small to
    write out (``1e-300``)."""
    number = parse_number(bare(text))
    if number is None:
        return text, 0
    value, suffix = abs(number.value), "\\%" if number.percent else ""
    sign = "-" if number.value < 0 else ""
    if not number.decimal:
        if value.denominator == 1:
            return sign + str(value.numerator) + suffix, 0
        if number.percent:  # Math-Verify reads a percent sign after a number only: the value over 100
            value, suffix = value / 100, ""
        return f"{sign}\\frac{{{value.numerator}}}{{{value.denominator}}}{suffix}", 0
    places = _decimal_places(value)
    if places > _MAX_WRITTEN_OUT or value >= 10**_MAX_WRITTEN_OUT:
        raise error(f"{text.strip()!r:.60} is too far from 1 to compare with an expression (at most "
                    f"{_MAX_WRITTEN_OUT} digits written out)")  # fmt: skip
    written = format(Decimal(int(value * 10**places)).scaleb(-places), "f")
    return sign + written + suffix, places if number.significant else 0


def _qualified(relation: str, words: str, sentence_words: str) -> str:
    """What a side states around its value, for a reason: "'≥' before", "'million' after", "'at least' in its
    words", some of them, or "nothing"."""
    parts = [f"'{relation}' before"] if relation else []
    parts += [f"'{words}' after"] if words else []
    parts += [f"'{sentence_words}' in its words"] if sentence_words else []
    return " and ".join(parts) or "nothing"


def _stated(text: str, is_prediction: bool) -> tuple[str, str]:
    """``(value, words)``: the one value a side written in words states, and what its words say of it (a bound, a
    negation, a scale; "" for nothing), or the side without a final period when it is not written in words. A text of
    several sentences stays whole, with the words of the last that states a value. A prediction that states several
    values is unparseable; a target that does, or a side that states none (``no solution``), is compared as
    written."""
    text = without_remark(text)
    found = sentence(text)
    if found is None:
        return bare(without_sentence_end(text)), ""
    if found.several_sentences:
        return text, found.qualifiers  # a worked solution: the parser finds its answer; its conclusion's words count
    if len(found.values) == 1:
        return bare(found.values[0]), found.qualifiers
    if len(found.values) > 1 and is_prediction:
        shown = ", ".join(repr(value[:30]) for value in found.values[:4])
        raise PredictionError(
            f"{text!r:.80} states {len(found.values)} values in words ({shown}); one value can be compared"
        )
    return text, found.qualifiers


def _said(text: str, is_prediction: bool) -> tuple[str, tuple[str, str, str]]:
    """``(value, (relation, words, sentence))``: a side's value and what it states around it (:func:`qualifiers`),
    a sentence read down to the one value it states, with what its words say of that value."""
    value, (relation, words) = qualifiers(text)
    stated, sentence_words = _stated(value, is_prediction)
    if stated != value:
        stated, (inner_relation, inner_words) = qualifiers(stated)
        relation, words = relation or inner_relation, " ".join(part for part in (inner_words, words) if part)
    return stated, (relation, words, sentence_words)


def _read_forms(target: str, predict: str, keywords: frozenset[str]) -> tuple[str, str, str | None]:
    """Both sides read down to their values (:mod:`verifiers.answer_forms`), units dropped, and why they differ
    whatever the values (one function at different arguments; a relation before a value or words after it that change
    it, not on both sides alike; both sides carry units, and not the same), or None."""
    # delimiters and a box around the whole are looked through first: \boxed{\neq 5} states a bound as \neq 5 does
    (target_name, read_target), (pred_name, predict) = read_named(bare(target)), read_named(bare(predict))
    if pred_name is not None and pred_name.strip().lower() in keywords:
        # predict='12' is call syntax a response wrote, not an equation naming a quantity: content, never a keyword
        raise PredictionError(f"the prediction is written as a verifier's keyword ({pred_name.strip()}=...), which is "
                              "call syntax, not an answer")  # fmt: skip
    target, predict = bare(read_target) or bare(target), bare(predict)
    if different_arguments(target_name, pred_name):
        return target, predict, f"they name different quantities ({target_name} and {pred_name})"
    (target, target_said), (predict, pred_said) = _said(target, False), _said(predict, True)
    if target_said != pred_said:
        return target, predict, (f"around its value the target states {_qualified(*target_said)}, the prediction "
                                 f"{_qualified(*pred_said)}")  # fmt: skip
    target_value, target_unit = split_unit(target)
    pred_value, pred_unit = split_unit(predict)
    if target_unit is not None and pred_unit is not None and target_unit != pred_unit:
        return target, predict, f"the units differ ({target_unit} and {pred_unit})"
    return target_value, pred_value, None


_READ_WHOLE: OrderedDict[tuple[str, int], None] = OrderedDict()
_READ_WHOLE_SIZE = 4096


def _refused_target(target: str, keywords: frozenset[str], config: VerifyConfig) -> VerifyResult | None:
    """The expression reader's refusal of ``target`` (status ``unparseable_target``), or None when it reads the
    target whole or could not answer in time (the check is then made again when a response is scored). A plain
    number is read without the expression workers; a target read whole is remembered for the process."""
    value, _, _ = _read_forms(target, target, keywords)
    if parse_number(value) is not None:
        return None
    value, places = _written_out(value, TargetError)
    key = (value, max(config.float_rounding, places))
    if key in _READ_WHOLE:
        return None
    from verifiers.expressions.pool import get_expr_pool

    outcome = get_expr_pool().check(value, value, key[1], config.deadline_s, config.worker_wait_s)
    if outcome.status == "unparseable_target":
        return VerifyResult(0.0, outcome.status, outcome.reason, "expr_verify")
    if outcome.status == "ok":
        _READ_WHOLE[key] = None
        if len(_READ_WHOLE) > _READ_WHOLE_SIZE:
            _READ_WHOLE.popitem(last=False)
    return None


def check_expr(
    rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig, keywords: frozenset[str] = frozenset()
) -> VerifyResult:
    """1.0 when the prediction is equivalent to the target, else 0.0 (see the module docstring). A prediction named
    with one of ``keywords`` (``predict=12``: the call vocabulary, which the registry passes) is call syntax a
    response wrote, refused as a prediction."""
    # a prediction counts only where it asserts its value: "12 is wrong", "not 12", "I don't think the answer is 12"
    target, predict = rubric["target"].strip(), asserted_text(scoring["predict"]).strip()
    if not target:
        raise TargetError("target is empty")
    if len(target) > config.max_expr_chars:
        answer = final_answer(target) if len(target) <= config.max_response_chars else None
        if answer is None or len(answer) > config.max_expr_chars:
            raise TargetError(f"target has {len(target)} characters; at most {config.max_expr_chars} are allowed "
                              "(or a worked solution with a final answer that short)")  # fmt: skip
        target = answer
    if len(predict) > config.max_expr_chars:
        if len(predict) > config.max_response_chars:
            raise PredictionError(f"the prediction has {len(predict)} characters; at most {config.max_response_chars}")
        answer = final_answer(predict)
        if answer is None or len(answer) > config.max_expr_chars:
            raise PredictionError(f"the prediction has {len(predict)} characters and no final answer of at most "
                                  f"{config.max_expr_chars} (a \\boxed{{}}, 'answer is', a math span)")  # fmt: skip
        predict = answer

    options = _target_options(option_letter(target))
    if options is not None:
        predicted = _prediction_options(option_letter(predict))
        if predicted is None:
            raise PredictionError(f"expected option letter(s), got {predict!r:.80}")
        equal = predicted == options
        verdict = "equal" if equal else "different"
        return VerifyResult(float(equal), "ok", f"option letters {verdict}", "expr_verify")
    if not predict:
        # the rubric side on its own (a rubric is checked with an empty prediction when it is read): a target the
        # expression reader would read only in part is refused here, before any response is scored against it
        refused = _refused_target(target, keywords, config)
        if refused is not None:
            return refused
        raise PredictionError("the prediction is empty")
    target, predict, mismatch = _read_forms(target, predict, keywords)
    if mismatch is not None:
        return VerifyResult(0.0, "ok", mismatch, "expr_verify")
    if not predict:
        raise PredictionError("the prediction states no value")
    lone = bare(target), bare(predict)
    if all(_LONE_SYMBOL.match(side) for side in lone) and lone[0].count("'") != lone[1].count("'"):
        # E' is not E, though the parser drops the prime
        return VerifyResult(0.0, "ok", "primes differ (E' is not E)", "expr_verify")

    target_number, pred_number = _numbers(target, predict)
    if target_number is not None and pred_number is not None:
        equal = numbers_equal(target_number, pred_number, config.float_rounding)
        return VerifyResult(float(equal), "ok", f"plain numbers {'equal' if equal else 'different'}", "expr_verify")

    from verifiers.expressions.pool import get_expr_pool

    # a number in scientific notation is compared to the places it states (2e-8 is not 10^{-8}), at least as many
    # as configured
    (target, target_places), (predict, pred_places) = (
        _written_out(target, TargetError),
        _written_out(predict, PredictionError),
    )
    places = max(config.float_rounding, target_places, pred_places)
    outcome = get_expr_pool().check(target, predict, places, config.deadline_s, config.worker_wait_s)
    if outcome.status == "ok":
        return VerifyResult(1.0 if outcome.equal else 0.0, "ok", outcome.reason, "expr_verify")
    return VerifyResult(0.0, outcome.status, outcome.reason, "expr_verify")
