"""Answer forms of other graders' suites and of what policies write: each kind read to its value, and the forms that
look alike but must not match (one table per kind, every row through the whole expr_verify path)."""

import logging
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifiers import expr_verify, run_verifier, verify_call_result
from verifiers.answer_forms import (
    answer_phrase,
    named_value,
    option_letter,
    qualifiers,
    split_unit,
    trig_degrees,
)
from verifiers.expr import parse_number
from verifiers.sentences import math_spans, sentence


def _verdict(target: str, predict: str) -> int:
    result = run_verifier("expr_verify", {"target": target}, {"predict": predict})
    assert result.is_verdict, result.reason
    return int(result.score)


def _table(*groups):
    return [row for group in groups for row in group]


UNITS = [
    ("10", "10 weeks", 1),
    ("10", "10weeks", 1),
    ("10", "10cm^2", 1),
    ("10", "10 \\text{cm}^2", 1),
    ("10", "10\\text{ cm}^{2}", 1),
    ("24", "24 square units", 1),
    ("3.5", "3.5 km/h", 1),
    ("12", "12\\,\\mathrm{m}", 1),
    ("7", "7 apples", 1),
    ("10 \\text{ cm}", "10", 1),
    ("\\frac{1}{2}", "\\frac{1}{2} cm", 1),
    # a different number, a different unit, or letters that are mathematics stay apart
    ("10 cm", "100 cm", 0),
    ("10 cm", "10 m", 0),
    ("10", "10x", 0),
    ("2", "2 \\pi", 0),
    ("10", "11 weeks", 0),
    ("10", "10 factorial", 0),
    ("2", "2 squared", 0),
    ("5", "5 million", 0),
    # a unit in text after any value, with the same rule for units on both sides
    ("2\\sqrt{3}", "2\\sqrt{3} \\text{ cm}", 1),
    ("\\frac{\\pi}{2} \\text{ rad}", "\\frac{\\pi}{2}", 1),
    ("2x \\text{ cm}", "2x \\text{ cm}", 1),
    ("2x \\text{ cm}", "2x \\text{ m}", 0),
    ("2\\sqrt{3} \\text{ cm}", "2\\sqrt{3}\\,\\mathrm{m}", 0),
    ("2\\sqrt{3} \\text{ cm}^2", "2\\sqrt{3} \\text{ cm}", 0),
]
# what changes a value must be stated alike on both sides: a relation that opens a side (Math-Verify alone reads
# "\\geq 5" as 5) and words in text after a value that are not a unit (Math-Verify alone drops them)
QUALIFIERS = [
    ("5", "\\geq 5", 0),
    ("5", "\\le 5", 0),
    ("5", "< 5", 0),
    ("5", "> 5", 0),
    ("5", "\\neq 5", 0),
    ("5", "\\ne 5", 0),
    ("\\geq 5", "5", 0),
    ("\\le 5", "\\ge 5", 0),
    ("\\le 5", "\\leq 5", 1),
    ("\\geq 5", "\\ge 5", 1),
    ("\\geq 5", "\\geq 6", 0),
    ("5", "= 5", 1),
    ("3", "3 \\text{ million}", 0),
    ("3", "3\\text{million}", 0),
    ("3", "3\\mathrm{ billion}", 0),
    ("3", "3 \\text{ hundred}", 0),
    ("3", "3 \\text{ dozen}", 0),
    ("3", "3 \\text{ squared}", 0),
    ("3", "3 \\text{ inverse}", 0),
    ("3", "3 \\text{ or more}", 0),
    ("3", "3 \\text{ or fewer}", 0),
    ("3", "3 \\text{ not }", 0),
    ("2\\sqrt{3}", "2\\sqrt{3} \\text{ or more}", 0),
    ("3 \\text{ million}", "3", 0),
    ("3 \\text{ million}", "3\\text{ million}", 1),
    ("3 \\text{ million}", "4 \\text{ million}", 0),
    ("3 \\text{ or more}", "3 \\text{ or fewer}", 0),
    ("0.05", "5 \\text{ percent}", 1),  # percent in text is a percent sign
    ("2", "2 \\text{ times}", 1),  # a count
    ("2", "2 \\text{ real roots}", 1),
    ("3", "3 \\text{ quarters}", 0),
    # plain words and a closing plus: Math-Verify alone reads "5 or more" and "5+" as 5
    ("5", "5 or more", 0),
    ("5", "5 or less", 0),
    ("5", "5 apples or more", 0),
    ("5", "5+", 0),
    ("5 or more", "5+", 1),
    ("5 \\text{ or more}", "5 or more", 1),
    # inside math delimiters or a box as bare
    ("$5$", "$\\geq 5$", 0),
    ("\\boxed{5}", "\\boxed{\\neq 5}", 0),
    ("5", "\\(< 5\\)", 0),
    ("3", "\\boxed{3 \\text{ million}}", 0),
    ("$\\geq 5$", "\\boxed{\\ge 5}", 1),
    ("3", "3 \\text{ pi}", 0),
]
CURRENCY = [
    ("\\$10", "10", 1),
    ("10", "\\$10", 1),
    ("10", "$10", 1),
    ("10.50", "\\$10.5", 1),
    ("5", "€5", 1),
    ("42", "42 dollars", 1),
    ("10", "$10$", 1),
    ("\\$10", "\\$12", 0),
]
MIXED_NUMBERS = [
    ("1.5", "1 1/2", 1),
    ("1 1/2", "3/2", 1),
    ("2.625", "2\\frac58", 1),
    ("918.5", "918\\frac{1}{2}", 1),
    ("-3.5", "-3 1/2", 1),
    ("1.5", "1 2/3", 0),
]
DIGIT_GROUPS = [
    ("11111111100", "11,\\! 111,\\! 111,\\! 100", 1),
    ("1234567", "1,\\!234,\\!567", 1),
    ("1234567", "1,\\!234,\\!568", 0),
]
OPTION_TARGETS = [
    ("\\mathcal{B}", "B", 1),
    ("\\textbf{A}", "(A)", 1),
    ("C. x = 42", "C", 1),
    ("(D) 7", "D", 1),
    ("\\text{(C)}", "The answer is C", 1),
    ("\\mathcal{B}", "C", 0),
    # a leading option that names another after it states none: (B) or (C) was paid as B
    ("B", "(B) or (C)", 0),
    ("C", "(B) or (C)", 0),
    ("A", "A. But maybe C", 0),
    ("B", "B. Vitamin C", 1),
    ("B", "B. Cats or dogs", 1),
]
NAMED_QUANTITIES = [
    ("f(x) = 2x + 3", "y = 2x + 3", 1),
    ("f(x) = 2x + 3", "2x+3", 1),
    ("any text = 12", "12", 1),
    ("12", "the area = 12", 1),
    ("P(A) = 0.3", "0.3", 1),
    ("f(x) = 2x + 3", "y = 2x + 4", 0),
    ("\\text{area} = 12", "13", 0),
    # one function at different arguments: different quantities, whatever their values
    ("f(2) = 5", "f(3) = 5", 0),
    ("f(2) = 5", "$f(3) = 5$", 0),
    ("P(A) = 0.3", "P(B) = 0.3", 0),
    ("f(2) = 5", "f( 2 ) = 5", 1),
    ("f(2) = 5", "5", 1),
    ("f(2) = 5", "g(3) = 5", 1),  # another name is not read as another quantity (f(x) = ... against y = ...)
]
PHRASES = [
    ("+7", "The answer is +7", 1),
    ("+7", "Therefore the answer is +7", 1),
    ("2x + 3", "Answer: 2x + 3", 1),
    ("42", "Therefore, the final answer is 42 dollars", 1),
    ("-3.5", "Final answer: -3.5", 1),
    ("-3", "The answer is 3", 0),
]
COMPLEX = [("1+2i", "i(2-i)", 1), ("i(2-i)", "1+2i", 1), ("2+i", "i(2-i)", 0)]
DEGREES = [
    ("\\cos(x)", "\\sin(90^\\circ - x)", 1),
    ("\\cos(x)", "\\sin(90^{\\circ} - x)", 1),
    ("\\frac{1}{2}", "\\sin 30^\\circ", 1),
    ("30^\\circ", "30", 1),
    ("\\cos(x)", "\\sin(80^\\circ - x)", 0),
]
SCIENTIFIC = [
    ("\\frac{1}{432}", "2.3148\\times10^{-3}", 1),
    ("\\frac{1}{432}", "2.3148 \\times 10^{-3}", 1),
    ("6.02 \\times 10^{23}", "602000000000000000000000", 1),
    ("1/3", "3.333e-1", 1),
    ("1/3", "3.3e-1", 0),  # two significant digits do not state an exact third
    ("1.602 \\times 10^{-19}", "1.6e-19", 0),  # a target's stated digits must be met
    ("1.6 \\times 10^{-19}", "1.602e-19", 1),
    ("\\frac{1}{432}", "2.3149\\times10^{-3}", 0),
    ("5", "5.001", 0),
]
# A sentence is read down to the one value it states; what its words say of that value must be the same on both sides.
# Math-Verify alone reads the last number of a sentence that ends with a period: each 0 here was paid. Of several
# sentences, the last that states a value is read (It is at least 5. Yes.).
SENTENCES = [
    ("5", "There are 5 apples.", 1), ("5", "I think it is 5.", 1), ("5", "It is 5", 1), ("5", "It is $5$.", 1),
    ("3.5", "about 3.5 km.", 1), ("12", "The least common multiple is 12.", 1),
    ("12", "The area under the curve is 12.", 1), ("3", "It is 1 + 2.", 1), ("34", "The largest $n$ is 34.", 1),
    ("5", "In 2024 the answer was 5", 1), ("0.05", "It is 5 percent.", 1), ("3/4", "3/4 of the students.", 1),
    ("x > 5", "So x > 5.", 1), ("\\frac{1}{2}", "It is \\frac{1}{2}.", 1), ("5", "It is 5\\text{ cm}.", 1),
    ("5", "not 5.", 0), ("5", "at least 5.", 0), ("5", "It is not 5.", 0), ("5", "It isn't 5.", 0),
    ("5", "It is less than 5.", 0), ("5", "x is greater than 5.", 0), ("5", "between 3 and 5.", 0),
    ("5", "minus 5.", 0), ("5", "It is at least $5$.", 0), ("5", "It is 5 million dollars.", 0),
    ("5", "It is 5 or more.", 0), ("5", "under 5", 0), ("4", "3/4 of the students.", 0), ("2", "It is 2x.", 0),
    ("2", "It is x + 2.", 0), ("3.5 m", "about 3.5 km.", 0), ("5\\text{ m}", "It is 5\\text{ cm}.", 0),
    ("no solution", "no solution", 1), ("no solution", "There is one solution", 0),
    ("5", "It is at least 5. Yes.", 0),
    # the claim after the last "is" is what the words qualify; an alternative before it leaves it in doubt
    ("1000.99", "the number is not 10 which is 1,000.99€", 1), ("1000.99", "not it's not 10 it's 1,000.99m²", 1),
    ("6", "5 is not the answer, it is 6", 1), ("5", "It's not 5", 0), ("6", "It is 5, or is it 6", 0),
    ("6", "It is 6, not 5", 1), ("5", "It is 6, not 5", 0), ("5", "At least, the answer is 5", 1),
]  # fmt: skip
# A closing remark that explains the value is no second value; one that offers another or qualifies it is kept.
REMARKS = [
    ("5", "5 (since 2 + 3 = 5)", 1), ("5", "The answer is 5 (because 2 + 3 = 5).", 1), ("5", "5 (rounded)", 1),
    ("6", "5 (since 2 + 3 = 5 or 6)", 0), ("5", "5 (since it is at least 5)", 0),
    ("5", "at least 5 (since 2 + 3 = 5)", 0),
]  # fmt: skip
# A final period on an expression made Math-Verify read only its last number; an exclamation mark is a factorial.
PERIODS = [
    ("5", "x > 5.", 0), ("5", "x \\geq 5.", 0), ("5", "3 < x < 5.", 0), ("5", "y = 2x + 5.", 0),
    ("5", "x \\neq 5.", 0), ("3", "1 + 2.", 1), ("5", "x = 5.", 1), ("x > 5", "x > 5.", 1), ("5", "5.", 1),
    ("120", "5!", 1), ("5", "5!", 0), ("120", "It is 5!", 1),
]  # fmt: skip
# Plain-text mathematics: Math-Verify's own rewrite of " sqrt(" left a line break before it (1 + sqrt(2) was 1).
PLAIN_MATH = [
    ("1", "1 + sqrt(2)", 0), ("2", "2 sqrt(3)", 0), ("2", "It is 2 sqrt(3).", 0), ("1+\\sqrt{2}", "1 + sqrt(2)", 1),
    ("2\\sqrt{3}", "2 sqrt(3)", 1), ("\\sqrt{1+\\sqrt{2}}", "sqrt(1 + sqrt(2))", 1), ("\\pi", "pi", 1),
    ("2\\log(3)", "2 log(3)", 1), ("\\sin(x)", "sin(x)", 1),
]  # fmt: skip
# Unicode mathematics: Math-Verify alone drops what it does not know after a number (5² was 5, 3–5 was 3).
UNICODE = [
    ("25", "5²", 1), ("5", "5²", 0), ("8", "2³", 1), ("2", "2³", 0), ("0.001", "10⁻³", 1), ("10", "10⁻³", 0),
    ("x^2", "x²", 1), ("(x+1)^2", "(x+1)²", 1), ("x_1", "x₁", 1), ("1/2", "½", 1), ("1.5", "1½", 1), ("3/4", "¾", 1),
    ("-5", "–5", 1), ("5", "–5", 0), ("-5", "−5", 1), ("3", "3–5", 0), ("5", "3—5", 0), ("\\sqrt{2}", "√2", 1),
    ("2", "√2", 0), ("2\\sqrt{3}", "2√3", 1), ("\\sqrt{x+1}", "√(x+1)", 1), ("(-\\infty, 2)", "(-∞, 2)", 1),
    ("5", "⌊5.5⌋", 1), ("6", "⌈5.5⌉", 1),
]  # fmt: skip
# Alternatives and negations in LaTeX or in a remark: Math-Verify read each as its last value.
ALTERNATIVES = [
    ("6", "5 (or 6)", 0), ("6", "5 \\lor 6", 0), ("6", "5 \\vee 6", 0), ("5", "\\neg 5", 0), ("1", "5 +/- 1", 0),
    ("5 \\pm 1", "5 +/- 1", 1), ("5", "5 (approximately)", 1),
]  # fmt: skip
# What Math-Verify's plain-expression fallback read out of text it could not parse as LaTeX: a formula is now read as
# LaTeX, and a word glued to a number or a command after it is no unit. Each 0 here was paid.
JUNK = [
    ("5", "6 ★ 5", 0), ("5", "5 ⊥", 0), ("5", "6 ∠ 5", 0), ("5", "5or", 0), ("5", "5never", 0), ("5", "5no", 0),
    ("5", "5less", 0), ("5", "5 \\pm", 0), ("5", "5 \\in", 0), ("5", "5 \\neg", 0), ("5", "5 max", 0),
    ("5", "maximum 5", 0), ("5", "twice 5", 0), ("5", "5 negative", 0), ("5", "6 \\$ 5", 0), ("5", "6 $ 5", 0),
    ("5", "= 5", 1), ("185", "185\\", 1), ("1000.99", "1,000.99$", 1), ("5", "5 \\degree", 1),
    ("The maximum is 5", "5", 1), ("5", "The maximum is 5.", 1), ("1 - \\frac{1}{\\mathrm{e}}", "1 - \\frac{1}{e}", 1),
    ("1", "1 - \\frac{1}{\\mathrm{e}}", 0),
]  # fmt: skip
FALSE_POSITIVES = [
    ("E", "\\mathrm{E}*2", 0), ("E", "E'", 0), ("E'", "E", 0), ("f'", "f'", 1), ("E", "\\mathrm{E}", 1),
    ("A", "\\textbf{A}", 1),
]  # fmt: skip


