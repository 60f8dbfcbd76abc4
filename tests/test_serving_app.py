"""The reward server in process (ASGI transport, lifespan run): endpoints, limits, auth, errors, log, metrics."""

import asyncio
import json
import re
import time
from contextlib import asynccontextmanager

import httpx
import pytest

from genrm.engine import BackendUnavailable, Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.rubric.method import RubricMethod
from serving.app import create_app
from serving.client import AsyncRewardClient, RewardServerError
from serving.record_log import read_records
from serving.settings import ServerSettings

pytestmark = pytest.mark.anyio

GROUP = {
    "id": "g1",
    "prompt": "What is 6 times 7?",
    "task_type": "math",
    "rubric": {"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')",
                              "weight": 3}]},
    "responses": ["\\boxed{42}", "\\boxed{41}", "Multiplication tables list such products; looking the row up "
                  "and reading across to the column would settle it, which is left to the reader here today."],
}  # fmt: skip


@asynccontextmanager
async def served(settings=None, backend=None, headers=None):
    app = create_app(settings or ServerSettings(), backend)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers) as http:
            yield http


async def test_score_groups():
    second = dict(GROUP, id="g2", responses=["\\boxed{41}", "\\boxed{42}"])
    async with served() as http:
        response = await http.post("/v1/score", json={"groups": [GROUP, second]})
    assert response.status_code == 200
    groups = response.json()["groups"]
    assert [g["id"] for g in groups] == ["g1", "g2"]
    assert groups[0]["rewards"] == [1.0, 0.0, 0.0] and groups[1]["rewards"] == [0.0, 1.0]
    assert groups[0]["records"][0]["criteria"][0]["extracted"] == "expr_verify(predict='42')"


async def test_verify_endpoint_and_field_errors():
    async with served() as http:
        ok = await http.post("/v1/verify", json={"reference": "bbox_verify(target=[[0, 0, 100, 100]])",
                                                 "prediction": "bbox_verify(predict=[[0, 0, 100, 50]])"})  # fmt: skip
        bad_prediction = await http.post("/v1/verify", json={"reference": "expr_verify(target='2')",
                                                             "prediction": "expr_verify(predict=exit())"})  # fmt: skip
        bad_reference = await http.post("/v1/verify", json={"reference": "expr_verify(target=[1, 2])",
                                                            "prediction": "expr_verify(predict='2')"})  # fmt: skip
        missing = await http.post("/v1/verify", json={"reference": "expr_verify(target='2')"})
    assert ok.status_code == 200 and ok.json()["score"] == 0.5 and ok.json()["status"] == "ok"
    assert bad_prediction.status_code == 422 and bad_prediction.json()["detail"][0]["loc"] == ["body", "prediction"]
    assert bad_reference.status_code == 422 and bad_reference.json()["detail"][0]["loc"] == ["body", "reference"]
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "prediction"]


