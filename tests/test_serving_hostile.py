"""The reward server against hostile input and overload: whatever a request holds, the answer is a verdict on the
response, a 4xx naming what was wrong, or a 503 for the server's own failure; never a 500, never another client's
reward changed, never a score for what was not judged."""

import json
import threading
from unittest import mock

import pytest
from pydantic import ValidationError
from test_serving_app import GROUP, served

from serving.record_log import fence_damaged_lines, read_records
from serving.settings import ServerSettings
from verifiers.expressions.pool import ExprOutcome

pytestmark = pytest.mark.anyio

BBOX_GROUP = {
    "id": "box",
    "prompt": "Where is the sign?",
    "task_type": "grounding",
    "rubric": {"essential": [{"criterion": "Boxes the sign.", "reference": "bbox_verify(target=[[0, 0, 10, 10]])",
                              "weight": 3}]},
    "responses": ["\\boxed{[1" + "0" * 400 + ", 0, 10, 10]}", "\\boxed{[0, 0, 10, 10]}"],
}  # fmt: skip


async def test_what_a_response_holds_is_scored_never_a_server_error():
    verify = [
        ("time_verify(target='2024-01-01T18:15+01:00', tformat='%Y-%m-%dT%H:%M%z')",
         "time_verify(predict='2024-01-01T18:15+99:99')"),
        ("text_verify(target='abc', ignore_st=True)", 'text_verify(predict="a\\ud800b")'),
        ("list_verify(target=['abc'], ignore_st=True)", 'list_verify(predict=["a\\ud800b"])'),
        ("text_verify(target='a')", "text_verify(predict='" + "\ufdfa" * 20_000 + "')"),
    ]  # fmt: skip
    async with served() as http:
        scored = await http.post("/v1/score", json={"groups": [BBOX_GROUP]})
        answers = [await http.post("/v1/verify", json={"reference": r, "prediction": p}) for r, p in verify]
    assert scored.status_code == 200
    group = scored.json()["groups"][0]
    assert group["rewards"] == [0.0, 1.0]  # the 400-digit coordinate is a malformed box: a verdict, 0
    assert group["records"][0]["criteria"][0]["status"] == "ok"
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] in ("ok", "unparseable_pred")
    assert answers[0].json()["status"] == "unparseable_pred" and answers[-1].json()["status"] == "unparseable_pred"


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/verify", '{"reference": NaN, "prediction": "x"}'),
        ("/v1/verify", '{"reference": Infinity, "prediction": -Infinity}'),
        ("/v1/score", '{"groups": [{"id": "g", "prompt": "p", "rubric": NaN, "responses": ["a"]}]}'),
        ("/get_reward", '{"query": [NaN], "prompts": ["p"], "labels": ["{}"]}'),
    ],
)
async def test_nan_and_infinity_in_a_bad_field_are_a_422_and_the_connection_stays_usable(path, body):
    async with served() as http:
        refused = await http.post(path, content=body, headers={"content-type": "application/json"})
        after = await http.post("/v1/score", json={"groups": [GROUP]})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["loc"][0] == "body"
    assert after.status_code == 200


async def test_lone_surrogates_are_scored_in_responses_and_refused_in_identifiers(tmp_path):
    # JSON's \ud800 escape decodes to a lone surrogate, which UTF-8 cannot carry: in a policy's response it is the
    # response's content (scored, answered, logged), in a bounded identifier or call string a 422 naming the field.
    group = dict(GROUP, responses=["\\boxed{42} \udfff", "\\boxed{41}\ud800"])
    settings = ServerSettings(record_log=tmp_path / "log.jsonl")
    headers = {"content-type": "application/json"}
    async with served(settings) as http:
        scored = await http.post("/v1/score", content=json.dumps({"groups": [group]}), headers=headers)
        named = await http.post("/v1/score", content=json.dumps({"groups": [dict(GROUP, id="g\ud800")]}),
                                headers=headers)  # fmt: skip
        verified = await http.post("/v1/verify", content=json.dumps({"reference": "expr_verify(target='2')",
                                                                     "prediction": "expr_verify(predict='2\ud800')"}),
                                   headers=headers)  # fmt: skip
    assert scored.status_code == 200, scored.text
    assert scored.json()["groups"][0]["rewards"] == [1.0, 0.0]
    assert scored.json()["groups"][0]["replaced_text"] == [0, 1]  # the answer says which responses were made safe
    assert json.loads(scored.text)["groups"][0]["records"][1]["criteria"][0]["extracted"] is not None
    assert named.status_code == 422 and named.json()["detail"][0]["loc"] == ["body", "groups", 0, "id"]
    assert verified.status_code == 422 and verified.json()["detail"][0]["loc"] == ["body", "prediction"]
    logged = list(read_records(tmp_path / "log.jsonl"))
    assert len(logged) == 1 and logged[0]["instance"]["responses"] == group["responses"]


