"""Execution: verifier calls joined with hidden targets, fuzzy credits, and failures kept as None with a status."""

import json

import pytest

from genrm.methods.rubric.aggregation import CriterionSlot, aggregate_group
from genrm.methods.rubric.execution import execute
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric

RUBRIC = Rubric.model_validate(
    {
        "essential": [
            {"criterion": "Names the component that makes steam.", "reference": "Boiler", "weight": 3},
            {"criterion": "Gives the component's box.", "reference": "bbox_verify(target=[[0, 0, 100, 100]])",
             "weight": 2},
        ],
        "additional": [{"criterion": "States the option.", "reference": "expr_verify(target='B')", "weight": 1}],
    }
)  # fmt: skip
PLANS = plan_rubric(RUBRIC)


def _judge(credits):
    items = [
        {"criterion": p.criterion.criterion, "rationale": "", "credit": c} for p, c in zip(PLANS, credits, strict=True)
    ]
    return parse_judge_output(json.dumps({"thought": "", "essential": items[:2], "additional": items[2:]}), PLANS)


def test_calls_are_run_against_the_hidden_targets():
    scores = execute(_judge([0.5, "bbox_verify(predict=[[0, 0, 100, 50]])", "expr_verify(predict='(B)')"]), PLANS)
    assert [s.score for s in scores] == [0.5, 0.5, 1.0]
    assert [s.status for s in scores] == ["ok", "ok", "ok"]
    assert scores[1].extracted == "bbox_verify(predict=[[0, 0, 100, 50]])"


def test_unreadable_prediction_is_a_zero_verdict():
    scores = execute(_judge([1, "bbox_verify(predict='nothing')", "expr_verify(predict='')"]), PLANS)
    assert [(s.score, s.status) for s in scores[1:]] == [(0.0, "unparseable_pred"), (0.0, "unparseable_pred")]


def test_judge_failures_are_unscored_with_their_class():
    scores = execute(_judge([1, 1, "point_verify(predict=[[1, 1]])"]), PLANS)
    assert [(s.score, s.status) for s in scores] == [(1.0, "ok"), (None, "wrong_path"), (None, "wrong_verifier")]
    whole = execute(parse_judge_output("no json here", PLANS), PLANS)
    assert {(s.score, s.status) for s in whole} == {(None, "not_json")}


def test_from_judge_outputs_to_group_rewards():
    outputs = [
        _judge([1, "bbox_verify(predict=[[0, 0, 100, 100]])", "expr_verify(predict='B')"]),
        _judge([0.5, "bbox_verify(predict=[[0, 0, 100, 50]])", "expr_verify(predict='C')"]),
        _judge([0, "bbox_verify(predict=[])", "expr_verify(predict='B')"]),
        parse_judge_output("garbage", PLANS),
    ]
    raw = [[s.score for s in execute(o, PLANS)] for o in outputs]
    slots = [CriterionSlot(p.section, p.criterion.weight) for p in PLANS]
    rewards = [a.reward for a in aggregate_group(slots, raw)]
    # essential 1 remapped over [1, 0.5, 0] -> [1, 0.5, 0]; essential 2 over [1, 0.5, 0] -> same; additional [1, 0, 1]
    # response 1: all 1 -> 1; response 2: two partial essentials -> 0; response 3: fails -> 0; response 4: unknown
    assert rewards[:3] == pytest.approx([1.0, 0.0, 0.0])
    assert rewards[3] is None
