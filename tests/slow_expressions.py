"""Expressions whose check runs past any deadline, for tests that need a check to hold its worker.

A power tower (``10^{10^{10^{10}}}``) is not one: the expression worker refuses an exact power too large to compute
at once (``verifiers.expressions.power_guard``). A finite sum of ten million exact terms is summed term by term by
sympy (measured: still running after 45 s, under 250 MB).
"""


def slow_sum(k: int = 0) -> str:
    """A sum that takes sympy minutes; checks with different ``k`` are different checks (the pool runs equal ones
    once)."""
    return rf"\sum_{{n=1}}^{{10^{{7}}}} \frac{{{k + 1}}}{{n^3}}"


SLOW = slow_sum()