@pytest.mark.parametrize(
    "body, loc",
    [
        ({"groups": []}, ["body", "groups"]),
        ({"groups": [dict(GROUP, id=5)]}, ["body", "groups", 0, "id"]),
        ({"groups": [dict(GROUP, responses="x")]}, ["body", "groups", 0, "responses"]),
        ({"groups": [GROUP], "extra": 1}, ["body", "extra"]),
        ({"groups": [dict(GROUP, rubric={"essential": [{"criterion": "c", "reference": "r", "weight": 4}]})]},
         ["body", "groups", 0, "rubric", "essential", 0, "weight"]),
        ({"groups": [GROUP, dict(GROUP, rubric={"essential": [{"criterion": "Box.", "weight": 3,
                                                               "reference": "bbox_verify(target=[[1]])"}]})]},
         ["body", "groups", 1, "rubric", "essential", 0, "reference"]),
        ({"groups": [dict(GROUP, task_type="grounding")]},
         ["body", "groups", 0, "rubric", "essential", 0, "reference"]),
        ({"groups": [dict(GROUP, task_type="poetry")]}, ["body", "groups", 0, "task_type"]),
        ({"groups": [dict(GROUP, responses=["x"] * 65)]}, ["body", "groups", 0, "responses"]),
        ({"groups": [dict(GROUP, responses=["ok", "x" * 100_001])]}, ["body", "groups", 0, "responses", 1]),
        ({"groups": [GROUP] * 257}, ["body", "groups"]),
    ],
)  # fmt: skip
async def test_invalid_requests_name_the_field(body, loc):
    async with served() as http:
        response = await http.post("/v1/score", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc


async def test_malformed_and_oversize_bodies():
    settings = ServerSettings(max_body_bytes=10_000)
    async with served(settings) as http:
        not_json = await http.post("/v1/score", content=b"{not json", headers={"content-type": "application/json"})
        big = await http.post("/v1/score", json={"groups": [dict(GROUP, responses=["x" * 20_000])]})

        async def chunks():  # no Content-Length: the limit is enforced while reading
            for _ in range(20):
                yield b"x" * 1_000

        streamed = await http.post("/v1/score", content=chunks(), headers={"content-type": "application/json"})
        still_fine = await http.post("/v1/score", json={"groups": [GROUP]})
    assert not_json.status_code == 422 and not_json.json()["detail"][0]["type"] == "json_invalid"
    assert big.status_code == 413 and "larger than 10000 bytes" in big.json()["detail"][0]["msg"]
    assert streamed.status_code == 413
    assert still_fine.status_code == 200


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "in-a-worker"])
async def test_a_body_nested_deeper_than_python_recurses_is_a_422_that_says_so(workers):
    # 5,000 levels in 10 kB (scored in the server), 20,000 in 40 kB (over the size a worker takes)
    shallow, deep = (b"[" * n + b"]" * n for n in (5_000, 20_000))
    async with served(ServerSettings(score_workers=workers)) as http:
        answers = [await http.post(path, content=body, headers={"content-type": "application/json"})
                   for path in ("/v1/score", "/get_reward") for body in (shallow, deep)]  # fmt: skip
        still_fine = await http.post("/v1/score", json={"groups": [GROUP]})
    for answer in answers:
        assert answer.status_code == 422, answer.text
        (error,) = answer.json()["detail"]
        assert error["loc"] == ["body"] and "nested too deep" in error["msg"] and "Traceback" not in answer.text
    assert still_fine.status_code == 200


async def test_headers_that_can_be_read_two_ways_are_refused_with_a_400_that_names_them():
    body = json.dumps({"groups": [GROUP]}).encode()
    plain = [("content-type", "application/json")]
    cases = {
        "more than one authorization header": [("authorization", "Bearer s3cret"), ("authorization", "Bearer nope")],
        "both content-length and transfer-encoding": [("transfer-encoding", "chunked")],
        "more than one content-length header": [("content-length", str(len(body)))] * 2,
    }
    async with served(ServerSettings(api_key="s3cret")) as http:
        for why, extra in cases.items():
            headers = httpx.Headers(plain + extra)
            if "authorization" not in headers:
                headers["authorization"] = "Bearer s3cret"
            answer = await http.post("/v1/score", content=body, headers=headers)
            assert answer.status_code == 400, (why, answer.text)
            assert why in answer.json()["detail"][0]["msg"]
        fine = await http.post("/v1/score", content=body, headers=plain + [("authorization", "Bearer s3cret")])
    assert fine.status_code == 200


async def test_bearer_token():
    settings = ServerSettings(api_key="s3cret")
    async with served(settings) as http:
        anonymous = await http.post("/v1/score", json={"groups": [GROUP]})
        wrong = await http.post("/v1/score", json={"groups": [GROUP]}, headers={"Authorization": "Bearer nope"})
        right = await http.post("/v1/score", json={"groups": [GROUP]}, headers={"Authorization": "Bearer s3cret"})
        health = await http.get("/health")
        metrics = await http.get("/metrics")
    assert anonymous.status_code == 401 and wrong.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and health.status_code == 200 and metrics.status_code == 401


class _DownEngine(ScriptedEngine):
    def __init__(self, script=None):
        super().__init__(script or self._refuse)

    @staticmethod
    def _refuse(request):
        raise BackendUnavailable("connection refused", retry_after_s=7)

    async def health(self):
        return False, "connection refused"


def _down_backend():
    return Judge(_DownEngine())


def _garbage_backend():
    return Judge(ScriptedEngine(lambda request: "Sure! The answer looks right to me."), label="garbage")


async def test_backend_down_is_503_with_retry_after():
    async with served(backend=_down_backend()) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
        health = await http.get("/health")
    assert response.status_code == 503 and response.headers["retry-after"] == "7"
    assert "unavailable" in response.json()["detail"][0]["msg"]
    assert health.status_code == 503 and health.json()["backend_reachable"] is False


