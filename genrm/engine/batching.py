"""Dynamic batching: prompts submitted from many threads are answered in shared batches by one worker thread.

A local model answers a batch of prompts in about the time of one, so the judge calls of concurrent requests (the
server judges up to ``max_concurrent_groups`` groups at once, each in its own thread) are gathered here: the worker
takes what is waiting, waits at most ``max_wait_s`` for more, up to ``max_batch_size`` prompts of one temperature,
and runs them as one batch. Callers block until their own answers are in. One worker means one ``generate`` at a
time, which is what a single model on one device can do anyway.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from genrm.engine.types import ChatRequest, Reply

logger = logging.getLogger(__name__)

GenerateFn = Callable[[Sequence[ChatRequest]], list[Reply]]


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
    ) -> None:
        """Start the worker thread.

        Args:
            generate: answers one batch (all items of one temperature), e.g. ``LocalGenerator.generate``.
            max_batch_size: most prompts in one batch (>= 1).
            max_wait_s: longest wait for more prompts once one is waiting, seconds (>= 0).
            temperature: the temperature a request is sampled at (``LocalGenerator.temperature`` resolves the
                generator's default), which decides who may share a batch.
        """
        if max_batch_size < 1 or max_wait_s < 0:
            raise ValueError("max_batch_size must be >= 1 and max_wait_s >= 0")
        self._generate, self.max_batch_size, self.max_wait_s = generate, max_batch_size, max_wait_s
        self._temperature = temperature
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

    def _collect(self) -> list[_Pending] | None:
        waiting = self._held
        self._held = []
        if not waiting:
            first = self._queue.get()
            if first is None:
                return None
            waiting.append(first)
        deadline = time.monotonic() + self.max_wait_s
        while len(waiting) < self.max_batch_size:
            try:
                entry = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if entry is None:
                self._queue.put(None)  # seen again after this batch, which still runs
                break
            waiting.append(entry)
        temperature = self._temperature(waiting[0].item)
        batch = [entry for entry in waiting if self._temperature(entry.item) == temperature][: self.max_batch_size]
        taken = {id(entry) for entry in batch}
        self._held = [entry for entry in waiting if id(entry) not in taken]
        return batch

    def _run(self) -> None:
        while True:
            batch = self._collect()
            if batch is None:
                break
            try:
                answers = self._generate([entry.item for entry in batch])
            except Exception as exc:  # the batch fails, the worker goes on
                logger.exception("a generation batch failed")
                answers = [Reply(error=f"generation failed: {type(exc).__name__}: {exc}")] * len(batch)
            self.batches += 1
            for entry, answer in zip(batch, answers, strict=True):
                entry.future.set_result(answer)
        for entry in self._held + self._drain():
            entry.future.set_result(Reply(error="the judge is shutting down"))

    def _drain(self) -> list[_Pending]:
        left = []
        while True:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                return left
            if entry is not None:
                left.append(entry)
