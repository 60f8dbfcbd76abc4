"""The answer of ``/v1/score`` and the record log stay proportionate to the request, and a refused client's group is
never logged."""

import json

import pytest
from test_serving_app import GROUP, served

from serving.defences.answers import ANSWER_FLOOR_BYTES, answer_limit, bounded_answer
from serving.record_log import read_records
from serving.settings import ServerSettings

pytestmark = pytest.mark.anyio


def _amplifying_group(responses: int, criteria: int) -> dict:
    """Many one-word responses against many long criteria: records grow as responses x criteria."""
    rubric = [{"criterion": f"Criterion {i} " + "x" * 100, "reference": "text_verify(target='yes')", "weight": 1}
              for i in range(criteria)]  # fmt: skip
    return {"id": "amp", "prompt": "Say yes.", "rubric": {"essential": rubric[:64], "additional": rubric[64:]},
            "responses": ["Final answer: yes", "Final answer: no"] * (responses // 2)}  # fmt: skip


async def test_records_name_criteria_by_path_not_by_their_text():
    async with served() as http:
        answer = await http.post("/v1/score", json={"groups": [GROUP]})
    criterion = answer.json()["groups"][0]["records"][0]["criteria"][0]
    assert criterion["path"] == "essential[0]" and "criterion" not in criterion
    assert answer.json()["records_omitted"] is None


async def test_an_amplifying_request_gets_every_reward_without_records_and_the_log_gets_what_it_got(tmp_path):
    group = _amplifying_group(64, 128)
    body = json.dumps({"groups": [group]}).encode()
    async with served(ServerSettings(record_log=tmp_path / "log.jsonl")) as http:
        answer = await http.post("/v1/score", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 200
    payload = answer.json()
    assert payload["groups"][0]["rewards"] == [1.0, 0.0] * 32  # every reward is there
    assert payload["groups"][0]["records"] == [] and "more than" in payload["records_omitted"]
    assert len(answer.content) <= answer_limit(len(body), 10.0) and len(answer.content) < len(body)
    (logged,) = read_records(tmp_path / "log.jsonl")
    assert logged["result"]["records"] == [] and logged["result"]["rewards"] == [1.0, 0.0] * 32
    assert (tmp_path / "log.jsonl").stat().st_size < 2 * len(body)


async def test_the_ratio_is_a_setting_and_records_come_back_within_it():
    group = _amplifying_group(8, 8)
    async with served(ServerSettings(max_answer_ratio=1000.0)) as http:
        answer = await http.post("/v1/score", json={"groups": [group]})
    assert answer.json()["records_omitted"] is None and len(answer.json()["groups"][0]["records"]) == 8


def test_bounded_answer_keeps_records_up_to_the_limit_and_never_a_partial_set():
    from genrm.methods.base import GroupResult

    results = [GroupResult(id=str(i), rewards=[0.5], records=[{"note": "r" * 1000}]) for i in range(3)]
    whole, answered = bounded_answer(results, 10_000)
    assert json.loads(whole)["records_omitted"] is None and answered == results
    cut, answered = bounded_answer(results, 2_000)
    assert [g["records"] for g in json.loads(cut)["groups"]] == [[], [], []]
    assert [g["rewards"] for g in json.loads(cut)["groups"]] == [[0.5]] * 3 and answered[0].records == []
    assert answer_limit(0, 10.0) == ANSWER_FLOOR_BYTES and answer_limit(10**6, 10.0) == 10**7


async def test_a_group_whose_client_is_refused_is_never_logged(tmp_path):
    # a fuzzy criterion cannot be scored by the rule judge: /get_reward refuses the query (422), and logs nothing;
    # the same request made answerable is logged once
    fuzzy = {"essential": [{"criterion": "Explains the method.", "reference": "Multiply 6 by 7", "weight": 3}]}
    refused = json.dumps({"id": "f", "prompt": "Explain.", "rubric": fuzzy})
    answerable = json.dumps({k: v for k, v in GROUP.items() if k != "responses"})
    async with served(ServerSettings(record_log=tmp_path / "log.jsonl")) as http:
        no = await http.post("/get_reward", json={"query": ["Q: it is 42"], "prompts": ["Q: "], "labels": [refused]})
        yes = await http.post("/get_reward", json={"query": ["Q: \\boxed{42}"], "prompts": ["Q: "],
                                                   "labels": [answerable]})  # fmt: skip
    assert no.status_code == 422 and yes.status_code == 200
    logged = list(read_records(tmp_path / "log.jsonl"))
    assert [entry["instance"]["id"] for entry in logged] == [GROUP["id"]]
