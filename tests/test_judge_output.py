"""Reading judge output: JSON in fences, after reasoning, before text; every failure classified; never an exception."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genrm.methods.answer_json import extract_json_object
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric

BOX = "bbox_verify(target=[[531, 118, 892, 435]])"
RUBRIC = Rubric.model_validate(
    {
        "essential": [
            {"criterion": "Names the component that makes steam.", "reference": "Boiler", "weight": 3},
            {"criterion": "Gives the component's box.", "reference": BOX, "weight": 2},
        ],
        "additional": [
            {"criterion": "States the option letter.", "reference": "expr_verify(target='B')", "weight": 1}
        ],
    }
)
PLANS = plan_rubric(RUBRIC)


def _output(credits=(1, "bbox_verify(predict=[[529, 119, 890, 433]])", "expr_verify(predict='B')"), **changes):
    texts = [p.criterion.criterion for p in PLANS]
    items = [{"criterion": t, "rationale": "because", "credit": c} for t, c in zip(texts, credits, strict=True)]
    value = {"thought": "checked", "essential": items[:2], "additional": items[2:]}
    value.update(changes)
    return value


GOOD = json.dumps(_output())


@pytest.mark.parametrize(
    "text",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"<think>Let me look at {{the}} response.</think>\n{GOOD}",
        f"Let me look.</think>{GOOD}",
        f"Here is my evaluation:\n{GOOD}\nI hope this helps {{really}}.",
        f"```\n{GOOD}\n```\nDone.",
        f"draft: {{not json}} then {GOOD}",
    ],
)
def test_accepted_wrappings(text):
    parsed = parse_judge_output(text, PLANS)
    assert parsed.ok, parsed
    assert [c.credit for c in parsed.criteria] == [1.0, None, None]
    assert parsed.criteria[1].call == "bbox_verify(predict=[[529, 119, 890, 433]])"
    assert parsed.thought == "checked"


@pytest.mark.parametrize(
    "text, failure, words",
    [
        ("I cannot evaluate this.", "not_json", "no JSON object"),
        ("", "not_json", "no JSON object"),
        ("[1, 2, 3]", "not_json", "no JSON object"),
        (json.dumps({"thought": "x"}), "schema", "essential: Field required"),
        (json.dumps(_output(essential=[{"criterion": "a", "credit": [1]}])), "schema", "credit"),
        (json.dumps(_output(additional=[])), "criterion_mismatch", "additional has 0 criteria; the rubric has 1"),
        (json.dumps(_output(extra="x")), "schema", "extra"),
    ],
)
def test_whole_output_failures(text, failure, words):
    parsed = parse_judge_output(text, PLANS)
    assert parsed.failure == failure and words in parsed.reason and not parsed.ok


@pytest.mark.parametrize(
    "credits, index, failure, words",
    [
        ((0.7, "bbox_verify(predict=[])", "expr_verify(predict='B')"), 0, "schema", "not 0, 0.5 or 1"),
        (("text_verify(predict='Boiler')", "bbox_verify(predict=[])", "expr_verify(predict='B')"), 0, "wrong_path",
         "fuzzy criterion"),
        ((1, 1, "expr_verify(predict='B')"), 1, "wrong_path", "must be a bbox_verify(predict=...) call"),
        ((1, "point_verify(predict=[[1, 2]])", "expr_verify(predict='B')"), 1, "wrong_verifier", "calls point_verify"),
        ((1, "box_verify(predict=[[1, 2]])", "expr_verify(predict='B')"), 1, "wrong_verifier", "unknown verifier"),
        ((1, "bbox_verify(predict=[[1, 2, 3, 4]]", "expr_verify(predict='B')"), 1, "bad_call", "not a valid call"),
        ((1, "bbox_verify(target=[[1, 2, 3, 4]])", "expr_verify(predict='B')"), 1, "bad_call", "rubric side"),
        ((1, "bbox_verify(predict=[])", "expr_verify(predict=B)"), 2, "bad_call", "variable name"),
    ],
)  # fmt: skip
def test_per_criterion_failures(credits, index, failure, words):
    parsed = parse_judge_output(json.dumps(_output(credits)), PLANS)
    assert parsed.failure is None and not parsed.ok
    judged = parsed.criteria[index]
    assert judged.failure == failure and words in judged.reason
    assert [c.failure for i, c in enumerate(parsed.criteria) if i != index] == [None, None]


@pytest.mark.parametrize("credit", ["0.5", "1", "1.0", True, False])
def test_a_fuzzy_credit_is_read_strictly_as_a_number(credit):
    # pydantic's lax mode read true, "1" and "1.0" as 1.0: a credit the judge never wrote as a number
    parsed = parse_judge_output(
        json.dumps(_output((credit, "bbox_verify(predict=[])", "expr_verify(predict='')"))), PLANS
    )
    assert parsed.criteria[0].failure == "schema" and parsed.criteria[0].credit is None
    assert "0, 0.5 or 1" in parsed.criteria[0].reason
    assert [c.failure for c in parsed.criteria[1:]] == [None, None]


def test_criterion_text_must_be_the_rubric_s():
    value = _output()
    value["essential"][0]["criterion"] = "Something else entirely."
    parsed = parse_judge_output(json.dumps(value), PLANS)
    assert parsed.criteria[0].failure == "criterion_mismatch"
    value["essential"][0]["criterion"] = "  names the component that makes steam "  # case, spaces, final period
    assert parse_judge_output(json.dumps(value), PLANS).criteria[0].failure is None


def test_a_raw_control_character_in_a_string_is_not_json_and_an_escaped_one_is_read():
    # the answer grammar admits none (genrm.engine.answer_grammar); an answer that holds one is a failure, not a reward
    text = GOOD.replace('"checked"', '"line one\nline\ttwo\x01"')
    assert "\n" in text and "\\n" not in text
    assert not parse_judge_output(text, PLANS).ok
    parsed = parse_judge_output(GOOD.replace('"checked"', json.dumps("line one\nline\ttwo\x01")), PLANS)
    assert parsed.ok and parsed.thought == "line one\nline\ttwo\x01"


def test_extraction_prefers_the_last_fenced_object():
    text = '```json\n{"a": 1}\n```\nrevised:\n```json\n{"a": 2}\n```'
    assert extract_json_object(text) == {"a": 2}


@pytest.mark.parametrize(
    "text, found",
    [('{"a": 1}\nrevised: {"a": 2}', {"a": 2}),  # a revision is read without fences as with them
     ('{"a": {"b": 1}} and text', {"a": {"b": 1}}),  # an object inside another is part of it, not a revision
     ('{"a": 1} then {"b": broken', {"a": 1}), ('\\frac{1}{2} {"a": 1}', {"a": 1}), ("no object {here}", None)],
)  # fmt: skip
def test_extraction_without_fences_takes_the_last_whole_object(text, found):
    assert extract_json_object(text) == found


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.builds(lambda a, b: a + GOOD[: len(b)] + b, st.text(max_size=20), st.text()))
def test_any_string_gives_a_classified_result(text):
    parsed = parse_judge_output(text, PLANS)
    assert parsed.failure in {None, "not_json", "schema", "criterion_mismatch"}
    assert all(c.failure in {None, "schema", "criterion_mismatch", "wrong_path", "wrong_verifier", "bad_call"}
               for c in parsed.criteria)  # fmt: skip


def test_deeply_nested_json_is_not_a_crash():
    assert parse_judge_output("[" * 100_000 + "]" * 100_000, PLANS).failure == "not_json"
    assert parse_judge_output('{"a":' * 50_000 + "1" + "}" * 50_000, PLANS).failure in {"not_json", "schema"}
