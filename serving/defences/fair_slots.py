"""Slots shared fairly between requests: while several wait, a freed slot goes to the request that has waited longest
for a turn, not to whoever queued the most work first; and no request holds more than its share at once."""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FairSlots:
    """At most ``size`` (> 0) holders at once, and at most ``per_tenant`` (None: ``size``) of one tenant, handed out
    round-robin over tenants (FIFO within one). For one event loop: made and used on it.

    A per-tenant bound matters where a slot is held for long: CPU work under the GIL runs no faster with more threads,
    so a request with one slot loses nothing, and a cheap request that comes while six heavy ones run waits for no
    slot at all instead of for the end of a heavy one's step.
    """

    def __init__(self, size: int, per_tenant: int | None = None) -> None:
        self._free = size
        self._per_tenant = per_tenant or size
        self._held: Counter[str] = Counter()
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[None]:
        """Hold one slot for the block, as ``tenant``."""
        # after every release the free slots go to the waiting tenants below their bound, so a slot that is free now
        # is one no waiting tenant may take: this tenant takes it without queueing behind anyone
        if self._free > 0 and self._held[tenant] < self._per_tenant:
            self._take(tenant)
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(tenant, deque()).append(turn)
            try:
                await turn  # the slot is taken for this tenant when the turn is given
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release(tenant)  # it was handed this slot as it was cancelled: pass it on
                else:
                    self._forget(tenant, turn)
                raise
        try:
            yield
        finally:
            self._release(tenant)

    def _take(self, tenant: str) -> None:
        self._free -= 1
        self._held[tenant] += 1

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self._waiting[tenant]

    def _release(self, tenant: str) -> None:
        self._free += 1
        self._held[tenant] -= 1
        if not self._held[tenant]:
            del self._held[tenant]
        self._hand_out()

    def _hand_out(self) -> None:
        """Give free slots to waiting tenants, round-robin, skipping those at their bound."""
        given = True
        while self._free > 0 and given:
            given = False
            for tenant in list(self._waiting):
                if self._free == 0:
                    return
                queue = self._waiting[tenant]
                while queue and queue[0].done():  # a turn cancelled before it was given
                    queue.popleft()
                if not queue:
                    del self._waiting[tenant]
                    continue
                if self._held[tenant] >= self._per_tenant:
                    continue
                turn = queue.popleft()
                del self._waiting[tenant]
                if queue:
                    self._waiting[tenant] = queue  # to the back of the line: the others go first
                self._take(tenant)
                turn.set_result(None)
                given = True

    @property
    def waiting(self) -> int:
        """Holders waiting for a slot now."""
        return sum(len(queue) for queue in self._waiting.values())
