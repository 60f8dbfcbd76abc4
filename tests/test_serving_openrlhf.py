"""OpenRLHF's remote reward protocol: responses cut from queries as OpenRLHF decodes them, groups gathered across
single-query requests, refusals logged; and OpenRLHF's own rollout executor against a real server."""

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fake_judge import ServeProcess, with_app

from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from serving.openrlhf import SpecialTail, read_query
from serving.settings import ServerSettings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = [Instance.model_validate_json(line) for line in (ROOT / "datasets/examples/reward_core.jsonl").open()]
CHATML = "<|im_start|>user\nWhich option? (A) 2 (B) 4<|im_end|>\n<|im_start|>assistant\n"
TAIL = SpecialTail()


def _example(name: str) -> Instance:
    return next(instance for instance in EXAMPLES if instance.id == name)


def test_the_end_of_sequence_text_is_cut_from_the_response():
    read = read_query(CHATML + "The answer is \\boxed{B}<|im_end|>", CHATML, TAIL)
    assert (read.response, read.placed, read.stripped) == ("The answer is \\boxed{B}", "prefix", "<|im_end|>")
    for end in ("<|eot_id|>", "</s>", "<end_of_turn>\n<eos>", " <|endoftext|><|endoftext|> ", "<|return|>"):
        assert read_query(CHATML + "B" + end, CHATML, TAIL).response == "B", end


def test_special_text_inside_a_response_and_unknown_endings_are_kept():
    kept = read_query(CHATML + "a <|im_end|> b", CHATML, TAIL)
    assert kept.response == "a <|im_end|> b" and kept.stripped == ""
    assert read_query(CHATML + "B[END]", CHATML, TAIL).response == "B[END]"
    assert read_query(CHATML + "B[END]", CHATML, SpecialTail(["[END]"])).response == "B"


def test_cutting_the_tail_takes_linear_time_on_hostile_responses():
    # A regular expression anchored at the end backtracks from every position: 100,000 spaces took about a minute
    # (20,000: 2.7 s, quadratic), on the event loop. Walking back from the end takes milliseconds.
    import time

    for response in (" " * 100_000 + "x", "<|im_end|> " * 9_000 + "x", "x" + " <|im_end|>" * 9_000):
        start = time.monotonic()
        kept, cut = TAIL.cut(response)
        assert time.monotonic() - start < 2.0
        assert kept + cut == response
    assert TAIL.cut("x" + " <|im_end|>" * 9_000) == ("x", " <|im_end|>" * 9_000)
    assert TAIL.cut("answer  \n") == ("answer  \n", "")  # white space alone is kept


def test_a_prompt_the_tokenizer_did_not_give_back_exactly_is_still_found():
    # a BOS text in front, and spaces a tokenizer put around special tokens
    assert read_query("<s>" + CHATML + "B<|im_end|>", CHATML, TAIL).placed == "prompt_tail"
    spaced = CHATML.replace("<|im_end|>\n", "<|im_end|> \n").replace("assistant\n", "assistant \n")
    read = read_query(spaced + "B<|im_end|>", CHATML, TAIL)
    assert (read.response, read.placed) == ("B", "spacing")
    assert read_query("something else entirely", CHATML, TAIL) is None


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _label(instance: Instance) -> str:
    return instance.model_dump_json(exclude={"responses"})


async def _post_each(http: httpx.AsyncClient, instance: Instance, responses: list[str]) -> list[httpx.Response]:
    """One request per response, all in flight at once, as OpenRLHF's executors send them."""
    label = _label(instance)
    bodies = [{"query": [CHATML + r + "<|im_end|>"], "prompts": [CHATML], "labels": [label]} for r in responses]
    return list(await asyncio.gather(*(http.post("/get_reward", json=body) for body in bodies)))


@pytest.mark.anyio
async def test_single_query_requests_are_gathered_into_their_group():
    box = _example("box-001")
    expected = score_instance(box).rewards
    assert len(set(expected)) > 2  # partial rewards: a group of one would give other values

    async def run(http):
        return await _post_each(http, box, box.responses)

    answers = await with_app(ServerSettings(group_size=len(box.responses), group_wait_s=30), run)
    assert [a.status_code for a in answers] == [200] * len(box.responses)
    assert [a.json()["rewards"][0] for a in answers] == pytest.approx(expected)
    logs = [a.json()["extra_logs"] for a in answers]
    assert {log["group_size"][0] for log in logs} == {4.0} and {log["group_partial"][0] for log in logs} == {0.0}
    assert {log["special_tokens_cut"][0] for log in logs} == {1.0}
    # without gathering, each request is a group of one: other rewards
    alone = await with_app(ServerSettings(), run)
    assert [a.json()["rewards"][0] for a in alone] != pytest.approx(expected)


