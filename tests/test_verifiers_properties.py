"""Property tests: any call string and any prediction give a float in [0, 1] with a status, or a typed error,
always within the deadline."""

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifiers import VerifyConfig, VerifyResult, verify_call_result
from verifiers.calls import parse_call
from verifiers.expressions.pool import get_expr_pool
from verifiers.registry import REGISTRY
from verifiers.result import BadCallError

STATUSES = {"ok", "unparseable_pred", "timeout", "unparseable_target", "bad_call", "error"}
CONFIG = VerifyConfig(deadline_s=1.0)
BOUND_S = 1.0 + 0.75

# Literal values of every shape a judge could write: scalars, strings, nested lists and tuples.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)  # fmt: skip
literals = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.tuples(inner, inner), max_leaves=30)
# What repr() writes as a Python literal: NaN and infinities print as names (nan, inf), which are not literals.
finite_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)  # fmt: skip
written_literals = st.recursive(
    finite_scalars, lambda inner: st.lists(inner, max_size=6) | st.tuples(inner, inner), max_leaves=30
)
names = st.sampled_from(sorted(REGISTRY) + ["eval", "open", "text_verify.__class__"])
keywords = st.sampled_from(["predict", "target", "candidates", "tformat", "pformat", "ignore_case", "x"])

REFERENCES = {
    "text_verify": "text_verify(target='Export Volume', ignore_case=True)",
    "expr_verify": "expr_verify(target='\\\\frac{4}{6}')",
    "time_verify": "time_verify(target='18:15', tformat='%H:%M')",
    "list_verify": "list_verify(target=['M-30', 'M-31'])",
    "bbox_verify": "bbox_verify(target=[[531, 118, 892, 435]])",
    "point_verify": "point_verify(target=[[591, 234]])",
}
math_text = st.text(alphabet="0123456789+-*/^()[]{}.,=xyz \\fracsqrtpi%eE", max_size=40)


def _check(result: VerifyResult, elapsed: float) -> None:
    assert isinstance(result.score, float) and 0.0 <= result.score <= 1.0
    assert result.status in STATUSES
    assert result.status == "ok" or result.score == 0.0
    assert elapsed < BOUND_S


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parse_call_on_any_text_returns_a_call_or_a_bad_call_error(text):
    try:
        parsed = parse_call(text)
    except BadCallError:
        return
    assert parsed.name in REGISTRY


@settings(max_examples=300, deadline=None)
@given(names, st.lists(st.tuples(keywords, literals), max_size=4))
def test_any_generated_call_is_judged_or_refused(name, kwargs):
    call = f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs)})"
    for reference, prediction in ((REFERENCES["text_verify"], call), (call, call)):
        start = time.monotonic()
        _check(verify_call_result(reference, prediction, CONFIG), time.monotonic() - start)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(REFERENCES)), written_literals)
def test_every_verifier_gives_a_score_in_range_for_any_prediction(name, value):
    assert get_expr_pool().wait_until_idle(120)  # time a check from when it starts, not the wait for a worker
    start = time.monotonic()
    result = verify_call_result(REFERENCES[name], f"{name}(predict={value!r})", CONFIG)
    _check(result, time.monotonic() - start)
    assert result.status not in {"bad_call", "unparseable_target", "error"}, result


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(math_text, math_text)
def test_expr_verify_on_math_looking_text(target, predict):
    assert get_expr_pool().wait_until_idle(120)  # time a check from when it starts, not the wait for a worker
    start = time.monotonic()
    result = verify_call_result(f"expr_verify(target={target!r})", f"expr_verify(predict={predict!r})", CONFIG)
    _check(result, time.monotonic() - start)
    assert result.status != "error", result
