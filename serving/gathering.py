"""Groups gathered across requests: responses of one instance held until the group is whole, then judged together.

The remap of the rubric method needs a prompt's G responses together, but OpenRLHF 0.10 and later send one query
per request (its single-turn executor decodes each sample and posts it alone). With a group size set, the server
holds each response of an instance until ``size`` responses of it have arrived, or ``wait_s`` seconds after the
first, and then judges whatever it has as one group; every waiting request gets its own response's result, and how
many responses its group had. A group judged short of ``size`` is said to be partial, never passed off as whole.

Responses meet when their instances are the same: the instance (of the server's reward method) without its
responses. A group that reaches ``size`` is judged at once, and the next response of that instance starts a new
group. What is gathered lives in this process: the responses of a group must reach the same server.

**A retry is not a new response.** A client that timed out and sends its query again (same instance, same response
text) while the group it first joined is open, being judged, or was judged in the last ``retain_s`` seconds, gets
that group's result for its response, and the group keeps its members: it is never judged with a duplicate in place
of a missing member. A group whose judging failed in a way a retry may mend (the judge was down) is judged again,
whole, for the retry: the failure is never replayed to it. What tells a retry from a policy that sampled the same
text twice (which is a member of its own, and common) is that the first request's client has gone: its connection
closed (the route passes an event that is set when it does). A text that is held by a request still waiting is a new
member.

**Memory in bytes.** What a group holds is counted as the bytes of its instance (as JSON, its image included), its
responses and, once judged, its result: groups open or being judged hold at most ``max_bytes`` together (past it a
new response is refused with :class:`GatherFull`, and the client retries), and judged groups kept for retries at most
``max_retained_bytes`` (past it the oldest are forgotten first, and a retry of one of them is judged anew).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict, deque
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
class _Waiter:
    index: int
    future: asyncio.Future[Gathered]
    gone: asyncio.Event | None  # set when its request's client has left


@dataclass
class _Open:
    key: str
    instance: Instance
    held: int  # bytes: the instance as JSON, the responses, and the result once judged
    responses: list[str] = field(default_factory=list)
    waiters: list[_Waiter] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    outcome: tuple[Any, BaseException | None] | None = None  # (result, error) once judged
    closed_at: float | None = None
    result_bytes: int = 0

    def abandoned(self, response: str) -> int | None:
        """The place of ``response`` in the group when every request that holds it has gone (a retry takes it)."""
        for index, text in enumerate(self.responses):
            holders = [w for w in self.waiters if w.index == index]
            if text == response and holders and all(w.gone is not None and w.gone.is_set() for w in holders):
                return index
        return None


def _retrieve(future: asyncio.Future[Gathered]) -> None:
    if not future.cancelled():
        future.exception()


def instance_key(instance: Instance) -> tuple[str, int]:
    """What responses must share to be one group (a digest of the instance without its responses), and the bytes of
    that instance as JSON."""
    body = instance.model_dump_json(exclude={"responses"}).encode("utf-8", "surrogatepass")
    return hashlib.sha256(body).hexdigest(), len(body)


def _text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def result_bytes(result: Any) -> int:
    """Bytes of a judged group's result as JSON (0 for a result that is not a pydantic model)."""
    dump = getattr(result, "model_dump_json", None)
    return len(dump()) if callable(dump) else 0