@pytest.mark.parametrize(
    "target, predict, expected",
    _table(
        UNITS,
        QUALIFIERS,
        CURRENCY,
        MIXED_NUMBERS,
        DIGIT_GROUPS,
        OPTION_TARGETS,
        NAMED_QUANTITIES,
        PHRASES,
        COMPLEX,
        DEGREES,
        SCIENTIFIC,
        SENTENCES,
        REMARKS,
        PERIODS,
        PLAIN_MATH,
        UNICODE,
        ALTERNATIVES,
        JUNK,
        FALSE_POSITIVES,
    ),  # fmt: skip
)
def test_answer_forms(target, predict, expected):
    assert _verdict(target, predict) == expected


@pytest.mark.parametrize(
    "text, value, unit",
    [("10 weeks", "10", "week"), ("10cm^2", "10", "cm^2"), ("10 m", "10", "m"), ("10m", "10m", None),
     ("3.5 m", "3.5", "m"),
     ("10 square units", "10", "square unit"), ("2 \\pi", "2 \\pi", None), ("x cm", "x cm", None),
     ("10\\text{ cm}^{2}", "10", "cm^2"), ("2\\sqrt{3}\\,\\text{cm}", "2\\sqrt{3}", "cm"),
     ("2x \\text{ or more}", "2x \\text{ or more}", None)],
)  # fmt: skip
def test_split_unit(text, value, unit):
    assert split_unit(text) == (value, unit)