@pytest.mark.anyio
async def test_a_group_that_stays_short_is_judged_with_what_came_and_said_partial():
    box = _example("box-001")
    short = box.model_copy(update={"responses": box.responses[:2]})

    async def run(http):
        return await _post_each(http, box, short.responses)

    answers = await with_app(ServerSettings(group_size=4, group_wait_s=0.3), run)
    assert [a.json()["rewards"][0] for a in answers] == pytest.approx(score_instance(short).rewards)
    assert {a.json()["extra_logs"]["group_partial"][0] for a in answers} == {1.0}
    assert {a.json()["extra_logs"]["group_size"][0] for a in answers} == {2.0}


@pytest.mark.anyio
async def test_empty_slices_are_answered_and_refusals_are_logged(caplog):
    async def run(http):
        empty = await http.post("/get_reward", json={"query": [], "prompts": [], "labels": []})
        lost = await http.post("/get_reward", json={"query": ["no prompt here"], "prompts": [CHATML],
                                                    "labels": [_label(_example("mc-001"))]})  # fmt: skip
        return empty, lost

    with caplog.at_level(logging.WARNING, logger="genrm.serving.access"):
        empty, lost = await with_app(ServerSettings(group_size=4), run)
    # OpenRLHF 0.9 posts the empty slice of a one-query batch to every reward server but the first
    assert empty.status_code == 200 and empty.json()["rewards"] == []
    assert lost.status_code == 422
    (line,) = [r.getMessage() for r in caplog.records if r.name == "genrm.serving.access"]
    assert "refused POST /get_reward" in line and "422" in line and "the prompt cannot be found" in line


def _openrlhf_paths() -> list[str]:
    return [p for p in os.environ.get("GENRM_OPENRLHF_PATHS", "").split(os.pathsep) if p]


@pytest.mark.slow
@pytest.mark.skipif(not _openrlhf_paths(), reason="GENRM_OPENRLHF_PATHS: folders with OpenRLHF installed")
@pytest.mark.parametrize("path", _openrlhf_paths())
def test_openrlhf_own_executor_gets_genrm_scores_rewards(path, tmp_path):
    wanted = ("box-001", "ocr-001", "mc-001", "time-001", "math-004")
    instances = [_example(name) for name in wanted]
    data = tmp_path / "instances.jsonl"
    data.write_text("".join(i.model_dump_json() + "\n" for i in instances), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, str(ROOT)])}
    with ServeProcess("--group-size", "4", "--log-level", "warning") as served:
        done = subprocess.run([sys.executable, str(ROOT / "tests/openrlhf_contract.py"), f"{served.url}/get_reward",
                               str(data)], capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert any(ending.endswith("<|im_end|>") for ending in result["query_endings"])  # OpenRLHF kept the special
    expected = {i: score_instance(instance).rewards for i, instance in enumerate(instances)}
    seen = {i: 0 for i in expected}
    for n, reward in result["rewards"]:
        assert reward == pytest.approx([expected[n][seen[n]]]), (wanted[n], seen[n], reward)
        seen[n] += 1
    assert all(log["group_partial"] == [0.0] for log in result["extra_logs"])


def test_a_flood_of_refusals_is_logged_at_a_bounded_rate(caplog):
    from serving.defences.guard import RefusalLog

    now = [0.0]
    log = RefusalLog(rate=5.0, clock=lambda: now[0])
    scope = {"method": "POST", "path": "/get_reward", "client": ("127.0.0.1", 1)}
    with caplog.at_level(logging.WARNING, logger="genrm.serving.access"):
        for _ in range(100):  # all at one instant: a burst of 5 lines, the rest counted
            log(scope, 422, b"bad")
        now[0] = 1.0  # a second later, 5 lines' worth again
        log(scope, 422, b"bad")
    lines = [r.getMessage() for r in caplog.records if r.name == "genrm.serving.access"]
    assert len(lines) == 6
    assert lines[-1].endswith("(95 more refusals not logged before this one)")