async def test_a_torn_last_line_is_fenced_before_the_next_group_is_logged(tmp_path):
    log = tmp_path / "log.jsonl"
    whole = json.dumps({"request_id": "before", "result": {}}) + "\n"
    log.write_text(whole + '{"request_id": "torn", "resu', encoding="utf-8")  # killed mid-write
    async with served(ServerSettings(record_log=log)) as http:
        assert (await http.post("/v1/score", json={"groups": [GROUP]})).status_code == 200
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["request_id"] for line in lines][0] == "before"
    assert len(lines) == 2 and json.loads(lines[1])["instance"]["id"] == "g1"  # every line reads
    assert (tmp_path / "log.jsonl.torn").read_text(encoding="utf-8") == '{"request_id": "torn", "resu\n'
    assert fence_damaged_lines(log) == 0  # a whole file is left alone


async def test_a_full_disk_leaves_no_part_of_a_batch_and_the_next_batch_starts_on_a_line_of_its_own(
    tmp_path, monkeypatch
):
    import errno
    import os

    import serving.record_log

    log = tmp_path / "log.jsonl"
    real_write, calls = os.write, []

    def full_disk(fd, data):  # the first 100 bytes go, then the disk is full
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:100]))
        raise OSError(errno.ENOSPC, "No space left on device")

    async with served(ServerSettings(record_log=log)) as http:
        assert (await http.post("/v1/score", json={"groups": [GROUP]})).status_code == 200
        before = log.read_bytes()
        monkeypatch.setattr(serving.record_log.os, "write", full_disk)
        refused = await http.post("/v1/score", json={"groups": [GROUP]})  # the client is refused; nothing logged
        monkeypatch.setattr(serving.record_log.os, "write", real_write)
        assert log.read_bytes() == before  # the 100 bytes written were cut back
        assert (await http.post("/v1/score", json={"groups": [GROUP]})).status_code == 200
    lines = log.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == 2 and all(json.loads(line)["instance"]["id"] == "g1" for line in lines)
    assert refused.status_code == 507
    assert refused.json()["detail"][0]["loc"] == ["server", "record_log"]
    assert "record log (log.jsonl) could not be written: ENOSPC" in refused.json()["detail"][0]["msg"]


@pytest.mark.parametrize("score_workers", [0, 1], ids=["in-process", "in-a-worker"])
async def test_a_record_log_on_a_full_device_is_a_507_naming_the_log_for_every_route(score_workers):
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    large = {**GROUP, "responses": GROUP["responses"] + ["x" * 20_000]}  # over 16 KiB: scored in a worker if any
    settings = ServerSettings(record_log="/dev/full", score_workers=score_workers)
    label = json.dumps({**GROUP, "responses": []})
    async with served(settings) as http:
        reward = {"query": [GROUP["prompt"] + " 4"], "prompts": [GROUP["prompt"]], "labels": [label]}
        answers = [await http.post("/v1/score", json={"groups": [GROUP]}),
                   await http.post("/v1/score", json={"groups": [large]}),
                   await http.post("/get_reward", json=reward)]  # fmt: skip
    for answer in answers:
        assert answer.status_code == 507, answer.text
        (detail,) = answer.json()["detail"]
        assert detail["loc"] == ["server", "record_log"] and "(full) could not be written: ENOSPC" in detail["msg"]


def test_an_empty_api_key_is_refused():
    with pytest.raises(ValidationError, match="api_key is empty"):
        ServerSettings(api_key="")
    with pytest.raises(ValidationError, match="api_key is empty"):
        ServerSettings(host="0.0.0.0", api_key="  ")


async def test_with_a_key_everything_but_health_needs_it_before_the_body_is_read():
    async with served(ServerSettings(api_key="s3cret")) as http:
        pages = [await http.get(path) for path in ("/openapi.json", "/docs", "/redoc")]
        malformed = await http.post("/v1/score", content=b"{not json", headers={"content-type": "application/json"})
        keyed = await http.get("/openapi.json", headers={"Authorization": "Bearer s3cret"})
    assert [page.status_code for page in pages] == [401, 401, 401]
    assert malformed.status_code == 401 and malformed.headers["www-authenticate"] == "Bearer"
    assert keyed.status_code == 200 and "/v1/score" in keyed.json()["paths"]


