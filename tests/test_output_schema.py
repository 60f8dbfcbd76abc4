"""The per-rubric JSON schema: valid draft 2020-12, in each answer format; what it accepts the output parser reads
without failure, and what the parser would reject it rejects."""

import json
import re

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genrm.choices import SCORING_FORMATS, copies_criterion, quotes_evidence
from genrm.methods.rubric.answer_schema import call_pattern, scoring_json_schema
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import exposed_plans
from verifiers.calls import parse_call
from verifiers.registry import REGISTRY

RUBRIC = Rubric.model_validate(
    {
        "essential": [
            {"criterion": "Names the component that makes steam.", "reference": "The boiler", "weight": 3},
            {"criterion": "Gives the component's box.", "reference": "bbox_verify(target=[[531, 118, 892, 435]])",
             "weight": 2},
        ],
        "additional": [
            {"criterion": "Reads the timer.", "reference": "time_verify(target='18:40', tformat='%H:%M')", "weight": 1}
        ],
    }
)  # fmt: skip
PLANS = plan_rubric(RUBRIC)
SCHEMAS = {answer_format: scoring_json_schema(PLANS, answer_format=answer_format) for answer_format in SCORING_FORMATS}
VALIDATORS = {answer_format: jsonschema.Draft202012Validator(schema) for answer_format, schema in SCHEMAS.items()}
GOOD = (1, "bbox_verify(predict=[[529, 119, 890, 433]])", "time_verify(predict='6:40 PM')")


def _output(credits=GOOD, answer_format="compact", **change):
    items = [
        {"criterion": p.criterion.criterion, "rationale": "seen in the last line", "credit": c}
        for p, c in zip(PLANS, credits, strict=True)
    ]
    if not copies_criterion(answer_format):
        items = [{k: v for k, v in item.items() if k != "criterion"} for item in items]
    if quotes_evidence(answer_format):  # a reference item quotes the response before its credit
        items = [{"rationale": item["rationale"], "quote": "the boiler", "credit": item["credit"]}
                 if plan.verifier is None else item for plan, item in zip(PLANS, items, strict=True)]  # fmt: skip
    value = {"thought": "short", "essential": items[:2], "additional": items[2:]}
    value.update(change)
    return value


@pytest.mark.parametrize("answer_format", SCORING_FORMATS)
def test_schema_is_valid_draft_2020_12_and_accepts_a_good_output(answer_format):
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[answer_format])
    VALIDATORS[answer_format].validate(_output(answer_format=answer_format))
    assert parse_judge_output(json.dumps(_output(answer_format=answer_format)), PLANS).ok


def test_the_compact_schema_has_no_criterion_and_the_rlr3_one_fixes_it():
    compact, rlr3 = (SCHEMAS[f]["properties"]["essential"]["prefixItems"][0] for f in ("compact", "rlr3"))
    assert list(compact["properties"]) == ["rationale", "credit"]
    assert list(rlr3["properties"]) == ["criterion", "rationale", "credit"]
    assert rlr3["properties"]["criterion"] == {"const": PLANS[0].criterion.criterion}
    # Each schema holds its own version only; the parser reads both.
    assert not VALIDATORS["compact"].is_valid(_output(answer_format="rlr3"))
    assert not VALIDATORS["rlr3"].is_valid(_output(answer_format="compact"))


_BAD_CREDITS = {
    "fuzzy-0.3": (0.3, "bbox_verify(predict=[[1, 2, 3, 4]])", "time_verify(predict='1:00')"),
    "fuzzy-string": ("1", "bbox_verify(predict=[[1, 2, 3, 4]])", "time_verify(predict='1:00')"),
    "number-for-call": (1, 0.5, "time_verify(predict='1:00')"),
    "wrong-verifier": (1, "point_verify(predict=[[1, 2]])", "time_verify(predict='1:00')"),
    "short-box": (1, "bbox_verify(predict=[[1, 2, 3]])", "time_verify(predict='1:00')"),
    "rubric-side": (1, "bbox_verify(target=[[1, 2, 3, 4]])", "time_verify(predict='1:00')"),
    "code": (1, "bbox_verify(predict=[[1, 2, 3, 4]])", "time_verify(predict=__import__('os'))"),
    "double-quotes": (1, "bbox_verify(predict=[[1, 2, 3, 4]])", 'time_verify(predict="1:00")'),
    "backslash": (1, "bbox_verify(predict=[[1, 2, 3, 4]])", "time_verify(predict='1:00\\n')"),
}
_BAD_CHANGES = {
    "missing-criterion": {"additional": []},
    "long-thought": {"thought": "x" * 401},
    "extra-field": {"extra": 1},
}


