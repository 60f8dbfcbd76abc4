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
"""

from verifiers.api import bbox_verify, expr_verify, list_verify, point_verify, text_verify, time_verify
from verifiers.calls import (
    ParsedCall,
    averify_call_result,
    format_call,
    parse_call,
    verify_call,
    verify_call_result,
)
from verifiers.config import DEFAULT_CONFIG, VerifyConfig
from verifiers.expr_pool import configure_expr_pool, expression_workers, tenant, warm_up
from verifiers.provenance import find_claim, find_evidence, holds_content
from verifiers.registry import (
    REGISTRY,
    VerifierSpec,
    get_spec,
    prediction_not_found,
    render_specs,
    run_verifier,
    uses_workers,
)
from verifiers.result import (
    BadCallError,
    PredictionError,
    Status,
    TargetError,
    UnknownVerifierError,
    VerifierError,
    VerifyResult,
)

__all__ = [
    "DEFAULT_CONFIG",
    "REGISTRY",
    "BadCallError",
    "ParsedCall",
    "PredictionError",
    "Status",
    "TargetError",
    "UnknownVerifierError",
    "VerifierError",
    "VerifierSpec",
    "VerifyConfig",
    "VerifyResult",
    "averify_call_result",
    "bbox_verify",
    "configure_expr_pool",
    "expr_verify",
    "expression_workers",
    "find_claim",
    "find_evidence",
    "holds_content",
    "format_call",
    "get_spec",
    "list_verify",
    "parse_call",
    "point_verify",
    "prediction_not_found",
    "render_specs",
    "run_verifier",
    "tenant",
    "text_verify",
    "time_verify",
    "uses_workers",
    "verify_call",
    "verify_call_result",
    "warm_up",
]