async def test_health_without_the_key_says_only_up_or_down():
    # the judge's own words can name its internal address: only a request with the server's key reads them
    async with served(ServerSettings(api_key="s3cret"), backend=_down_backend()) as http:
        anonymous = await http.get("/health")
        keyed = await http.get("/health", headers={"Authorization": "Bearer s3cret"})
    assert anonymous.status_code == keyed.status_code == 503
    assert anonymous.json() == {
        "status": "unavailable",
        "backend": "scripted",
        "backend_reachable": False,
        "detail": "",
    }
    assert keyed.json()["detail"] == "connection refused"


async def test_judge_failures_are_null_rewards_with_reasons(tmp_path):
    settings = ServerSettings(record_log=tmp_path / "log.jsonl")
    async with served(settings, backend=_garbage_backend()) as http:
        response = await http.post("/v1/score", json={"groups": [GROUP]})
        metrics = (await http.get("/metrics")).text
    group = response.json()["groups"][0]
    assert response.status_code == 200 and group["rewards"] == [None, None, None]
    assert {r["judge_failure"] for r in group["records"]} == {"not_json"}
    assert 'genrm_judge_failures_total{failure="not_json"} 3.0' in metrics
    logged = list(read_records(tmp_path / "log.jsonl"))
    assert len(logged) == 1 and logged[0]["result"]["rewards"] == [None, None, None]
    assert logged[0]["instance"]["responses"] == GROUP["responses"]


async def test_openrlhf_get_reward_groups_by_label_id():
    label = json.dumps({k: v for k, v in GROUP.items() if k != "responses"})
    other = json.dumps(dict({k: v for k, v in GROUP.items() if k != "responses"}, id="g2"))
    prompt = "<|user|>What is 6 times 7?<|assistant|>"
    body = {"query": [prompt + "\\boxed{42}", prompt + "\\boxed{7}", prompt + "\\boxed{42}", prompt + "\\boxed{42}"],
            "prompts": [prompt] * 4, "labels": [label, label, other, other]}  # fmt: skip
    async with served() as http:
        response = await http.post("/get_reward", json=body)
        mismatch = await http.post("/get_reward", json=dict(body, prompts=["other"] * 4))
        bad_label = await http.post("/get_reward", json=dict(body, labels=[label, label, other, "{}"]))
    assert response.status_code == 200
    payload = response.json()
    # Group g1: [1, 0]; group g2: both right, so both at the upper bound.
    assert payload["rewards"] == [1.0, 0.0, 1.0, 1.0] and payload["scores"] == payload["rewards"]
    assert payload["extra_logs"]["content_mask"] == [1.0, 0.0, 1.0, 1.0]
    assert mismatch.status_code == 422 and mismatch.json()["detail"][0]["loc"] == ["body", "query", 0]
    assert bad_label.status_code == 422 and bad_label.json()["detail"][0]["loc"][:3] == ["body", "labels", 3]


async def test_get_reward_refuses_unscored_rewards():
    rubric = {"essential": [{"criterion": "Explains the method.", "reference": "Multiply 6 by 7", "weight": 3}]}
    label = json.dumps({"id": "f", "prompt": "Explain.", "rubric": rubric})
    async with served() as http:
        response = await http.post("/get_reward", json={"query": ["Q: it is 42"], "prompts": ["Q: "],
                                                        "labels": [label]})  # fmt: skip
    assert response.status_code == 422 and "fuzzy criteria need a model backend" in response.json()["detail"][0]["msg"]


async def test_metrics_count_requests_and_responses():
    async with served() as http:
        await http.post("/v1/score", json={"groups": [GROUP]})
        text = (await http.get("/metrics")).text
    assert 'genrm_requests_total{code="200",endpoint="/v1/score"} 1.0' in text
    assert "genrm_responses_scored_total 3.0" in text
    assert 'genrm_request_seconds_count{endpoint="/v1/score"} 1.0' in text


async def test_async_client_over_asgi_transport_and_its_errors():
    app = create_app(ServerSettings())
    async with app.router.lifespan_context(app):
        async with AsyncRewardClient("http://test", transport=httpx.ASGITransport(app=app)) as client:
            results = await client.score([GROUP])
            assert results[0].rewards == [1.0, 0.0, 0.0]
            assert (await client.verify("expr_verify(target='1')", "expr_verify(predict='1')")).score == 1.0
            with pytest.raises(RewardServerError) as caught:
                await client.score([dict(GROUP, task_type="poetry")])
            assert caught.value.status == 422 and caught.value.detail[0]["loc"][-1] == "task_type"


