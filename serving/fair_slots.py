"""Slots shared fairly between requests: while several wait, a freed slot goes to the request that has waited longest
for a turn, not to whoever queued the most work first."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FairSlots:
    """At most ``size`` (> 0) holders at once, handed out round-robin over tenants (FIFO within one). For one event
    loop: made and used on it."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[None]:
        """Hold one slot for the block, as ``tenant``."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(tenant, deque()).append(turn)
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release()  # it was handed this slot as it was cancelled: pass it on
                else:
                    self._forget(tenant, turn)
                raise
        try:
            yield
        finally:
            self._release()

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self._waiting[tenant]

    def _release(self) -> None:
        while self._waiting:
            tenant, queue = next(iter(self._waiting.items()))
            turn = queue.popleft()
            del self._waiting[tenant]
            if queue:
                self._waiting[tenant] = queue  # to the back of the line: the others go first
            if not turn.done():
                turn.set_result(None)
                return
        self._free += 1

    @property
    def waiting(self) -> int:
        """Holders waiting for a slot now."""
        return sum(len(queue) for queue in self._waiting.values())
