"""A retried query is not a new response: ``/get_reward`` with groups gathered across requests answers a query resent
by a client that timed out from the group it first joined, and the group is judged with its real members (it was
judged as q0, q1, q2, q2 and the real fourth response was left to a group of one)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fake_judge import ServeProcess

from genrm.methods.rubric.method import score_instance
from genrm.methods.rubric.models import Instance
from serving.gathering import GroupGatherer

BOX = Instance(
    id="retry-1", prompt="Box the cup. Answer with [x1, y1, x2, y2].", task_type="grounding",
    rubric={"essential": [{"criterion": "Boxes the cup.", "reference": "bbox_verify(target=[[100, 100, 300, 300]])",
                           "weight": 1}]},
    responses=["Final answer: [100, 100, 300, 300]", "Final answer: [100, 100, 290, 300]",
               "Final answer: [0, 0, 50, 50]", "Final answer: [120, 100, 300, 320]"],
)  # fmt: skip
CHATML = f"<|im_start|>user\n{BOX.prompt}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_a_retry_takes_the_place_of_the_request_that_left_and_a_duplicate_sample_is_a_member():
    judged = []

    async def judge(instance):
        judged.append(list(instance.responses))
        return list(instance.responses)

    gatherer = GroupGatherer(4, 30.0, judge)
    bare = BOX.model_copy(update={"responses": []})
    first_gone = asyncio.Event()
    first = asyncio.create_task(gatherer.submit(bare, "a", first_gone))
    same_text = asyncio.create_task(gatherer.submit(bare, "b", asyncio.Event()))
    await asyncio.sleep(0)
    first_gone.set()  # the client of "a" timed out and left
    retry = asyncio.create_task(gatherer.submit(bare, "a", asyncio.Event()))
    twin = asyncio.create_task(gatherer.submit(bare, "b", asyncio.Event()))  # "b" sampled twice: its holder waits
    last = asyncio.create_task(gatherer.submit(bare, "c", asyncio.Event()))
    shares = await asyncio.gather(first, same_text, retry, twin, last)
    assert judged == [["a", "b", "b", "c"]]  # one group of its four real members
    assert [s.index for s in shares] == [0, 1, 0, 2, 3] and {s.partial for s in shares} == {False}

    # a retry that comes after its group was judged gets the same share, and opens no group of one
    left = asyncio.Event()
    members = [asyncio.create_task(gatherer.submit(bare, text, left if text == "x" else asyncio.Event()))
               for text in ("w", "x", "y")]  # fmt: skip
    await asyncio.sleep(0)
    left.set()  # the client of "x" leaves before the group is whole
    members.append(asyncio.create_task(gatherer.submit(bare, "z", asyncio.Event())))
    await asyncio.gather(*members)
    again = await gatherer.submit(bare, "x", asyncio.Event())
    assert (again.index, again.size, again.result) == (1, 4, ["w", "x", "y", "z"])
    assert len(judged) == 2 and gatherer.open_groups() == 0
    # the same text from a request whose holder got its answer is a new response: a new group
    fresh = asyncio.create_task(gatherer.submit(bare, "w", asyncio.Event()))
    await asyncio.sleep(0)
    assert gatherer.open_groups() == 1
    fresh.cancel()


@pytest.mark.slow
def test_a_client_that_times_out_and_resends_gets_its_groups_reward_from_a_real_server():
    expected = score_instance(BOX).rewards
    label = BOX.model_copy(update={"responses": []}).model_dump_json(exclude={"responses"})

    def body(response: str) -> dict:
        return {"query": [CHATML + response + "<|im_end|>"], "prompts": [CHATML], "labels": [label]}

    async def run(url: str) -> list[float]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            first_two = [asyncio.create_task(http.post("/get_reward", json=body(r))) for r in BOX.responses[:2]]
            # the third query's client gives up after 0.5 s (the group waits for its fourth member) and leaves
            async with httpx.AsyncClient(base_url=url, timeout=0.5) as impatient:
                with pytest.raises(httpx.TimeoutException):
                    await impatient.post("/get_reward", json=body(BOX.responses[2]))
            await asyncio.sleep(0.5)  # the server has seen the connection close
            retried = asyncio.create_task(http.post("/get_reward", json=body(BOX.responses[2])))
            await asyncio.sleep(0.5)
            fourth = await http.post("/get_reward", json=body(BOX.responses[3]))
            answers = [*(await asyncio.gather(*first_two)), await retried, fourth]
        assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
        logs = [a.json()["extra_logs"] for a in answers]
        assert {log["group_size"][0] for log in logs} == {4.0} and {log["group_partial"][0] for log in logs} == {0.0}
        return [a.json()["rewards"][0] for a in answers]

    with ServeProcess("--group-size", "4", "--group-wait-s", "60", "--log-level", "warning") as served:
        started = time.monotonic()
        rewards = asyncio.run(run(served.url))
    assert rewards == pytest.approx(expected)
    assert time.monotonic() - started < 50  # judged when the fourth came, not after the group's wait


@pytest.mark.anyio
async def test_judged_groups_are_forgotten_oldest_first_and_a_retry_finds_only_what_is_held():
    judged = []

    async def judge(instance):
        judged.append(list(instance.responses))
        return list(instance.responses)

    gatherer = GroupGatherer(1, 30.0, judge, max_open=2)
    bare = BOX.model_copy(update={"responses": []})
    other = bare.model_copy(update={"id": "retry-2"})
    for instance, text in [(bare, "a"), (other, "b"), (bare, "c"), (bare, "d")]:  # groups of one, judged at once
        left = asyncio.Event()
        left.set()  # each client leaves after its answer: its text may be retried
        await gatherer.submit(instance, text, left)
    gatherer._forget_old()
    assert [list(group.responses) for group in gatherer._judged.values()] == [["c"], ["d"]]  # the two newest
    assert [[list(g.responses) for g in groups] for groups in gatherer._closed_by_key.values()] == [[["c"], ["d"]]]
    retried = await gatherer.submit(bare, "d", asyncio.Event())  # still held: answered from its group
    assert retried.result == ["d"] and len(judged) == 4
    judged_again = await gatherer.submit(bare, "a", asyncio.Event())  # forgotten: judged anew
    assert judged_again.result == ["a"] and judged[-1] == ["a"] and len(judged) == 5


@pytest.mark.anyio
async def test_a_retry_of_a_group_whose_judging_failed_has_the_whole_group_judged_again():
    # the judge is down for the first judging; the client of "a" left meanwhile and sends it again once it is back
    judged, down = [], [True]

    async def judge(instance):
        judged.append(list(instance.responses))
        if down[0]:
            raise ConnectionError("the judge is down")
        return list(instance.responses)

    gatherer = GroupGatherer(3, 30.0, judge)
    bare = BOX.model_copy(update={"responses": []})
    left = asyncio.Event()
    members = [asyncio.create_task(gatherer.submit(bare, text, left if text == "a" else asyncio.Event()))
               for text in ("a", "b", "c")]  # fmt: skip
    await asyncio.sleep(0)
    left.set()
    failed = await asyncio.gather(*members, return_exceptions=True)
    assert all(isinstance(f, ConnectionError) for f in failed) and judged == [["a", "b", "c"]]
    down[0] = False
    again = await gatherer.submit(bare, "a", asyncio.Event())
    assert (again.index, again.size, again.partial, again.result) == (0, 3, False, ["a", "b", "c"])
    assert judged == [["a", "b", "c"]] * 2 and gatherer.open_groups() == 0  # judged whole, not as a group of one


@pytest.mark.anyio
async def test_a_result_the_route_says_a_retry_may_mend_is_judged_again_for_the_retry():
    judged = []

    async def judge(instance):
        judged.append(list(instance.responses))
        return {"mendable": len(judged) == 1, "responses": list(instance.responses)}

    gatherer = GroupGatherer(1, 30.0, judge, retry_failed=lambda result: result["mendable"])
    bare = BOX.model_copy(update={"responses": []})
    left = asyncio.Event()
    first = asyncio.create_task(gatherer.submit(bare, "a", left))
    await asyncio.sleep(0)
    left.set()
    assert (await first).result["mendable"]
    retried = await gatherer.submit(bare, "a", asyncio.Event())
    assert not retried.result["mendable"] and len(judged) == 2


@pytest.mark.anyio
async def test_gathered_and_retained_groups_are_bounded_in_bytes():
    from serving.gathering import GatherFull, instance_key, result_bytes

    async def judge(instance):  # a result that holds its responses, as records do
        return instance

    bare = BOX.model_copy(update={"responses": []})
    _, instance_bytes = instance_key(bare)
    text = "x" * 1000
    group_bytes = instance_bytes + 2 * len(text)
    gatherer = GroupGatherer(2, 30.0, judge, max_bytes=group_bytes + instance_bytes + len(text),
                             max_retained_bytes=3 * group_bytes)  # fmt: skip
    first = asyncio.ensure_future(gatherer.submit(bare, text))
    other = bare.model_copy(update={"id": "retry-2"})
    second = asyncio.ensure_future(gatherer.submit(other, text))
    await asyncio.sleep(0)
    assert gatherer.gathered_bytes == 2 * (instance_bytes + len(text))
    with pytest.raises(GatherFull, match="max_gathered_bytes"):  # one more response passes the bound
        await gatherer.submit(bare, text + "y")
    assert gatherer.gathered_bytes == 2 * (instance_bytes + len(text))  # the refused one holds nothing
    await gatherer.aclose(5)
    await asyncio.gather(first, second)
    assert gatherer.gathered_bytes == 0
    # judged groups: each holds its instance, responses and result; the oldest go once they pass the bound
    for k in range(6):
        instance = bare.model_copy(update={"id": f"kept-{k}"})
        await asyncio.gather(gatherer.submit(instance, text), gatherer.submit(instance, text))
    kept = list(gatherer._judged.values())
    assert gatherer.gathered_bytes == 0 and gatherer.retained_bytes == sum(group.held for group in kept)
    assert gatherer.retained_bytes <= gatherer.max_retained_bytes
    assert [group.instance.id for group in kept] == [f"kept-{k}" for k in range(6 - len(kept), 6)] and kept
    one = kept[-1]
    assert one.held == instance_key(one.instance)[1] + 2 * len(text) + result_bytes(one.outcome[0])
