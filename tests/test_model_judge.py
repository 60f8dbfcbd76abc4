"""ModelJudge: prompts in, checked judgements out; unreadable answers re-sampled, failures never become credit."""

import json

from genrm.hf_generation import Generation
from genrm.judge import GroupRequest
from genrm.model_judge import ModelJudge
from genrm.prompts import exposed_plans
from genrm.rubric import plan_rubric
from genrm.schemas import Rubric

RUBRIC = Rubric.model_validate(
    {"essential": [{"criterion": "States the result.", "reference": "expr_verify(target='12')", "weight": 1}]}
)
PLANS = exposed_plans(plan_rubric(RUBRIC), "minimal")
ITEM = {"criterion": "States the result.", "rationale": "", "credit": "expr_verify(predict='12')"}
GOOD = json.dumps({"thought": "", "essential": [ITEM], "additional": []})


class Scripted:
    """Answers from a script, one list per call; records what it was asked."""

    def __init__(self, *script):
        self.script, self.calls = list(script), []

    def __call__(self, items):
        self.calls.append(items)
        return self.script.pop(0)[: len(items)]


def _request(n):
    return GroupRequest("What is 3 * 4?", PLANS, [f"response {i}" for i in range(n)])


def test_one_call_per_group_with_the_schema_attached():
    generate = Scripted([Generation(GOOD, 100, 20, True)] * 3)
    judgements = ModelJudge(generate).judge_group(_request(3))
    assert [j.ok for j in judgements] == [True, True, True]
    (items,) = generate.calls
    assert len(items) == 3 and all(item.schema is not None and item.temperature == 0.0 for item in items)
    assert "response 2" in items[2].prompt.user
    assert ModelJudge(Scripted([Generation(GOOD, 1, 1, True)]), constrained=False).judge_group(_request(1))[0].ok


def test_unreadable_answers_are_sampled_again_and_only_those():
    generate = Scripted(
        [Generation(GOOD, 1, 1, True), Generation("not json", 1, 1, True), Generation('{"thought": 1', 1, 5, False)],
        [Generation(GOOD, 1, 1, True), Generation("still not", 1, 1, True)],
    )
    judgements = ModelJudge(generate, parse_retries=1, retry_temperature=0.8).judge_group(_request(3))
    assert [item.temperature for item in generate.calls[1]] == [0.8, 0.8]
    assert "response 1" in generate.calls[1][0].prompt.user and "response 2" in generate.calls[1][1].prompt.user
    assert judgements[0].ok and judgements[1].ok
    assert judgements[2].failure == "not_json"


def test_budget_exhaustion_is_named_and_no_retry_when_retries_are_off():
    generate = Scripted([Generation('{"thought": "aaaa', 1, 64, False)])
    (judgement,) = ModelJudge(generate, parse_retries=0).judge_group(_request(1))
    assert judgement.failure == "not_json" and "token budget" in judgement.reason
    assert len(generate.calls) == 1


def test_generator_errors_become_backend_errors():
    generate = Scripted([Generation(error="the prompt is 9000 tokens"), Generation(GOOD, 1, 1, True)])
    judgements = ModelJudge(generate).judge_group(_request(2))
    assert judgements[0].failure == "backend_error" and "9000 tokens" in judgements[0].reason
    assert judgements[1].ok and len(generate.calls) == 1


def test_usage_is_counted_for_answers_only():
    counted = []
    judge = ModelJudge(Scripted([Generation(GOOD, 100, 20, True), Generation(error="x")]))
    judge.usage_callback = lambda prompt, completion: counted.append((prompt, completion))
    judge.judge_group(_request(2))
    assert counted == [(100, 20)]


def test_sampling_judges_retry_at_their_own_temperature():
    generate = Scripted([Generation("?", 1, 1, True)], [Generation(GOOD, 1, 1, True)])
    ModelJudge(generate, temperature=0.3).judge_group(_request(1))
    assert [call[0].temperature for call in generate.calls] == [0.3, 0.3]
