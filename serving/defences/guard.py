"""The server's outer layer, before any route: the bearer token (401), the body size limit (413), the body's time
limit (408), per-endpoint request metrics, and a log of refused requests at a bounded rate.

It is plain ASGI middleware, so it sees every request, the OpenAPI pages included, before anything of the body is
read. What a route refuses is a :class:`serving.errors.RequestError`.
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from serving.metrics import ServerMetrics

access_logger = logging.getLogger("genrm.serving.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

#: The endpoints counted by name in the metrics (any other path is counted as ``other``).
ENDPOINTS = frozenset({"/v1/score", "/v1/verify", "/get_reward", "/health", "/metrics"})
_OPEN_PATHS = frozenset({"/health"})
_LOGGED_DETAIL = 1000  # bytes of a refusal's answer written to the log
# Probes a load balancer sends every few seconds: their access lines are debug, not info.
_QUIET_PATHS = frozenset({"/health", "/metrics"})
# The groups the request under way holds, as its route counted them (for its access line).
_groups: contextvars.ContextVar[list[int | None] | None] = contextvars.ContextVar("request_groups", default=None)


def note_groups(count: int) -> None:
    """Say that the request under way holds ``count`` groups (shown in its access line)."""
    holder = _groups.get()
    if holder is not None:
        holder[0] = count


class InFlight:
    """How many requests the guard is answering now, so that shutdown can let the ones it cut say so before the
    server stops (the server cancels them, then stops at once)."""

    def __init__(self) -> None:
        self.count = 0

    async def settled(self, timeout_s: float) -> None:
        """Return once no request is being answered, or after ``timeout_s`` (>= 0) seconds."""
        until = time.monotonic() + timeout_s
        while self.count and time.monotonic() < until:
            await asyncio.sleep(0.01)


class Guard:
    """Pure ASGI middleware: the bearer token (401), the body size limit (413), the body's time limit (408) and
    per-endpoint request metrics.

    The token is checked here, before anything of the body is read, on every path but ``/health`` (the OpenAPI
    schema and the docs pages included), so a client without it learns nothing about the API or its own body.

    A body must arrive whole within ``body_timeout_s`` seconds of its head, plus one second per ``min_body_rate``
    bytes it holds (its ``Content-Length``, or what has come of a chunked one): a client that sends a byte every few
    seconds is answered 408 and its connection closed, however long each byte waits. The default bounds (10 s, 1 MiB/s)
    give the largest body (32 MiB) 42 s.
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int, metrics: ServerMetrics, api_key: str | None,
        body_timeout_s: float = 10.0, min_body_rate: float = float(2**20), in_flight: InFlight | None = None,
    ) -> None:  # fmt: skip
        self.app, self.max_bytes, self.metrics = app, max_bytes, metrics
        self.expected = None if api_key is None else f"Bearer {api_key}".encode()
        self.body_timeout_s, self.min_body_rate = body_timeout_s, min_body_rate
        self.in_flight = in_flight or InFlight()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status, received = time.perf_counter(), [500], [0]
        endpoint = scope.get("path", "")
        pairs = list(scope.get("headers") or [])
        headers = dict(pairs)
        ambiguous = _ambiguous_headers([name.lower() for name, _ in pairs])
        if ambiguous is not None:
            await _send_error(send, status, 400, "header", ambiguous, "ambiguous_headers")
            _log_refusal(scope, 400, ambiguous.encode())
            self._count(endpoint, status[0], start)
            return
        if self.expected is not None and endpoint not in _OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _send_error(send, status, 401, "header", "a valid bearer token is required", "auth",
                                  [(b"www-authenticate", b"Bearer")])  # fmt: skip
                _log_refusal(scope, 401, b"a valid bearer token is required")
                self._count(endpoint, status[0], start)
                return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(scope, send, status)
            self._count(endpoint, status[0], start)
            return

        refused, whole = [False], [False]
        groups: list[int | None] = [None]
        _groups.set(groups)
        length = int(declared) if declared is not None and declared.isdigit() else None
        loop = asyncio.get_running_loop()
        head_at = loop.time()

        async def limited_receive() -> Message:
            if whole[0] or refused[0]:
                return await receive()
            allowed = self.body_timeout_s + (received[0] if length is None else length) / self.min_body_rate
            try:
                async with asyncio.timeout_at(head_at + allowed):
                    message = await receive()
            except TimeoutError:
                refused[0] = True  # answered here: the app is told the client left, and nothing it sends goes out
                await self._too_slow(scope, send, status, allowed)
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                whole[0] = True
            if message["type"] == "http.request" and not refused[0]:
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_bytes:
                    # Answer 413 now and tell the app the client left; whatever it sends after that is dropped
                    # (raising here would be turned into a 400 by the body parser).
                    refused[0] = True
                    await self._too_large(scope, send, status)
                    return {"type": "http.disconnect"}
            return message

        error_body, started = bytearray(), [False]

        async def tracking_send(message: Message) -> None:
            if refused[0]:
                return
            if message["type"] == "http.response.start":
                status[0], started[0] = message["status"], True
            elif message["type"] == "http.response.body" and status[0] >= 400:
                error_body.extend(message.get("body", b"")[: _LOGGED_DETAIL - len(error_body)])
            await send(message)

        self.in_flight.count += 1
        try:
            await self.app(scope, limited_receive, tracking_send)
        except asyncio.CancelledError:
            # the server cancels the requests still under way when its shutdown time is up: their clients are told so
            # (nothing of the request was scored or logged), where the server would answer a 500 and log a traceback
            if started[0] or refused[0]:
                raise
            await _send_error(send, status, 503, "server", "the server is shutting down: nothing of this request was "
                              "scored; send it again (to this server once it is back, or another)", "shutdown",
                              [(b"retry-after", b"1"), (b"connection", b"close")])  # fmt: skip
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            self.in_flight.count -= 1
            self._count(endpoint, status[0], start)
            if status[0] >= 400 and not refused[0]:
                _log_refusal(scope, status[0], bytes(error_body))
            elif status[0] < 400:
                _log_access(scope, status[0], time.perf_counter() - start, groups[0])

    async def _too_large(self, scope: Scope, send: Any, status: list[int]) -> None:
        await _send_error(send, status, 413, "body", f"body larger than {self.max_bytes} bytes", "too_large")
        _log_refusal(scope, 413, f"body larger than {self.max_bytes} bytes".encode())

    async def _too_slow(self, scope: Scope, send: Any, status: list[int], allowed: float) -> None:
        message = (f"the body did not arrive within {allowed:.3g} s (body_timeout_s, plus 1 s per min_body_rate "
                   "bytes it holds): send it whole, faster")  # fmt: skip
        await _send_error(send, status, 408, "body", message, "body_timeout", [(b"connection", b"close")])
        _log_refusal(scope, 408, message.encode())

    def _count(self, endpoint: str, status: int, start: float) -> None:
        known = endpoint if endpoint in ENDPOINTS else "other"
        self.metrics.requests.labels(known, str(status)).inc()
        self.metrics.latency.labels(known).observe(time.perf_counter() - start)


