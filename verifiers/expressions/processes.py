"""Expression worker processes as seen from the caller: start them, talk to them, kill them.

Two ways to start a worker, chosen by :func:`make_launcher`:

- **fork from a zygote** (Linux): one helper process imports sympy and Math-Verify and warms them up once, then forks
  a worker per request in milliseconds (see ``worker``). A worker killed at a deadline is back
  before the next check needs it, so hostile checks cost their deadline and not a second of imports on top.
- **a fresh interpreter per worker** (``subprocess``; other platforms, or when the zygote cannot start): about a
  second per worker.

Both use ``subprocess`` rather than ``multiprocessing``, so the caller's ``__main__`` is never re-imported. This
module knows nothing of deadlines, queues or verdicts: that is ``pool``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

logger = logging.getLogger(__name__)

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_FORK_TIMEOUT_S = 30.0


# Workers run in a process group of their own: a terminal's Ctrl-C goes to the command that owns them, which stops
# them, not to them (each would print a KeyboardInterrupt traceback over the command's one line).
_OWN_GROUP = 0


def _worker_command(memory_mb: int, *extra: str) -> list[str]:
    return [sys.executable, "-u", "-m", "verifiers.expressions.worker", "--memory-mb", str(memory_mb), *extra]


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


class Worker:
    """One worker process and its line-oriented protocol, over a pipe each way.

    Args:
        request_fd: the end this side writes requests to (owned: closed by :meth:`kill`).
        answer_fd: the end this side reads answers from (owned).
        pid: the worker's process id (for inspection and tests).
        stop: kills the process; called once, by :meth:`terminate` or :meth:`kill`.
    """

    def __init__(self, request_fd: int, answer_fd: int, pid: int, stop: Callable[[], None]) -> None:
        self.pid = pid
        self._request_fd, self._answer_fd = request_fd, answer_fd
        self._stop: Callable[[], None] | None = stop
        self._stop_lock = threading.Lock()
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(answer_fd, selectors.EVENT_READ)
        self._closed = False

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                raise TimeoutError
            chunk = os.read(self._answer_fd, 65_536)
            if not chunk:
                raise EOFError("the worker exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def wait_ready(self, timeout_s: float) -> None:
        """Wait for the worker's first line; raises when it is not ``{"ready": true}`` within ``timeout_s``."""
        message = json.loads(self._read_line(time.monotonic() + timeout_s))
        if message != {"ready": True}:
            raise RuntimeError(f"unexpected first message from the expression worker: {message!r:.200}")

    def send(self, payload: dict) -> None:
        """Write one request line."""
        data = json.dumps(payload).encode() + b"\n"
        while data:
            data = data[os.write(self._request_fd, data) :]

    def receive(self, deadline: float) -> dict:
        """The next answer line; raises TimeoutError at ``deadline`` (``time.monotonic()``), EOFError if it died."""
        return json.loads(self._read_line(deadline))

    def terminate(self) -> None:
        """Kill the process, keeping the pipes open: a thread reading its answer sees it end. Safe to call twice."""
        with self._stop_lock:
            stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def kill(self) -> None:
        """Kill the process and close the pipes; for the thread that owns the worker. Safe to call twice."""
        self.terminate()
        if self._closed:
            return
        self._closed = True
        self._selector.close()
        for fd in (self._request_fd, self._answer_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class Launcher(Protocol):
    """Starts expression workers."""

    def launch(self) -> Worker:
        """A new worker, ready for requests; raises OSError or RuntimeError when it cannot start."""
        ...

    def close(self) -> None:
        """Release what the launcher holds (its workers are killed by their owner)."""
        ...


class SubprocessLauncher:
    """A fresh interpreter per worker (about a second each: Python, sympy and Math-Verify are imported)."""

    def __init__(self, memory_mb: int, start_timeout_s: float) -> None:
        self.memory_mb, self.start_timeout_s = memory_mb, start_timeout_s

    def launch(self) -> Worker:
        """A new worker process, started and warmed up."""
        proc = subprocess.Popen(
            _worker_command(self.memory_mb),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_worker_env(),
            process_group=_OWN_GROUP,
        )

        def stop() -> None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    stream.close()

        # The Worker owns duplicates of the pipe ends, so that closing them never races the Popen objects' own.
        worker = Worker(os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno()), proc.pid, stop)
        return _ready(worker, self.start_timeout_s)

    def close(self) -> None:
        """Nothing is held between launches."""