@pytest.mark.parametrize(
    "text, value, said",
    [("\\geq 5", "5", ("≥", "")), ("\\ge 5", "5", ("≥", "")), ("\\lt x", "x", ("<", "")),
     ("\\ne 5 \\text{ or more}", "5", ("≠", "or more")), ("3\\text{ Million}", "3", ("", "million")),
     ("<1, 2>", "<1, 2>", ("", "")),  # a vector in angle brackets, not a bound
     ("3 \\text{ cm}", "3 \\text{ cm}", ("", "")), ("5 or more", "5", ("", "or more")), ("5+", "5", ("", "or more")),
     ("3^{2+}", "3^{2+}", ("", "")), ("5 apples", "5 apples", ("", "")), ("x \\geq 5", "x \\geq 5", ("", "")),
     ("5", "5", ("", ""))],
)  # fmt: skip
def test_qualifiers(text, value, said):
    assert qualifiers(text) == (value, said)


def test_the_narrow_readers_leave_other_forms_alone():
    assert answer_phrase("The result is \\boxed{-3}") == "The result is \\boxed{-3}"  # boxes are the parser's
    assert answer_phrase("x + 1") == "x + 1"
    assert named_value("y = 2x + 3") == "y = 2x + 3"  # one letter: an equation
    assert named_value("xy = 6") == "xy = 6"
    assert named_value("a = b = c") == "a = b = c"
    assert named_value("\\sin x = 1") == "\\sin x = 1"
    assert trig_degrees("30^\\circ") == "30^\\circ"  # a bare degree answer matches its number
    assert option_letter("x. y = 2") == "x. y = 2"  # only a capital leads an option's text


