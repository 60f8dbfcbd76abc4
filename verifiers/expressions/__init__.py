"""The machinery behind ``expr_verify``: the pool of expression worker processes (``pool``), how a worker is started
and forked from a warmed-up zygote (``processes``), the worker itself with Math-Verify and its guards on sympy
(``worker``, ``latex_parsing``, ``power_guard``, ``quick_inequality``), and the memo of verdicts (``verdicts``).

Nothing here is imported by ``import verifiers``: the pool starts on the first expression check, or on
``verifiers.warm_up()``; ``verifiers.expressions.pool.configure_expr_pool`` sets it up.
"""
