"""``GET /health`` (no token needed) and ``GET /metrics`` (Prometheus text)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from serving.payloads import HealthResponse, json_response
from serving.state import State

router = APIRouter()


@router.get("/health", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
async def health(state: State) -> Response:
    """Whether the server and its judge backend can take requests (no token needed)."""
    reachable, detail = await state.judge.health()
    payload = HealthResponse(status="ok" if reachable else "unavailable", backend=state.judge.name,
                             backend_reachable=reachable, detail=detail)  # fmt: skip
    return json_response(payload, 200 if reachable else 503)


@router.get("/metrics", response_class=Response)
async def prometheus(state: State) -> Response:
    """Prometheus metrics of this server."""
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
