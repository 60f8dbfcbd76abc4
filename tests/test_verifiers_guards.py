"""Checks that no deadline could end are refused at once, with the verdict the deadline would give, and nothing
else is touched: exact powers, factorials and binomial coefficients too large to compute
(``verifiers.expressions.power_guard``) and brackets nested past what the parser reads in time
(``verifiers.expressions.worker.MAX_NESTING``).

The deadline here is 60 s: a refusal that did not come from a guard would take that long and say so in its reason,
so the reasons below can only match when a guard answered."""

import math
from collections import Counter

import pytest

from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.scoring import ScoringConfig
from verifiers import VerifyConfig, format_call, verify_call_result
from verifiers.expressions.pool import tenant
from verifiers.expressions.power_guard import MAX_POWER_BITS, power_bits
from verifiers.expressions.worker import MAX_NESTING, nesting

LONG = VerifyConfig(deadline_s=60.0)
GUARDED = "cannot be compared within any deadline"


def _check(target: str, predict: str):
    return verify_call_result(format_call("expr_verify", {"target": target}),
                              format_call("expr_verify", {"predict": predict}), LONG)  # fmt: skip


@pytest.mark.parametrize(
    "predict",
    ["10^{10^{10^{10}}}", "5^{5^{5^{5}}}", "9^{9^{9^{9^{9}}}}", "(10!)!", "(3628800)!",
     "\\binom{10^{8}}{5 \\cdot 10^{7}}", "\\left(\\frac{3}{2}\\right)^{10^{9}}"],
)  # fmt: skip
def test_a_power_too_large_to_compute_is_a_timeout_at_once(predict):
    result = _check("5", predict)
    assert (result.score, result.status) == (0.0, "timeout"), result
    assert GUARDED in result.reason, result.reason


def test_a_target_too_large_to_compute_is_the_rubrics_fault_at_once():
    result = _check("10^{10^{10^{10}}}", "5")
    assert (result.score, result.status) == (0.0, "unparseable_target"), result


@pytest.mark.parametrize(
    "target, predict",
    [("1267650600228229401496703205376", "2^{100}"), ("126410606437752", "\\binom{50}{25}"), ("3628800", "10!"),
     ("2^{65536}", "2^{65536}"), ("\\frac{1}{1024}", "\\left(\\frac{1}{2}\\right)^{10}"),
     ("7", "(" * 20 + "7" + ")" * 20)],
)  # fmt: skip
def test_what_sympy_computes_in_time_is_judged_as_before(target, predict):
    result = _check(target, predict)
    assert (result.score, result.status) == (1.0, "ok"), result


def test_brackets_nested_deeper_than_the_parser_reads_in_time_are_refused():
    result = _check("5", "(" * (MAX_NESTING + 1) + "5" + ")" * (MAX_NESTING + 1))
    assert (result.score, result.status) == (0.0, "unparseable_pred"), result
    assert f"nested more than {MAX_NESTING}" in result.reason, result.reason
    target = _check("[" * (MAX_NESTING + 1) + "5" + "]" * (MAX_NESTING + 1), "5")
    assert target.status == "unparseable_target", target


def test_nesting_counts_all_bracket_kinds_together():
    assert nesting("") == 0 and nesting("x)") == 0
    assert nesting("\\frac{(a+[b])}{2}") == 3
    assert nesting("(a)(b)((c))") == 2


def test_power_bits_estimates_without_computing():
    from sympy import Integer, Rational

    assert power_bits(Integer(2), Integer(10)) == pytest.approx(10)
    assert power_bits(Rational(3, 2), Integer(100)) == pytest.approx(100 * math.log2(3))
    assert power_bits(Integer(1), Integer(10**100)) == 0.0
    assert power_bits(Integer(10), Integer(10) ** 10**4) == math.inf
    assert power_bits(Integer(2), Integer(MAX_POWER_BITS)) == MAX_POWER_BITS


def test_a_hostile_group_costs_one_check_per_worker_not_one_deadline_per_response():
    # 64 different towers: with a 60 s deadline and a 20 s budget for waiting, any check the guard missed would hold a
    # worker past the budget and leave the rest of the group busy.
    responses = [f"Final answer: $\\boxed{{{k}^{{{k}^{{{k}^{{{k}}}}}}}}}$" for k in range(3, 67)]
    rubric = {"essential": [{"criterion": "the answer", "weight": 1, "reference": "expr_verify(target='5')"}]}
    instance = Instance(id="towers", prompt="What is 2 + 3?", rubric=rubric, responses=responses)
    with tenant("hostile-group", 20.0):
        result = score_instance(instance, config=ScoringConfig(verify=LONG))
    statuses = Counter(c.status for record in result.records for c in record.criteria)
    assert statuses == Counter({"timeout": 64}), statuses
    assert result.rewards == [0.0] * 64
