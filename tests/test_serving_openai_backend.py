"""The openai/sglang backends against a judge served over real HTTP on loopback (tests/fake_judge.py)."""

import json
from contextlib import asynccontextmanager

import httpx
import pytest
from fake_judge import FakeJudgeServer, free_port

from genrm.methods.rubric.method import score_instance
from serving.app import create_app
from serving.settings import ServerSettings

pytestmark = pytest.mark.anyio

GROUP = {
    "id": "g1",
    "prompt": "How many legs does a spider have, and what class is it in? Box the number.",
    "task_type": "general",
    "rubric": {"essential": [{"criterion": "Gives the number of legs.", "reference": "expr_verify(target='8')",
                              "weight": 3}],
               "additional": [{"criterion": "Names the class.", "reference": "arachnid", "weight": 1}]},
    "responses": ["Spiders are arachnids with \\boxed{8} legs.", "Spiders have \\boxed{8} legs.", "\\boxed{6}"],
}  # fmt: skip


@pytest.fixture
def judge():
    with FakeJudgeServer() as server:
        yield server


@asynccontextmanager
async def served(**settings):
    app = create_app(ServerSettings(**{"judge_model": "fake-judge", "judge_timeout_s": 5, **settings}))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            yield http


async def test_fuzzy_criteria_are_scored_by_the_model(judge):
    async with served(backend="openai", judge_urls=[judge.url]) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
        metrics = (await http.get("/metrics")).text
    group = response.json()["groups"][0]
    # expr: [1, 1, 0]; class: [1, 0, 0] -> remapped as is; weights 3/4 and 1/4.
    assert group["rewards"] == [1.0, 0.75, 0.0]
    assert group["records"][0]["criteria"][0]["extracted"] == "expr_verify(predict='8')"
    requests = judge.app.state.requests
    assert len(requests) == 3
    for body in requests:
        assert body["temperature"] == 0.0 and body["model"] == "fake-judge"
        assert body["response_format"]["type"] == "json_schema"
        assert "target='8'" not in str(body["messages"])  # minimal exposure over the wire
    assert 'genrm_judge_tokens_total{kind="completion"}' in metrics


async def test_same_rewards_as_the_rule_backend_on_verifiable_rubrics(judge, example_instances):
    verifiable = [i for i in example_instances if all("_verify(" in c.reference for _, _, c in i.rubric.criteria())]
    async with served(backend="sglang", judge_urls=[judge.url]) as http:
        response = await http.post("/v1/score", json={"groups": [i.model_dump(mode="json") for i in verifiable]})
        health = await http.get("/health")
    assert response.status_code == 200 and health.json()["backend"] == "sglang"
    got = [g["rewards"] for g in response.json()["groups"]]
    assert got == [score_instance(i).rewards for i in verifiable]


async def test_server_errors_are_retried(judge):
    judge.app.state.fail_first = 2
    async with served(backend="openai", judge_urls=[judge.url], judge_retries=2) as http:
        response = await http.post("/v1/score", json={"groups": [dict(GROUP, responses=GROUP["responses"][:1])]})
    assert response.json()["groups"][0]["rewards"] == [1.0]
    assert len(judge.app.state.requests) == 3


async def test_garbage_output_is_a_failure_after_one_new_sample(judge):
    judge.app.state.garbage = True
    async with served(backend="openai", judge_urls=[judge.url]) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
    group = response.json()["groups"][0]
    assert group["rewards"] == [None, None, None]
    assert {r["judge_failure"] for r in group["records"]} == {"not_json"}
    assert len(judge.app.state.requests) == 6  # each response sampled twice


async def test_slow_judge_times_out_into_failed_records(judge):
    judge.app.state.delay_s = 1.0
    async with served(backend="openai", judge_urls=[judge.url], judge_timeout_s=0.2, judge_retries=0) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
    records = response.json()["groups"][0]["records"]
    assert [r["reward"] for r in records] == [None, None, None]
    assert {r["judge_failure"] for r in records} == {"backend_error"} and "timed out" in records[0]["judge_reason"]


async def test_unreachable_judge_is_503():
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with served(backend="openai", judge_urls=[url], judge_retries=1) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
        health = await http.get("/health")
    assert response.status_code == 503 and "retry-after" in response.headers
    assert health.status_code == 503 and health.json()["backend_reachable"] is False


