"""A numeric proof that two expressions differ, tried before sympy's ``simplify`` in Math-Verify's symbolic test.

Math-Verify's last resort for two expressions is ``simplify(gold - pred).is_zero``, and on a wrong answer
(``\\sqrt{3}`` for ``\\frac{\\sqrt{2}}{2}``, ``2 \\sin b \\cos a`` for ``\\frac{\\pi r}{h+r}``) that costs tens of
milliseconds to say no. A difference that is not zero at one point cannot be simplified to zero, so it is evaluated
first at one point: each free symbol is given its own positive, non-integer rational that satisfies every assumption
the symbol carries, and the difference is evaluated by sympy's ``evalf`` in strict mode (30 digits, guaranteed, or an
error). A value with guaranteed non-zero digits answers "not equal" at once; anything else (zero, an evaluation that
fails or cannot be made exact) goes on to ``simplify`` as before. So the verdict is never changed, only found sooner.

Taken only for differences made of numbers written exactly, symbols, arithmetic and sympy's elementary functions:
a difference holding a float (``0.1 x`` against ``x/10`` is zero to sympy but not to 30 digits), a percentage
(``UnevaluatedExpr``), an undefined function, a sum, an integral or a limit goes to ``simplify`` untouched.

Not covered: Math-Verify's other comparisons (numbers, sets, relations), which are unchanged. Applied only in the
expression worker (``worker``); when the library's internals are not as expected nothing is changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_MARK = "_genrm_quick_inequality"
_DIGITS = 30
# Distinct, positive and not integers; a difference that happens to vanish at them only goes on to simplify.
_POINTS = ((13, 11), (29, 17), (37, 13), (47, 19), (59, 23), (71, 29), (83, 31), (97, 37), (101, 41), (113, 43))


def _allowed_node(node: Any, plain: tuple[type, ...], function: type) -> bool:
    if isinstance(node, plain):
        return True
    # an undefined function f(x) has no module
    return isinstance(node, function) and (type(node).__module__ or "").startswith("sympy.functions.elementary")


def certainly_nonzero(difference: Any) -> bool:
    """True only when ``difference`` (a sympy expression) is provably not identically zero: it is non-zero, to
    guaranteed digits, at one point that satisfies its symbols' assumptions (see the module docstring). False means
    "not shown", never "zero"."""
    from sympy import (
        Add,
        Expr,
        Function,
        Integer,
        Mul,
        NumberSymbol,
        Pow,
        Rational,
        Symbol,
        nan,
        oo,
        preorder_traversal,
        zoo,
    )
    from sympy.core.evalf import PrecisionExhausted
    from sympy.core.numbers import ImaginaryUnit

    plain = (Add, Mul, Pow, Integer, Rational, NumberSymbol, ImaginaryUnit, Symbol)
    if not isinstance(difference, Expr) or not all(
        _allowed_node(node, plain, Function) for node in preorder_traversal(difference)
    ):
        return False
    symbols = sorted(difference.free_symbols, key=lambda symbol: symbol.name)
    if len(symbols) > len(_POINTS):
        return False
    points = {}
    for symbol, (numerator, denominator) in zip(symbols, _POINTS, strict=False):
        value = Rational(numerator, denominator)
        if any(getattr(value, f"is_{name}", None) is not holds for name, holds in symbol.assumptions0.items()):
            return False  # an integer or negative symbol: this point is not one of its values
        points[symbol] = value
    try:
        value = difference.xreplace(points).evalf(_DIGITS, strict=True)
    except (PrecisionExhausted, ArithmeticError, ValueError, TypeError):
        return False
    if not value.is_number or value.has(nan, zoo, oo, -oo):
        return False
    parts = value.as_real_imag()
    return all(part.is_Number for part in parts) and any(part.is_Float and part != 0 for part in parts)


def enable_quick_inequality() -> bool:
    """Have Math-Verify's symbolic comparison try :func:`certainly_nonzero` before ``simplify`` (see the module
    docstring); True when applied (or already), False when its internals are not as expected (nothing changed)."""
    try:
        from math_verify import grader
    except ImportError:
        return False
    symbolic_eq: Callable[[Any, Any], bool] | None = getattr(grader, "sympy_symbolic_eq", None)
    if symbolic_eq is None:
        logger.warning("Math-Verify has no sympy_symbolic_eq; wrong answers are told apart by simplify alone")
        return False
    if getattr(symbolic_eq, _MARK, False):
        return True

    def sympy_symbolic_eq(a: Any, b: Any) -> bool:
        try:
            if certainly_nonzero(a - b):
                return False
        except Exception:  # noqa: BLE001 - whatever the test cannot do, simplify still does
            pass
        return symbolic_eq(a, b)

    setattr(sympy_symbolic_eq, _MARK, True)
    grader.sympy_symbolic_eq = sympy_symbolic_eq
    return True
