"""expr_verify: every accepted form, option letters, and the agreement of the fast path with Math-Verify."""

import pytest

from verifiers import VerifyConfig, expr_verify, run_verifier
from verifiers.expr import parse_number


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        # integers and decimals
        ("42", "42", 1.0),
        ("42", "43", 0.0),
        ("-7", "-7.0", 1.0),
        ("0.5", "1/2", 1.0),
        ("3.14", "3.14159", 0.0),
        ("1/3", "0.3333333", 1.0),  # decimals compare at 6 places
        ("1/3", "0.333", 0.0),
        # fractions
        (r"\frac{4}{6}", "2/3", 1.0),
        (r"\dfrac{1}{2}", "0.5", 1.0),
        (r"\frac12", "0.5", 1.0),
        (r"-\frac{3}{4}", "-0.75", 1.0),
        # percentages: value over 100, or the bare value
        ("50%", "0.5", 1.0),
        ("50%", "50", 1.0),
        (r"50\%", "0.05", 0.0),
        ("12.5%", "0.125", 1.0),
        ("0.125", r"12.5\%", 1.0),
        # thousands separators
        ("1,234,567", "1234567", 1.0),
        ("1234", "1,234", 1.0),
        ("1,234.5", "1234.50", 1.0),
        # scientific notation
        ("1.2e5", "120000", 1.0),
        ("2.5E-3", "0.0025", 1.0),
        (r"1.2\times 10^{5}", "120000", 1.0),
        ("120000", r"1.2 \times 10^5", 1.0),
        # LaTeX: roots, pi, powers, \text{}, \left/\right
        (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", 1.0),
        (r"\sqrt{8}", r"2\sqrt{2}", 1.0),
        (r"2\pi", r"2 \cdot \pi", 1.0),
        (r"\pi", "3.14", 0.0),
        (r"x^{2}+2x+1", "(x+1)^2", 1.0),
        ("x^2", "x**2", 1.0),
        (r"\text{5}", "5", 1.0),
        (r"\left(\frac{1}{2}\right)^{2}", "1/4", 1.0),
        (r"2^{10}", "1024", 1.0),
        # intervals
        ("[1, 2)", "[1,2)", 1.0),
        ("[1, 2)", "(1, 2)", 0.0),
        (r"(-\infty, 3]", r"(-\infty,3]", 1.0),
        # sets and tuples
        (r"\{1, 2, 3\}", r"\{3, 2, 1\}", 1.0),
        (r"\{1, 2\}", r"\{1, 2, 3\}", 0.0),
        ("(1, 2)", "(2, 1)", 0.0),
        # equations
        ("x = 2", "2", 1.0),
        ("y = 2x + 1", "y = 1 + 2x", 1.0),
        ("x = 2", "3", 0.0),
        # option letters: B, (B), B., [B], Option B, lower case, a leading option text, several letters
        ("B", "B", 1.0),
        ("B", "(B)", 1.0),
        ("B", "B.", 1.0),
        ("(B)", "[B]", 1.0),
        ("B", "Option B", 1.0),
        ("B", "b", 1.0),
        ("B", "(B) 42", 1.0),
        ("B", "B. Paris", 1.0),
        ("B", "C", 0.0),
        ("A, C", "C, A", 1.0),
        ("A, C", "A", 0.0),
        # option letters in a sentence: after "answer is", else the one capital standing alone (not the article)
        ("A", "The answer is A.", 1.0),
        ("B", "Final answer is B", 1.0),
        ("C", "Final answer: (C)", 1.0),
        ("B", "Because B is valid", 1.0),
        ("B", "A careful look shows B holds", 1.0),
        ("A", "The answer is B, not A.", 0.0),
        ("A", "I think C", 0.0),
        # a sentence that negates states no option, unless it says "answer is"
        ("A", "not A", 0.0),
        ("A", "A is wrong", 0.0),
        ("A", "It isn't A", 0.0),
        ("B", "The answer is B, not A.", 1.0),
        # thousands with spaces, and a decimal comma against a decimal point
        ("1000", "1 000", 1.0),
        ("1234567", r"1\,234\,567", 1.0),
        ("1000.99", "1000,99", 1.0),
        ("1,22", "1.22", 1.0),
        ("0,111", "0.111", 1.0),
        ("0.111", "0,111", 1.0),
        ("1.5", "1,6", 0.0),
        ("2/3", "2/3.", 1.0),
        # a set and the relations that describe it
        (r"x \in [-2,7]", r"-2 \le x \le 7", 1.0),
        (r"-2 \le x \le 7", r"x \in [-2,7]", 1.0),
        (r"x \in [-2,7]", r"-2 \le x < 7", 0.0),
    ],
)
def test_expr_table(target, predict, expected):
    assert expr_verify(target=target, predict=predict) == expected


