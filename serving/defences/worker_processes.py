"""Worker processes that can be stopped: a call has a deadline, past which its worker is killed (and a fresh one
started for the next call).

Work in C (Pillow's decoders) or under the GIL (the rule judge's readers and verifiers) cannot be stopped or shared
fairly by threads of one process. Handed to a worker process, it can be stopped at a deadline, its memory capped,
and the operating system shares the cores between it and the server. A worker runs ``target(connection, *args)``:
it sends ``("ready",)`` once it can take work, then answers each message it receives with ``(outcome, retire)``,
``retire`` true when it exits after this answer.

A worker that can stop a request in place (``stop_grace_s``) is sent ``SIGUSR1`` at the deadline instead of being
killed: it cuts its request, answers (with whatever outcome it has), and takes the next one, so no new worker has to
start. One that has not answered within the grace is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

_START_TIMEOUT_S = 60.0
_CANCEL_POLL_S = 0.05


def process_bytes(field: int) -> int:
    """Bytes of this process from ``/proc/self/statm``: field 0 is its virtual size, 1 what it holds in memory (0
    where /proc is missing)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


class WorkerDied(RuntimeError):
    """The worker exited before it answered (killed by the system, out of memory, or a crash)."""


class _Worker:
    def __init__(self, context: Any, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        ours, theirs = context.Pipe()
        self.process = context.Process(target=target, args=(theirs, *args), daemon=True)
        self.process.start()
        theirs.close()
        self.connection: Connection = ours
        try:
            ready = ours.poll(_START_TIMEOUT_S) and ours.recv() == ("ready",)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise RuntimeError(f"a worker process did not start within {_START_TIMEOUT_S:g} s")

    def kill(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()
        with contextlib.suppress(OSError):
            self.connection.close()
        self.process.join(timeout=5)


class WorkerProcesses:
    """Worker processes running ``target`` with ``args``, started from ``context()`` (a multiprocessing context, made
    on first use) when a call finds none idle, and kept between calls; safe from any thread. How many calls run at
    once, and whose goes next, is the caller's to bound (the server's fair slots). :meth:`close` stops every worker;
    a later call starts a fresh one (an app whose lifespan runs again works again)."""

    def __init__(
        self,
        context: Callable[[], Any],
        target: Callable[..., None],
        args: tuple[Any, ...] = (),
        stop_grace_s: float | None = None,
    ) -> None:
        self._make_context, self._target, self._args = context, target, args
        self.stop_grace_s = stop_grace_s
        self._context: Any = None
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
                self._busy.add(worker)
                return worker
            if self._context is None:
                self._context = self._make_context()
            context = self._context
        worker = _Worker(context, self._target, self._args)
        with self._lock:
            self._busy.add(worker)
        return worker

    def _put_back(self, worker: _Worker, keep: bool) -> None:
        with self._lock:
            # a worker that close() stopped while it was busy is no longer among the busy ones: never kept
            if keep and worker in self._busy:
                self._busy.discard(worker)
                self._idle.append(worker)
                return
            self._busy.discard(worker)
        worker.kill()

    def start(self, count: int) -> None:
        """Start workers until ``count`` are up, idle or busy (blocking: each start waits for the worker to be
        ready)."""
        started = []
        try:
            while len(self._idle) + len(self._busy) < count:
                started.append(self._take())
        finally:
            for worker in started:
                self._put_back(worker, keep=True)

    def call(self, message: Any, timeout_s: float, cancel: threading.Event | None = None) -> Any:
        """``message`` answered by an idle worker (one is started when none is): its outcome. Blocking.

        Raises:
            TimeoutError: no answer within ``timeout_s`` (> 0) seconds, or ``cancel`` was set first (the caller has
                gone: it is seen within 50 ms); the worker's request was stopped (see the module docstring), or the
                worker killed.
            WorkerDied: the worker exited before it answered.
        """
        worker = self._take()
        keep = False
        try:
            try:
                worker.connection.send(message)
                answered = self._wait(worker.connection, time.monotonic() + timeout_s, cancel)
                if answered:
                    outcome, retire = worker.connection.recv()
                    keep = not retire
                elif self.stop_grace_s is not None:
                    keep = self._stopped(worker, self.stop_grace_s)
            except (EOFError, OSError) as exc:
                raise WorkerDied("the worker process exited before it answered") from exc
        finally:
            self._put_back(worker, keep)
        if not answered:
            raise TimeoutError(f"no answer within {timeout_s:g} s")
        return outcome

    @staticmethod
    def _stopped(worker: _Worker, grace_s: float) -> bool:
        """Whether ``worker``, told to stop its request, answered within ``grace_s`` seconds and stays (its answer,
        too late for its caller, is dropped)."""
        try:
            os.kill(worker.process.pid, signal.SIGUSR1)
            if not worker.connection.poll(grace_s):
                return False
            _, retire = worker.connection.recv()
        except (EOFError, OSError, TypeError):  # it has exited (or never got a pid)
            return False
        return not retire

    @staticmethod
    def _wait(connection: Connection, until: float, cancel: threading.Event | None) -> bool:
        if cancel is None:
            return connection.poll(max(0.0, until - time.monotonic()))
        while not cancel.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return False
            if connection.poll(min(left, _CANCEL_POLL_S)):
                return True
        return False

    def close(self) -> None:
        """Stop every worker, busy ones too (their calls raise :class:`WorkerDied`)."""
        with self._lock:
            idle, self._idle = self._idle, []
            busy = list(self._busy)
            self._busy.clear()
        for worker in idle:
            worker.kill()
        for worker in busy:  # its caller, woken by the exit, closes the connection it is reading
            with contextlib.suppress(OSError, ValueError):
                worker.process.kill()
