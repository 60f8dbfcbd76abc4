"""What the benchmarks that load a server share: a free loopback port, a server process pinned to one core and
waited for until healthy, a closed-loop load of requests in flight for a while, and a method's in-process rate.

Imported by the benchmark scripts beside it (they put this folder's parent first on ``sys.path`` and import it as
``benchmarks.loopback``); not a benchmark itself.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(command: Sequence[str], port: int, core: int | None, what: str,
                 timeout_s: float = 60.0) -> tuple[subprocess.Popen, str]:  # fmt: skip
    """Start ``command`` (a server listening on ``port``), pinned to ``core`` when given, and wait until its
    ``/health`` answers 200; returns the process and its base URL. Raises RuntimeError when it does not start."""
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    process = subprocess.Popen(list(command), preexec_fn=pin, cwd=Path(__file__).resolve().parents[1])  # noqa: PLW1509
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the {what} server did not start")
        time.sleep(0.2)


def in_process_rate(method: Any, groups: Sequence[Any], judge: Any, seconds: float) -> float:
    """Responses per second of ``genrm.methods.score_instance`` over ``groups`` (in turn) for ``seconds``, in this
    process: a method's own cost, no HTTP."""
    from genrm.methods import score_instance

    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for group in groups:
            score_instance(method, group, judge)
            done += len(group.responses)
    return done / (time.perf_counter() - start)


def split_cores() -> int | None:
    """Keep the first core for a server and move this process (the load generator) to the others; returns the
    server's core, or None when there is only one (then both share it)."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) < 2:
        return None
    os.sched_setaffinity(0, set(cores[1:]))
    return cores[0]


def rate(url: str, path: str, bodies: Sequence[bytes], per_body: int, concurrency: int, seconds: float) -> float:
    """Items per second through ``path`` (``per_body`` items in each body) under :func:`closed_loop`."""
    requests, elapsed = asyncio.run(closed_loop(url, path, bodies, concurrency, seconds))
    return requests * per_body / elapsed


async def closed_loop(url: str, path: str, bodies: Sequence[bytes], concurrency: int, seconds: float,
                      timeout_s: float = 60.0, requests: int | None = None) -> tuple[int, float]:  # fmt: skip
    """POST ``bodies`` (in turn) to ``path`` with ``concurrency`` requests in flight for ``seconds`` (each allowed
    ``timeout_s``), or, given ``requests``, until that many have been sent (fixed work: for requests that take about
    as long as the window, a window would count whole waves or none); returns the requests answered (each must be a
    2xx) and the time taken until the last one came back, in seconds."""
    done, sent = [0], [0]
    headers = {"content-type": "application/json"}
    stop_at = time.perf_counter() + seconds
    more = (lambda: time.perf_counter() < stop_at) if requests is None else (lambda: sent[0] < requests)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s, limits=limits) as http:

        async def worker(offset: int) -> None:
            i = offset
            while more():
                sent[0] += 1
                response = await http.post(path, content=bodies[i % len(bodies)], headers=headers)
                response.raise_for_status()
                done[0] += 1
                i += concurrency

        start = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(concurrency)))
        return done[0], time.perf_counter() - start
