"""From an instance to rewards: the rule backend, unscored criteria, masks, records, and judge failures."""

import json

import pytest

from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.planning import RubricError, plan_rubric
from genrm.methods.rubric.readers import RubricReader, RuleReader
from genrm.methods.rubric.scoring import ScoringConfig, score_group


def _instance(essential, additional=(), responses=(), **fields):
    rubric = {
        "essential": [dict(zip(("criterion", "reference", "weight"), c, strict=True)) for c in essential],
        "additional": [dict(zip(("criterion", "reference", "weight"), c, strict=True)) for c in additional],
    }
    return Instance.model_validate({"id": "t", "prompt": "What is 6 times 7?", "rubric": rubric,
                                    "responses": list(responses), **fields})  # fmt: skip


PRODUCT = ("Gives the product.", "expr_verify(target='42')", 3)
NO_OBJECT = ("Finds no red car.", "bbox_verify(target=[])", 3)


def test_rule_backend_rewards_the_right_final_answer():
    instance = _instance([PRODUCT], responses=["6 x 7 = \\boxed{42}", "\\boxed{41}", "I am not sure. " * 20])
    result = score_instance(instance)
    assert result.rewards == [1.0, 0.0, 0.0]
    first, _, third = result.records
    assert first.criteria[0].extracted == "expr_verify(predict='42')" and first.criteria[0].status == "ok"
    assert third.criteria[0].extracted == "expr_verify(predict=None)" and third.criteria[0].score == 0.0
    assert third.criteria[0].status == "unparseable_pred"
    assert first.explanation == ["content mask 1: every essential criterion is fully met"]
    assert isinstance(RuleReader(), RubricReader)


def test_rule_backend_does_not_pay_a_response_without_an_answer_on_an_empty_target():
    # an empty prediction would match the empty target: a response that answers nothing was paid 1.0
    instance = _instance([NO_OBJECT], responses=["Answer: there is none, []", "I am not sure. " * 20])
    result = score_instance(instance)
    assert result.rewards == [1.0, 0.0]
    assert result.records[1].criteria[0].status == "unparseable_pred"


def test_the_rule_backend_keeps_a_time_s_utc_offset():
    clock = ("Gives the time in UTC.", "time_verify(target='18:15 +0000', tformat='%H:%M %z')", 3)
    responses = ["Final answer: 18:15 +05:00", "Final answer: 23:15 +05:00", "Final answer: 18:15 UTC"]
    result = score_instance(_instance([clock], responses=responses))
    assert result.rewards == [0.0, 1.0, 1.0]
    assert result.records[0].criteria[0].extracted == "time_verify(predict='18:15 +05:00')"


def test_control_characters_in_a_response_are_noise_to_the_rule_backend():
    responses = ["\\boxed{4\x112}", "Answer: 4\t2", "\x00", "\\boxed{42\x7f}"]
    result = score_instance(_instance([PRODUCT], responses=responses))
    assert result.rewards == [1.0, 0.0, 0.0, 1.0]
    assert [r.criteria[0].extracted for r in result.records][:2] == ["expr_verify(predict='42')",
                                                                     "expr_verify(predict='4 2')"]  # fmt: skip


def test_a_call_that_cannot_be_read_is_a_failed_criterion_not_an_error():
    from genrm.methods.rubric.execution import execute
    from genrm.methods.rubric.judge_output import CriterionJudgement, ParsedJudgement

    plans = plan_rubric(_instance([PRODUCT]).rubric)
    call = CriterionJudgement(plans[0], call="expr_verify(predict='4\x112')")
    judged = ParsedJudgement(None, "read", criteria=[call])
    (score,) = execute(judged, plans)
    assert score.score is None and score.status == "bad_call" and "control character" in score.reason


def test_fuzzy_criteria_are_unscored_never_guessed():
    steps = ("Shows the multiplication.", "6 times 7 is 42", 1)
    instance = _instance([PRODUCT], [steps], responses=["6 x 7 = \\boxed{42}", "\\boxed{41}"])
    result = score_instance(instance)
    # The right answer's reward depends on the unscored criterion; the wrong one fails an essential criterion.
    assert result.rewards == [None, 0.0]
    record = result.records[0]
    assert record.criteria[1].status == "unscored" and record.criteria[1].score is None
    assert record.criteria[1].remapped is None and record.base is None and record.content_mask is None
    assert "reward unknown" in record.explanation[-1]
    only_fuzzy = _instance([steps], responses=["6 x 7 = 42"])
    assert score_instance(only_fuzzy).rewards == [None]