EXPR_GROUP = {
    "id": "e",
    "prompt": "Area of a circle of radius 3?",
    "task_type": "math",
    "rubric": {"essential": [{"criterion": "Gives the area.", "reference": "expr_verify(target='9\\\\pi')",
                              "weight": 3}]},
    "responses": ["\\boxed{9\\pi}", "\\boxed{3\\pi}"],
}  # fmt: skip


async def test_no_free_expression_worker_is_never_a_score():
    busy = ExprOutcome("busy", False, "no expression worker was free within 30 s (server busy)")
    label = json.dumps({k: v for k, v in EXPR_GROUP.items() if k != "responses"})
    with mock.patch("verifiers.expressions.pool.ExprWorkerPool.check", return_value=busy):
        async with served() as http:
            scored = await http.post("/v1/score", json={"groups": [EXPR_GROUP]})
            calls = {"reference": "expr_verify(target='9\\\\pi')", "prediction": "expr_verify(predict='9\\\\pi')"}
            verified = await http.post("/v1/verify", json=calls)
            reward = await http.post("/get_reward", json={"query": ["Q: \\boxed{9\\pi}"], "prompts": ["Q: "],
                                                          "labels": [label]})  # fmt: skip
            metrics = (await http.get("/metrics")).text
    group = scored.json()["groups"][0]
    assert scored.status_code == 200 and group["rewards"] == [None, None]
    assert {r["criteria"][0]["status"] for r in group["records"]} == {"busy"}
    assert verified.status_code == 503 and verified.headers["retry-after"] == "1"
    assert reward.status_code == 503 and reward.json()["detail"][0]["type"] == "busy"
    assert 'genrm_verifier_unjudged_total{status="busy"} 4.0' in metrics


async def test_a_target_that_cannot_be_checked_is_a_rubric_error_not_a_score(monkeypatch):
    from collections import OrderedDict

    import verifiers.expr

    unreadable = ExprOutcome("unparseable_target", False, "the target could not be read within 2 s")
    label = json.dumps({k: v for k, v in EXPR_GROUP.items() if k != "responses"})
    monkeypatch.setattr(verifiers.expr, "_READ_WHOLE", OrderedDict())  # no target is known to read yet
    async with served() as http:
        with mock.patch("verifiers.expressions.pool.ExprWorkerPool.check", return_value=unreadable):
            refused = await http.post("/v1/score", json={"groups": [EXPR_GROUP]})  # found when the rubric is read
        assert (await http.post("/v1/score", json={"groups": [EXPR_GROUP]})).status_code == 200  # read: remembered
        with mock.patch("verifiers.expressions.pool.ExprWorkerPool.check", return_value=unreadable):
            scored = await http.post("/v1/score", json={"groups": [EXPR_GROUP]})  # found when a response is scored
            reward = await http.post("/get_reward", json={"query": ["Q: \\boxed{9\\pi}"], "prompts": ["Q: "],
                                                          "labels": [label]})  # fmt: skip
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "groups", 0, "rubric", "essential", 0, "reference"]
    assert scored.json()["groups"][0]["rewards"] == [None, None]
    assert reward.status_code == 422 and reward.json()["detail"][0]["loc"][:3] == ["body", "labels", 0]
    assert "cannot be checked" in reward.json()["detail"][0]["msg"]


async def test_the_expression_checks_of_a_group_run_concurrently():
    # Each fake check waits for a second one to arrive: run one after another, the first would never see it.
    meeting = threading.Barrier(2, timeout=20)

    def check(self, target, predict, float_rounding, deadline_s, wait_s=None):
        meeting.wait()
        return ExprOutcome("ok", predict == target, "compared")

    group = dict(EXPR_GROUP, responses=["\\boxed{9\\pi}", "\\boxed{3\\pi}", "\\boxed{9\\pi}", "\\boxed{\\pi}"])
    async with served() as http:
        # the target is read once by the real workers (and remembered), so only the responses' checks meet below
        assert (await http.post("/v1/score", json={"groups": [EXPR_GROUP]})).status_code == 200
        with mock.patch("verifiers.expressions.pool.ExprWorkerPool.check", check):
            scored = await http.post("/v1/score", json={"groups": [group]})
    assert scored.status_code == 200 and scored.json()["groups"][0]["rewards"] == [1.0, 0.0, 1.0, 0.0]