class GroupGatherer:
    """Gathers responses into groups of ``size`` (or what arrived within ``wait_s`` seconds) and judges each group
    once with ``judge``.

    Args:
        size: responses per group (the trainer's samples per prompt), at least 1.
        wait_s: longest a response waits for the rest of its group, s (> 0).
        judge: judges a whole group; its exceptions reach every request of the group.
        max_open: most groups open at once; past it, :meth:`submit` raises GatherFull. As many judged groups are
            kept for retries, at most.
        retain_s: how long a judged group answers retries, s (default: 4 x ``wait_s``, at least 120).
        max_bytes: most bytes held by groups open or being judged, all together (> 0); past it, :meth:`submit`
            raises GatherFull.
        max_retained_bytes: most bytes held by judged groups kept for retries, all together (>= 0); past it the
            oldest are forgotten.
        retry_failed: whether a judged group's result failed in a way a retry may mend (a judge that was down); a
            retry of a member of such a group, or of one whose judging raised, has the whole group judged again.
    """

    def __init__(
        self, size: int, wait_s: float, judge: Judge, max_open: int = 4096, retain_s: float | None = None,
        retry_failed: Callable[[Any], bool] | None = None, max_bytes: int = 256 * 2**20,
        max_retained_bytes: int = 64 * 2**20,
    ) -> None:  # fmt: skip
        if size < 1 or not wait_s > 0:
            raise ValueError(f"size must be >= 1 and wait_s > 0, got {size} and {wait_s}")
        self.size, self.wait_s, self.max_open = size, wait_s, max_open
        # how long a judged group answers retries: a client's time-out and its resend fit in it
        self.retain_s = retain_s if retain_s is not None else max(120.0, 4 * wait_s)
        self._judge, self._retry_failed = judge, retry_failed
        self.max_bytes, self.max_retained_bytes = max_bytes, max_retained_bytes
        self._open: dict[str, _Open] = {}
        self._judged: OrderedDict[int, _Open] = OrderedDict()  # judged and kept for retries, oldest judgement first
        self._closed_by_key: dict[str, deque[_Open]] = {}  # groups being judged or judged, by instance, oldest first
        self.gathered_bytes = 0  # held by groups open or being judged
        self.retained_bytes = 0  # held by judged groups
        self._tasks: set[asyncio.Task[None]] = set()

    def open_groups(self) -> int:
        """Groups waiting for responses now."""
        return len(self._open)

    async def submit(self, instance: Instance, response: str, gone: asyncio.Event | None = None) -> Gathered:
        """Add one response of ``instance`` and wait for its group's result. ``gone`` is set when this request's
        client leaves; a later request with the same text then takes its place instead of joining as a new one."""
        key, instance_bytes = instance_key(instance)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(0, loop.create_future(), gone)
        waiter.future.add_done_callback(_retrieve)  # a request that went away leaves no "never retrieved" warning
        retried = self._retried(key, response)
        if retried is not None:
            group, waiter.index = retried
            group.waiters.append(waiter)
            if group.outcome is not None and self._failed(group.outcome):
                # the failure is the judge's, not the group's: a retry has the whole group judged again, with its
                # members, instead of being told the old failure (or judged alone, as a group of one)
                self._unjudge(group)
                self._start(group)
            elif group.outcome is not None:
                self._answer(group, [waiter])
            return await asyncio.shield(waiter.future)
        group = self._open.get(key)
        adds = _text_bytes(response) + (instance_bytes if group is None else 0)
        if self.gathered_bytes + adds > self.max_bytes:
            raise GatherFull(f"the groups waiting for responses or being judged hold {self.gathered_bytes} bytes; "
                             f"this response would take them past {self.max_bytes} (max_gathered_bytes)")  # fmt: skip
        if group is None:
            if len(self._open) >= self.max_open:
                raise GatherFull(f"{len(self._open)} groups are waiting for responses; at most {self.max_open}")
            group = self._open[key] = _Open(key, instance, 0)
            group.timer = loop.call_later(self.wait_s, self._close, key, group)
        group.held += adds
        self.gathered_bytes += adds
        waiter.index = len(group.responses)
        group.responses.append(response)
        group.waiters.append(waiter)
        if len(group.responses) >= self.size:
            self._close(key, group)
        return await asyncio.shield(waiter.future)

    def _retried(self, key: str, response: str) -> tuple[_Open, int] | None:
        """The group and place a retry of ``response`` takes: the open group's, else the newest closed group's that
        holds it for requests that have all gone."""
        self._forget_old()
        candidates = [self._open[key]] if key in self._open else []
        candidates += reversed(self._closed_by_key.get(key, ()))
        for group in candidates:
            index = group.abandoned(response)
            if index is not None:
                return group, index
        return None

    def _forget_old(self) -> None:
        now = time.monotonic()
        while self._judged:
            oldest = next(iter(self._judged.values()))
            over = len(self._judged) > self.max_open or self.retained_bytes > self.max_retained_bytes
            if not over and now - (oldest.closed_at or now) <= self.retain_s:
                break
            self._judged.popitem(last=False)
            self.retained_bytes -= oldest.held
            same = self._closed_by_key[oldest.key]
            same.remove(oldest)
            if not same:
                del self._closed_by_key[oldest.key]

    def _judged_now(self, group: _Open) -> None:
        """Move ``group``'s bytes from the gathered to the retained, with its result's."""
        group.result_bytes = result_bytes(group.outcome[0]) if group.outcome is not None else 0
        self.gathered_bytes -= group.held
        group.held += group.result_bytes
        self.retained_bytes += group.held
        self._judged[id(group)] = group
        self._forget_old()

    def _unjudge(self, group: _Open) -> None:
        """Take a judged ``group`` back to be judged again: its bytes count as gathered until then."""
        group.outcome = None
        self._judged.pop(id(group), None)
        self.retained_bytes -= group.held
        group.held -= group.result_bytes
        self.gathered_bytes += group.held

    def _close(self, key: str, group: _Open) -> None:
        if self._open.get(key) is not group:
            return  # already closed: full before its timer fired
        del self._open[key]
        if group.timer is not None:
            group.timer.cancel()
        group.closed_at = time.monotonic()
        self._closed_by_key.setdefault(key, deque()).append(group)
        self._start(group)

    def _start(self, group: _Open) -> None:
        task = asyncio.get_running_loop().create_task(self._run(group))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _failed(self, outcome: tuple[Any, BaseException | None]) -> bool:
        result, error = outcome
        return error is not None or (self._retry_failed is not None and self._retry_failed(result))

    async def _run(self, group: _Open) -> None:
        instance = group.instance.model_copy(update={"responses": list(group.responses)})
        try:
            group.outcome = (await self._judge(instance), None)
        except Exception as exc:  # noqa: BLE001 - each waiting request reports it
            group.outcome = (None, exc)
        except asyncio.CancelledError:  # shutdown: its bytes are no longer held
            self.gathered_bytes -= group.held
            raise
        group.closed_at = time.monotonic()
        self._judged_now(group)
        self._answer(group, group.waiters)

    def _answer(self, group: _Open, waiters: list[_Waiter]) -> None:
        assert group.outcome is not None
        result, error = group.outcome
        size = len(group.responses)
        for waiter in waiters:
            if waiter.future.done():
                continue
            if error is not None:
                waiter.future.set_exception(error)
            else:
                waiter.future.set_result(Gathered(result, waiter.index, size, size < self.size))

    async def aclose(self, timeout_s: float | None = None) -> None:
        """Judge every open group now and wait for all judging to finish (server shutdown), at most ``timeout_s``
        seconds (None: no limit); judging still under way then is cancelled (its clients get no answer)."""
        for key, group in list(self._open.items()):
            self._close(key, group)
        if not self._tasks:
            return
        tasks = list(self._tasks)
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