def test_parse_number_reads_mixed_numbers_and_latex_scientific_notation():
    assert parse_number("1 1/2").value == 1.5
    assert parse_number("2 3/2") is None  # not a mixed number: left to the parser
    scientific = parse_number("2.3148\\times10^{-3}")
    assert scientific.significant == 5 and scientific.decimal and float(scientific.value) == pytest.approx(2.3148e-3)


@pytest.mark.parametrize("target", ["", "   ", "\\$"])
def test_an_unreadable_target_scores_zero_from_expr_verify_and_reports_its_status(target, caplog):
    with caplog.at_level(logging.WARNING, logger="verifiers.api"):
        assert expr_verify(target=target, predict="1") == 0.0
    assert "unreadable target" in caplog.text
    result = verify_call_result(f"expr_verify(target='{target}')", "expr_verify(predict='1')")
    assert result.status == "unparseable_target" and not result.is_verdict


def test_a_target_that_is_not_a_string_still_raises():
    with pytest.raises(ValueError, match="must be a string"):
        expr_verify(target=5, predict="5")


def test_warm_up_without_waiting_returns_at_once_and_starts_the_workers():
    from verifiers import warm_up
    from verifiers.expressions.pool import configure_expr_pool, get_expr_pool

    configure_expr_pool()  # a fresh pool, not yet started
    pool = get_expr_pool()
    assert not pool._ready
    warm_up(wait=False)  # returns before the workers are up: it waits for nothing
    deadline = time.monotonic() + 60
    while not pool._ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool._ready
    assert expr_verify(target="\\frac{1}{2}+x", predict="x+0.5") == 1.0


