"""What every route of one server shares: its settings, reward method, judge, metrics and limits, and scoring groups
through the method (limits checked, prepared, judged, scored in a worker thread, counted and logged).

Routes reach it through the :data:`State` dependency (``state: State`` in a route's signature).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio
from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError

from genrm.engine.judge import Judge
from genrm.methods.base import IMAGE_FIELD, GroupInstance, GroupResult, RewardMethod
from genrm.methods.run import judge_prepared
from serving.defences.fair_slots import FairSlots
from serving.defences.guard import note_groups
from serving.defences.image_workers import ImageDecoders
from serving.defences.judge_cost import plan_request
from serving.defences.score_workers import ScoreWorkers, WorkerDied
from serving.errors import RequestError
from serving.group_checks import WHERE, check_limits, mark_replaced, prepare_safely
from serving.images import ImageRefused, ImageResolver
from serving.metrics import ServerMetrics
from serving.openrlhf import SpecialTail
from serving.record_log import RecordLog
from serving.settings import ServerSettings
from verifiers import VerifyConfig
from verifiers.expressions.pool import tenant

_THREADS = 40  # threads for in-process work (anyio's default for all threads together)
# Threads for scoring that may wait for expression workers. A waiting thread only sleeps, and the pool's fair queue,
# not this limiter, must decide who goes next: a limiter's FIFO would put a correct check behind every hostile one.
_POOLED_THREADS = 256
# Images read and decoded at once, each by a worker process (serving.defences.image_workers), handed out fairly to
# requests.
_IMAGE_THREADS = 4
# CPU work (parsing, preparing, reading, scoring, serialising) at once, and at once for one request. Under the GIL a
# request runs no faster on more threads, and with one thread each, a cheap request that comes while heavy ones run
# starts at once and shares the interpreter with a thread per request, instead of waiting for a heavy step to end.
_CPU_SLOTS = 16
_CPU_SLOTS_PER_REQUEST = 1


def _as_tenant(name: str, budget_s: float, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` with its expression checks queued as tenant ``name`` within ``budget_s`` of waiting."""
    with tenant(name, budget_s):
        return fn(*args)


