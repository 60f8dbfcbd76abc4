"""The reward server: FastAPI in front of a reward method, its judge and the verifier library.

    from serving.app import create_app
    app = create_app(ServerSettings(judge="rule"))      # then: uvicorn.run(app, host=..., port=...)

Endpoints (OpenAPI docs at ``/docs``; one module each under :mod:`serving.routes`):

- ``POST /v1/score``: ``{"groups": [instance, ...]}`` → ``{"groups": [{"id", "rewards", "records"}, ...]}``; a group
  is the G responses to one prompt, so the remapping sees the whole group. An instance is the reward method's (the
  rubric method's by default: ``genrm.methods.rubric.models.Instance``).
- ``POST /v1/verify``: ``{"reference", "prediction"}`` → ``{"score", "status", "reason", "verifier"}``.
- ``POST /get_reward``: OpenRLHF's remote reward protocol (``{"query", "prompts", "labels"}`` →
  ``{"rewards", "scores", "extra_logs"}``); each label is the JSON instance of its query. Responses are cut from
  queries by ``serving.openrlhf``; with ``group_size`` set, a group is gathered across requests
  (``serving.gathering``).
- ``POST /judge`` and ``GET /``: ClaimDiff-RL's one-response protocol, for a method that answers it (the claimdiff
  method; :mod:`serving.routes.judge_payload`).
- ``GET /health``: 200 when the judge can judge, 503 otherwise. ``GET /metrics``: Prometheus text.

Errors (:mod:`serving.errors`): a body that does not validate, a limit exceeded or an instance the method refuses (a
rubric that fails its checks) is a 4xx whose ``detail`` names the field (``["body", "groups", 3, "rubric",
"essential", 0, "reference"]``); nothing of such a request is judged. A judge that is down gives 503 with
``Retry-After``. A judge that answers but fails on a response gives that response a null reward and a record that
says why; nothing is ever turned into a reward of 0 or 1.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
from fastapi import FastAPI

from genrm import __version__
from genrm.engine.judge import Judge
from genrm.methods import RewardMethod, check_judge
from genrm.methods.base import AnswersJudgePayloads
from serving.defences.bodies import publish_body_schemas
from serving.defences.guard import Guard, InFlight
from serving.defences.score_workers import ScoreWorkers
from serving.errors import install_handlers
from serving.gathering import GroupGatherer
from serving.metrics import ServerMetrics
from serving.openrlhf import SpecialTail
from serving.payloads import ErrorResponse, RewardRequest, score_request_model
from serving.record_log import RecordLog
from serving.routes import health, reward, verify
from serving.routes.judge_payload import judge_payload_router
from serving.routes.score import score_router
from serving.server_method import make_server_judge, make_server_method
from serving.settings import ServerSettings
from serving.state import ServerState
from verifiers import warm_up

__all__ = ["create_app", "make_server_judge", "make_server_method"]

logger = logging.getLogger("genrm.serving")
_SETTLE_S = 2.0  # at shutdown, most seconds the cut requests have to answer that they were cut


def create_app(
    settings: ServerSettings | None = None, judge: Judge | None = None, method: RewardMethod | None = None
) -> FastAPI:
    """The reward-server application.

    Args:
        settings: server settings (default: ``ServerSettings()``, the rubric method with the rule judge on loopback).
        judge: a judge to use instead of the one the settings name (tests, embedding).
        method: a configured reward method to use instead of the one the settings name.

    Raises ValueError when the method cannot judge with the judge (no model, and no fixed-rule reader).
    """
    settings = settings or ServerSettings()
    from_settings = judge is None and method is None  # a worker process can build the same from the settings
    method = method or make_server_method(settings)
    judge = judge or make_server_judge(settings, method)
    check_judge(method, judge)
    metrics = ServerMetrics()
    if judge.engine is not None:
        judge.engine.usage_callback = metrics.count_tokens
    state = ServerState(settings, method, judge, metrics, SpecialTail(settings.special_tokens),
                        settings.method_config().verify,
                        RecordLog(settings.record_log, settings.record_log_max_bytes or None, settings.record_log_keep)
                        if settings.record_log else None)  # fmt: skip
    if from_settings and judge.engine is None and settings.score_workers:
        state.score_workers = ScoreWorkers(settings, settings.score_workers)
    if settings.group_size:
        judge_group, mendable = partial(reward.judge_gathered, state), partial(reward.mendable_failure, state)
        state.gatherer = GroupGatherer(settings.group_size, settings.group_wait_s, judge_group, retry_failed=mendable,
                                       max_bytes=settings.max_gathered_bytes,
                                       max_retained_bytes=settings.max_retained_bytes)  # fmt: skip

    in_flight = InFlight()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(warm_up)
        logger.info("reward server ready: method %s, judge %s, exposure %s", method.name, judge.name,
                    settings.exposure)  # fmt: skip
        probe = asyncio.ensure_future(_say_if_judge_unreachable(judge))  # held: the loop keeps weak references
        try:
            yield
        finally:
            probe.cancel()
            # the server cancelled the requests still under way: each is answered 503 before anything they use closes
            await in_flight.settled(_SETTLE_S)
            if state.gatherer is not None:
                await state.gatherer.aclose(settings.shutdown_timeout_s)
            await judge.aclose()
            state.decoders.close()
            if state.score_workers is not None:
                state.score_workers.close()
            if state.log is not None:
                state.log.close()

    app = FastAPI(
        title="genrm reward server",
        version=__version__,
        description=f"Rewards of the {method.name} method from a judge model under minimal exposure, decided by "
        "deterministic verifiers.",
        lifespan=lifespan,
        responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
    )
    api_key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    app.add_middleware(Guard, max_bytes=settings.max_body_bytes, metrics=metrics, api_key=api_key,
                       body_timeout_s=settings.body_timeout_s, min_body_rate=settings.min_body_rate,
                       in_flight=in_flight)  # fmt: skip
    app.state.server = state
    install_handlers(app)
    for router in (score_router(method), verify.router, reward.router, health.router):
        app.include_router(router)
    publish_body_schemas(app, [score_request_model(method.instance_model), RewardRequest])
    if isinstance(method, AnswersJudgePayloads):
        app.include_router(judge_payload_router(method))
    return app


async def _say_if_judge_unreachable(judge: Judge) -> None:
    """Warn once at start when the judge cannot be reached: every request that needs it is a 503 until it can."""
    try:
        reachable, detail = await judge.health()
    except Exception as exc:  # noqa: BLE001 - a probe that fails says the same as one that answers no
        reachable, detail = False, f"{type(exc).__name__}: {exc}"
    if not reachable:
        logger.warning("the %s judge cannot be reached now (%s): requests that need it are answered 503 until it "
                       "can; /health says when it is back", judge.name, detail or "no detail")  # fmt: skip