@pytest.mark.parametrize(
    "target, predict",
    [("B", "42"), ("B", ""), ("42", ""), ("42", "   "), ("A", "A cat sits on the mat"), ("A", "B or C")],
)
def test_unreadable_prediction_is_reported(target, predict):
    result = run_verifier("expr_verify", {"target": target}, {"predict": predict})
    assert (result.score, result.status) == (0.0, "unparseable_pred")


def test_target_over_the_bound_is_a_rubric_error():
    result = run_verifier("expr_verify", {"target": "1+" * 1500 + "1"}, {"predict": "1"})
    assert result.status == "unparseable_target"


def test_two_comma_forms_are_sets_not_decimals():
    # with no decimal point on either side a comma is a separator: {1, 2} = {2, 1}
    assert expr_verify(target="1,2", predict="2,1") == 1.0
    assert parse_number("0,111") is None and parse_number("1,234") is not None


def test_a_long_response_is_cut_to_its_final_answer():
    working = "Let us work it out. " * 150  # 3,000 characters of reasoning
    assert expr_verify(target="42", predict=working + "So the answer is \\boxed{42}.") == 1.0
    assert expr_verify(target="42", predict=working + "\\boxed{41} then \\boxed{\\frac{84}{2}}") == 1.0  # the last box
    assert expr_verify(target="B", predict=working + "The answer is B.\nDone.") == 1.0
    assert expr_verify(target="7", predict=working + "which leaves $x = 7$ in the end") == 1.0
    assert expr_verify(target="42", predict=working + "It is 42 maybe") == 0.0
    result = run_verifier("expr_verify", {"target": "42"}, {"predict": working + "It is 42 maybe"})
    assert result.status == "unparseable_pred" and "no final answer" in result.reason
    long_target = working + "Hence the answer is $\\frac{1}{2}$"
    assert expr_verify(target=long_target, predict="0.5") == 1.0
    too_long = run_verifier("expr_verify", {"target": "1"}, {"predict": "x" * 200_001})
    assert too_long.status == "unparseable_pred" and "at most 200000" in too_long.reason


def test_prediction_over_the_bound_is_unparseable():
    result = run_verifier("expr_verify", {"target": "1"}, {"predict": "1+" * 1500 + "1"})
    assert (result.score, result.status) == (0.0, "unparseable_pred")


@pytest.mark.parametrize(
    "target, predict",
    [
        ("0.5", "1/2"), ("1/3", "0.3333333"), ("1/3", "0.333"), ("50%", "0.5"), ("50%", "50"), ("50%", "0.05"),
        ("1,234,567", "1234567"), ("1234", "1235"), ("-7", "-7.0"), ("2.50", "2.5"), ("3/4", "0.75"),
        ("12.5%", "0.125"), ("0", "-0"),
    ],
)  # fmt: skip
def test_fast_path_agrees_with_math_verify(target, predict):
    """Plain numbers are compared in-process; the answer must be the one Math-Verify gives in the worker."""
    assert parse_number(target) is not None and parse_number(predict) is not None
    from verifiers.expressions.pool import get_expr_pool

    outcome = get_expr_pool().check(target, predict, 6, 10.0)
    assert outcome.status == "ok"
    assert expr_verify(target=target, predict=predict) == float(outcome.equal)


def test_scientific_notation_is_read_by_the_fast_path():
    # Math-Verify reads a bare "1e2" as 1 * e * 2 (Euler's number); the fast path reads it as 100.
    assert expr_verify(target="100", predict="1e2") == 1.0
    assert expr_verify(target="100", predict="2e") == 0.0


def test_float_rounding_is_configurable():
    config = VerifyConfig(float_rounding=2)
    assert expr_verify(target="3.14", predict="3.14159", config=config) == 1.0


