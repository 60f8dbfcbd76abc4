"""The versions of the rubric judge's format: ``compact`` (items by position, the default), ``rlr3`` (each item copies
its criterion) and ``brief`` (compact's answer under a short system prompt). Prompt, schema, training records and the
method's option ask for one; the reader takes every version; scores do not depend on which."""

import json

import jsonschema
import pytest
from fake_judge import AppServer, make_app

from genrm.choices import DEFAULT_SCORING_FORMAT, SCORING_FORMATS
from genrm.engine import JudgeSpec, make_judge, run_blocking
from genrm.methods import make_method
from genrm.methods.rubric.answer_schema import scoring_json_schema
from genrm.methods.rubric.judge_data import labelled_answer, sft_record
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.judge_rewards import format_reward
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import build_scoring_prompt, scoring_system_prompt
from genrm.methods.rubric.synthetic import synthetic_splits
from genrm.methods.run import score_instance
from genrm.training.common import JudgeDataArguments

RUBRIC = Rubric.model_validate(
    {
        "essential": [{"criterion": "States the result.", "reference": "expr_verify(target='12')", "weight": 3}],
        "additional": [{"criterion": "Shows the product.", "reference": "3 * 4", "weight": 1}],
    }
)
PLANS = plan_rubric(RUBRIC)
CALL, CREDIT = "expr_verify(predict='12')", 1


def _answer(copy: bool, first: str = "States the result.", quote: bool = False) -> str:
    items = [{"criterion": first, "rationale": "last line", "credit": CALL},
             {"criterion": "Shows the product.", "rationale": "shown", "credit": CREDIT}]  # fmt: skip
    if not copy:
        items = [{k: v for k, v in item.items() if k != "criterion"} for item in items]
    if quote:
        items[1] = {"rationale": "shown", "quote": "3 * 4", "credit": CREDIT}
    return json.dumps({"thought": "fine", "essential": items[:1], "additional": items[1:]})


def test_the_default_is_compact():
    assert DEFAULT_SCORING_FORMAT == "compact"
    assert make_method("rubric").config.answer_format == "compact"


def test_the_reader_takes_both_versions_alike():
    compact, rlr3 = parse_judge_output(_answer(False), PLANS), parse_judge_output(_answer(True), PLANS)
    assert compact.ok and rlr3.ok
    assert [(c.call, c.credit, c.rationale) for c in compact.criteria] == [
        (c.call, c.credit, c.rationale) for c in rlr3.criteria
    ]
    assert [c.call for c in compact.criteria] == [CALL, None] and compact.criteria[1].credit == 1.0


def test_a_copied_criterion_is_still_checked():
    parsed = parse_judge_output(_answer(True, first="Names the capital."), PLANS)
    assert parsed.criteria[0].failure == "criterion_mismatch" and parsed.criteria[1].failure is None


@pytest.mark.parametrize("answer_format", SCORING_FORMATS)
def test_prompt_schema_and_labelled_answer_ask_for_the_same_version(answer_format):
    copies = answer_format == "rlr3"
    system = scoring_system_prompt("minimal", answer_format)
    assert ("copied exactly" in system) is copies
    assert ('"criterion": "...", "rationale"' in system) is copies
    assert '"rationale": "...", "credit": ...' in system
    schema = scoring_json_schema(PLANS, answer_format=answer_format)
    quotes = answer_format == "evidence"
    jsonschema.validate(json.loads(_answer(copies, quote=quotes)), schema)
    assert not jsonschema.Draft202012Validator(schema).is_valid(json.loads(_answer(not copies, quote=quotes)))
    if quotes:  # the quote is required of a reference item, and only there
        assert not jsonschema.Draft202012Validator(schema).is_valid(json.loads(_answer(copies)))
    # the training targets are written in the version asked for, and fill the schema
    example = synthetic_splits(8)[0][0]
    answer = labelled_answer(example, answer_format=answer_format)
    assert all(("criterion" in item) is copies for item in answer["essential"] + answer["additional"])
    example_schema = scoring_json_schema(example.plans(), answer_format=answer_format)
    jsonschema.validate(answer, example_schema)
    assert format_reward(json.dumps(answer), example.plans()) == 1.0
    record = sft_record(example, answer_format=answer_format)
    assert record["prompt"][0]["content"] == system
    assert json.loads(record["completion"][0]["content"]) == answer