def test_partial_essential_and_additional_weights_hand_computed():
    box = ("Gives the clock's box.", "bbox_verify(target=[[100, 100, 200, 300]])", 3)
    clock = ("Reads the clock.", "time_verify(target='09:20', tformat='%H:%M')", 1)
    responses = [
        "Answer: 09:20 at [100, 100, 200, 300]",  # box 1, time 1
        "Answer: 09:20 at [100, 100, 200, 250]",  # box IoU 100*150 / (100*200) = 0.75, time 1
        "Answer: 10:00 at [500, 500, 600, 600]",  # box 0, time 0
        "Answer: 9:20 PM at [100, 100, 200, 300]",  # box 1, time 0 (21:20)
    ]
    result = score_instance(_instance([box], [clock], responses, task_type="general"))
    # Box column [1, 0.75, 0, 1] remaps to itself (min 0, max 1); time column [1, 1, 0, 0] too. Weights 3/4, 1/4.
    # One partial essential is allowed; a failed additional criterion lowers the reward but never zeroes it, and
    # cannot make up for the failed essential of the third response.
    assert result.rewards == pytest.approx([1.0, (3 * 0.75 + 1) / 4, 0.0, 3 / 4])
    assert [c.remapped for c in result.records[1].criteria] == pytest.approx([0.75, 1.0])
    assert (
        result.records[1].explanation[0] == "content mask 1: essential criterion #1 is partially met (one is allowed)"
    )
    assert result.records[2].content_mask == 0


def test_length_rule_and_format_mask():
    instance = _instance(
        [PRODUCT],
        responses=["\\boxed{42}", "The answer is 42. " * 10 + "\\boxed{42}", "\\boxed{42} " + "x" * 400],
        max_response_chars=400,
    )
    result = score_instance(instance)
    assert result.rewards == [1.0, 0.0, 0.0]
    assert result.records[1].format_violations and result.records[1].format_mask == 0
    assert result.records[2].length_ok is False and not result.records[2].format_violations
    unchecked = score_instance(instance, None, ScoringConfig(check_format=False))
    assert unchecked.rewards[1] == 1.0


def test_rubric_errors_are_raised_not_scored():
    instance = _instance([("Gives the box.", "bbox_verify(target=[[1, 2, 3]])", 3)], responses=["[1, 2, 3, 4]"])
    with pytest.raises(RubricError, match=r"essential\[0\]\.reference"):
        score_instance(instance)
    grounding = _instance([PRODUCT], responses=["42"], task_type="grounding")
    with pytest.raises(RubricError, match="not allowed for task type 'grounding'"):
        score_instance(grounding)


def test_model_judge_failures_are_reported_as_failures():
    instance = _instance([PRODUCT], responses=["42", "41", "40"])
    plans = plan_rubric(instance.rubric)
    good = json.dumps({"thought": "", "essential": [{"criterion": "Gives the product.", "rationale": "",
                                                     "credit": "expr_verify(predict='42')"}]})  # fmt: skip
    outputs = [good, "I refuse.", good.replace("expr_verify(predict='42')", "bbox_verify(predict=[])")]
    judgements = [parse_judge_output(text, plans) for text in outputs]
    result = score_group(instance, plans, judgements)
    assert result.rewards == [1.0, None, None]
    assert result.records[1].judge_failure == "not_json"
    assert result.records[1].criteria[0].status == "not_json"
    assert result.records[2].criteria[0].status == "wrong_verifier"
    with pytest.raises(ValueError, match="2 judgements for 3 responses"):
        score_group(instance, plans, judgements[:2])


def test_no_verifier_exposure_leaves_everything_to_the_judge():
    instance = _instance([PRODUCT], responses=["\\boxed{42}"])
    result = score_instance(instance, None, ScoringConfig(exposure="no_verifier"))
    assert result.rewards == [None] and result.records[0].criteria[0].verifier is None


def test_judges_receive_the_group():
    engine = ScriptedEngine(lambda request: "not an answer")
    instance = _instance([PRODUCT], responses=["\\boxed{42}", "\\boxed{1}"], image="img.png")
    result = score_instance(instance, Judge(engine, parse_retries=0), ScoringConfig(exposure="vlm"))
    assert engine.calls == 1 and len(engine.requests) == 2  # the group's requests go together
    assert [f"{text}\n<<<END OF CANDIDATE RESPONSE>>>" in r.prompt.user for r, text in
            zip(engine.requests, instance.responses, strict=True)] == [True, True]  # fmt: skip
    assert all(r.prompt.image == "img.png" for r in engine.requests)  # the vlm exposure shows the image
    assert result.rewards == [None, None] and result.records[0].judge_failure == "not_json"
    assert score_instance(_instance([PRODUCT]), Judge(engine)).rewards == []
    assert engine.calls == 1  # an instance without responses is not sent to the judge


def test_config_is_checked():
    with pytest.raises(ValueError, match="tau"):
        ScoringConfig(tau=1.0)
    with pytest.raises(ValueError, match="unknown exposure"):
        ScoringConfig(exposure="everything")  # type: ignore[arg-type]
