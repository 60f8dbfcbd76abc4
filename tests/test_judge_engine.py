"""EngineReader over a scripted engine: prompts in, checked judgements out; unreadable answers re-sampled, failures
never become credit. The same code path judges through HTTP and in process (tests/test_serving_*.py run those)."""

import asyncio
import json

import pytest

from genrm.engine import BackendUnavailable, Judge, JudgeSpec, Reply, make_judge, run_blocking
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import exposed_plans
from genrm.methods.rubric.readers import EngineReader, GroupRequest, RuleReader, rubric_reader

RUBRIC = Rubric.model_validate(
    {"essential": [{"criterion": "States the result.", "reference": "expr_verify(target='12')", "weight": 1}]}
)
PLANS = exposed_plans(plan_rubric(RUBRIC), "minimal")
ITEM = {"criterion": "States the result.", "rationale": "", "credit": "expr_verify(predict='12')"}
GOOD = json.dumps({"thought": "", "essential": [ITEM], "additional": []})


def _scripted(*replies):
    """An engine answering with ``replies`` in order (texts or Reply objects)."""
    queue = list(replies)
    return ScriptedEngine(lambda request: queue.pop(0))


def _request(n):
    return GroupRequest("What is 3 * 4?", PLANS, [f"response {i}" for i in range(n)])


def _judge(judge, n):
    return asyncio.run(judge.read(_request(n)))


def test_one_call_per_group_with_the_schema_attached():
    engine = _scripted(GOOD, GOOD, GOOD)
    judgements = _judge(EngineReader(engine), 3)
    assert [j.ok for j in judgements] == [True, True, True]
    assert engine.calls == 1 and len(engine.requests) == 3
    assert all(r.schema is not None and r.schema_name == "judge_output" for r in engine.requests)
    assert all(r.temperature is None for r in engine.requests)  # the engine's own sampling
    assert "response 2" in engine.requests[2].prompt.user


def test_unreadable_answers_are_sampled_again_and_only_those():
    engine = _scripted(GOOD, "not json", Reply('{"thought": 1', 1, 5, finished=False), GOOD, "still not")
    judgements = _judge(EngineReader(engine, parse_retries=1), 3)
    assert engine.calls == 2
    again = engine.requests[3:]
    assert [r.temperature for r in again] == [0.7, 0.7]
    assert "response 1" in again[0].prompt.user and "response 2" in again[1].prompt.user
    assert judgements[0].ok and judgements[1].ok
    assert judgements[2].failure == "not_json"


def test_budget_exhaustion_is_named_and_no_retry_when_retries_are_off():
    engine = _scripted(Reply('{"thought": "aaaa', 1, 64, finished=False))
    (judgement,) = _judge(EngineReader(engine, parse_retries=0), 1)
    assert judgement.failure == "not_json" and "token budget" in judgement.reason
    assert engine.calls == 1


def test_engine_errors_become_backend_errors():
    engine = _scripted(Reply(error="the prompt is 9000 tokens"), GOOD)
    judgements = _judge(EngineReader(engine), 2)
    assert judgements[0].failure == "backend_error" and "9000 tokens" in judgements[0].reason
    assert judgements[1].ok and engine.calls == 1


def test_an_unreachable_engine_raises_rather_than_scoring():
    def down(request):
        raise BackendUnavailable("no replica answers")

    with pytest.raises(BackendUnavailable):
        _judge(EngineReader(ScriptedEngine(down)), 2)


def test_usage_is_counted_for_answers_only():
    counted = []
    engine = _scripted(Reply(GOOD, 100, 20, True), Reply(error="x"))
    engine.usage_callback = lambda prompt, completion: counted.append((prompt, completion))
    _judge(EngineReader(engine), 2)
    assert counted == [(100, 20)]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="parse_retries"):
        EngineReader(_scripted(), parse_retries=-1)


def test_blocking_callers_share_one_loop_and_close_the_engine():
    engine = _scripted(GOOD, GOOD)
    judge = EngineReader(engine)
    assert run_blocking(judge.read(_request(1)))[0].ok
    assert run_blocking(judge.read(_request(1)))[0].ok
    assert run_blocking(judge.health()) == (True, "scripted answers")
    run_blocking(judge.aclose())
    assert engine.closed and run_blocking(judge.health())[0] is False


def test_the_factory_builds_the_judge_the_spec_names():
    rule = make_judge("rule")
    assert rule.engine is None and make_judge(JudgeSpec()).engine is None and rule.name == rule.model == "rule"
    assert isinstance(rubric_reader(rule), RuleReader) and run_blocking(rule.health()) == (True, "in process")
    remote = make_judge("sglang:judge@http://127.0.0.1:9/v1", parse_retries=0)
    assert remote.engine is not None and remote.name == "sglang" and remote.model == "judge"
    assert remote.parse_retries == 0
    reader = rubric_reader(remote)
    assert isinstance(reader, EngineReader) and reader.engine is remote.engine and reader.parse_retries == 0
    run_blocking(remote.aclose())
    with pytest.raises(ValueError, match="parse_retries"):
        Judge(None, parse_retries=-1)
    with pytest.raises(ValueError, match="a judge is"):
        make_judge("nonsense")
