"""``POST /v1/score``: groups of responses in, one result per group out, for the server's reward method.

The request and response bodies are made from the method's own models (:func:`serving.payloads.score_request_model`),
so the OpenAPI schema shows the method's instance (the rubric's, for the rubric method) and its records. A request
that is more than a few ms of work is scored in a worker process when the server has them
(:mod:`serving.defences.score_workers`). The module
does not use postponed annotations: FastAPI reads the body's type from the route's signature.
"""

from fastapi import APIRouter, Request, Response

from genrm.methods.base import RewardMethod
from serving.defences.answers import answer_limit, bounded_answer
from serving.defences.bodies import body_bytes, body_openapi, request_tenant, validated_body
from serving.defences.disconnect import unless_client_leaves
from serving.defences.guard import note_groups
from serving.defences.score_workers import scored_inline
from serving.group_checks import WHERE, check_group_count
from serving.payloads import score_request_model, score_response_model
from serving.state import State


def score_router(method: RewardMethod) -> APIRouter:
    """The route of ``/v1/score`` for ``method``."""
    request_model = score_request_model(method.instance_model)
    response_model = score_response_model(method.result_model)
    router = APIRouter()

    @router.post("/v1/score", response_model=response_model, openapi_extra=body_openapi(request_model))
    async def score(state: State, request: Request) -> Response:
        """Score groups of responses with the server's reward method."""
        tenant = request_tenant(request)
        raw = await body_bytes(request)
        return await unless_client_leaves(request, _answer(state, tenant, raw))

    async def _answer(state: State, tenant: str, raw: bytes) -> Response:
        workers = state.score_workers
        if workers is None or scored_inline(len(raw), None):
            body = await state.cpu(tenant, validated_body, request_model, raw)
            groups = body.groups  # type: ignore[attr-defined]
            if workers is None or scored_inline(len(raw), sum(len(group.responses) for group in groups)):
                check_group_count(state.settings, len(groups), WHERE)
                note_groups(len(groups))
                results = await state.score(groups, WHERE, tenant=tenant)
                settings = state.settings
                limit = answer_limit(len(raw), settings.max_answer_ratio, settings.max_answer_bytes)
                answer, answered = await state.cpu(tenant, bounded_answer, results, limit)
                await state.record(groups, answered)
                return Response(answer, media_type="application/json")
        return Response(await state.score_in_worker(tenant, raw), media_type="application/json")

    return router