async def test_rule_backend_matches_the_reward_core(example_instances):
    from genrm.methods.rubric.method import score_instance

    groups = [i.model_dump(mode="json") for i in example_instances]
    async with served() as http:
        response = await http.post("/v1/score", json={"groups": groups})
    assert response.status_code == 200
    served_rewards = [g["rewards"] for g in response.json()["groups"]]
    assert served_rewards == [score_instance(i).rewards for i in example_instances]


class _SlowMethod(RubricMethod):
    # the group "slow" takes 60 s to judge; its cancellation is counted
    cancelled: list[str] = []

    async def judge(self, prepared, judge):
        import asyncio

        if prepared.instance.id == "slow":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled.append(prepared.instance.id)
                raise
        return await super().judge(prepared, judge)


def test_a_client_that_leaves_has_its_work_stopped_and_nothing_of_it_logged(tmp_path):
    from fake_judge import AppServer

    method = _SlowMethod()
    app = create_app(ServerSettings(record_log=tmp_path / "log.jsonl"), method=method)
    with AppServer(app) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(server.root + "/v1/score", json={"groups": [dict(GROUP, id="slow")]}, timeout=0.5)
        deadline = time.monotonic() + 10  # the judging would take 60 s: stopped, it ends at once
        while not method.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert method.cancelled == ["slow"]
        later = httpx.post(server.root + "/v1/score", json={"groups": [dict(GROUP, id="g2")]}, timeout=30)
        assert later.status_code == 200 and later.json()["groups"][0]["rewards"] == [1.0, 0.0, 0.0]
    assert [e["instance"]["id"] for e in read_records(tmp_path / "log.jsonl")] == ["g2"]


async def test_judge_cost_planning_stops_once_the_request_is_over_the_limit(monkeypatch):
    import serving.defences.judge_cost

    planned, real = [], serving.defences.judge_cost.planned_cost

    async def counted(*args, **kwargs):
        planned.append(1)
        return await real(*args, **kwargs)

    monkeypatch.setattr(serving.defences.judge_cost, "planned_cost", counted)
    backend = Judge(ScriptedEngine(lambda request: "{}"))
    groups = [dict(GROUP, id=f"g{k}") for k in range(50)]
    async with served(ServerSettings(max_judge_calls=1), backend=backend) as http:
        refused = await http.post("/v1/score", json={"groups": groups})
    message = refused.json()["detail"][0]["msg"]
    assert refused.status_code == 413 and f"at least {len(GROUP['responses'])} calls" in message, refused.text
    assert len(planned) == 1  # the 49 other groups were never planned


async def test_each_answered_request_is_one_access_line_and_an_unreachable_judge_is_said_at_start(caplog):
    import logging
    import socket

    from test_score_workers import LARGE

    caplog.set_level(logging.DEBUG, logger="genrm.serving")
    async with served(ServerSettings(score_workers=1)) as http:
        await http.post("/v1/score", json={"groups": [GROUP, dict(GROUP, id="g2")]})
        await http.post("/v1/score", json={"groups": [LARGE]})  # scored in a worker: its groups counted there
        await http.get("/health")
    lines = [r.getMessage() for r in caplog.records if r.name == "genrm.serving.access"]
    assert re.fullmatch(r"POST /v1/score 200 \d+ ms 2 groups from .*", lines[0]), lines
    assert re.fullmatch(r"POST /v1/score 200 \d+ ms 1 group from .*", lines[1]), lines
    health = [r for r in caplog.records if "GET /health 200" in r.getMessage()]
    assert health and health[0].levelno == logging.DEBUG  # a probe's line is not shown at the default level
    assert not [r for r in caplog.records if "cannot be reached" in r.getMessage()]  # the rule judge is always there

    caplog.clear()
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    async with served(ServerSettings(judge=f"openai:m@http://127.0.0.1:{port}/v1")) as http:
        for _ in range(100):  # the warning comes from a probe started with the server
            if any("cannot be reached" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.05)
    (warning,) = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
    assert warning.levelno == logging.WARNING and "the openai judge cannot be reached now" in warning.getMessage()
