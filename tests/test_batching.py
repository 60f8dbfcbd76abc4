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


class FakeLoop:
    """A continuous decode loop standing in for the model: a prompt ``N:name`` ends after N steps, ``hold:name``
    when the test releases it; ``image:`` prompts are handed back for generate, ``bad:`` ones fail to join, and a step
    with a ``boom:`` prompt raises."""

    def __init__(self, temperature, release):
        self.temperature, self.release = temperature, release
        self.rows, self.steps, self.most, self.temperatures = {}, 0, 0, set()

    @property
    def active(self):
        return len(self.rows)

    def join(self, entries):
        replies, refused = [], []
        for key, item in entries:
            self.temperatures.add(item.temperature)
            kind = item.prompt.user.split(":")[0]
            if kind == "image":
                refused.append(key)
            elif kind == "bad":
                replies.append((key, Reply(error="the prompt could not be prepared")))
            else:
                self.rows[key] = [item, None if kind in ("hold", "boom") else int(kind)]
        self.most = max(self.most, len(self.rows))
        return replies, refused

    def step(self):
        self.steps += 1
        time.sleep(0.001)
        if any(item.prompt.user.startswith("boom") for item, _ in self.rows.values()):
            raise RuntimeError("device lost")
        done = []
        for key, (item, left) in list(self.rows.items()):
            ended = self.release.is_set() if left is None else left <= 1
            if ended:
                done.append((key, Reply(text=f"{item.prompt.user} at step {self.steps}", finished=True)))
                del self.rows[key]
            elif left is not None:
                self.rows[key][1] = left - 1
        return done


def _looping(max_batch_size=4, recorder=None):
    loops, release = [], threading.Event()

    def open_loop(temperature):
        loops.append(FakeLoop(temperature, release))
        return loops[-1]

    batcher = BatchingGenerator(recorder or Recorder(), max_batch_size=max_batch_size, max_wait_s=0.01,
                                open_loop=open_loop)  # fmt: skip
    return batcher, loops, release


def test_a_loop_lets_answers_leave_as_they_end_and_prompts_join_while_it_runs():
    batcher, loops, release = _looping()
    try:
        held = batcher.submit([_item("1:a"), _item("hold:b")])
        assert held[0].result(timeout=5).text == "1:a at step 1"  # it left; b still decodes
        joined = batcher.submit([_item("2:c")])[0].result(timeout=5)  # joins the running loop, leaves 2 steps later
        assert not held[1].done() and len(loops) == 1
        release.set()
        assert held[1].result(timeout=5).text.startswith("hold:b at step")
    finally:
        batcher.close()
    start = int(joined.text.rsplit(" ", 1)[1]) - 2
    assert start >= 1 and joined.text == f"2:c at step {start + 2}"


def test_a_loop_holds_at_most_the_batch_size_and_takes_the_rest_as_places_free():
    batcher, loops, _ = _looping(max_batch_size=3)
    try:
        answers = batcher([_item(f"{n}:r{n}") for n in (5, 1, 4, 2, 3, 1, 2)])
    finally:
        batcher.close()
    assert [a.text.split(" at ")[0] for a in answers] == [f"{n}:r{n}" for n in (5, 1, 4, 2, 3, 1, 2)]
    assert len(loops) == 1 and loops[0].most == 3


def test_loops_never_mix_temperatures_and_images_go_to_generate():
    recorder = Recorder()
    batcher, loops, _ = _looping(recorder=recorder)
    try:
        with ThreadPoolExecutor(3) as pool:
            jobs = [[_item("2:g", 0.0), _item("image:x", 0.0)], [_item("3:h", 0.7)], [_item("bad:y", 0.0)]]
            answers = list(pool.map(batcher, jobs))
    finally:
        batcher.close()
    assert all(len(loop.temperatures) == 1 for loop in loops) and len(loops) >= 2
    assert answers[0][0].text.startswith("2:g at step") and answers[0][1].text == "answer to image:x"
    assert recorder.batches == [[("image:x", 0.0)]]
    assert answers[1][0].text.startswith("3:h at step")
    assert answers[2][0].error == "the prompt could not be prepared"


def test_a_failed_step_fails_its_loops_prompts_and_the_worker_goes_on():
    batcher, loops, _ = _looping()
    try:
        failed = batcher([_item("boom:z"), _item("9:w")])
        after = batcher([_item("1:fine")])
    finally:
        batcher.close()
    assert [a.error for a in failed] == ["generation failed: RuntimeError: device lost"] * 2
    assert after[0].text == "1:fine at step 1" and len(loops) == 2


def test_close_lets_the_loop_finish_what_is_queued():
    batcher, loops, release = _looping()
    futures = batcher.submit([_item("hold:a")]) + batcher.submit([_item("3:b")])
    closer = threading.Thread(target=batcher.close)
    closer.start()
    release.set()
    closer.join(5)
    assert [f.result(timeout=5).error for f in futures] == [None, None]
    with pytest.raises(RuntimeError, match="closed"):
        batcher([_item("late")])