@pytest.mark.parametrize(
    "target, predict", [("$9$", "9"), ("9", r"$\boxed{9}$"), (r"\(3.50\)", "3.5"), (r"\boxed{\frac{1}{2}}", "0.5")]
)
def test_a_number_in_delimiters_or_a_box_takes_the_in_process_path(target, predict):
    result = run_verifier("expr_verify", {"target": target}, {"predict": predict})
    assert result.score == 1.0 and result.reason.startswith("plain numbers")


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        # Math-Verify reads 1e6 as 1 * e * 6 (Euler's number): scientific notation against an expression
        ("10^6", "1e6", 1.0),
        ("1e6", "10^{6}", 1.0),
        ("10^{-3}", "1e-3", 1.0),
        (r"2^{10}", "1.024e3", 1.0),
        ("2e", "2e1", 0.0),  # 2e1 is 20, not twice Euler's number
        ("3e", "3e0", 0.0),
        ("e+1", "1e1", 0.0),
        # ... compared at the places it states, not rounded to 0 with the configured 6
        ("10^{-8}", "2e-8", 0.0),
        ("10^{-8}", "1e-8", 1.0),
        (r"\sqrt{2}", "1.414214e0", 1.0),
        (r"\sqrt{2}", "1.41421357e0", 0.0),
        (r"\pi", "3.14159265358979e0", 1.0),
        # digit groups with spaces and mixed numbers, which Math-Verify reads as products
        ("10^3", "1 000", 1.0),
        ("10^3", r"1\,000", 1.0),
        (r"\sin 0", "1 000", 0.0),
        (r"\sqrt{9}/2", "1 1/2", 1.0),
        (r"\sqrt{1}", "1 1/2", 0.0),
        # a fraction of percent, which Math-Verify reads as text
        (r"\frac{1}{\sqrt{4}}", r"\frac{100}{2}\%", 1.0),
        (r"\frac{1}{\sqrt{4}}", r"\frac{1}{2}\%", 0.0),
    ],
)
def test_a_plain_number_against_an_expression_is_read_as_the_fast_path_reads_it(target, predict, expected):
    result = run_verifier("expr_verify", {"target": target}, {"predict": predict})
    assert (result.score, result.status) == (expected, "ok"), result.reason
    assert not result.reason.startswith("plain numbers")  # the other side is an expression: Math-Verify decided


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        (r"\frac{1}{2}\%", "0.005", 1.0),
        (r"\frac{1}{2}\%", r"0.5\%", 1.0),
        (r"\frac{1}{2}\%", r"50\%", 0.0),
        (r"33\frac{1}{3}\%", "1/3", 1.0),
        ("33 1/3%", "0.333333", 1.0),
        (r"2\times10^{3}\%", "20", 1.0),
        (r"2\times10^{3}\%", "2", 0.0),  # Math-Verify reads the target as 2
    ],
)
def test_a_fraction_or_power_of_ten_of_percent_is_a_plain_number(target, predict, expected):
    result = run_verifier("expr_verify", {"target": target}, {"predict": predict})
    assert (result.score, result.reason) == (expected, f"plain numbers {'equal' if expected else 'different'}")


def test_a_number_too_far_from_one_to_write_out_is_not_compared_with_an_expression():
    prediction = run_verifier("expr_verify", {"target": "10^{-300}"}, {"predict": "2e-300"})
    assert (prediction.score, prediction.status) == (0.0, "unparseable_pred")
    assert "too far from 1" in prediction.reason
    target = run_verifier("expr_verify", {"target": "1e400"}, {"predict": "10^{400}"})
    assert target.status == "unparseable_target"


@pytest.mark.parametrize(
    "target, predict",
    [
        ("1e6", "1 000 000"), ("1.5e-3", "0.0015"), ("2e-8", "0.00000001"), ("1e-8", "0"), ("1 1/2", "1.5"),
        ("1 1/2", "3/2"), (r"2\times10^{3}\%", "20"), (r"2\times10^{3}\%", "2"), ("1 000", "1000.0"),
        ("2.5E-3", "1/400"), ("-2 1/4", "-9/4"), (r"1\,234\,567", "1234567"), ("50%", "1/2"), ("7/8", "0.875"),
    ],
)  # fmt: skip
def test_plain_numbers_written_out_read_alike_in_math_verify(target, predict):
    """What Math-Verify is given for a plain number (when the other side is an expression) means what the fast path
    read: on two plain numbers, Math-Verify on their written-out forms gives the fast path's verdict."""
    from verifiers.expr import _written_out
    from verifiers.expressions.pool import get_expr_pool
    from verifiers.result import PredictionError, TargetError

    (target_out, target_places), (pred_out, pred_places) = (
        _written_out(target, TargetError),
        _written_out(predict, PredictionError),
    )
    outcome = get_expr_pool().check(target_out, pred_out, max(6, target_places, pred_places), 10.0)
    assert outcome.status == "ok"
    assert expr_verify(target=target, predict=predict) == float(outcome.equal), outcome.reason


