"""Deterministic verifiers for rubric rewards: text, expr, time, list, bbox and point.

Two ways in:

- the functions, with the keyword names of the rubric and scoring signatures::

      from verifiers import bbox_verify
      bbox_verify(target=[[531, 118, 892, 435]], predict=[[529, 119, 890, 433]])  # 0.98...

- the call-string protocol, joining a rubric-side call with the judge's scoring-side call::

      from verifiers import verify_call, verify_call_result
      verify_call(r"expr_verify(target='\\frac{4}{6}')", "expr_verify(predict='2/3')")  # 1.0
      verify_call_result(ref, pred).status  # ok, unparseable_pred, timeout, unparseable_target, bad_call, busy, error

Every check is bounded by a deadline (2 s by default, ``VerifyConfig.deadline_s``) from any thread or event loop.
Importing this package never imports torch, sympy or scipy; the last two load when first needed.

The rest is in its modules: the registry of signatures (``verifiers.registry``), call strings (``verifiers.calls``),
statuses and errors (``verifiers.result``), where a value or a quote is in a response (``verifiers.provenance``),
and the expression workers behind ``expr_verify`` (``verifiers.expressions``).
"""

from verifiers.api import bbox_verify, expr_verify, list_verify, point_verify, text_verify, time_verify
from verifiers.calls import averify_call_result, format_call, verify_call, verify_call_result
from verifiers.config import VerifyConfig
from verifiers.expressions.pool import warm_up
from verifiers.registry import run_verifier
from verifiers.result import VerifyResult

__all__ = [
    "VerifyConfig",
    "VerifyResult",
    "averify_call_result",
    "bbox_verify",
    "expr_verify",
    "format_call",
    "list_verify",
    "point_verify",
    "run_verifier",
    "text_verify",
    "time_verify",
    "verify_call",
    "verify_call_result",
    "warm_up",
]
