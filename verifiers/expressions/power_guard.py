"""A guard on exact powers and factorials too large to compute, applied in the expression worker only.

``5^{5^{5^{5}}}`` is 13 characters, and sympy evaluates it exactly the moment it is compared: a Python integer power
of about 10^2184 digits that no deadline short of the worker's kill interrupts. Such a check always ends in
``timeout`` (the worker is killed at its deadline). The guard gives the same verdict at once: before sympy raises an
exact rational to an exact power, it estimates the result's size, and when that is more than :data:`MAX_POWER_BITS`
it raises :class:`PowerTooLarge`; so does an exact factorial of an integer above :data:`MAX_FACTORIAL` (``(10!)!``)
and a binomial coefficient that needs one. That is a ``BaseException``, so that no library's ``except Exception``
turns it into "no expression found" and another reading of the text. The worker answers it as ``timeout``, so the
pool's blame test still tells a target that cannot be compared from a prediction that cannot.

The limits sit where sympy's own time comes near the default deadline (2 s): a power at :data:`MAX_POWER_BITS`
(3^2,500,000, about 1.2 million digits) takes it 0.24 s, one four times larger 2.1 s. So the verdict differs from
the deadline's only for a power between the limit and what a longer deadline would allow: an answer whose value, or
a step on the way to it, has more than a million digits is scored as the timeout it nearly is.
"""

from __future__ import annotations

import math
from typing import Any

#: Largest exact power sympy is allowed to compute, in bits of its numerator (about 1.2 million decimal digits).
MAX_POWER_BITS = 4_000_000
#: Largest integer whose factorial sympy is allowed to compute exactly (456,574 digits, under 0.1 s).
MAX_FACTORIAL = 100_000

_MARK = "_genrm_power_guard"


class PowerTooLarge(BaseException):  # noqa: N818 - raised through libraries that catch Exception
    """An exact power over :data:`MAX_POWER_BITS`, or a factorial or binomial coefficient over :data:`MAX_FACTORIAL`,
    was about to be computed."""


def power_bits(base: Any, exponent: Any) -> float:
    """About how many bits ``base ** exponent`` has, for a sympy Rational base and exponent (0 when either is not an
    exact rational or the base is 0 or ±1; ``inf`` past any float)."""
    from sympy import Rational

    if not isinstance(base, Rational) or not isinstance(exponent, Rational):
        return 0.0
    size = max(abs(int(base.p)), abs(int(base.q)))
    if size < 2:
        return 0.0
    numerator, denominator = abs(int(exponent.p)), int(exponent.q)
    if numerator.bit_length() - denominator.bit_length() > 512:  # too large for a float: larger than any limit
        return math.inf
    return numerator / denominator * math.log2(size)


def _guarded(original: Any) -> Any:
    def _eval_power(self: Any, expt: Any) -> Any:
        bits = power_bits(self, expt)
        if bits > MAX_POWER_BITS:
            digits = f"{bits * math.log10(2):.3g}" if math.isfinite(bits) else "more than 10^150"
            raise PowerTooLarge(f"an exact power of about {digits} digits")
        return original(self, expt)

    setattr(_eval_power, _MARK, True)
    return _eval_power


def _too_large_factor(n: Any) -> bool:
    from sympy import Integer, sympify

    value = sympify(n)
    return isinstance(value, Integer) and value > MAX_FACTORIAL


def _guarded_factorial(original: Any) -> Any:
    def eval(cls: Any, n: Any) -> Any:  # noqa: A001 - sympy's name
        if _too_large_factor(n):
            raise PowerTooLarge(f"the factorial of {str(n)[:40]}, more than {MAX_FACTORIAL}")
        return original.__func__(cls, n)

    setattr(eval, _MARK, True)
    return classmethod(eval)


def _guarded_binomial(original: Any) -> Any:
    def eval(cls: Any, n: Any, k: Any) -> Any:  # noqa: A001 - sympy's name
        from sympy import sympify

        n, k = sympify(n), sympify(k)
        if n.is_Integer and k.is_Integer and 0 <= k <= n and _too_large_factor(min(k, n - k)):
            raise PowerTooLarge(f"the binomial coefficient of {str(n)[:40]} over {str(k)[:40]}")
        return original.__func__(cls, n, k)

    setattr(eval, _MARK, True)
    return classmethod(eval)


def enable_power_guard() -> None:
    """Guard sympy's exact powers of integers and rationals, its exact factorials and binomial coefficients, in this
    process (idempotent)."""
    from sympy import binomial, factorial
    from sympy.core.numbers import Integer, Rational

    for cls in (Integer, Rational):
        original = cls.__dict__["_eval_power"]
        if not getattr(original, _MARK, False):
            cls._eval_power = _guarded(original)  # type: ignore[method-assign]
    for function, guard in ((factorial, _guarded_factorial), (binomial, _guarded_binomial)):
        original = function.__dict__["eval"]
        if not getattr(original.__func__, _MARK, False):
            function.eval = guard(original)  # type: ignore[method-assign]
