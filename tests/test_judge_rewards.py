"""The RLVR rewards of the judge: format (valid, typed JSON) and content (values by the verifiers, fuzzy credits)."""

import json

import pytest

from genrm.methods.rubric.judge_data import labelled_answer, rlvr_record
from genrm.methods.rubric.judge_rewards import (
    arguments_score,
    content_reward,
    content_reward_func,
    format_reward,
    format_reward_func,
)
from genrm.methods.rubric.synthetic import generate_examples

EXAMPLES = generate_examples(70, seed=3)


def _by_verifier(name):
    return next(e for e in EXAMPLES if e.plans()[0].verifier == name and e.labels[0].credit > 0.8)


def _answer(example, **credits):
    answer = labelled_answer(example)
    for path, credit in credits.items():
        section, index = path.rstrip("]").split("[")
        answer[section][int(index)]["credit"] = credit
    return json.dumps(answer)


@pytest.mark.parametrize(
    ("text", "reward"),
    [
        ('{"thought": "", "essential": [{"criterion": "c", "rationale": "", "credit": 1}], "additional": []}', 1.0),
        ('<think>let me see</think>\n{"thought": "", "essential": [{"criterion": "c", "credit": "x"}]}', 1.0),
        ('Here it is: {"thought": "", "essential": []}', 0.0),
        ('{"thought": "", "essential": [{"criterion": "c", "rationale": ""}]}', 0.0),
        ('{"thought": "", "essential": [{"criterion": 3, "credit": 1}]}', 0.0),
        ('{"thought": "", "essential": [], "extra": 1}', 0.0),
        ("not json", 0.0),
        ("", 0.0),
    ],
)
def test_format_reward(text, reward):
    assert format_reward(text) == reward


def test_format_against_the_rubric_needs_every_slot_filled_with_the_right_type():
    expr = _by_verifier("expr_verify")
    plans = expr.plans()
    assert format_reward(json.dumps(labelled_answer(expr)), plans) == 1.0
    dropped = labelled_answer(expr)
    dropped["additional"] = []
    assert format_reward(json.dumps(dropped), None) == 1.0  # the generic shape alone passes
    assert format_reward(json.dumps(dropped), plans) == 0.0
    assert format_reward(_answer(expr, **{"essential[0]": 1}), plans) == 0.0  # a credit where a call is needed
    assert format_reward(_answer(expr, **{"essential[0]": "text_verify(predict='1')"}), plans) == 0.0
    renamed = labelled_answer(expr)
    renamed["essential"][0]["criterion"] = "Something else entirely."
    assert format_reward(json.dumps(renamed), plans) == 0.0


def test_the_labelled_answer_earns_full_content():
    for example in EXAMPLES:
        assert content_reward(json.dumps(labelled_answer(example)), example) == 1.0


def test_values_are_judged_by_the_verifier_not_by_string():
    expr = _by_verifier("expr_verify")
    value = expr.labels[0].call.split("'")[1]
    rewritten = f"expr_verify(predict='{value}.0')"
    assert arguments_score(expr.plans()[0], expr.labels[0].call, rewritten) == 1.0
    time = _by_verifier("time_verify")
    assert arguments_score(time.plans()[0], time.labels[0].call, time.labels[0].call) == 1.0
    box = _by_verifier("bbox_verify")
    x1, y1, x2, y2 = json.loads(box.labels[0].call.split("predict=")[1].rstrip(")"))[0]
    shifted = f"bbox_verify(predict=[[{x1 + 3}, {y1}, {x2 + 3}, {y2}]])"
    assert 0.9 < arguments_score(box.plans()[0], box.labels[0].call, shifted) < 1.0


def test_wrong_values_wrong_credits_and_wrong_forms_lose_content():
    expr = _by_verifier("expr_verify")
    wrong_value = _answer(expr, **{"essential[0]": "expr_verify(predict='123456')"})
    assert content_reward(wrong_value, expr) == pytest.approx(0.5)  # one of two criteria right
    wrong_credit = _answer(expr, **{"additional[0]": 0})
    assert content_reward(wrong_credit, expr) == pytest.approx(0.5)
    wrong_path = _answer(expr, **{"essential[0]": 1})
    assert content_reward(wrong_path, expr) == pytest.approx(0.5)
    assert content_reward("{not json", expr) == 0.0


def test_no_value_is_matched_only_by_no_value_and_the_empty_value_only_by_the_empty_value():
    none = next(e for e in EXAMPLES if e.labels[0].call and "predict=None" in e.labels[0].call)
    plan, call = none.plans()[0], none.labels[0].call
    assert arguments_score(plan, call, call) == 1.0
    assert arguments_score(plan, call, call.replace("None", "'7'")) == 0.0
    assert arguments_score(plan, call, call.replace("None", "''")) == 0.0  # "there is none" is a value
    empty = call.replace("None", "''")
    assert arguments_score(plan, empty, empty) == 1.0
    assert arguments_score(plan, empty, call) == 0.0


def test_trl_reward_functions_read_conversational_completions():
    rows = [rlvr_record(e) for e in EXAMPLES[:3]]
    completions = [[{"role": "assistant", "content": json.dumps(labelled_answer(e))}] for e in EXAMPLES[:3]]
    completions[2] = [{"role": "assistant", "content": "no"}]
    labels = [row["judge_label"] for row in rows]
    assert format_reward_func(completions, judge_label=labels) == [1.0, 1.0, 0.0]
    assert content_reward_func(completions, judge_label=labels) == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="judge_label"):
        content_reward_func(completions)
    with pytest.raises(ValueError, match="judge_label"):
        format_reward_func(completions)


def test_a_value_the_response_does_not_state_earns_no_content_however_near():
    # held to grounding as when it is scored: the verifier would take 440.0 for 440 and a shifted box at its IoU, but
    # neither is what the response wrote, and a judge rewarded for them learns to approximate instead of to copy
    expr = _by_verifier("expr_verify")
    value = expr.labels[0].call.split("'")[1]
    assert f"{value}.0" not in expr.response
    labelled = content_reward(json.dumps(labelled_answer(expr)), expr)
    rewritten = content_reward(_answer(expr, **{"essential[0]": f"expr_verify(predict='{value}.0')"}), expr)
    per_criterion = 1 / len(expr.labels)
    assert labelled == 1.0 and rewritten == pytest.approx(1.0 - per_criterion)
    box = _by_verifier("bbox_verify")
    x1, y1, x2, y2 = json.loads(box.labels[0].call.split("predict=")[1].rstrip(")"))[0]
    shifted = _answer(box, **{"essential[0]": f"bbox_verify(predict=[[{x1 + 3}, {y1}, {x2 + 3}, {y2}]])"})
    assert content_reward(shifted, box) == pytest.approx(1.0 - 1 / len(box.labels))
