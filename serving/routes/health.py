"""``GET /health`` (no token needed) and ``GET /metrics`` (Prometheus text)."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from serving.payloads import HealthResponse, json_response
from serving.state import State

router = APIRouter()


@router.get("/health", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
async def health(state: State, request: Request) -> Response:
    """Whether the server and its judge backend can take requests (no token needed). On a server with an API key, the
    ``detail`` (the judge's own words, which may name its internal address) goes only to a request that presents the
    key: to anyone else, up or down is all it says."""
    reachable, detail = await state.judge.health()
    key = state.settings.api_key
    if key is not None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {key.get_secret_value()}".encode()):
            detail = ""
    payload = HealthResponse(status="ok" if reachable else "unavailable", backend=state.judge.name,
                             backend_reachable=reachable, detail=detail)  # fmt: skip
    return json_response(payload, 200 if reachable else 503)


@router.get("/metrics", response_class=Response)
async def prometheus(state: State) -> Response:
    """Prometheus metrics of this server."""
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
