"""Blocking code running the asynchronous engine: one long-lived event loop in a daemon thread.

Commands, training callbacks and the policy's reward functions are blocking; engines and judges are asynchronous.
:func:`run_blocking` runs a coroutine on one process-wide loop, so an engine used from blocking code always runs on
the same loop (its HTTP connection pool is bound to it) and is never tied to a loop that has ended.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class EventLoopThread:
    """An asyncio event loop in a daemon thread."""

    def __init__(self, name: str = "genrm-event-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("run_blocking was called from the engine's own event loop; await the coroutine")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:  # cut while waiting (Ctrl-C, a stop signal): the coroutine is cancelled too
            future.cancel()
            raise

    def responsive(self, timeout_s: float) -> bool:
        """Whether the loop runs a step within ``timeout_s`` seconds (False: a coroutine holds it in a long step)."""
        try:
            asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self._loop).result(timeout_s)
        except TimeoutError:
            return False
        return True


_shared: EventLoopThread | None = None
_shared_lock = threading.Lock()


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the process-wide engine loop (started on first use) and return its result."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = EventLoopThread()
    return _shared.run(coroutine)


def engine_responsive(timeout_s: float) -> bool:
    """Whether the process-wide engine loop (if started) runs a step within ``timeout_s`` seconds: after a cut
    :func:`run_blocking`, that its cancelled coroutine no longer holds it."""
    loop = _shared
    return loop is None or loop.responsive(timeout_s)
