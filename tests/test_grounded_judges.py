"""A judge on loopback that invents values, and one that reads them: grounded extraction through every way in
(/v1/score, genrm score, the TRL reward function)."""

import json
import subprocess
import sys

import httpx
import pytest
from fake_judge import FakeJudgeServer

from serving.app import create_app
from serving.settings import ServerSettings

GROUP = {
    "id": "spider",
    "prompt": "How many legs does a spider have? Box the number.",
    "task_type": "math",
    "rubric": {"essential": [{"criterion": "Gives the number of legs.", "reference": "expr_verify(target='8')",
                              "weight": 3}]},
    "responses": [":", "Spiders have \\boxed{8} legs.", "Solution", "Spiders have \\boxed{6} legs."],
}  # fmt: skip
INVENTED = [0.0, 1.0, 0.0, 0.0]  # grounded: only the response that states 8 is paid
PAID_ANYWAY = [1.0, 1.0, 1.0, 1.0]  # grounding off: the invented 8 is paid everywhere


def _inventing(body):
    """Answers every tool item with the value a target-guessing judge would write: 8, whatever the response says."""
    return json.dumps({"thought": "", "essential": [{"rationale": "found it", "credit": "expr_verify(predict='8')"}],
                       "additional": []})  # fmt: skip


@pytest.fixture
def inventing_judge():
    with FakeJudgeServer() as server:
        server.state.responder = _inventing
        yield server


async def _score_over_http(judge_url, **settings):
    app = create_app(ServerSettings(backend="openai", judge_urls=[judge_url], judge_model="fake-judge",
                                    judge_timeout_s=5, **settings))  # fmt: skip
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            answer = (await http.post("/v1/score", json={"groups": [GROUP]})).json()
            metrics = (await http.get("/metrics")).text
    return answer["groups"][0], metrics


@pytest.mark.anyio
async def test_v1_score_pays_only_values_the_response_states(inventing_judge):
    group, metrics = await _score_over_http(inventing_judge.url)
    assert group["rewards"] == INVENTED
    statuses = [record["criteria"][0]["status"] for record in group["records"]]
    assert statuses == ["ungrounded", "ok", "ungrounded", "ungrounded"]
    assert group["records"][0]["criteria"][0]["extracted"] == "expr_verify(predict='8')"
    assert "genrm_values_ungrounded_total 3.0" in metrics
    off, _ = await _score_over_http(inventing_judge.url, method_options={"grounded_extraction": False})
    assert off["rewards"] == PAID_ANYWAY


@pytest.mark.anyio
async def test_a_judge_that_reads_the_response_loses_nothing_to_grounding():
    with FakeJudgeServer() as reading:  # the fake judge's default: the rule reader's values, in plain notation
        group, _ = await _score_over_http(reading.url)
    assert group["rewards"] == [0.0, 1.0, 0.0, 0.0]
    assert "ungrounded" not in {c["status"] for record in group["records"] for c in record["criteria"]}


def test_genrm_score_pays_only_values_the_response_states(inventing_judge, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GROUP) + "\n")

    def score(*extra):
        command = [sys.executable, "-m", "genrm", "score", str(source), "-q", "--judge",
                   f"openai:fake-judge@{inventing_judge.url}", *extra]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert score()["rewards"] == INVENTED
    assert score("--method-options", '{"grounded_extraction": false}')["rewards"] == PAID_ANYWAY


def test_the_trl_reward_function_pays_only_values_the_response_states(inventing_judge):
    from genrm.engine import make_judge
    from genrm.methods import make_method
    from genrm.methods.rubric.models import Instance
    from policy_rl.data import policy_record
    from policy_rl.method_reward import INSTANCE_COLUMN, MethodReward
    from policy_rl.scorers import JudgeScorer

    row = policy_record(Instance.model_validate({**GROUP, "responses": []}))
    completions = [[{"role": "assistant", "content": text}] for text in GROUP["responses"]]
    method = make_method("rubric")
    reward = MethodReward(method, JudgeScorer(make_judge(f"openai:fake-judge@{inventing_judge.url}"), method))
    metrics = {}
    rewards = reward([None] * len(completions), completions, **{INSTANCE_COLUMN: [row[INSTANCE_COLUMN]] * 4},
                     log_metric=metrics.__setitem__)  # fmt: skip
    assert rewards == INVENTED


FUZZY_GROUP = {
    "id": "sign",
    "prompt": "Where is the sign, and what does it say?",
    "task_type": "general",
    "rubric": {"essential": [{"criterion": "Says where the sign is.", "reference": "above the door", "weight": 3}]},
    "responses": ["Solution:", "It hangs above the door.", "It says Open."],
}


def _quoting(body):
    """Credits every reference item in full with the same quote, whatever the response says."""
    return json.dumps({"thought": "", "essential": [{"rationale": "said", "quote": "above the door", "credit": 1}],
                       "additional": []})  # fmt: skip


@pytest.mark.anyio
async def test_v1_score_under_the_evidence_format_pays_fuzzy_credit_only_for_a_quote_of_the_response():
    with FakeJudgeServer() as quoting:
        quoting.state.responder = _quoting
        app = create_app(ServerSettings(backend="openai", judge_urls=[quoting.url], judge_model="fake-judge",
                                        judge_timeout_s=5, method_options={"answer_format": "evidence"}))  # fmt: skip
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
                group = (await http.post("/v1/score", json={"groups": [FUZZY_GROUP]})).json()["groups"][0]
        schema = quoting.state.requests[0]["response_format"]["json_schema"]["schema"]
    assert group["rewards"] == [0.0, 1.0, 0.0]
    assert [r["criteria"][0]["status"] for r in group["records"]] == ["ungrounded", "ok", "ungrounded"]
    assert "quote" in schema["properties"]["essential"]["prefixItems"][0]["properties"]
