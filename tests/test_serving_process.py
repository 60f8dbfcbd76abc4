"""The reward server as users run it: `genrm serve` in its own process on loopback, called by the clients."""

import json
import os
import signal

import anyio
import pytest
from fake_judge import ServeProcess

from genrm.judge import RuleJudge
from genrm.scoring import score_instance
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
    assert [r.rewards for r in results] == [score_instance(i, RuleJudge()).rewards for i in example_instances]
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
