"""A pool of expression worker processes with a hard per-call deadline, usable from any thread or event loop.

Symbolic algebra cannot be bounded by input size alone (``10^{10^{10^{10}}}`` is 19 characters), and Python offers
no safe way to interrupt a thread, while ``SIGALRM`` works only in the main thread of the main interpreter. So each
check runs in a child process (``verifiers._expr_worker``, started with ``subprocess`` rather than
``multiprocessing``, so the caller's ``__main__`` is never re-imported); when the answer does not arrive before the
deadline, the child is killed and a fresh one is started in the background.

Workers are started on first use, and that start (about a second: Python, sympy and Math-Verify are imported) is not
counted against the deadline of the call that triggers it; call :func:`warm_up` at start-up to pay it early.

Time is split three ways, so that each failure is blamed on what caused it:

- **waiting for a free worker** is bounded by its own ``wait_s``; a call that gets none in that time has status
  ``busy``: the pool was overloaded, nothing was judged, and it is never a score;
- **reading the target** has ``deadline_s`` from when the worker takes the call; a target that cannot be read in that
  time (or in the worker's memory) has status ``unparseable_target``: a rubric error, not the response's;
- **reading and comparing the prediction** has ``deadline_s`` from when the target was read; past it, ``timeout``.

Free workers are handed out fairly between *tenants* (the server names one per request, see :func:`tenant`): when
several wait, the next free worker goes to the tenant that has waited longest for a turn, not to whoever queued
first, so fifty hostile checks of one request delay another request's check by at most one check's time.
A process that forks gets a new pool on first use.

Configuration: ``GENRM_EXPR_WORKERS`` (default 2) and ``GENRM_EXPR_WORKER_MEMORY_MB`` (default 2048) in the
environment, or :func:`configure_expr_pool`.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True, slots=True)
class ExprOutcome:
    """What a worker said about one comparison; ``equal`` is meaningful only when ``status`` is ``ok``."""

    status: str
    equal: bool
    reason: str


class _Worker:
    """One child process and its line-oriented pipe protocol."""

    def __init__(self, memory_mb: int) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "verifiers._expr_worker", "--memory-mb", str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                raise TimeoutError
            chunk = os.read(self.proc.stdout.fileno(), 65_536)
            if not chunk:
                raise EOFError(f"the worker exited with code {self.proc.wait()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def wait_ready(self, timeout_s: float) -> None:
        message = json.loads(self._read_line(time.monotonic() + timeout_s))
        if message != {"ready": True}:
            raise RuntimeError(f"unexpected first message from the expression worker: {message!r:.200}")

    def send(self, payload: dict) -> None:
        self.proc.stdin.write(json.dumps(payload).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, deadline: float) -> dict:
        return json.loads(self._read_line(deadline))

    def kill(self) -> int | None:
        self._selector.close()
        self.proc.kill()
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                stream.close()


_tenant: contextvars.ContextVar[tuple[str, float | None]] = contextvars.ContextVar(
    "expr_pool_tenant", default=("", None)
)


@contextlib.contextmanager
def tenant(name: str, budget_s: float | None = None) -> Iterator[None]:
    """Run the expression checks of this block as tenant ``name`` of the fair queue, waiting for workers at most
    ``budget_s`` seconds from now in all (then ``busy``), whatever each check's own ``wait_s``.

    Applies to this thread, and to the threads started from it with a copy of its context (``anyio.to_thread``,
    ``asyncio.to_thread``, ``contextvars.copy_context().run``).
    """
    end = None if budget_s is None else time.monotonic() + budget_s
    token = _tenant.set((name, end))
    try:
        yield
    finally:
        _tenant.reset(token)


class _Ticket:
    __slots__ = ("worker",)

    def __init__(self) -> None:
        self.worker: _Worker | None = None


class _FairQueue:
    """Idle workers, handed to waiting callers round-robin over tenants (FIFO within a tenant)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._idle: deque[_Worker] = deque()
        self._waiting: OrderedDict[str, deque[_Ticket]] = OrderedDict()

    def _dispatch(self) -> None:
        while self._idle and self._waiting:
            name, tickets = next(iter(self._waiting.items()))
            tickets.popleft().worker = self._idle.popleft()
            del self._waiting[name]
            if tickets:  # the tenant goes to the back of the line for its next check
                self._waiting[name] = tickets
        self._cond.notify_all()

    def put(self, worker: _Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._dispatch()

    def get(self, name: str, timeout_s: float) -> _Worker | None:
        """An idle worker for tenant ``name``, or None when none was handed over within ``timeout_s`` seconds."""
        end = time.monotonic() + timeout_s
        ticket = _Ticket()
        with self._cond:
            self._waiting.setdefault(name, deque()).append(ticket)
            self._dispatch()
            while ticket.worker is None:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    tickets = self._waiting.get(name)
                    if tickets is not None and ticket in tickets:
                        tickets.remove(ticket)
                        if not tickets:
                            del self._waiting[name]
                    return None
                self._cond.wait(remaining)
            return ticket.worker

    def waiting(self) -> int:
        """Callers waiting for a worker now."""
        with self._cond:
            return sum(len(t) for t in self._waiting.values())

    def idle(self) -> list[_Worker]:
        """The idle workers now (for inspection)."""
        with self._cond:
            return list(self._idle)


class ExprWorkerPool:
    """A fixed number of expression workers shared by all threads of a process.

    Args:
        size: number of worker processes (each holds sympy and Math-Verify, about 150 MB).
        memory_mb: address-space limit of each worker in MiB; an expression that needs more gets status timeout.
        start_timeout_s: how long a worker may take to start before the start counts as failed.
    """

    def __init__(self, size: int = 2, memory_mb: int = 2048, start_timeout_s: float = 60.0) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        if memory_mb < 256:
            raise ValueError(f"memory_mb must be at least 256, got {memory_mb}")
        self.size, self.memory_mb, self.start_timeout_s = size, memory_mb, start_timeout_s
        self._idle = _FairQueue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._ready = False
        self._closed = False
        self._start_error: str | None = None

    def _spawn(self) -> _Worker | None:
        worker = None
        try:
            worker = _Worker(self.memory_mb)
            worker.wait_ready(self.start_timeout_s)
        except Exception as exc:  # noqa: BLE001 - any start failure is reported to callers as status "error"
            self._start_error = f"{type(exc).__name__}: {exc}"
            logger.error("expression worker failed to start: %s", self._start_error)
            if worker is not None:
                worker.kill()
            return None
        with self._lock:
            if self._closed:
                worker.kill()
                return None
            self._all.add(worker)
        return worker

    def _spawn_into_idle(self) -> None:
        worker = self._spawn()
        if worker is not None:
            self._idle.put(worker)

    def start(self) -> None:
        """Start the workers; returns once the first is ready. Raises RuntimeError when it cannot start."""
        if self._ready:
            return
        with self._start_lock:  # concurrent first callers wait here, outside any call's deadline
            if self._ready:
                return
            first = self._spawn()
            if first is None:
                raise RuntimeError(f"the expression worker could not start: {self._start_error}")
            self._idle.put(first)
            for _ in range(self.size - 1):
                threading.Thread(target=self._spawn_into_idle, daemon=True).start()
            self._ready = True

    def _retire(self, worker: _Worker) -> int | None:
        with self._lock:
            self._all.discard(worker)
        code = worker.kill()
        if not self._closed:
            threading.Thread(target=self._spawn_into_idle, daemon=True).start()
        return code

    def check(
        self, target: str, predict: str, float_rounding: int, deadline_s: float, wait_s: float | None = None
    ) -> ExprOutcome:
        """Compare two expressions. Never raises; failures come back as a status (see the module docstring).

        Args:
            target, predict: the two expressions, as written.
            float_rounding: decimal places for numeric comparison.
            deadline_s: seconds for reading the target, and again for reading and comparing the prediction.
            wait_s: seconds to wait for a free worker (default: ``deadline_s``); then status ``busy``.
        """
        try:
            self.start()
        except RuntimeError as exc:
            return ExprOutcome("error", False, str(exc))
        wait_s = deadline_s if wait_s is None else wait_s
        name, end = _tenant.get()
        if end is not None:
            wait_s = max(0.0, min(wait_s, end - time.monotonic()))
        worker = self._idle.get(name, wait_s)
        if worker is None:
            return ExprOutcome("busy", False, f"no expression worker was free within {wait_s:g} s (server busy)")
        target_read = False
        try:
            worker.send({"target": target, "predict": predict, "float_rounding": float_rounding})
            answer = worker.receive(time.monotonic() + deadline_s)
            target_read = answer == {"target": "read"}
            if target_read:
                answer = worker.receive(time.monotonic() + deadline_s)
        except TimeoutError:
            self._retire(worker)
            if not target_read:
                return ExprOutcome(
                    "unparseable_target", False, f"the target could not be read within {deadline_s:g} s"
                )
            return ExprOutcome("timeout", False, f"the expression check did not finish within {deadline_s:g} s")
        except (EOFError, OSError, ValueError) as exc:
            code = self._retire(worker)
            return ExprOutcome("error", False, f"the expression worker died (exit code {code}): {exc}")
        self._idle.put(worker)
        status, reason = str(answer.get("status")), str(answer.get("reason", ""))
        if not target_read and status in ("timeout", "unparseable_pred"):  # memory or depth limits hit by the target
            return ExprOutcome("unparseable_target", False, f"the target could not be read: {reason}")
        return ExprOutcome(status, bool(answer.get("equal")), reason)

    def wait_until_idle(self, timeout_s: float = 60.0) -> bool:
        """Start the pool and wait until all ``size`` workers are up and idle (those killed at a deadline are
        replaced in the background); True when they are, False after ``timeout_s`` seconds. A server need not call
        it; it lets a caller measure a check's own time apart from the wait for a worker."""
        self.start()
        end = time.monotonic() + timeout_s
        while len(self._idle.idle()) < self.size:
            if time.monotonic() > end:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        """Kill every worker. The pool cannot be used afterwards."""
        with self._lock:
            self._closed = True
            workers, self._all = list(self._all), set()
        for worker in workers:
            worker.kill()


_pool: ExprWorkerPool | None = None
_pool_pid: int | None = None
_pool_lock = threading.Lock()


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def configure_expr_pool(size: int | None = None, memory_mb: int | None = None) -> ExprWorkerPool:
    """Replace the process-wide pool with one of the given size and memory limit (the old one is closed)."""
    global _pool, _pool_pid
    new = ExprWorkerPool(
        size=size if size is not None else _env_int("GENRM_EXPR_WORKERS", 2),
        memory_mb=memory_mb if memory_mb is not None else _env_int("GENRM_EXPR_WORKER_MEMORY_MB", 2048),
    )
    with _pool_lock:
        old, old_pid = _pool, _pool_pid
        _pool, _pool_pid = new, os.getpid()
    if old is not None and old_pid == os.getpid():  # a forked child must not kill its parent's workers
        old.close()
    return new


def get_expr_pool() -> ExprWorkerPool:
    """The process-wide pool, created on first use (and again in a forked child)."""
    with _pool_lock:
        if _pool is not None and _pool_pid == os.getpid():
            return _pool
    return configure_expr_pool()


def expression_workers() -> int:
    """How many expression checks can run at once in this process (the pool's size)."""
    return get_expr_pool().size


def warm_up() -> None:
    """Start the expression workers now, so that the first expression check does not wait for them."""
    get_expr_pool().start()


@atexit.register
def _close_pool() -> None:
    if _pool is not None and _pool_pid == os.getpid():
        _pool.close()
