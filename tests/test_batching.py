"""Dynamic batching across threads, with a recording generate function standing in for the model."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from genrm.engine import ChatPrompt, ChatRequest, Reply
from genrm.engine.batching import BatchingGenerator


class Recorder:
    def __init__(self, delay_s=0.0, fail_on=None):
        self.batches, self.delay_s, self.fail_on = [], delay_s, fail_on
        self.lock = threading.Lock()

    def __call__(self, items):
        with self.lock:
            self.batches.append([(item.prompt.user, item.temperature) for item in items])
        if self.fail_on is not None and any(item.prompt.user == self.fail_on for item in items):
            raise RuntimeError("device lost")
        time.sleep(self.delay_s)
        return [Reply(text=f"answer to {item.prompt.user}", finished=True) for item in items]


def _item(text, temperature=0.0):
    return ChatRequest(ChatPrompt("system", text), None, temperature=temperature)


def test_concurrent_callers_share_batches_and_get_their_own_answers():
    recorder = Recorder(delay_s=0.02)
    batcher = BatchingGenerator(recorder, max_batch_size=16, max_wait_s=0.01)
    try:
        with ThreadPoolExecutor(8) as pool:
            groups = [[_item(f"g{g}r{r}") for r in range(4)] for g in range(8)]
            answers = list(pool.map(batcher, groups))
    finally:
        batcher.close()
    for group, got in zip(groups, answers, strict=True):
        assert [a.text for a in got] == [f"answer to {item.prompt.user}" for item in group]
    assert sum(len(b) for b in recorder.batches) == 32
    assert len(recorder.batches) < 8  # 8 groups of 4 in fewer batches than groups
    assert max(len(b) for b in recorder.batches) <= 16


def test_batches_never_mix_temperatures():
    recorder = Recorder(delay_s=0.01)
    batcher = BatchingGenerator(recorder, max_batch_size=8, max_wait_s=0.02)
    try:
        with ThreadPoolExecutor(4) as pool:
            jobs = [[_item(f"{t}-{i}", t) for i in range(3)] for t in (0.0, 0.7, 0.0, 0.7)]
            answers = list(pool.map(batcher, jobs))
    finally:
        batcher.close()
    assert all(len({temperature for _, temperature in batch}) == 1 for batch in recorder.batches)
    assert [[a.text for a in got] for got in answers] == [[f"answer to {i.prompt.user}" for i in j] for j in jobs]


def test_a_failed_batch_answers_with_errors_and_the_worker_goes_on():
    recorder = Recorder(fail_on="boom")
    batcher = BatchingGenerator(recorder, max_batch_size=4, max_wait_s=0.0)
    try:
        failed = batcher([_item("boom")])
        after = batcher([_item("fine")])
    finally:
        batcher.close()
    assert failed[0].error == "generation failed: RuntimeError: device lost"
    assert after[0].error is None and after[0].text == "answer to fine"


def test_close_answers_what_is_queued_then_refuses():
    recorder = Recorder(delay_s=0.05)
    batcher = BatchingGenerator(recorder, max_batch_size=1, max_wait_s=0.0)
    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(batcher, [_item(f"q{i}")]) for i in range(3)]
        time.sleep(0.02)
        batcher.close()
        answers = [f.result(timeout=5)[0] for f in futures]
    assert all(a.error is None for a in answers)
    assert not batcher.alive
    with pytest.raises(RuntimeError, match="closed"):
        batcher([_item("late")])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        BatchingGenerator(Recorder(), max_batch_size=0)


def test_an_event_loop_waits_on_its_answers_without_a_thread():
    import asyncio

    recorder = Recorder(delay_s=0.01)
    batcher = BatchingGenerator(recorder, max_batch_size=16, max_wait_s=0.02)

    async def groups():
        async def one(g):
            futures = batcher.submit([_item(f"g{g}r{r}") for r in range(4)])
            return await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))

        return await asyncio.gather(*(one(g) for g in range(6)))

    try:
        answers = asyncio.run(groups())
    finally:
        batcher.close()
    assert [[a.text for a in got] for got in answers] == [[f"answer to g{g}r{r}" for r in range(4)] for g in range(6)]
    assert len(recorder.batches) < 6


def test_requests_share_a_batch_when_their_resolved_temperatures_agree():
    recorder = Recorder(delay_s=0.0)
    resolved = BatchingGenerator(recorder, max_batch_size=8, max_wait_s=0.05,
                                 temperature=lambda r: 0.0 if r.temperature is None else r.temperature)  # fmt: skip
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(resolved, [[_item("default", None)], [_item("greedy", 0.0)]]))
    finally:
        resolved.close()
    assert len(recorder.batches) == 1