def test_a_sentence_that_states_several_values_is_unparseable_and_says_which():
    result = run_verifier("expr_verify", {"target": "2"}, {"predict": "12 apples and 2 oranges."})
    assert (result.score, result.status) == (0.0, "unparseable_pred")
    assert "states 2 values in words ('12 apples', 'and 2 oranges')" in result.reason
    # a target that does is the rubric's choice: compared as written, as before
    assert _verdict("\\boxed{1} papers and \\boxed{2} bins", "\\boxed{1,2}") == 1


def test_a_sentence_qualifier_mismatch_says_where_it_was():
    result = run_verifier("expr_verify", {"target": "5"}, {"predict": "It is at least 5."})
    assert result.reason == "around its value the target states nothing, the prediction 'at least' in its words"


@pytest.mark.parametrize(
    "text, values, said",
    [
        ("It is 3.5 km.", ("3.5 km",), ""), ("There are 5 apples in the basket.", ("5 apples",), ""),
        ("The \\text{area} is 5", ("5",), ""), ("the largest $n$ is 34", ("34",), ""),
        ("It isn't 5, at least not 6", ("5", "6"), "n't at least not"), ("no idea", (), "no"),
    ],
)  # fmt: skip
def test_sentence_values_and_words(text, values, said):
    found = sentence(text)
    assert (found.values, found.qualifiers) == (values, said)


@pytest.mark.parametrize("text", ["5", "x > 5.", "10cm^2", "3.5 km/h", "{35 cm, 4}", "AB = 4", "\\boxed{5} apples"])
def test_formulas_are_not_sentences(text):
    assert sentence(text) is None


def test_a_qualifier_mismatch_says_what_each_side_states():
    result = run_verifier("expr_verify", {"target": "5"}, {"predict": "\\geq 5 \\text{ million}"})
    assert (result.score, result.status) == (0.0, "ok")
    assert result.reason == "around its value the target states nothing, the prediction '≥' before and 'million' after"


_SPAN_REGEX = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=["$", "\\", "(", ")", "[", "]", "a", " ", "\n"], max_size=24))
def test_math_spans_are_the_regular_expressions_spans(text):
    # the scan replaces this regular expression, which takes time in the square of the number of unclosed "\("
    expected = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in _SPAN_REGEX.finditer(text)]
    assert math_spans(text) == expected