def _ambiguous_headers(names: list[bytes]) -> str | None:
    """Why a request's headers can be read two ways (None: they cannot). A proxy in front and this server could
    each take a different one: the token or the body's end would then be another than the one checked."""
    for name in (b"authorization", b"content-length"):
        if names.count(name) > 1:
            return f"more than one {name.decode()} header"
    if b"content-length" in names and b"transfer-encoding" in names:
        return "both content-length and transfer-encoding: the body's length must be given one way"
    return None


class RefusalLog:
    """At most ``rate`` refusal lines per second on average (bursts of ``rate``), so a flood of bad requests cannot
    flood the log; the next line written says how many were left out meanwhile.

    Args:
        rate: lines per second (> 0).
        clock: seconds, monotonic (injectable for tests).
    """

    def __init__(self, rate: float = 20.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self._clock = rate, clock
        self._tokens, self._last, self.suppressed = rate, clock(), 0

    def __call__(self, scope: Scope, status: int, detail: bytes) -> None:
        """Log one refused request: who, what, and why, bounded and escaped (the detail may quote the client)."""
        now = self._clock()
        self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens < 1.0:
            self.suppressed += 1
            return
        self._tokens -= 1.0
        left_out, self.suppressed = self.suppressed, 0
        client = scope.get("client") or ("?", 0)
        text = detail[:_LOGGED_DETAIL].decode("utf-8", "replace").encode("unicode_escape").decode("ascii")
        note = f" ({left_out} more refusals not logged before this one)" if left_out else ""
        access_logger.warning("refused %s %s from %s:%s: %d %s%s", scope.get("method", "?"), scope.get("path", "?"),
                              client[0], client[1], status, text, note)  # fmt: skip


_log_refusal = RefusalLog()


def _log_access(scope: Scope, status: int, seconds: float, groups: int | None) -> None:
    """One line per answered request: method, path, status, milliseconds and groups (refusals have their own)."""
    path = scope.get("path", "?")
    level = logging.DEBUG if path in _QUIET_PATHS else logging.INFO
    if not access_logger.isEnabledFor(level):
        return
    client = scope.get("client") or ("?", 0)
    held = "" if groups is None else f" {groups} group{'s' if groups != 1 else ''}"
    access_logger.log(level, "%s %s %d %.0f ms%s from %s:%s", scope.get("method", "?"), path, status,
                      seconds * 1000, held, client[0], client[1])  # fmt: skip


async def _send_error(
    send: Any, status: list[int], code: int, where: str, message: str, kind: str,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:  # fmt: skip
    body = json.dumps({"detail": [{"loc": [where], "msg": message, "type": kind}]}).encode()
    status[0] = code
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": body})
