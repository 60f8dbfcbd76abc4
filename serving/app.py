"""The reward server: FastAPI in front of a judge backend, the verifier library and the reward core.

    from serving.app import create_app
    app = create_app(ServerSettings(backend="rule"))      # then: uvicorn.run(app, host=..., port=...)

Endpoints (OpenAPI docs at ``/docs``):

- ``POST /v1/score``: ``{"groups": [instance, ...]}`` → ``{"groups": [{"id", "rewards", "records"}, ...]}``; a group
  is the G responses to one prompt, so the remapping sees the whole group.
- ``POST /v1/verify``: ``{"reference", "prediction"}`` → ``{"score", "status", "reason", "verifier"}``.
- ``POST /get_reward``: OpenRLHF's remote reward protocol (``{"query", "prompts", "labels"}`` →
  ``{"rewards", "scores", "extra_logs"}``); each label is the JSON instance (with its rubric) of its query. Responses
  are cut from queries by ``serving.openrlhf``; with ``group_size`` set, a group is gathered across requests
  (``serving.gathering``).
- ``GET /health``: 200 when the backend can judge, 503 otherwise. ``GET /metrics``: Prometheus text.

Errors: a body that does not validate, a limit exceeded or a rubric that fails its checks is a 4xx whose ``detail``
names the field (``["body", "groups", 3, "rubric", "essential", 0, "reference"]``); nothing of such a request is
judged. A judge backend that is down gives 503 with ``Retry-After``. A judge that answers but fails on a response
gives that response a null reward and a record that says why; nothing is ever turned into a reward of 0 or 1.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from genrm import __version__
from genrm.engine import BackendUnavailable
from genrm.judge import Judge, make_judge
from genrm.rubric import CriterionPlan, RubricError
from genrm.schemas import Instance
from genrm.scoring import InstanceResult, ScoringConfig, group_request, plan_instance, score_group
from serving.api_models import (
    ErrorResponse,
    HealthResponse,
    RewardRequest,
    RewardResponse,
    ScoreRequest,
    ScoreResponse,
    VerifyRequest,
    VerifyResponse,
    json_text,
)
from serving.gathering import Gathered, GatherFull, GroupGatherer
from serving.metrics import ServerMetrics
from serving.openrlhf import QueryError, SpecialTail, openrlhf_groups
from serving.record_log import RecordLog
from serving.settings import ServerSettings
from verifiers import VerifierError, VerifyConfig, parse_call, tenant, uses_workers, verify_call_result, warm_up

logger = logging.getLogger("genrm.serving")
access_logger = logging.getLogger("genrm.serving.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class RequestError(Exception):
    """A request the server refuses: HTTP ``status`` with a FastAPI-style ``detail`` list naming the field."""

    def __init__(self, status: int, loc: list[Any], message: str, kind: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.detail = [{"loc": loc, "msg": message, "type": kind}]
        self.headers = headers or {}


class _Guard:
    """Pure ASGI middleware: the bearer token (401), the body size limit (413) and per-endpoint request metrics.

    The token is checked here, before anything of the body is read, on every path but ``/health`` (the OpenAPI
    schema and the docs pages included), so a client without it learns nothing about the API or its own body.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, metrics: ServerMetrics, api_key: str | None) -> None:
        self.app, self.max_bytes, self.metrics = app, max_bytes, metrics
        self.expected = None if api_key is None else f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status, received = time.perf_counter(), [500], [0]
        endpoint = scope.get("path", "")
        headers = dict(scope.get("headers") or [])
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

        refused = [False]

        async def limited_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request" and not refused[0]:
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_bytes:
                    # Answer 413 now and tell the app the client left; whatever it sends after that is dropped
                    # (raising here would be turned into a 400 by the body parser).
                    refused[0] = True
                    await self._too_large(scope, send, status)
                    return {"type": "http.disconnect"}
            return message

        error_body = bytearray()

        async def tracking_send(message: Message) -> None:
            if refused[0]:
                return
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body" and status[0] >= 400:
                error_body.extend(message.get("body", b"")[: _LOGGED_DETAIL - len(error_body)])
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        finally:
            self._count(endpoint, status[0], start)
            if status[0] >= 400 and not refused[0]:
                _log_refusal(scope, status[0], bytes(error_body))

    async def _too_large(self, scope: Scope, send: Any, status: list[int]) -> None:
        await _send_error(send, status, 413, "body", f"body larger than {self.max_bytes} bytes", "too_large")
        _log_refusal(scope, 413, f"body larger than {self.max_bytes} bytes".encode())

    def _count(self, endpoint: str, status: int, start: float) -> None:
        known = endpoint if endpoint in _ENDPOINTS else "other"
        self.metrics.requests.labels(known, str(status)).inc()
        self.metrics.latency.labels(known).observe(time.perf_counter() - start)


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


