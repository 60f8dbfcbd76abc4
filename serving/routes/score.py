"""``POST /v1/score``: groups of responses in, one result per group out, for the server's reward method.

The request and response bodies are made from the method's own models (:func:`serving.payloads.score_request_model`),
so the OpenAPI schema shows the method's instance (the rubric's, for the rubric method) and its records. The module
does not use postponed annotations: FastAPI reads the body's type from the route's signature.
"""

from typing import Annotated

from fastapi import APIRouter, Request, Response

from genrm.methods.base import RewardMethod
from serving.answers import answer_limit, bounded_answer
from serving.bodies import body_openapi, json_body, request_tenant
from serving.errors import RequestError
from serving.payloads import score_request_model, score_response_model
from serving.state import State


def score_router(method: RewardMethod) -> APIRouter:
    """The route of ``/v1/score`` for ``method``."""
    request_model = score_request_model(method.instance_model)
    response_model = score_response_model(method.result_model)
    router = APIRouter()

    @router.post("/v1/score", response_model=response_model, openapi_extra=body_openapi(request_model))
    async def score(
        body: Annotated[request_model, json_body(request_model)],  # type: ignore[valid-type]
        state: State,
        request: Request,
    ) -> Response:
        """Score groups of responses with the server's reward method."""
        groups = body.groups  # type: ignore[attr-defined]
        if len(groups) > state.settings.max_groups:
            raise RequestError(422, ["body", "groups"], f"{len(groups)} groups; at most {state.settings.max_groups}",
                               "limit")  # fmt: skip
        tenant = request_tenant(request)
        results = await state.score(groups, ["body", "groups"], tenant=tenant)
        limit = answer_limit(len(await request.body()), state.settings.max_answer_ratio)  # the body read once, kept
        answer, answered = await state.cpu(tenant, bounded_answer, results, limit)
        await state.record(groups, answered)
        return Response(answer, media_type="application/json")

    return router