class ZygoteLauncher:
    """Workers forked from one warmed-up helper process (Linux: ``SOCK_SEQPACKET``, ``SCM_RIGHTS``, pidfds).

    The zygote starts in the constructor (about a second); :meth:`launch` then takes milliseconds. If the zygote dies,
    the next launch starts a new one.
    """

    def __init__(self, memory_mb: int, start_timeout_s: float) -> None:
        self.memory_mb, self.start_timeout_s = memory_mb, start_timeout_s
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._closed = False
        with self._lock:
            self._start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                _worker_command(self.memory_mb, "--zygote-fd", str(theirs.fileno())),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                env=_worker_env(),
                process_group=_OWN_GROUP,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(self.start_timeout_s)
        try:
            ready = ours.recv(64)
        except (TimeoutError, OSError) as exc:
            self._stop_zygote(ours)
            message = f"the expression zygote did not start within {self.start_timeout_s:g} s: {exc}"
            raise RuntimeError(message) from exc
        if ready != b"ready":
            self._stop_zygote(ours)
            raise RuntimeError(f"the expression zygote did not start (exit code {self._proc.poll()})")
        ours.settimeout(_FORK_TIMEOUT_S)
        self._control = ours

    def _stop_zygote(self, control: socket.socket | None) -> None:
        if control is not None:
            control.close()
        if self._proc is not None:
            self._proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        self._control = None

    def _fork(self, fds: list[int]) -> tuple[int, int | None]:
        assert self._control is not None
        socket.send_fds(self._control, [b"fork"], fds)
        message, handles, _, _ = socket.recv_fds(self._control, 256, 1)
        if not message:
            raise EOFError("the expression zygote closed its socket")
        if not message.isdigit():
            for fd in handles:
                os.close(fd)
            raise RuntimeError(f"the expression zygote refused to fork: {message[:200]!r}")
        return int(message), handles[0] if handles else None

    def launch(self) -> Worker:
        """A new worker forked from the zygote (which is restarted first if it died)."""
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        try:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the expression worker launcher is closed")
                try:
                    if self._control is None:
                        self._start()
                    pid, pidfd = self._fork([request_read, answer_write])
                except (OSError, EOFError):
                    logger.warning("the expression zygote died; starting a new one")
                    self._stop_zygote(self._control)
                    self._start()
                    pid, pidfd = self._fork([request_read, answer_write])
        except BaseException:
            for fd in (request_write, answer_read):
                os.close(fd)
            raise
        finally:
            for fd in (request_read, answer_write):
                os.close(fd)
        return _ready(Worker(request_write, answer_read, pid, _killer(pid, pidfd)), self.start_timeout_s)

    def close(self) -> None:
        """Stop the zygote; its workers die with it."""
        with self._lock:
            self._closed = True
            self._stop_zygote(self._control)


def _ready(worker: Worker, timeout_s: float) -> Worker:
    """``worker`` once it has said it is ready; killed, and the error raised, when it does not within ``timeout_s``."""
    try:
        worker.wait_ready(timeout_s)
    except BaseException:
        worker.kill()
        raise
    return worker


def _killer(pid: int, pidfd: int | None) -> Callable[[], None]:
    def stop() -> None:
        # A pidfd names this process and no other, even after it has exited and its pid was given to another.
        if pidfd is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        try:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        finally:
            os.close(pidfd)

    return stop


def make_launcher(memory_mb: int, start_timeout_s: float) -> Launcher:
    """The fastest launcher this platform supports: a zygote on Linux, else (or if it cannot start) subprocesses."""
    if sys.platform.startswith("linux") and hasattr(socket, "send_fds"):
        try:
            return ZygoteLauncher(memory_mb, start_timeout_s)
        except (OSError, RuntimeError) as exc:
            logger.warning("expression workers will start one interpreter each: the zygote did not start: %s", exc)
    return SubprocessLauncher(memory_mb, start_timeout_s)
