"""The server's HTTP connections, with a time limit on each request's head.

uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``), but any byte that arrives cancels
that timer, and a new connection that never sends a byte has none: a client that opens connections and sends its
headers a byte at a time, or not at all, holds them for ever (32 such connections were still open after 75 s). Here
every request's head (request line and headers) must be complete within ``header_timeout_s`` of the connection being
made or of the previous response; past it the connection is closed. The body and the work that follows have their
own bounds (``max_body_bytes``, the judge's and the verifiers' deadlines).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose next request head is not complete within
    :attr:`header_timeout_s` seconds."""

    header_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the connection, and the time its first request's head has."""
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm(None)

    def _arm(self, done: Any) -> None:
        self._disarm()
        self._done = done  # the head has come when uvicorn starts a cycle other than this finished one
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def handle_events(self) -> None:
        """uvicorn's event handling; the head's timer stops once a request has begun."""
        super().handle_events()
        if self._head_timer is not None and self.cycle is not None and self.cycle is not self._done:
            self._disarm()

    def on_response_complete(self) -> None:
        """uvicorn's end of a response; the next request's head has its time from now (unless it was already here:
        a pipelined request starts within this call)."""
        finished = self.cycle
        super().on_response_complete()
        if not self.transport.is_closing() and self.cycle is finished:
            self._arm(finished)

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's end of a connection, with its timer stopped."""
        self._disarm()
        super().connection_lost(exc)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def head_timeout_protocol(header_timeout_s: float) -> type[Any]:
    """The protocol class for uvicorn's ``http`` option, with a head time limit of ``header_timeout_s`` (> 0) s."""
    return type("HeadTimeoutProtocol", (HeadTimeoutProtocol,), {"header_timeout_s": header_timeout_s})
