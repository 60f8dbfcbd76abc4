"""Groups gathered across requests: responses of one instance held until the group is whole, then judged together.

The remap of the rubric method needs a prompt's G responses together, but OpenRLHF 0.10 and later send one query
per request (its single-turn executor decodes each sample and posts it alone). With a group size set, the server
holds each response of an instance until ``size`` responses of it have arrived, or ``wait_s`` seconds after the
first, and then judges whatever it has as one group; every waiting request gets its own response's result, and how
many responses its group had. A group judged short of ``size`` is said to be partial, never passed off as whole.

Responses meet when their instances are the same: the instance (of the server's reward method) without its
responses. A group that reaches ``size`` is judged at once, and the next response of that instance starts a new
group. What is gathered lives in this process: the responses of a group must reach the same server.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from genrm.methods.base import GroupInstance as Instance

Judge = Callable[[Instance], Awaitable[Any]]
"""Judges one group (an instance with its responses) and returns its result, or raises."""


class GatherFull(RuntimeError):
    """Too many groups are open at once; the response was not taken."""


@dataclass(frozen=True)
class Gathered:
    """One response's share of its group's result: ``result`` (what the judge function returned for the group),
    ``index`` (the response's place in the group), ``size`` (responses the group was judged with), ``partial``
    (fewer than the configured size)."""

    result: Any
    index: int
    size: int
    partial: bool


@dataclass
class _Open:
    instance: Instance
    responses: list[str] = field(default_factory=list)
    waiters: list[asyncio.Future[Gathered]] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


def _retrieve(future: asyncio.Future[Gathered]) -> None:
    if not future.cancelled():
        future.exception()


def instance_key(instance: Instance) -> str:
    """What responses must share to be one group: the instance without its responses."""
    body = instance.model_dump_json(exclude={"responses"})
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


class GroupGatherer:
    """Gathers responses into groups of ``size`` (or what arrived within ``wait_s`` seconds) and judges each group
    once with ``judge``.

    Args:
        size: responses per group (the trainer's samples per prompt), at least 1.
        wait_s: longest a response waits for the rest of its group, s (> 0).
        judge: judges a whole group; its exceptions reach every request of the group.
        max_open: most groups open at once; past it, :meth:`submit` raises GatherFull.
    """

    def __init__(self, size: int, wait_s: float, judge: Judge, max_open: int = 4096) -> None:
        if size < 1 or not wait_s > 0:
            raise ValueError(f"size must be >= 1 and wait_s > 0, got {size} and {wait_s}")
        self.size, self.wait_s, self.max_open = size, wait_s, max_open
        self._judge = judge
        self._open: dict[str, _Open] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def open_groups(self) -> int:
        """Groups waiting for responses now."""
        return len(self._open)

    async def submit(self, instance: Instance, response: str) -> Gathered:
        """Add one response of ``instance`` and wait for its group's result."""
        key = instance_key(instance)
        group = self._open.get(key)
        if group is None:
            if len(self._open) >= self.max_open:
                raise GatherFull(f"{len(self._open)} groups are waiting for responses; at most {self.max_open}")
            group = self._open[key] = _Open(instance)
            group.timer = asyncio.get_running_loop().call_later(self.wait_s, self._close, key, group)
        waiter: asyncio.Future[Gathered] = asyncio.get_running_loop().create_future()
        waiter.add_done_callback(_retrieve)  # a request that went away leaves no "never retrieved" warning
        group.responses.append(response)
        group.waiters.append(waiter)
        if len(group.responses) >= self.size:
            self._close(key, group)
        return await asyncio.shield(waiter)

    def _close(self, key: str, group: _Open) -> None:
        if self._open.get(key) is not group:
            return  # already closed: full before its timer fired
        del self._open[key]
        if group.timer is not None:
            group.timer.cancel()
        task = asyncio.get_running_loop().create_task(self._run(group))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, group: _Open) -> None:
        instance = group.instance.model_copy(update={"responses": list(group.responses)})
        try:
            result = await self._judge(instance)
        except Exception as exc:  # noqa: BLE001 - each waiting request reports it
            for waiter in group.waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        size = len(group.responses)
        for index, waiter in enumerate(group.waiters):
            if not waiter.done():
                waiter.set_result(Gathered(result, index, size, size < self.size))

    async def aclose(self) -> None:
        """Judge every open group now and wait for all judging to finish (server shutdown)."""
        for key, group in list(self._open.items()):
            self._close(key, group)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
