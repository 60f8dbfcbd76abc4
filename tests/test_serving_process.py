"""The reward server as users run it: `genrm serve` in its own process on loopback, called by the clients."""

import json
import os
import signal
import time

import anyio
import pytest
from fake_judge import ServeProcess

from genrm.methods.rubric.method import score_instance
from serving.client import AsyncRewardClient, RewardClient
from serving.record_log import read_records


@pytest.fixture
def server(tmp_path):
    log = tmp_path / "records.jsonl"
    with ServeProcess("--record-log", str(log), "--log-level", "warning") as served:
        yield served.url, served.process, log


def test_rule_backend_end_to_end(server, example_instances):
    url, process, log = server
    with RewardClient(url) as client:
        results = client.score(example_instances)
        assert client.health().backend == "rule"
    assert [r.rewards for r in results] == [score_instance(i).rewards for i in example_instances]
    logged = list(read_records(log))
    assert [entry["instance"]["id"] for entry in logged] == [i.id for i in example_instances]


def test_async_client_concurrent_requests(server, example_instances):
    url, _, _ = server

    async def main():
        async with AsyncRewardClient(url) as client:
            results = [None] * len(example_instances)

            async def one(i):
                results[i] = (await client.score([example_instances[i]]))[0]

            async with anyio.create_task_group() as group:
                for i in range(len(example_instances)):
                    group.start_soon(one, i)
            return results

    results = anyio.run(main)
    assert [r.id for r in results] == [i.id for i in example_instances]
    assert all(r.rewards is not None for r in results)


def test_killed_server_loses_nothing_logged(server, example_instances):
    url, process, log = server
    with RewardClient(url) as client:
        for instance in example_instances[:20]:
            client.score([instance])
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    logged = list(read_records(log))
    # Every answered request was fsynced before its answer left the server.
    assert [e["instance"]["id"] for e in logged] == [i.id for i in example_instances[:20]]
    assert all(json.dumps(e["result"]) for e in logged)


def test_killed_three_times_under_load_every_answered_group_is_logged_and_readable(tmp_path, example_instances):
    import threading

    import httpx

    log = tmp_path / "records.jsonl"
    answered: list[str] = []
    for round_ in range(3):
        with ServeProcess("--record-log", str(log), "--log-level", "warning") as served:
            stop = threading.Event()

            def load(worker: int, url: str = served.url, stop: threading.Event = stop, round_: int = round_) -> None:
                with httpx.Client(base_url=url, timeout=30) as http:
                    for k, instance in enumerate(example_instances * 10):
                        if stop.is_set():
                            return
                        group = instance.model_copy(update={"id": f"r{round_}-w{worker}-{k}"})
                        try:
                            response = http.post("/v1/score", json={"groups": [group.model_dump(mode="json")]})
                        except httpx.HTTPError:
                            return  # the server was killed under this request: it was never answered
                        if response.status_code == 200:
                            answered.append(group.id)

            workers = [threading.Thread(target=load, args=(w,)) for w in range(4)]
            for worker in workers:
                worker.start()
            deadline = time.monotonic() + 120
            while sum(1 for a in answered if a.startswith(f"r{round_}-")) < 30 and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(served.process.pid, signal.SIGKILL)
            served.process.wait(timeout=30)
            stop.set()
            for worker in workers:
                worker.join(timeout=60)
        if round_ == 1:  # as if the kill had torn the line being written
            with open(log, "a", encoding="utf-8") as handle:
                handle.write('{"time": 1.0, "request_id": "torn", "instance": {"id": "half')
    with ServeProcess("--record-log", str(log), "--log-level", "warning") as served:
        pass  # the restart fences any torn tail
    lines = log.read_text(encoding="utf-8").splitlines()
    logged = [json.loads(line)["instance"]["id"] for line in lines]  # every line is whole JSON
    assert set(answered) <= set(logged), sorted(set(answered) - set(logged))[:5]
    assert len(answered) >= 90


def test_a_real_server_refuses_headers_that_a_proxy_could_read_another_way():
    # on the wire, through uvicorn's own parser: the raw headers reach the guard as sent
    import socket

    body = b'{"groups": []}'
    token = b"authorization: Bearer s3cret\r\n"
    sends = {
        b"more than one authorization header": token + b"authorization: Bearer other\r\n",
        b"both content-length and transfer-encoding": token + b"transfer-encoding: chunked\r\n",
    }
    with ServeProcess("--api-key", "s3cret", "--log-level", "warning") as served:
        for why, extra in sends.items():
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as connection:
                connection.sendall(b"POST /v1/score HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
                                   + b"content-length: %d\r\n" % len(body) + extra + b"\r\n" + body)  # fmt: skip
                answer = b""
                while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
                    answer += connection.recv(4096) or b"\r\n\r\n"  # closed: what came is the answer
            assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
            assert why in answer and b"Traceback" not in answer


def _length(answer: bytes) -> int:
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    return next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length:")), 0)
