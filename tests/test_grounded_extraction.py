"""Grounded extraction: a model judge's value counts only where the response states it (verifiers.provenance)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genrm.methods.master_keys import MASTER_KEYS
from genrm.methods.rubric.execution import execute
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.readers import GroupRequest, RuleReader
from genrm.methods.rubric.synthetic import generate_examples
from verifiers.calls import parse_call
from verifiers.provenance import find_evidence, find_prediction
from verifiers.registry import prediction_not_found

FOUND = [
    ("expression", "3/4", r"The share is $\frac{3}{4}$."),
    ("expression", "3/4", r"The share is \(\dfrac34\)."),
    ("expression", "(x+1)/2", r"\boxed{\frac{x+1}{2}}"),
    ("expression", "sqrt(2)", r"It is $\sqrt{2}$."),
    ("expression", "sqrt(2)", "It is √2."),
    ("expression", "9π", r"The area is $9\pi$."),
    ("expression", "9pi", "The area is 9π."),
    ("expression", "1000", "There are 1,000 of them."),
    ("expression", "1,000", "There are 1000 of them."),
    ("expression", "B", "The answer is (b)."),
    ("expression", "2*3", r"$2 \times 3$"),
    ("expression", "2 times 3", r"$2 \times 3$"),
    ("expression", "x^2", "x**2"),
    ("expression", "90°", r"an angle of $90^\circ$"),
    ("expression", "12", "Ｔhe answer is １２."),  # full-width forms (NFKC)
    ("expression", "-3", "It is \u22123."),  # the minus sign
    ("text", "Fresh Bakery", "The sign says: **Fresh Bakery**."),
    ("text", "fresh bakery", "The sign says FRESH BAKERY."),  # with ignore_case, below
    ("text", "北京", "我去北京了"),
    ("time", "2:30 pm", "It leaves at 2:30 PM."),
    ("time", "March 5, 2024", "It starts on March 5, 2024."),
]


@pytest.mark.parametrize(("kind", "value", "response"), FOUND)
def test_values_the_response_states_are_found(kind, value, response):
    assert find_prediction(kind, value, response, {"ignore_case": True} if value == "fresh bakery" else {}) is None


NOT_FOUND = [
    ("expression", "12", "The answer is 123."),
    ("expression", "12", ":"),
    ("expression", "B", "Because it is so."),
    ("expression", "3.5", "It is 13.5."),
    ("expression", "3/5", r"$\frac{3}{4}$"),
    ("expression", "x+1", "x-1"),
    ("text", "Fresh Bakery", "The sign says FRESH BAKERY."),  # the rubric does not ignore case
    ("text", "Fresh Bakery", "The sign says Fresh Bakry."),  # the judge corrected the response
    ("text", "NewYork", "I live in New York."),  # the rubric does not ignore white space
    ("time", "14:30", "It leaves at 2:30 PM."),  # the judge rewrote the time
    ("expression", "12", "Solution"),
]


@pytest.mark.parametrize(("kind", "value", "response"), NOT_FOUND)
def test_values_the_response_does_not_state_are_not_found(kind, value, response):
    assert find_prediction(kind, value, response, {}) is not None


def test_rubric_options_say_what_may_differ():
    assert find_prediction("text", "NewYork", "I live in New York.", {"ignore_space": True}) is None
    assert find_prediction("text", "New York", "I live in NewYork.", {"ignore_space": True}) is None
    assert find_prediction("text", "ewYor", "I live in New York.", {"ignore_space": True}) is not None
    assert find_prediction("list", ("K-34", "A-12S"), "Parts: A-12S, K-34, X-99.", {}) is None
    assert "Z-10" in find_prediction("list", ("K-34", "Z-10"), "Parts: A-12S, K-34, X-99.", {})


def test_boxes_and_points_are_their_numbers_in_order():
    response = "The dog is at [122, 338, 458, 884] and the cat at (10, 20)."
    assert find_prediction("boxes", [[122, 338, 458, 884]], response, {}) is None
    assert find_prediction("boxes", [122, 338, 458, 884], response, {}) is None  # one box, written flat
    assert find_prediction("points", [[10, 20]], response, {}) is None
    assert find_prediction("boxes", [[338, 122, 458, 884]], response, {}) is not None  # reordered numbers
    assert find_prediction("boxes", [[122, 338, 458, 885]], response, {}) is not None
    assert find_prediction("points", [[1, 338]], "x1 = 338", {}) is not None  # the 1 of x1 is no number
    assert find_prediction("points", [[20, 10], [10, 20]], "(10, 20) and (20, 10)", {}) is None  # any order


def test_no_value_and_the_empty_value_are_not_looked_for():
    assert find_prediction("expression", None, ":", {}) is None
    assert find_prediction("list", (), ":", {}) is None
    assert find_prediction("boxes", [], ":", {}) is None


def test_a_value_without_tokens_is_found_as_its_characters():
    assert find_prediction("text", ":", "Solution :", {}) is None
    assert find_prediction("text", "::", "Solution :", {}) is not None


def test_prediction_not_found_reads_the_call_as_the_verifier_does():
    keywords = parse_call("list_verify(predict=\"['A-12S', 'K-34']\")", side="scoring").as_dict()
    assert prediction_not_found("list_verify", {"target": ["A-12S"]}, keywords, "A-12S and K-34") is None
    assert prediction_not_found("list_verify", {"target": ["A-12S"]}, keywords, "A-12S only") is not None
    # a call the verifier cannot read is its business (scored 0 as unreadable), not an invented value
    assert prediction_not_found("bbox_verify", {"target": [[0, 0, 1, 1]]}, {"predict": "nothing"}, ":") is None


RUBRIC = Rubric.model_validate(
    {
        "essential": [
            {"criterion": "States the total.", "reference": "expr_verify(target='12')", "weight": 3},
            {"criterion": "Gives the box.", "reference": "bbox_verify(target=[[0, 0, 100, 100]])", "weight": 2},
        ],
        "additional": [{"criterion": "Copies the sign.", "reference": "text_verify(target='Open')", "weight": 1}],
    }
)  # fmt: skip
PLANS = plan_rubric(RUBRIC)


def _judgement(calls):
    items = [{"rationale": "", "credit": call} for call in calls]
    return parse_judge_output(json.dumps({"thought": "", "essential": items[:2], "additional": items[2:]}), PLANS)


def test_an_invented_value_is_scored_as_no_value_with_its_status_and_the_call_kept():
    calls = ["expr_verify(predict='12')", "bbox_verify(predict=[[0, 0, 100, 100]])", "text_verify(predict='Open')"]
    invented = execute(_judgement(calls), PLANS, response=":")
    assert [(s.score, s.status) for s in invented] == [(0.0, "ungrounded")] * 3
    assert invented[0].extracted == calls[0]
    assert "'12' is not asserted in the response" in invented[0].reason
    stated = execute(_judgement(calls), PLANS, response="Open: 12 items in [0, 0, 100, 100].")
    assert [(s.score, s.status) for s in stated] == [(1.0, "ok")] * 3
    # what turning grounding off costs: the invented values are paid in full
    assert [s.score for s in execute(_judgement(calls), PLANS, response=":", grounded=False)] == [1.0] * 3


def test_the_labels_of_the_synthetic_set_are_all_grounded():
    """The false-ungrounded rate on labelled answers: 0 (every label copies its value, and quotes its evidence, from
    its response)."""
    checked = quoted = 0
    for example in generate_examples(120, seed=3):
        for plan, label in zip(example.plans(), example.labels, strict=True):
            if label.call is None:  # a fuzzy label: its credit above 0 comes with a quote that is evidence
                assert label.credit == 0 or find_evidence(label.quote, example.response) is None, label
                quoted += label.credit > 0
                continue
            keywords = parse_call(label.call, side="scoring").as_dict()
            assert prediction_not_found(plan.verifier, plan.target_kwargs, keywords, example.response) is None, (
                label.call,
                example.response,
            )
            checked += 1
    assert checked > 300 and quoted > 100


def test_the_rule_readers_values_are_found_by_the_same_check():
    """What the rule reader copies out of a response is found there, on the synthetic responses and the master keys:
    the two readings of a response agree."""
    examples = generate_examples(60, seed=5)
    for example in examples:
        plans = example.plans()
        responses = [example.response, *MASTER_KEYS.values(), f"{example.response} Solution"]
        request = GroupRequest(example.prompt, plans, responses, None, "minimal")
        for response, parsed in zip(responses, RuleReader().read_group(request), strict=True):
            for judged in parsed.criteria:
                if judged.call is None:
                    continue
                keywords = parse_call(judged.call, side="scoring").as_dict()
                plan = judged.plan
                assert prediction_not_found(plan.verifier, plan.target_kwargs, keywords, response) is None, (
                    judged.call,
                    response,
                )


_OPENERS = [
    "",
    *MASTER_KEYS.values(),
    "Answer:",
    "Final answer:",
    "The answer is",
    "Solution:",
    "解答：",
    "**Answer**",
]
_TARGET_CALLS = [
    "expr_verify(predict='12')", "expr_verify(predict='B')", "expr_verify(predict='3/4')",
    "bbox_verify(predict=[[0, 0, 100, 100]])", "text_verify(predict='Open')", "text_verify(predict='open')",
]  # fmt: skip
PROPERTY_PLANS = plan_rubric(Rubric.model_validate({"essential": [
    {"criterion": "States the total.", "reference": "expr_verify(target='12')", "weight": 3},
    {"criterion": "Chooses the option.", "reference": "expr_verify(target='B')", "weight": 3},
    {"criterion": "States the share.", "reference": "expr_verify(target='3/4')", "weight": 3},
    {"criterion": "Gives the box.", "reference": "bbox_verify(target=[[0, 0, 100, 100]])", "weight": 2},
    {"criterion": "Copies the sign.", "reference": "text_verify(target='Open')", "weight": 1},
    {"criterion": "Copies the sign, any case.", "reference": "text_verify(target='Open', ignore_case=True)",
     "weight": 1},
]}))  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    opener=st.sampled_from(_OPENERS),
    punctuation=st.text(alphabet=" \n\t.,:;!?-*#()[]{}'\"`…。，：", max_size=40),
    order=st.booleans(),
)
def test_punctuation_and_bare_openers_never_get_credit_from_a_grounded_judgement(opener, punctuation, order):
    """Whatever a judge extracts from a response of punctuation and a bare opener (here the worst case: each target
    itself), no verifiable criterion pays."""
    response = opener + punctuation if order else punctuation + opener
    items = [{"rationale": "", "credit": call} for call in _TARGET_CALLS]
    parsed = parse_judge_output(json.dumps({"thought": "", "essential": items, "additional": []}), PROPERTY_PLANS)
    assert parsed.ok
    for score in execute(parsed, PROPERTY_PLANS, response=response):
        assert score.score == 0.0, (score.extracted, response, score.status)


# Evidence for fuzzy credit: the evidence answer format's quotes


def test_a_quote_is_evidence_when_found_with_content():
    response = "The sign above the door says Open."
    assert find_evidence("above the door", response) is None
    assert find_evidence("Above the Door", response) is None  # case folded
    assert "not in the response" in find_evidence("below the door", response)
    for bare in ("Solution", "Solution :", ":", "Let's solve this problem step by step.", "解答", "Thought process:"):
        assert "holds no content" in find_evidence(bare, f"{bare} {response}")
    assert "no quote" in find_evidence("", response) and "no quote" in find_evidence(None, response)


def test_a_lone_letter_is_no_evidence():
    # a judge paid master keys quoting 'X', found in any response that writes "10 x 7"
    response = "Each rack holds 10 x 7 = 70 cups, so I count 8 racks: 560. Part B-23X. 答 是 五"
    for letter in ("X", "x", "I", " (B) ", "x ="):
        assert "holds no content" in find_evidence(letter, response), letter
    for quote in ("10 x 7", "B-23X", "70", "是"):  # a number or a CJK character is content
        assert find_evidence(quote, response) is None, quote


FUZZY_PLANS = plan_rubric(Rubric.model_validate({"essential": [
    {"criterion": "Says where the sign is.", "reference": "above the door", "weight": 3}]}))  # fmt: skip


def _fuzzy(credit, quote):
    item = (
        {"rationale": "", "credit": credit} if quote is None else {"rationale": "", "quote": quote, "credit": credit}
    )
    return parse_judge_output(json.dumps({"thought": "", "essential": [item], "additional": []}), FUZZY_PLANS)


@pytest.mark.parametrize(
    ("credit", "quote", "expected"),
    [(1, "above the door", (1.0, "ok")), (1, "on the roof", (0.0, "ungrounded")),
     (1, "Solution:", (0.0, "ungrounded")), (1, None, (0.0, "ungrounded")), (0.5, "", (0.0, "ungrounded")),
     (0, "", (0.0, "ok"))],
)  # fmt: skip
def test_fuzzy_credit_needs_a_quote_of_the_response_under_the_evidence_format(credit, quote, expected):
    response = "Solution: the sign hangs above the door."
    (score,) = execute(_fuzzy(credit, quote), FUZZY_PLANS, response=response, evidence=True)
    assert (score.score, score.status) == expected
    if expected == (1.0, "ok"):  # the record names the quote that earned the credit
        assert score.reason == f"judge credit 1, quoting {quote!r}"
    (free,) = execute(_fuzzy(credit, quote), FUZZY_PLANS, response=response)  # other formats ask for no quote
    assert free.score == float(credit)
    (off,) = execute(_fuzzy(credit, quote), FUZZY_PLANS, response=response, grounded=False, evidence=True)
    assert off.score == float(credit)


def test_the_evidence_format_from_prompt_to_schema_to_training_records():
    import jsonschema

    from genrm.methods.rubric.answer_schema import scoring_json_schema
    from genrm.methods.rubric.judge_data import labelled_answer, sft_record
    from genrm.methods.rubric.judge_rewards import content_reward
    from genrm.methods.rubric.prompts import scoring_system_prompt

    assert '"quote"' in scoring_system_prompt("minimal", "evidence")
    assert '"quote"' not in scoring_system_prompt("minimal", "brief")
    example = next(e for e in generate_examples(12, seed=2) if any(label.quote for label in e.labels))
    plans = example.plans()
    answer = labelled_answer(example, answer_format="evidence")
    jsonschema.validate(answer, scoring_json_schema(plans, answer_format="evidence"))
    fuzzy = [item for plan, item in zip(plans, answer["essential"] + answer["additional"], strict=True)
             if plan.verifier is None]  # fmt: skip
    assert fuzzy and all(("quote" in item) for item in fuzzy)
    assert all(item["quote"] == "" for item in fuzzy if item["credit"] == 0)
    assert "quote" not in json.dumps(labelled_answer(example, answer_format="brief"))
    completion = sft_record(example, answer_format="evidence")["completion"][0]["content"]
    assert content_reward(completion, example) == 1.0
    # the same answer with each quote replaced by an opener: its credits above 0 no longer count
    broken = json.loads(completion)
    for section in ("essential", "additional"):
        for item in broken[section]:
            if item.get("quote"):
                item["quote"] = "Solution:"
    assert content_reward(json.dumps(broken), example) < 1.0


@settings(max_examples=200, deadline=None)
@given(
    opener=st.sampled_from(_OPENERS),
    punctuation=st.text(alphabet=" \n\t.,:;!?-*#()[]{}'\"`…。，：", max_size=40),
    quote=st.sampled_from(["", "Solution", "above the door", ":", "The answer is", "Thought process:"]),
)
def test_punctuation_and_bare_openers_never_get_fuzzy_credit_with_evidence(opener, punctuation, quote):
    (score,) = execute(_fuzzy(1, quote), FUZZY_PLANS, response=opener + punctuation, evidence=True)
    assert score.score == 0.0