def test_the_rubric_method_option_and_its_errors():
    assert make_method("rubric", options={"answer_format": "rlr3"}).config.answer_format == "rlr3"
    with pytest.raises(
        ValueError, match="the rubric option answer_format: Input should be 'compact', 'rlr3', 'brief' or"
    ):
        make_method("rubric", options={"answer_format": "v9"})
    with pytest.raises(ValueError, match="the rubric method takes no option swap; it takes tau, answer_format"):
        make_method("rubric", options={"swap": True})


def test_judge_training_follows_the_method_options():
    rlr3 = JudgeDataArguments(method_options='{"answer_format": "rlr3"}').training()
    compact = JudgeDataArguments(method_options={}).training()  # a recipe may give a mapping
    example = synthetic_splits(8)[0][0]
    copied = json.loads(rlr3.sft_record(example, "minimal")["completion"][0]["content"])["essential"][0]
    positional = json.loads(compact.sft_record(example, "minimal")["completion"][0]["content"])["essential"][0]
    assert "criterion" in copied and "criterion" not in positional
    with pytest.raises(ValueError, match="^method_options: must be a JSON object: Expecting property name"):
        JudgeDataArguments(method_options="{answer_format: rlr3}").training()
    with pytest.raises(ValueError, match="^method_options: must be a JSON object, not list"):
        JudgeDataArguments(method_options="[]").training()
    with pytest.raises(ValueError, match="claimdiff judge is trained on the json answer format"):
        JudgeDataArguments(method="claimdiff", method_options='{"answer_format": "blocks"}').training()


def test_both_versions_score_alike_over_http(example_instances):
    # The stand-in judge reads the system message and answers in the version it asks for; its requests carry the
    # schema of that version, which it validates its answer against.
    app = make_app()
    rewards = {}
    with AppServer(app) as server:
        for answer_format in SCORING_FORMATS:
            method = make_method("rubric", options={"answer_format": answer_format})
            judge = make_judge(JudgeSpec.parse(f"openai:fake-judge@{server.root}/v1"))
            try:
                results = [score_instance(method, instance, judge) for instance in example_instances[:4]]
            finally:
                run_blocking(judge.aclose())
            rewards[answer_format] = [r.rewards for r in results]
            body = app.state.requests[-1]
            item = body["response_format"]["json_schema"]["schema"]["properties"]["essential"]["prefixItems"][0]
            assert ("criterion" in item["properties"]) is (answer_format == "rlr3")
            assert body["messages"][0]["content"] == scoring_system_prompt("minimal", answer_format)
    assert rewards["compact"] == rewards["rlr3"] == rewards["brief"]
    assert any(r is not None and r > 0 for group in rewards["compact"] for r in group)
    assert all(r is not None for group in rewards["compact"] for r in group)


def test_build_scoring_prompt_passes_the_version_on():
    prompt = build_scoring_prompt("What is 3 * 4?", PLANS, "12", answer_format="rlr3")
    assert prompt.system == scoring_system_prompt("minimal", "rlr3") != scoring_system_prompt("minimal")


@pytest.mark.parametrize("exposure", ["minimal", "unlimited", "no_verifier", "vlm"])
def test_the_brief_version_keeps_what_the_items_do_not_say(exposure):
    full, brief = scoring_system_prompt(exposure), scoring_system_prompt(exposure, "brief")
    # the tools' reference is most of the full prompt; without tools (no_verifier) the item rules are
    assert len(brief) < len(full) / (1.5 if exposure == "no_verifier" else 3)
    # the tools' reference is left out (each tool item shows its signature); the answer's shape is compact's
    assert "Scoring tools" not in brief and "text_verify" not in brief
    assert ("Scoring tools" in full) is (exposure != "no_verifier")
    assert '{"thought": "...", "essential": [{"rationale": "...", "credit": ...}]' in brief
    if exposure == "no_verifier":
        assert "ground truth" in brief and "tool" not in brief
    else:
        # what a judge cannot read off the items: the targets' visibility and the literal-call rules
        assert ("(shown as its reference)" in brief) is (exposure == "unlimited")
        assert ("(not shown to you)" in brief) is (exposure != "unlimited")
        assert "single quotes" in brief and "'' or []" in brief and "do not judge it" in brief
    # the fence's note stays in the user message, which every version shares
    prompt = build_scoring_prompt("What is 3 * 4?", PLANS, "12", exposure, answer_format="brief")
    assert prompt.user == build_scoring_prompt("What is 3 * 4?", PLANS, "12", exposure).user
    assert "It is data to evaluate" in prompt.user and prompt.system == brief
