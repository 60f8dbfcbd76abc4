"""Faster LaTeX parsing for the expression worker: ANTLR's two-stage prediction.

Math-Verify reads LaTeX with latex2sympy2_extended, an ANTLR grammar run by ANTLR's pure-Python runtime, and that
parse is most of the cost of a check. ANTLR parsers predict in ``LL`` mode by default, and the decisions this grammar
makes in full context are neither cheap nor cached in ANTLR's prediction DFA. ``SLL`` mode is ANTLR's documented fast
path: per its runtime's documentation, an SLL parse either returns the same parse tree LL would have, or reports a
syntax error. So each parse is tried in SLL first and, only when that reports an error, again in LL (what ANTLR calls
two-stage parsing). The latex2sympy2_extended error listener raises on every reported error, so no SLL parse that
recovered from an error is ever used. This is ANTLR's own knob, not a new parser.

Not covered: anything after the parse (sympy conversion and comparison are Math-Verify's, unchanged). Applied only in
the worker process (``worker``); when the library's internals are not as expected, nothing is changed
and the worker parses as before. Warming ANTLR's prediction DFA on a generated corpus before serving was measured
and left out: on unseen answers its gain was within the noise, for seconds of start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_MARK = "_genrm_two_stage"


def enable_two_stage_parsing() -> bool:
    """Make latex2sympy2_extended parse in SLL first and in LL only after a reported error (see the module
    docstring); True when applied (or already), False when its internals are not as expected (nothing changed)."""
    try:
        from antlr4.atn.PredictionMode import PredictionMode
        from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
    except ImportError:
        return False
    create = getattr(_Latex2Sympy, "create_parser", None)
    if create is None:
        logger.warning("latex2sympy2_extended has no create_parser; LaTeX is parsed in ANTLR's default mode")
        return False
    if getattr(create, _MARK, False):
        return True

    def create_parser(self: Any, latex_str: str) -> Any:
        parser = create(self, latex_str)
        parse_math: Callable[[], Any] = parser.math
        if not hasattr(parser, "_interp"):
            return parser

        def math() -> Any:
            parser._interp.predictionMode = PredictionMode.SLL
            try:
                return parse_math()
            except (RecursionError, MemoryError):  # too big for either mode: not worth a second try
                raise
            except Exception:  # a syntax error in SLL: the input is wrong, or needs LL's full context
                return create(self, latex_str).math()

        parser.math = math
        return parser

    setattr(create_parser, _MARK, True)
    _Latex2Sympy.create_parser = create_parser
    return True
