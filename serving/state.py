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

from genrm.engine.judge import Judge
from genrm.methods.base import GroupInstance, GroupResult, MethodInputError, RewardMethod
from genrm.methods.run import judge_prepared
from serving.errors import RequestError
from serving.metrics import ServerMetrics
from serving.openrlhf import SpecialTail
from serving.record_log import RecordLog
from serving.settings import ServerSettings
from verifiers import VerifyConfig, tenant

_THREADS = 40  # threads for in-process work (anyio's default for all threads together)
# Threads for scoring that may wait for expression workers. A waiting thread only sleeps, and the pool's fair queue,
# not this limiter, must decide who goes next: a limiter's FIFO would put a correct check behind every hostile one.
_POOLED_THREADS = 256


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
    # Made here rather than at start-up, so that the app also works where no lifespan runs (some test clients).
    slots: asyncio.Semaphore = field(init=False)
    _limiters: dict[bool, anyio.CapacityLimiter] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(self.settings.max_concurrent_groups)

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

    def check_limits(self, groups: Sequence[GroupInstance], where: list[Any]) -> None:
        """Refuse (422) a group with more responses, or a response longer, than the settings allow."""
        settings = self.settings
        for i, group in enumerate(groups):
            if len(group.responses) > settings.max_responses:
                raise RequestError(422, [*where, i, "responses"],
                                   f"{len(group.responses)} responses; at most {settings.max_responses}",
                                   "limit")  # fmt: skip
            for j, response in enumerate(group.responses):
                if len(response) > settings.max_response_chars:
                    raise RequestError(422, [*where, i, "responses", j],
                                       f"response of {len(response)} characters; at most "
                                       f"{settings.max_response_chars}", "limit")  # fmt: skip

    def prepare(self, groups: Sequence[GroupInstance], where: list[Any]) -> list[Any]:
        """Each group prepared by the method; the first that cannot be is this request's 422, located."""
        prepared = []
        for i, group in enumerate(groups):
            try:
                prepared.append(self.method.prepare(group))
            except MethodInputError as exc:
                raise RequestError(422, [*where, i, *exc.loc], str(exc), exc.kind) from None
        return prepared

    async def _score_one(self, prepared: Any, request_id: str) -> GroupResult:
        async with self.slots:
            readings = await judge_prepared(self.method, prepared, self.judge)
        uses_pool = self.method.uses_workers(prepared)
        return await self.in_thread(uses_pool, request_id, self.method.score, prepared, readings)

    async def score(self, groups: Sequence[GroupInstance], where: list[Any]) -> list[GroupResult]:
        """Every group's result, in order: limits checked and every group prepared before anything is judged (a bad
        group refuses the whole request), then judged together, counted and logged."""
        self.check_limits(groups, where)
        prepared = self.prepare(groups, where)
        request_id = uuid.uuid4().hex
        results = list(await asyncio.gather(*(self._score_one(p, request_id) for p in prepared)))
        for result in results:
            self.metrics.observe_result(result, self.method.tally(result))
        if self.log is not None:
            await anyio.to_thread.run_sync(self.log.write, request_id, groups, results)
        return results


async def server_state(request: Request) -> ServerState:
    """The state of the app serving ``request`` (a coroutine, so that FastAPI does not hand it to a worker thread)."""
    return request.app.state.server


State = Annotated[ServerState, Depends(server_state)]