async def test_replicas_share_the_load(judge):
    with FakeJudgeServer() as second:
        async with served(backend="openai", judge_urls=[judge.url, second.url]) as http:
            await http.post("/v1/score", json={"groups": [GROUP, dict(GROUP, id="g2")]})
        assert len(judge.app.state.requests) == 3 and len(second.app.state.requests) == 3


def test_model_backends_need_an_endpoint():
    # each missing part is named as the settings name it, by the one check of a judge given in parts (JudgeSpec)
    with pytest.raises(ValueError, match="the sglang backend needs judge_model"):
        ServerSettings(backend="sglang")
    with pytest.raises(ValueError, match="the sglang backend needs judge_urls"):
        ServerSettings(backend="sglang", judge_model="judge")
    with pytest.raises(ValueError, match="the transformers backend needs a model_path"):
        ServerSettings(backend="transformers")


async def test_a_hanging_judge_is_answered_within_the_call_budget(judge):
    judge.app.state.delay_s = 30.0  # accepts the call, never answers in time
    settings = {"judge_timeout_s": 20.0, "judge_retries": 2, "judge_budget_s": 0.5}
    async with served(backend="openai", judge_urls=[judge.url], **settings) as http:
        # 3 attempts of 20 s would take a minute; the budget answers after half a second (10 s leave ample room)
        response = await http.post("/v1/score", json={"groups": [GROUP]}, timeout=10.0)
    assert response.status_code == 503 and "retry-after" in response.headers
    assert "budget" in response.json()["detail"][0]["msg"]


async def test_health_turns_503_while_every_chat_completion_fails_and_back(judge):
    judge.app.state.fail_first = 1_000  # /models still answers: only the completions fail
    async with served(backend="openai", judge_urls=[judge.url], judge_retries=0) as http:
        for _ in range(2):  # 6 calls, all failing
            failed = await http.post("/v1/score", json={"groups": [GROUP]})
        sick = await http.get("/health")
        judge.app.state.fail_first = 0
        recovered = await http.post("/v1/score", json={"groups": [GROUP]})
        healthy = await http.get("/health")
    assert [r["judge_failure"] for r in failed.json()["groups"][0]["records"]] == ["backend_error"] * 3
    assert sick.status_code == 503 and "chat completions failed" in sick.json()["detail"]
    assert recovered.json()["groups"][0]["rewards"] == [1.0, 0.75, 0.0]
    assert healthy.status_code == 200


def test_lone_surrogates_in_responses_reach_a_model_judge_as_replacement_characters(judge):
    # A policy can emit any bytes; JSON's \ud800 escape decodes to a lone surrogate, which httpx cannot encode. A real
    # server process with a model judge on loopback: the judge is sent U+FFFD, the client a verdict, never a 500, and
    # the next request on the same connection is served.
    from fake_judge import ServeProcess

    group = dict(
        GROUP, responses=["Spiders are arachnids \ud800 with \\boxed{8} legs.", "\\boxed{8}\udfff", "\\boxed{6}"]
    )
    serve = ("--backend", "openai", "--judge-urls", judge.url, "--judge-model", "fake-judge", "--log-level", "warning")
    headers = {"content-type": "application/json"}
    with ServeProcess(*serve) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        scored = http.post("/v1/score", content=json.dumps({"groups": [group]}), headers=headers)
        reward = http.post("/get_reward", content=json.dumps({
            "query": ["Q: How many legs? A: \\boxed{8} \ud800"], "prompts": ["Q: How many legs? A:"],
            "labels": [json.dumps(dict(GROUP, responses=[]))]}), headers=headers)  # fmt: skip
        again = http.post("/v1/score", json={"groups": [GROUP]})
    assert scored.status_code == 200, scored.text
    assert scored.json()["groups"][0]["rewards"][:2] == [1.0, 0.75]
    assert reward.status_code == 200, reward.text
    assert again.status_code == 200
    sent = [str(body["messages"]) for body in judge.app.state.requests]
    assert any("\ufffd" in text for text in sent) and not any("\ud800" in text for text in sent)