def _bad_outputs(answer_format):
    yield from (_output(credits, answer_format) for credits in _BAD_CREDITS.values())
    yield from (_output(answer_format=answer_format, **change) for change in _BAD_CHANGES.values())
    good = _output(answer_format=answer_format)
    yield {"essential": good["essential"], "additional": good["additional"]}  # no thought


@pytest.mark.parametrize("answer_format", SCORING_FORMATS)
def test_schema_rejects_what_the_parser_would_reject(answer_format):
    outputs = list(_bad_outputs(answer_format))
    assert len(outputs) == len(_BAD_CREDITS) + len(_BAD_CHANGES) + 1
    for output in outputs:
        assert not VALIDATORS[answer_format].is_valid(output), output


def test_criterion_text_is_fixed():
    output = _output(answer_format="rlr3")
    output["essential"][0]["criterion"] = "Something else."
    assert not VALIDATORS["rlr3"].is_valid(output)


@pytest.mark.parametrize("verifier", list(REGISTRY))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_call_the_pattern_allows_parses(verifier, data):
    call = data.draw(st.from_regex(call_pattern(verifier), fullmatch=True))
    parsed = parse_call(call, side="scoring")
    assert parsed.name == verifier


def test_patterns_accept_the_calls_judges_write():
    written = {
        "text_verify": "text_verify(predict='EMERGENCY EXIT')",
        "expr_verify": "expr_verify(predict='(3)/(4)')",
        "time_verify": "time_verify(predict='6:40 PM', pformat='%I:%M %p')",
        "list_verify": "list_verify(predict=['Bergen', 'Voss'])",
        "bbox_verify": "bbox_verify(predict=[[529, 119, 890, 433], [1.5, 2, 3, 4]])",
        "point_verify": "point_verify(predict=[])",
    }
    for verifier, call in written.items():
        assert re.fullmatch(call_pattern(verifier), call), call


def test_example_set_schemas(example_instances):
    for instance in example_instances:
        for exposure in ("minimal", "no_verifier"):
            plans = exposed_plans(plan_rubric(instance.rubric, instance.task_type), exposure)
            schema = scoring_json_schema(plans)
            jsonschema.Draft202012Validator.check_schema(schema)
            sections = schema["properties"]
            assert sections["essential"]["minItems"] == len(instance.rubric.essential)
            assert sections["additional"]["maxItems"] == len(instance.rubric.additional)


_ENGINE_CASES = {
    "expr_verify": ["expr_verify(predict='42')", "expr_verify(predict='')", "expr_verify(predict='3/4', x=1)"],
    "time_verify": ["time_verify(predict='18:15')", "time_verify(predict='6 PM', pformat='%I %p')"],
    "bbox_verify": [
        "bbox_verify(predict=[[0, 12.5, 300, 400]])",
        "bbox_verify(predict=[[040404, 0, 1, 2]])",
        "bbox_verify(predict=[[1, 2, 3]])",
        "bbox_verify(predict=[[1, 2, 3, 4], [5, 6, 7, 8]])",
        "bbox_verify(predict=[[1234567, 2, 3, 4]])",
        "bbox_verify(predict=[[-03, 2, 3, 4]])",
    ],
    "point_verify": [
        "point_verify(predict=[[040404,000000]])",
        "point_verify(predict=[[0,0]])",
        "point_verify(predict=[[0.1234567, 1]])",
        "point_verify(predict=[[10.25, -3]])",
        "point_verify(predict=[[1, 2, 3]])",
        "point_verify(predict=[])",
    ],
    "list_verify": ["list_verify(predict=['a', 'b'])", "list_verify(predict=['a',])", "list_verify(predict=[])"],
    "text_verify": ["text_verify(predict='North Gate')", "text_verify(predict='it\\'s')"],
}


@pytest.mark.parametrize("verifier", sorted(_ENGINE_CASES))
def test_xgrammar_reads_each_call_pattern_as_python_does(verifier):
    # The schema is enforced by XGrammar (in process and behind SGLang) and checked by Python's re: both must agree.
    xgrammar = pytest.importorskip("xgrammar")
    vocabulary = [chr(c) for c in range(32, 127)] + ["<eos>"]
    tokens = xgrammar.TokenizerInfo(vocabulary, stop_token_ids=[len(vocabulary) - 1])
    schema = json.dumps({"type": "string", "pattern": call_pattern(verifier)})
    grammar = xgrammar.GrammarCompiler(tokens).compile_json_schema(schema, any_whitespace=False)
    for call in _ENGINE_CASES[verifier]:
        matcher = xgrammar.GrammarMatcher(grammar)
        # accepted whole: every character, then the end of the answer
        by_xgrammar = bool(matcher.accept_string(json.dumps(call))) and matcher.accept_token(len(vocabulary) - 1)
        assert by_xgrammar == bool(re.match(call_pattern(verifier), call)), call