@dataclass
class ServerState:
    """One server's shared state (made by ``serving.app.create_app``)."""

    settings: ServerSettings
    method: RewardMethod
    judge: Judge
    metrics: ServerMetrics
    special_end: SpecialTail
    verify_config: VerifyConfig
    log: RecordLog | None = None
    gatherer: Any = None  # serving.gathering.GroupGatherer when a group size is set
    score_workers: ScoreWorkers | None = None  # large /v1/score requests are scored there when set
    # Made here rather than at start-up, so that the app also works where no lifespan runs (some test clients).
    slots: FairSlots = field(init=False)
    images: ImageResolver = field(init=False)
    decoders: ImageDecoders = field(init=False)
    _limiters: dict[bool, anyio.CapacityLimiter] = field(default_factory=dict, init=False)
    _image_slots: FairSlots = field(init=False)
    _cpu_slots: FairSlots = field(init=False)

    def __post_init__(self) -> None:
        self.slots = FairSlots(self.settings.max_concurrent_groups)
        self._cpu_slots = FairSlots(_CPU_SLOTS, _CPU_SLOTS_PER_REQUEST)
        self.decoders = ImageDecoders(self.settings.image_decode_timeout_s, self.settings.image_decode_memory_mb)
        self.images = ImageResolver(self.settings.image_policy(), decode=self.decoders.check)
        self._image_slots = FairSlots(_IMAGE_THREADS)

    def limiter(self, uses_pool: bool) -> anyio.CapacityLimiter:
        """The thread limiter for work that may wait for expression workers (its own threads, so that a crowd of them
        waiting never leaves cheap work without one) or not. Made on first use: a limiter needs the loop."""
        if uses_pool not in self._limiters:
            self._limiters[uses_pool] = anyio.CapacityLimiter(_POOLED_THREADS if uses_pool else _THREADS)
        return self._limiters[uses_pool]

    async def in_thread(self, uses_pool: bool, request_id: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread, its expression checks queued as this request's tenant."""
        return await anyio.to_thread.run_sync(_as_tenant, request_id, self.settings.verifier_budget_s, fn, *args,
                                              limiter=self.limiter(uses_pool))  # fmt: skip

    async def cpu(self, tenant: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` (CPU work: parsing, preparing, reading, scoring, serialising) in a worker thread, once one of
        the CPU slots is free; the slots go round-robin over tenants (one per request), so a request's turn never
        waits behind all of another's work."""
        async with self._cpu_slots.slot(tenant):
            return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter(False))

    async def resolve_image(self, group: GroupInstance, where: list[Any], tenant: str) -> GroupInstance:
        """``group`` with its image (if it has one) read by the server into a checked data URI
        (:mod:`serving.images`), as request ``tenant``; a refused image is this request's 413 or 422 at ``where``."""
        (resolved,) = await self._resolve([group], lambda _: where, tenant)
        return resolved

    async def resolve_images(
        self, groups: Sequence[GroupInstance], where: list[Any], tenant: str
    ) -> list[GroupInstance]:
        """Every group with its image read by the server (each distinct reference once), as request ``tenant``; the
        first refused one is this request's 413 or 422, naming its field."""
        return await self._resolve(groups, lambda i: [*where, i, IMAGE_FIELD], tenant)

    async def _resolve(
        self, groups: Sequence[GroupInstance], loc: Callable[[int], list[Any]], tenant: str
    ) -> list[GroupInstance]:
        references = [getattr(group, IMAGE_FIELD, None) for group in groups]
        uris = await self.resolve_references(references, loc, tenant)
        return [group if uri is None else group.model_copy(update={IMAGE_FIELD: uri})
                for group, uri in zip(groups, uris, strict=True)]  # fmt: skip

    async def resolve_references(
        self, references: Sequence[Any], loc: Callable[[int], list[Any]], tenant: str
    ) -> list[str | None]:
        """Each image reference (None, or not text: no image) read by the server into a checked data URI, each
        distinct one once, as request ``tenant``; the first refused one is this request's 413 or 422 at ``loc(i)``."""
        distinct = list(dict.fromkeys(r for r in references if isinstance(r, str)))
        if not distinct:
            return [None] * len(references)

        async def read_one(reference: str) -> str:
            async with self._image_slots.slot(tenant):  # these slots bound the reading threads too
                return await anyio.to_thread.run_sync(self.images.resolve, reference)

        read = await asyncio.gather(*(read_one(reference) for reference in distinct), return_exceptions=True)
        uris = dict(zip(distinct, read, strict=True))
        out: list[str | None] = []
        for i, reference in enumerate(references):
            if not isinstance(reference, str):
                out.append(None)
                continue
            uri = uris[reference]
            if isinstance(uri, ImageRefused):
                raise RequestError(uri.status, loc(i), str(uri), "image")
            if isinstance(uri, BaseException):
                raise uri
            out.append(uri)
        return out

    async def check_judge_cost(self, prepared: Sequence[Any], where: list[Any], tenant: str) -> None:
        """Refuse (413) a request whose groups would ask the judge more calls or bytes than the settings allow
        (:mod:`serving.defences.judge_cost`), as soon as the groups planned so far pass it; nothing of it has been
        sent."""
        if self.judge.engine is None:
            return
        settings = self.settings
        total, planned = await self.cpu(tenant, plan_request, self.method, prepared, self.judge,
                                        settings.max_judge_calls, settings.max_judge_bytes)  # fmt: skip
        if total.calls > settings.max_judge_calls or total.bytes > settings.max_judge_bytes:
            least = "at least " if planned < len(prepared) else ""
            raise RequestError(413, where, f"this request would send the judge {least}{total.calls} calls carrying "
                               f"{total.bytes} bytes (images count once per call that shows them); a request may "
                               f"send at most {settings.max_judge_calls} calls and {settings.max_judge_bytes} bytes "
                               "(max_judge_calls, max_judge_bytes): send fewer responses or groups per request, or "
                               "smaller images", "judge_budget")  # fmt: skip

    async def _score_one(self, prepared: Any, request_id: str) -> GroupResult:
        # every wait here is fair between requests: a request of 256 groups takes its turns like one of a single
        # group, instead of queueing all of its groups ahead of it
        if self.judge.engine is None:  # reading by rules is CPU work in a thread: it takes a CPU slot, not a judge's
            async with self._cpu_slots.slot(request_id):
                readings = await judge_prepared(self.method, prepared, self.judge)
        else:
            async with self.slots.slot(request_id):
                readings = await judge_prepared(self.method, prepared, self.judge)
        if self.method.uses_workers(prepared):  # waits for expression workers, whose queue is fair itself
            return await self.in_thread(True, request_id, self.method.score, prepared, readings)
        return await self.cpu(request_id, self.method.score, prepared, readings)

    async def score(
        self, groups: Sequence[GroupInstance], where: list[Any], images_read: bool = False, tenant: str | None = None
    ) -> list[GroupResult]:
        """Every group's result, in order: limits checked, images read (unless ``images_read``: the caller did), text
        made safe to send, every group prepared and the judge's cost planned before anything is judged (a bad group
        refuses the whole request), then judged together and counted. The caller logs what it answered
        (:meth:`record`). ``tenant`` names the request in the fair queues (a new name when None)."""
        request_id = tenant or uuid.uuid4().hex
        check_limits(self.settings, groups, where)
        if not images_read:
            groups = await self.resolve_images(groups, where, request_id)
        prepared, replaced = await self.cpu(request_id, prepare_safely, self.method, groups, where)
        await self.check_judge_cost(prepared, where, request_id)
        results = list(await asyncio.gather(*(self._score_one(p, request_id) for p in prepared)))
        mark_replaced(results, replaced)
        for result in results:
            self.metrics.observe_result(result, self.method.tally(result))
        return results

    async def score_in_worker(self, tenant: str, raw: bytes) -> bytes:
        """The answer to the ``/v1/score`` body ``raw``, scored in a worker process
        (:mod:`serving.defences.score_workers`) as request ``tenant``: its images read here, its groups counted and
        logged here. Raises what the in-process path raises for the same body, and 503 when the worker passed its
        deadline or died."""
        outcome = await self._in_worker(tenant, raw, None)
        if outcome[0] == "images":  # read here, by the server's image workers, then sent again with them
            references = [reference for _, reference in outcome[1]]
            groups = [i for i, _ in outcome[1]]
            uris = await self.resolve_references(references, lambda k: [*WHERE, groups[k], IMAGE_FIELD], tenant)
            outcome = await self._in_worker(tenant, raw, dict(zip(groups, uris, strict=True)))
        if outcome[0] == "invalid":
            raise RequestValidationError(outcome[1])
        if outcome[0] == "refused":
            raise RequestError(*outcome[1:])
        if outcome[0] == "memory":
            raise RequestError(413, ["body"], "scoring this request needs more than "
                               f"{self.settings.score_worker_memory_mb} MiB (score_worker_memory_mb); nothing of it "
                               "is rewarded: send fewer groups, responses or criteria per request",
                               "memory")  # fmt: skip
        if outcome[0] != "ok":
            raise RuntimeError(f"a scoring worker failed: {outcome[-1]}")
        _, answer, lines, counts = outcome
        note_groups(len(counts))
        for rewards, tally in counts:
            self.metrics.observe_group(rewards, tally)
        if lines is not None and self.log is not None:
            await anyio.to_thread.run_sync(self.log.append, lines)
        return answer

    async def _in_worker(self, tenant: str, raw: bytes, images: dict[int, Any] | None) -> tuple[Any, ...]:
        assert self.score_workers is not None
        try:
            return await self.score_workers.score(tenant, raw, images)
        except TimeoutError:
            raise RequestError(503, ["body"], f"scoring this request took more than {self.settings.score_timeout_s:g} "
                               "s (score_timeout_s); nothing of it is rewarded: send fewer or shorter responses per "
                               "request", "deadline") from None  # fmt: skip
        except WorkerDied:
            raise RequestError(503, ["body"], "the worker process scoring this request exited before it answered "
                               "(out of memory?); nothing of it is rewarded", "worker") from None  # fmt: skip

    async def record(self, received: Sequence[GroupInstance], results: Sequence[GroupResult]) -> None:
        """Log groups as the client sent them with their results as answered, once the answer is decided: a group
        whose client is refused is never logged (off the event loop; nothing when the server keeps no log)."""
        if self.log is not None:
            await anyio.to_thread.run_sync(self.log.write, uuid.uuid4().hex, received, results)


async def server_state(request: Request) -> ServerState:
    """The state of the app serving ``request`` (a coroutine, so that FastAPI does not hand it to a worker thread)."""
    return request.app.state.server


State = Annotated[ServerState, Depends(server_state)]