async def _send_error(
    send: Any, status: list[int], code: int, where: str, message: str, kind: str,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:  # fmt: skip
    body = json.dumps({"detail": [{"loc": [where], "msg": message, "type": kind}]}).encode()
    status[0] = code
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": body})


_THREADS = 40  # threads for in-process checks (anyio's default for all threads together)
# Threads for checks that may wait for expression workers. A waiting thread only sleeps, and the pool's fair queue,
# not this limiter, must decide who goes next: a limiter's FIFO would put a correct check behind every hostile one.
_POOLED_THREADS = 256
_ENDPOINTS = frozenset({"/v1/score", "/v1/verify", "/get_reward", "/health", "/metrics"})
_OPEN_PATHS = frozenset({"/health"})
_MAX_ERRORS = 20  # validation errors reported per request
_LOGGED_DETAIL = 1000  # bytes of a refusal's answer written to the log


def _json(model: Any, status: int = 200) -> Response:
    # Serialized once by pydantic; FastAPI would validate the model a second time.
    return Response(json_text(model), status_code=status, media_type="application/json")


def _validation_detail(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """FastAPI's validation errors without the offending input (it may be huge, or NaN, or a lone surrogate, none
    of which belong in a JSON answer); the location, message and type say what was wrong."""
    detail = []
    for error in list(errors)[:_MAX_ERRORS]:
        loc = [part if isinstance(part, int) else str(part)[:100] for part in error.get("loc", ())]
        detail.append({"loc": loc, "msg": str(error.get("msg", ""))[:500], "type": str(error.get("type", ""))})
    return detail


def _as_tenant(name: str, budget_s: float, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` with its expression checks queued as tenant ``name`` within ``budget_s`` of waiting."""
    with tenant(name, budget_s):
        return fn(*args)


def make_backend(settings: ServerSettings) -> Judge:
    """The judge ``settings`` name (:func:`genrm.judge.make_judge`); raises ValueError when it cannot serve the
    configured exposure (a text-only checkpoint under ``vlm``)."""
    judge = make_judge(settings.judge_spec(), settings.engine_options(), parse_retries=1)
    if settings.exposure == "vlm" and not judge.sees_images:
        raise ValueError(
            f"{judge.model} is a text-only judge (no image processor), but the vlm exposure shows it images: "
            "serve a vision-language checkpoint, or another exposure"
        )
    return judge


def create_app(settings: ServerSettings | None = None, backend: Judge | None = None) -> FastAPI:
    """The reward-server application.

    Args:
        settings: server settings (default: ``ServerSettings()``, the rule backend on loopback).
        backend: a judge to use instead of the one the settings name (tests, embedding).
    """
    settings = settings or ServerSettings()
    judge = backend or make_backend(settings)
    verify_config = VerifyConfig(deadline_s=settings.verifier_deadline_s, worker_wait_s=settings.verifier_budget_s)
    config = ScoringConfig(tau=settings.tau, exposure=settings.exposure, check_format=settings.check_format,
                           verify=verify_config)  # fmt: skip
    metrics = ServerMetrics()
    special_end = SpecialTail(settings.special_tokens)
    if judge.engine is not None:
        judge.engine.usage_callback = metrics.count_tokens
    state: dict[str, Any] = {}

    # Made here rather than at start-up, so that the app also works where no lifespan runs (some test clients).
    state["slots"] = asyncio.Semaphore(settings.max_concurrent_groups)
    state["log"] = RecordLog(settings.record_log) if settings.record_log else None

    def limiter(uses_pool: bool) -> anyio.CapacityLimiter:
        # Checks that may wait for expression workers get threads of their own, so that a crowd of them waiting
        # never leaves the cheap in-process checks without a thread. Made on first use: a limiter needs the loop.
        key = "pooled" if uses_pool else "cheap"
        if key not in state:
            state[key] = anyio.CapacityLimiter(_POOLED_THREADS if uses_pool else _THREADS)
        return state[key]

    async def in_thread(uses_pool: bool, request_id: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(_as_tenant, request_id, settings.verifier_budget_s, fn, *args,
                                              limiter=limiter(uses_pool))  # fmt: skip

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(warm_up)
        logger.info("reward server ready: backend %s, exposure %s", judge.name, settings.exposure)
        try:
            yield
        finally:
            if state.get("gatherer") is not None:
                await state["gatherer"].aclose()
            await judge.aclose()
            if state["log"] is not None:
                state["log"].close()

    app = FastAPI(
        title="genrm reward server",
        version=__version__,
        description="Rubric rewards from a judge model under minimal exposure, decided by deterministic verifiers.",
        lifespan=lifespan,
        responses={413: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
    )
    api_key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    app.add_middleware(_Guard, max_bytes=settings.max_body_bytes, metrics=metrics, api_key=api_key)
    app.state.settings, app.state.metrics, app.state.backend = settings, metrics, judge

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_detail(exc.errors())}, status_code=422)

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(BackendUnavailable)
    async def _unavailable(_: Request, exc: BackendUnavailable) -> JSONResponse:
        headers = {"Retry-After": str(max(1, round(exc.retry_after_s)))}
        detail = [{"loc": ["backend"], "msg": f"the judge backend is unavailable: {exc}", "type": "unavailable"}]
        return JSONResponse({"detail": detail}, status_code=503, headers=headers)

    def _check_limits(groups: list[Instance], where: list[Any]) -> None:
        for i, group in enumerate(groups):
            if len(group.responses) > settings.max_responses:
                raise RequestError(
                    422,
                    [*where, i, "responses"],
                    f"{len(group.responses)} responses; at most {settings.max_responses}",
                    "limit",
                )
            for j, response in enumerate(group.responses):
                if len(response) > settings.max_response_chars:
                    raise RequestError(422, [*where, i, "responses", j],
                                       f"response of {len(response)} characters; at most "
                                       f"{settings.max_response_chars}", "limit")  # fmt: skip

    def _plan(groups: list[Instance], where: list[Any]) -> list[list[CriterionPlan]]:
        plans = []
        for i, group in enumerate(groups):
            try:
                plans.append(plan_instance(group, config))
            except RubricError as exc:
                path, message = exc.issues[0]
                loc = [*where, i, *(["rubric"] if path != "task_type" else []), *_split_path(path)]
                raise RequestError(422, loc, str(exc), "rubric") from None
        return plans

    async def _score_one(instance: Instance, plans: list[CriterionPlan], request_id: str) -> InstanceResult:
        if not instance.responses:
            return InstanceResult(id=instance.id, rewards=[], records=[])
        async with state["slots"]:
            judgements = await judge.judge_group(group_request(instance, plans, config))
        uses_pool = any(uses_workers(plan.verifier) for plan in plans)
        return await in_thread(uses_pool, request_id, score_group, instance, plans, judgements, config)

    async def _score(groups: list[Instance], where: list[Any]) -> list[InstanceResult]:
        _check_limits(groups, where)
        plans = _plan(groups, where)
        request_id = uuid.uuid4().hex
        scored = (_score_one(g, p, request_id) for g, p in zip(groups, plans, strict=True))
        results = list(await asyncio.gather(*scored))
        metrics.observe_results(results)
        if state["log"] is not None:
            await anyio.to_thread.run_sync(state["log"].write, request_id, groups, results)
        return results

    @app.post("/v1/score", response_model=ScoreResponse)
    async def score(body: ScoreRequest) -> Response:
        """Score groups of responses against their rubrics."""
        if len(body.groups) > settings.max_groups:
            raise RequestError(422, ["body", "groups"], f"{len(body.groups)} groups; at most {settings.max_groups}",
                               "limit")  # fmt: skip
        return _json(ScoreResponse(groups=await _score(body.groups, ["body", "groups"])))

    @app.post("/v1/verify", response_model=VerifyResponse, responses={503: {"model": ErrorResponse}})
    async def verify(body: VerifyRequest) -> Response:
        """Join a rubric-side call with a scoring-side call and run the verifier."""
        try:
            uses_pool = uses_workers(parse_call(body.reference, side="rubric").name)
        except VerifierError:
            uses_pool = False  # verify_call_result reports the bad reference below
        result = await in_thread(uses_pool, uuid.uuid4().hex, verify_call_result, body.reference, body.prediction,
                                 verify_config)  # fmt: skip
        metrics.observe_verification(result.status)
        if result.status in ("bad_call", "unparseable_target"):
            reference_side = result.status == "unparseable_target" or result.reason.startswith("reference")
            field = "reference" if reference_side else "prediction"
            raise RequestError(422, ["body", field], result.reason, result.status)
        if result.status == "busy":
            raise RequestError(503, ["server"], result.reason, "busy", {"Retry-After": "1"})
        payload = VerifyResponse(score=result.score, status=result.status, reason=result.reason,
                                 verifier=result.verifier)  # fmt: skip
        return _json(payload, 500 if result.status == "error" else 200)

    async def _judge_gathered(instance: Instance) -> InstanceResult:
        (result,) = await _score([instance], ["body", "labels"])
        if len(instance.responses) < (settings.group_size or 0):
            logger.warning("group %r judged with %d of %d responses: the rest did not come within %g s", instance.id,
                           len(instance.responses), settings.group_size, settings.group_wait_s)  # fmt: skip
        return result

    gatherer = (
        GroupGatherer(settings.group_size, settings.group_wait_s, _judge_gathered) if settings.group_size else None
    )
    state["gatherer"] = gatherer

    async def _gathered(groups: list[Instance]) -> list[list[Gathered]]:
        _check_limits(groups, ["body", "labels"])
        _plan(groups, ["body", "labels"])  # a bad rubric is this request's error, found before anything waits
        empty = [group.model_copy(update={"responses": []}) for group in groups]
        try:
            shares = await asyncio.gather(*(gatherer.submit(bare, text) for group, bare in zip(groups, empty,
                                            strict=True) for text in group.responses))  # fmt: skip
        except GatherFull as exc:
            raise RequestError(503, ["server"], str(exc), "busy", {"Retry-After": "1"}) from None
        out, at = [], 0
        for group in groups:
            out.append(list(shares[at : at + len(group.responses)]))
            at += len(group.responses)
        return out

    async def _together(groups: list[Instance]) -> list[list[Gathered]]:
        results = await _score(groups, ["body", "labels"])
        return [[Gathered(result, index, len(group.responses), False) for index in range(len(group.responses))]
                for group, result in zip(groups, results, strict=True)]  # fmt: skip

    @app.post("/get_reward", response_model=RewardResponse, responses={503: {"model": ErrorResponse}})
    async def get_reward(body: RewardRequest) -> Response:
        """OpenRLHF's remote reward protocol; queries whose labels share an id are one group (with ``group_size``
        set, gathered across requests)."""
        try:  # linear, but in Python over up to max_body_bytes of text: off the event loop
            groups, positions, reads = await anyio.to_thread.run_sync(
                openrlhf_groups, body.query, body.prompts, body.labels, special_end, limiter=limiter(False)
            )
        except QueryError as exc:
            raise RequestError(422, exc.loc, str(exc), exc.kind) from None
        if len(groups) > settings.max_groups:
            raise RequestError(422, ["body", "labels"], f"{len(groups)} groups; at most {settings.max_groups}",
                               "limit")  # fmt: skip
        shares = await (_gathered(groups) if gatherer is not None else _together(groups))
        by_query: list[Gathered] = [None] * len(body.query)  # type: ignore[list-item]
        for group_positions, group_shares in zip(positions, shares, strict=True):
            for position, share in zip(group_positions, group_shares, strict=True):
                by_query[position] = share
        records = [share.result.records[share.index] for share in by_query]
        missing = [i for i, record in enumerate(records) if record.reward is None]
        if missing:
            failed = [i for i in missing if records[i].judge_failure]
            if failed:
                raise RequestError(503, ["body", "query", failed[0]], "the judge failed on this query; retry",
                                   "judge_failure", {"Retry-After": "1"})  # fmt: skip
            for i in missing:
                for criterion in records[i].criteria:
                    if criterion.status in ("busy", "error"):  # the server's failure, not the query's
                        raise RequestError(503, ["body", "query", i], f"not judged: {criterion.reason}; retry",
                                           criterion.status, {"Retry-After": "1"})  # fmt: skip
                    if criterion.status == "unparseable_target":
                        raise RequestError(422, ["body", "labels", i, "rubric", *_split_path(criterion.path)],
                                           f"the rubric's target cannot be checked: {criterion.reason}",
                                           "rubric")  # fmt: skip
            raise RequestError(422, ["body", "labels", missing[0]],
                               f"{len(missing)} rewards depend on criteria the {judge.name} backend does not score "
                               "(fuzzy criteria need a model backend)", "unscored")  # fmt: skip
        logs = {
            "content_mask": [float(r.content_mask or 0) for r in records],
            "format_mask": [float(r.format_mask) for r in records],
            "length_ok": [float(r.length_ok) for r in records],
            "group_size": [float(share.size) for share in by_query],
            "group_partial": [float(share.partial) for share in by_query],
            "prompt_fallback": [float(read.placed != "prefix") for read in reads],
            "special_tokens_cut": [float(bool(read.stripped)) for read in reads],
        }
        final = [float(r.reward) for r in records]  # type: ignore[arg-type]
        return _json(RewardResponse(rewards=final, scores=final, extra_logs=logs))

    @app.get("/health", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
    async def health() -> Response:
        """Whether the server and its judge backend can take requests (no token needed)."""
        reachable, detail = await judge.health()
        payload = HealthResponse(status="ok" if reachable else "unavailable", backend=judge.name,
                                 backend_reachable=reachable, detail=detail)  # fmt: skip
        return _json(payload, 200 if reachable else 503)

    @app.get("/metrics", response_class=Response)
    async def prometheus() -> Response:
        """Prometheus metrics of this server."""
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return app


def _split_path(path: str) -> list[Any]:
    """``essential[1].reference`` -> ``["essential", 1, "reference"]``."""
    parts: list[Any] = []
    for piece in path.replace("]", "").split("."):
        name, _, index = piece.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index))
    return parts
