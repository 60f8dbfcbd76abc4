"""A client that leaves: noticed while its request is worked on, so that abandoned work stops.

A route reads its body first; what the server receives after that is the client's disconnect, which a route that
does not listen for it never learns of (its task is cancelled only at shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

from serving.errors import RequestError

T = TypeVar("T")


async def watch_disconnect(request: Request, gone: asyncio.Event) -> None:
    """Set ``gone`` when the client of ``request`` leaves (its body is read: what comes next is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


async def unless_client_leaves(request: Request, work: Awaitable[T]) -> T:
    """What ``work`` gives, or, when the client of ``request`` leaves first, ``work`` cancelled (a scoring worker
    busy with it is stopped; nothing of it is logged) and a 400 that nobody reads."""
    gone = asyncio.Event()
    watcher = asyncio.create_task(watch_disconnect(request, gone))
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        watcher.cancel()
    if gone.is_set() and task.cancelled():
        raise RequestError(400, ["client"], "the client left before its answer: its work was stopped", "disconnected")
    return task.result()
