"""Large ``/v1/score`` requests are scored in worker processes: the same answer, errors, images, log and metrics as in
the server's own process, a deadline that ends in no reward, and workers that are stopped when their caller goes."""

import base64
import io
import json
import multiprocessing
import threading
import time

import pytest
from PIL import Image
from test_serving_app import GROUP, served

from serving.defences.score_workers import INLINE_BODY_BYTES, INLINE_WORK, scored_inline
from serving.defences.worker_processes import WorkerDied, WorkerProcesses
from serving.record_log import read_records
from serving.settings import ServerSettings

pytestmark = pytest.mark.anyio

# Long enough that the body passes INLINE_BODY_BYTES: the request is scored in a worker.
LARGE = dict(GROUP, id="large", responses=[*GROUP["responses"], "\\boxed{42} " + "and so on " * 2_000])


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _png(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_cheap_requests_stay_in_the_server_and_the_rest_go_to_workers():
    assert len(json.dumps({"groups": [LARGE]})) > INLINE_BODY_BYTES
    assert scored_inline(1_000, None) and scored_inline(1_000, 3)
    assert not scored_inline(INLINE_BODY_BYTES + 1, None)
    # a small body can still ask for much work: many responses against a long rubric
    assert not scored_inline(INLINE_BODY_BYTES, INLINE_WORK // INLINE_BODY_BYTES + 1)


async def _answers(settings: ServerSettings, bodies: list[dict]) -> list[tuple[int, dict]]:
    async with served(settings) as http:
        return [((a := await http.post("/v1/score", json=body)).status_code, a.json()) for body in bodies]


async def test_a_request_scored_in_a_worker_is_answered_as_in_the_server_errors_images_and_log_alike(tmp_path):
    second = dict(LARGE, id="second", responses=["\\boxed{41}", *LARGE["responses"][3:]])
    bodies = [
        {"groups": [LARGE, second]},
        {"groups": [dict(LARGE, image=_png(8, 8))]},
        {"groups": [LARGE, dict(second, image="data:image/png;base64,AAAA")]},  # refused image: named
        {"groups": [LARGE, dict(second, rubric={"essential": []})]},  # refused by the method: named
        {"groups": [dict(LARGE, responses=LARGE["responses"] * 3)]},  # over max_responses
        {"groups": [dict(LARGE, rubric="nope")]},  # does not validate
    ]
    settings = [ServerSettings(score_workers=k, max_responses=8, record_log=tmp_path / f"{k}.jsonl") for k in (0, 1)]
    inline, pooled = [await _answers(one, bodies) for one in settings]
    for (status, answer), (status_in, answer_in) in zip(pooled, inline, strict=True):
        assert status == status_in and answer == answer_in
    assert [status for status, _ in pooled] == [200, 200, 422, 422, 422, 422]
    assert pooled[0][1]["groups"][0]["rewards"][:3] == [1.0, 0.0, 0.0]
    assert pooled[2][1]["detail"][0]["loc"] == ["body", "groups", 1, "image"]
    logged = [[(r["instance"], r["result"]) for r in read_records(tmp_path / f"{k}.jsonl")] for k in (0, 1)]
    assert len(logged[1]) == 3 and logged[0] == logged[1]  # the groups answered, nothing of the refused requests


async def test_a_worker_counts_what_it_scored_in_the_servers_metrics():
    async with served(ServerSettings(score_workers=1)) as http:
        await http.post("/v1/score", json={"groups": [LARGE, LARGE]})
        metrics = (await http.get("/metrics")).text
    assert f"genrm_responses_scored_total {2.0 * len(LARGE['responses'])}" in metrics


async def test_a_request_past_its_deadline_is_refused_with_no_reward_and_the_next_is_scored():
    async with served(ServerSettings(score_workers=1, score_timeout_s=0.001)) as http:
        refused = await http.post("/v1/score", json={"groups": [LARGE]})
        cheap = await http.post("/v1/score", json={"groups": [GROUP]})
    assert refused.status_code == 503 and "rewards" not in refused.text
    assert refused.json()["detail"][0]["type"] == "deadline" and "score_timeout_s" in refused.text
    assert cheap.status_code == 200 and cheap.json()["groups"][0]["rewards"] == [1.0, 0.0, 0.0]


async def test_a_request_that_needs_more_memory_than_its_worker_may_take_is_a_413_and_the_next_is_scored():
    # 100 groups of 64 responses against 64 criteria: a 0.6 MB body that makes 409,600 records (about 600 MB)
    criteria = [{"criterion": f"Names item {i}.", "reference": f"text_verify(target='w{i}')", "weight": 1}
                for i in range(64)]  # fmt: skip
    wide = dict(GROUP, task_type="general", rubric={"essential": criteria}, responses=["\\boxed{w1}"] * 64)
    body = {"groups": [dict(wide, id=f"wide-{k}") for k in range(100)]}
    async with served(ServerSettings(score_workers=1, score_worker_memory_mb=256)) as http:
        refused = await http.post("/v1/score", json=body)
        later = await http.post("/v1/score", json={"groups": [LARGE]})  # scored by a fresh worker
    assert refused.status_code == 413 and "rewards" not in refused.text
    (detail,) = refused.json()["detail"]
    assert detail["type"] == "memory" and "256 MiB (score_worker_memory_mb)" in detail["msg"]
    assert later.status_code == 200 and later.json()["groups"][0]["rewards"][:3] == [1.0, 0.0, 0.0]


_NEAR_CAP_CHILD = """
import resource, sys
from serving.defences.score_workers import near_memory_cap
from serving.defences.worker_processes import process_bytes
free = near_memory_cap()
size = process_bytes(0)
resource.setrlimit(resource.RLIMIT_AS, (size + 32 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
near = near_memory_cap(64 * 2**20)
far = near_memory_cap(16 * 2**20)
print(free, near, far)
"""


def test_an_error_met_near_the_workers_memory_cap_is_taken_for_the_cap():
    # under its address-space cap an allocation refused in native code can raise another error than MemoryError;
    # the worker tells it by how near the cap it is (32 MiB left: within 64, not within 16; no cap: never)
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _NEAR_CAP_CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "False"]


async def test_a_light_request_never_waits_behind_a_heavy_one_and_one_past_its_slice_is_scored_among_the_heavy(
    tmp_path,
):
    import asyncio

    from slow_expressions import slow_sum

    # heavy: over score_light_bytes, 12 checks that each run to the 5 s deadline (on the one heavy worker, until the
    # request's verifier budget of 30 s is spent); its client leaves once the test is done with it
    heavy = dict(LARGE, id="heavy", responses=[f"\\boxed{{{slow_sum(k)}}} " + "and so on " * 3_000 for k in range(12)])
    # light by its size, heavy by its work: 2 slow checks run past the 0.5 s slice, then among the heavy
    sly = dict(LARGE, id="sly", responses=[f"\\boxed{{{slow_sum(10 + k)}}} " + "and so on " * 800 for k in range(2)])
    light_size = ServerSettings().score_light_bytes
    assert len(json.dumps({"groups": [heavy]})) > light_size >= len(json.dumps({"groups": [sly]}))
    log = tmp_path / "log.jsonl"
    settings = ServerSettings(score_workers=1, score_light_slice_s=0.5, verifier_deadline_s=5, record_log=log)
    async with served(settings) as http:
        state = http._transport.app.state.server  # type: ignore[attr-defined]
        await asyncio.to_thread(state.score_workers.start)
        (light_worker,) = state.score_workers._light._idle
        held = asyncio.ensure_future(http.post("/v1/score", json={"groups": [heavy]}, timeout=600))
        await asyncio.sleep(1.0)  # the heavy request holds the heavy lane's worker
        light = await http.post("/v1/score", json={"groups": [LARGE]})
        heavy_running_when_light_answered = not held.done()
        moved = asyncio.ensure_future(http.post("/v1/score", json={"groups": [sly]}, timeout=120))
        await asyncio.sleep(2.0)  # past its slice: stopped in the light lane, waiting for the heavy one
        light_again = await http.post("/v1/score", json={"groups": [dict(LARGE, id="again")]})
        sly_waiting_when_light_answered = not moved.done()
        # the light lane's worker stopped the request past its slice in place: the same process took the next one
        light_worker_kept = state.score_workers._light._idle == [light_worker] and light_worker.process.is_alive()
        held.cancel()  # the heavy request's client leaves: its worker stops it, and the sly one is scored there
        await asyncio.gather(held, return_exceptions=True)
        moved = await moved
    assert light.status_code == 200 and light.json()["groups"][0]["rewards"][:3] == [1.0, 0.0, 0.0]
    assert heavy_running_when_light_answered
    assert sly_waiting_when_light_answered
    assert light_worker_kept
    assert light_again.status_code == 200 and moved.status_code == 200
    assert len(moved.json()["groups"][0]["rewards"]) == 2
    # each answered request is logged once: the attempt stopped in the light lane left nothing, nor the heavy one
    assert sorted(record["instance"]["id"] for record in read_records(log)) == ["again", "large", "sly"]


def _echo(connection, delay_s: float) -> None:
    connection.send(("ready",))
    while True:
        message = connection.recv()
        if message == "exit":
            return
        time.sleep(delay_s)
        connection.send((message, message == "retire"))


def test_worker_processes_answer_in_turn_keep_workers_and_stop_them_at_the_deadline_or_on_cancel():
    workers = WorkerProcesses(lambda: multiprocessing.get_context("fork"), _echo, (0.2,))
    try:
        assert workers.call("a", 10.0) == "a"
        (first,) = workers._idle
        assert workers.call("b", 10.0) == "b" and workers._idle == [first]  # kept between calls
        with pytest.raises(TimeoutError):
            workers.call("slow", 0.01)
        assert not first.process.is_alive() and workers._idle == []  # killed at the deadline
        cancel = threading.Event()
        threading.Timer(0.05, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            workers.call("c", 10.0, cancel)
        assert time.monotonic() - start < 5.0 and workers._idle == []
        assert workers.call("retire", 10.0) == "retire" and workers._idle == []  # it said it leaves: not kept
        with pytest.raises(WorkerDied):
            workers.call("exit", 10.0)
        workers.close()
        assert workers.call("again", 10.0) == "again"  # a fresh worker after close (an app started again)
    finally:
        workers.close()


class _Cut(BaseException):
    pass


def _stoppable(connection, honours_stop: bool) -> None:
    # a worker that cuts its request at SIGUSR1 (as a scoring worker does), or one that goes on regardless
    import signal

    def stop(*_):
        if honours_stop:
            raise _Cut

    signal.signal(signal.SIGUSR1, stop)
    connection.send(("ready",))
    while True:
        message = connection.recv()
        try:
            if message == "slow":
                time.sleep(60)
        except _Cut:
            message = "stopped"
        connection.send((message, False))


@pytest.mark.parametrize("honours_stop", [True, False])
def test_a_worker_told_to_stop_its_request_is_kept_and_one_that_does_not_is_killed(honours_stop):
    workers = WorkerProcesses(lambda: multiprocessing.get_context("fork"), _stoppable, (honours_stop,), 1.0)
    try:
        assert workers.call("a", 10.0) == "a"
        (first,) = workers._idle
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            workers.call("slow", 30.0, cancel)
        assert time.monotonic() - start < 5.0
        with pytest.raises(TimeoutError):
            workers.call("slow", 0.2)  # at the deadline alike
        if honours_stop:  # stopped in place: the same worker, alive, answers the next call
            assert workers._idle == [first] and first.process.is_alive()
        else:  # no answer within the grace: killed
            assert workers._idle == [] and not first.process.is_alive()
        assert workers.call("b", 10.0) == "b"
    finally:
        workers.close()


def test_closing_stops_a_busy_worker_and_its_caller_returns():
    workers = WorkerProcesses(lambda: multiprocessing.get_context("fork"), _echo, (60.0,))
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            workers.call("long", 120.0)
        except BaseException as exc:  # noqa: BLE001 - what the caller got
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    while not workers._busy:
        time.sleep(0.01)
    workers.close()
    caller.join(30.0)
    assert not caller.is_alive() and isinstance(outcome[0], WorkerDied)


def _checkers(worker):
    # a scoring worker's expression workers: forked by its expression zygote, its one child
    return [checker for zygote in worker.children() for checker in zygote.children()]


def test_a_client_that_leaves_has_its_scoring_worker_stopped_and_nothing_of_it_logged(tmp_path):
    # on a real server: a request of 8 checks that each run to a 10 s deadline holds its worker for 80 s; its client
    # leaves once the worker is checking
    import socket

    import httpx
    import psutil
    from fake_judge import ServeProcess
    from slow_expressions import slow_sum

    # over score_light_bytes: in the heavy lane, where nothing but its client's leaving stops it before its deadline
    slow = dict(LARGE, id="slow", responses=[f"\\boxed{{{slow_sum(k)}}} " + "and so on " * 4_000 for k in range(8)])
    body = json.dumps({"groups": [slow]}).encode()
    assert not scored_inline(len(body), None) and len(body) > ServerSettings().score_light_bytes
    log = tmp_path / "log.jsonl"
    args = ("--score-workers", "1", "--verifier-deadline-s", "10", "--record-log", str(log), "--log-level", "warning")
    with ServeProcess(*args) as served:
        server = psutil.Process(served.process.pid)

        def checking() -> list[psutil.Process]:
            # the heavy lane's worker (nice +10: the light lane's starts its expression worker with it), once its
            # own expression worker has started (on its first check)
            found = [p for p in server.children(recursive=True) if "spawn_main" in " ".join(p.cmdline())]
            return [p for p in found if p.nice() == 10 and _checkers(p)]

        with socket.create_connection(("127.0.0.1", served.port)) as client:
            client.sendall(b"POST /v1/score HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
                           + b"content-length: %d\r\n\r\n" % len(body) + body)  # fmt: skip
            deadline = time.monotonic() + 60
            while not (workers := checking()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert workers  # the worker is checking: the client leaves now
        # it would check for 80 s: its request is stopped in place, and the expression worker running its check is
        # killed at once; the scoring worker stays for the next request
        checkers = [checker for worker in workers for checker in _checkers(worker)]
        _, alive = psutil.wait_procs(checkers, timeout=10)
        assert checkers and not alive and all(worker.is_running() for worker in workers)
        cpu = sum(worker.cpu_times().user for worker in workers)
        time.sleep(1.0)
        assert sum(worker.cpu_times().user for worker in workers) - cpu < 0.5  # idle, not working on
        later = httpx.post(f"{served.url}/v1/score", json={"groups": [dict(LARGE, id="later")]}, timeout=60)
        assert later.status_code == 200 and later.json()["groups"][0]["rewards"][:3] == [1.0, 0.0, 0.0]
    assert [record["instance"]["id"] for record in read_records(log)] == ["later"]
