"""The numeric proof of inequality before simplify (verifiers.expressions.quick_inequality): it tells wrong answers
apart, never claims that equal ones differ, steps aside where one point proves nothing, and leaves Math-Verify's
verdicts as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("math_verify")

import sympy  # noqa: E402
from math_verify import grader, parse, verify  # noqa: E402

from verifiers.expressions.quick_inequality import certainly_nonzero, enable_quick_inequality  # noqa: E402

CASES = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "math_verify_cases.jsonl"
x, y = sympy.symbols("x y", real=True)

DIFFERENT = [
    (sympy.sqrt(2) / 2, sympy.sqrt(3)),
    (x + 1, x + 2),
    (sympy.sin(x), sympy.cos(x)),
    (2 * sympy.sin(y) * sympy.cos(x), sympy.pi * x / (y + x)),
    (sympy.sqrt(sympy.sqrt(11) + sympy.sqrt(194)) / (15 + 2 * sympy.sqrt(33)), (1 + sympy.sqrt(5)) / 2),
    (sympy.log(x), sympy.I * x),
    (x**2, y**2),
]
EQUAL = [
    (sympy.sqrt(5 + 2 * sympy.sqrt(6)), sympy.sqrt(2) + sympy.sqrt(3)),
    (sympy.sin(x) ** 2 + sympy.cos(x) ** 2, sympy.Integer(1)),
    (sympy.expand((x + 1) ** 10), (x + 1) ** 10),
    (sympy.tan(x) ** 2 + 1, sympy.sec(x) ** 2),
    (sympy.exp(sympy.I * sympy.pi), sympy.Integer(-1)),
    (sympy.log(x * y), sympy.log(x) + sympy.log(y)),  # equal at positive points, not everywhere: simplify decides
    (sympy.sqrt(x**2), x),
    (sympy.Abs(x), x),
]


@pytest.mark.parametrize("a, b", DIFFERENT, ids=range(len(DIFFERENT)))
def test_a_difference_that_is_not_zero_somewhere_is_shown(a, b):
    assert certainly_nonzero(a - b)


@pytest.mark.parametrize("a, b", EQUAL, ids=range(len(EQUAL)))
def test_equal_expressions_are_never_shown_to_differ(a, b):
    assert not certainly_nonzero(a - b)


def test_where_one_point_proves_nothing_it_steps_aside():
    n = sympy.Symbol("n", integer=True)
    k = sympy.Symbol("k", integer=True)
    f = sympy.Function("f")
    steps_aside = [
        (-1) ** (2 * n) - 1,  # zero for every integer n, not at a fraction: the point must satisfy the assumptions
        sympy.Float(0.1) * x - x / 10,  # zero to sympy, 5.5e-18 x to 30 digits
        sympy.Integer(9) * sympy.UnevaluatedExpr(sympy.Rational(1, 100)) - 9,  # a percentage
        f(x) - x,  # an undefined function
        sympy.Sum(k, (k, 0, x)) - x,  # a sum over a symbolic range
        sympy.Integral(x, (x, 0, 1)) - 1,
        sympy.Matrix([[x]]) - sympy.Matrix([[1]]),  # not an expression
        1 / (x - sympy.Rational(13, 11)) - 1,  # a pole at the first point: zoo, not a proof
        sympy.Integer(0),
    ]
    assert [certainly_nonzero(d) for d in steps_aside] == [False] * len(steps_aside)


def test_more_symbols_than_points_steps_aside():
    symbols = sympy.symbols("a0:20", real=True)
    assert not certainly_nonzero(sum(symbols) + 1)


def _verdicts(pairs: list[tuple[str, str]]) -> list[bool]:
    return [bool(verify(parse(g), parse(p), timeout_seconds=None, allow_set_relation_comp=True)) for g, p in pairs]


@pytest.fixture
def unpatched(monkeypatch: pytest.MonkeyPatch):
    """Math-Verify's own symbolic test now, restored after the test whatever the test enables."""
    monkeypatch.setattr(grader, "sympy_symbolic_eq", grader.sympy_symbolic_eq)


def test_enabling_twice_wraps_once_and_the_verdicts_stay(unpatched):
    pairs = [("$\\frac{\\sqrt{2}}{2}$", "$\\sqrt{3}$"), ("$\\sqrt{5+2\\sqrt{6}}$", "$\\sqrt{2}+\\sqrt{3}$"),
             ("$\\tan^2 x + 1$", "$\\sec^2 x$"), ("$x + 1$", "$x + 2$")]  # fmt: skip
    before = _verdicts(pairs)
    assert enable_quick_inequality() and enable_quick_inequality()
    wrapped = grader.sympy_symbolic_eq
    assert enable_quick_inequality() and grader.sympy_symbolic_eq is wrapped
    assert _verdicts(pairs) == before == [False, True, True, False]


@pytest.mark.slow
def test_math_verify_gives_the_same_verdicts_on_its_own_cases_and_groups(unpatched):
    # Each case's gold against its own prediction and the next seven cases' (the benchmark's group workload).
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(c["gold"], cases[(i + k) % len(cases)]["pred"]) for i, c in enumerate(cases) for k in range(8)]
    shown = []
    real = certainly_nonzero

    def counting(difference):
        shown.append(real(difference))
        return shown[-1]

    before = _verdicts(pairs)
    enable_quick_inequality()
    import verifiers.expressions.quick_inequality as quick

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quick, "certainly_nonzero", counting)
        after = _verdicts(pairs)
    assert after == before
    assert sum(shown) >= 100  # it did tell wrong answers apart, not only stand aside
