"""Dynamic batching: prompts submitted from many threads are answered together by one worker thread.

The judge calls of concurrent requests (the server judges up to ``max_concurrent_groups`` groups at once, each in its
own thread) are gathered here: the worker takes what is waiting, waits at most ``max_wait_s`` for more, up to
``max_batch_size`` prompts of one temperature, and answers them together. Callers block until their own answers are
in. One worker means one model call at a time, which is what a single model on one device can do anyway.

Two ways to answer together:

- **continuous** (``open_loop`` given, :class:`Loop`): the prompts decode in one loop, one token per step; a prompt
  leaves as soon as its answer ends, and prompts that arrive meanwhile join at the next step, up to
  ``max_batch_size`` decoding at once (:mod:`genrm.engine.decoding`). The loop's prompts share a temperature; others
  wait until it drains. Prompts the loop does not take (with an image) are answered by ``generate`` on their own.
- **batch by batch** (``generate`` only): each batch runs to its end before the next is formed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from genrm.engine.types import ChatRequest, Reply

logger = logging.getLogger(__name__)

GenerateFn = Callable[[Sequence[ChatRequest]], list[Reply]]


class Loop(Protocol):
    """A continuous decode loop over keyed requests (``genrm.engine.generation.AnswerLoop``)."""

    @property
    def active(self) -> int:
        """Requests decoding now."""
        ...

    def join(self, entries: Sequence[tuple[Any, ChatRequest]]) -> tuple[list[tuple[Any, Reply]], list[Any]]:
        """Admit ``(key, request)`` pairs; the replies of those that could not join, and the keys it does not take."""
        ...

    def step(self) -> list[tuple[Any, Reply]]:
        """One token for every request; the replies of those that ended."""
        ...


@dataclass
class _Pending:
    item: ChatRequest
    future: Future[Reply] = field(default_factory=Future)


class BatchingGenerator:
    """Gathers :class:`ChatRequest` s from any thread into batches for ``generate`` (called by one worker)."""

    def __init__(
        self,
        generate: GenerateFn,
        max_batch_size: int = 16,
        max_wait_s: float = 0.005,
        temperature: Callable[[ChatRequest], float | None] = lambda request: request.temperature,
        open_loop: Callable[[float | None], Loop] | None = None,
    ) -> None:
        """Start the worker thread.

        Args:
            generate: answers one batch (all items of one temperature), e.g. ``LocalGenerator.generate``.
            max_batch_size: most prompts in one batch (>= 1).
            max_wait_s: longest wait for more prompts once one is waiting, seconds (>= 0).
            temperature: the temperature a request is sampled at (``LocalGenerator.temperature`` resolves the
                generator's default), which decides who may share a batch.
            open_loop: ``temperature -> Loop``: answer continuously (module docstring); None for batch by batch.
        """
        if max_batch_size < 1 or max_wait_s < 0:
            raise ValueError("max_batch_size must be >= 1 and max_wait_s >= 0")
        self._generate, self.max_batch_size, self.max_wait_s = generate, max_batch_size, max_wait_s
        self._temperature, self._open_loop = temperature, open_loop
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._held: list[_Pending] = []
        self._closed = False
        self._lock = threading.Lock()  # no item can be queued behind the stop mark
        self.batches = 0
        self._worker = threading.Thread(target=self._run, name="genrm-batching", daemon=True)
        self._worker.start()

    def submit(self, items: Sequence[ChatRequest]) -> list[Future[Reply]]:
        """Queue ``items``; one future per item, in order, resolved when its batch is generated (an event loop waits
        on them with ``asyncio.wrap_future``, without a thread). Raises RuntimeError once closed."""
        pending = [_Pending(item) for item in items]
        with self._lock:
            if self._closed:
                raise RuntimeError("the generator is closed")
            for entry in pending:
                self._queue.put(entry)
        return [entry.future for entry in pending]

    def __call__(self, items: Sequence[ChatRequest]) -> list[Reply]:
        """Answers for ``items``, in order; blocks until they are generated. Raises RuntimeError once closed."""
        return [future.result() for future in self.submit(items)]

    @property
    def alive(self) -> bool:
        """Whether the worker thread is running."""
        return self._worker.is_alive() and not self._closed

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the worker once the prompts already queued are answered; later calls raise RuntimeError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._worker.join(timeout_s)

    def _collect(self, room: int | None = None, temperature: float | None = None) -> list[_Pending] | None:
        """The next batch: blocks for a first prompt and waits ``max_wait_s`` for more (None once stopped). With
        ``room`` (a loop decoding at ``temperature``), takes only what is waiting now, up to ``room`` prompts."""
        waiting = self._held
        self._held = []
        joining = room is not None
        limit = room if joining else self.max_batch_size
        if not waiting and not joining:
            first = self._queue.get()
            if first is None:
                return None
            waiting.append(first)
        deadline = time.monotonic() + (0.0 if joining else self.max_wait_s)
        while len(waiting) < limit:
            try:
                wait = max(0.0, deadline - time.monotonic())
                entry = self._queue.get_nowait() if joining else self._queue.get(timeout=wait)
            except queue.Empty:
                break
            if entry is None:
                self._queue.put(None)  # seen again after this batch, which still runs
                break
            waiting.append(entry)
        if not waiting:
            return []
        if not joining:
            temperature = self._temperature(waiting[0].item)
        batch = [entry for entry in waiting if self._temperature(entry.item) == temperature][:limit]
        taken = {id(entry) for entry in batch}
        self._held = [entry for entry in waiting if id(entry) not in taken]
        return batch

    def _run(self) -> None:
        if self._open_loop is not None:
            self._run_loops(self._open_loop)
            return
        while True:
            batch = self._collect()
            if batch is None:
                break
            self._answer_batch(batch)
        self._shut_down()

    def _answer_batch(self, batch: list[_Pending]) -> None:
        """One ``generate`` call for ``batch``; if it raises, the batch fails and the worker goes on."""
        try:
            answers = self._generate([entry.item for entry in batch])
        except Exception as exc:
            logger.exception("a generation batch failed")
            answers = [Reply.failed(exc)] * len(batch)
        self.batches += 1
        for entry, answer in zip(batch, answers, strict=True):
            entry.future.set_result(answer)

    def _shut_down(self) -> None:
        for entry in self._held + self._drain():
            entry.future.set_result(Reply(error="the judge is shutting down"))

    def _run_loops(self, open_loop: Callable[[float | None], Loop]) -> None:
        loop: Loop | None = None
        temperature: float | None = None
        decoding: dict[int, _Pending] = {}
        while True:
            if loop is None or not decoding:
                batch = self._collect()
                if batch is None:
                    break
                temperature = self._temperature(batch[0].item)
                loop = open_loop(temperature)
                self.batches += 1
            else:
                batch = self._collect(self.max_batch_size - len(decoding), temperature) or []
            if batch:
                self._join(loop, batch, decoding)
            if not decoding:
                continue
            try:
                done = loop.step()
            except Exception as exc:  # the loop's requests fail, the worker goes on with a new loop
                logger.exception("a decode step failed for %d prompts", len(decoding))
                for entry in decoding.values():
                    entry.future.set_result(Reply.failed(exc))
                decoding.clear()
                loop = None
                continue
            for key, reply in done:
                decoding.pop(key).future.set_result(reply)
        self._shut_down()

    def _join(self, loop: Loop, batch: list[_Pending], decoding: dict[int, _Pending]) -> None:
        by_key = {id(entry): entry for entry in batch}
        decoding.update(by_key)
        replies, refused = loop.join([(key, entry.item) for key, entry in by_key.items()])
        for key, reply in replies:
            decoding.pop(key).future.set_result(reply)
        if refused:  # prompts the loop does not take (images): one batch of their own, now
            self._answer_batch([decoding.pop(key) for key in refused])

    def _drain(self) -> list[_Pending]:
        left = []
        while True:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                return left
            if entry is not None:
                left.append(entry)