# A target is read whole or refused: target | the letters its text names (case aside, e and i the constants)
TARGETS_READ_IN_PART = [
    (r"\frac{1}{2}m", "m"),  # Math-Verify takes the m for metres
    (r"$\frac{1}{2}m$", "m"),
    (r"\boxed{\frac{1}{2}s}", "s"),
    ("2m", "m"),
    (r"\frac{a}{b}c", "abc"),
]
TARGETS_READ_WHOLE = [
    (r"\frac{m}{2}", "m"),
    (r"\frac{1}{2}mv^2", "mv"),
    (r"\frac{1}{2}\text{ m}", ""),  # a unit written as one
    (r"3\pi r^2", "r"),
    ("e^{x}", "x"),
    ("AB", "ab"),
    ("f(x)=x^2", "x"),
    (r"\begin{pmatrix} x & 1 \end{pmatrix}", "x"),
    (r"\frac{1}{2}x + \frac{1}{3}y", "xy"),
    (r"\frac{1}{2}", ""),
    # bound variables are read: the n of a sum, the x of a limit, the variable of a derivative
    (r"\sum_{n=1}^{10^{7}} \frac{1}{n^3}", "n"),
    (r"\sum_{k=1}^{n} k", "kn"),
    (r"\prod_{k=1}^{5} k", "k"),
    (r"\lim_{x\to 0} \frac{\sin x}{x}", "x"),
    (r"\frac{d}{dx} x^2", "x"),
]


def _parsed_letters(target: str) -> set[str]:
    from math_verify import parse

    text = target if "$" in target or "\\boxed" in target else f"${target}$"
    letters: set[str] = set()
    from sympy import Symbol
    from sympy.core.function import AppliedUndef

    for item in parse(text):
        if hasattr(item, "atoms"):
            letters.update(letter for symbol in item.atoms(Symbol) for letter in str(symbol).lower())
            letters.update(letter for applied in item.atoms(AppliedUndef) for letter in str(applied.func).lower())
    return letters


@pytest.mark.parametrize("target, letters", TARGETS_READ_IN_PART + TARGETS_READ_WHOLE)
def test_the_tables_say_what_math_verify_reads(target, letters):
    # the table's own check, against Math-Verify's parse: a target read in part loses a letter its text names
    lost = set(letters) - _parsed_letters(target)
    assert bool(lost) == ((target, letters) in TARGETS_READ_IN_PART), (target, lost)


@pytest.mark.parametrize("target, letters", TARGETS_READ_IN_PART)
def test_a_target_read_in_part_is_refused_when_the_rubric_is_read(target, letters):
    from genrm.methods.rubric.models import Rubric
    from genrm.methods.rubric.planning import RubricError, plan_rubric

    reference = "expr_verify(target=" + repr(target) + ")"
    rubric = Rubric.model_validate(
        {"essential": [{"criterion": "Gives the speed.", "reference": reference, "weight": 1}]}
    )
    with pytest.raises(RubricError, match=r"essential\[0\]\.reference: the target is read without "):
        plan_rubric(rubric)
    # and when it is scored anyway, it is the rubric's error, never a verdict on the response
    result = run_verifier("expr_verify", {"target": target}, {"predict": "1/2"})
    assert result.status == "unparseable_target" and result.score == 0.0


@pytest.mark.parametrize("target, letters", TARGETS_READ_WHOLE)
def test_a_target_read_whole_is_accepted_and_scored(target, letters):
    from genrm.methods.rubric.models import Rubric
    from genrm.methods.rubric.planning import plan_rubric

    reference = "expr_verify(target=" + repr(target) + ")"
    rubric = Rubric.model_validate(
        {"essential": [{"criterion": "Gives the value.", "reference": reference, "weight": 1}]}
    )
    assert plan_rubric(rubric)[0].verifier == "expr_verify"
    assert expr_verify(target=target, predict=target) == 1.0
