"""``POST /v1/verify``: join a rubric-side call with a scoring-side call and run the verifier."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response

from serving.errors import RequestError
from serving.payloads import ErrorResponse, VerifyRequest, VerifyResponse, json_response
from serving.state import State
from verifiers import verify_call_result
from verifiers.calls import parse_call
from verifiers.registry import uses_workers
from verifiers.result import VerifierError

router = APIRouter()


@router.post("/v1/verify", response_model=VerifyResponse, responses={503: {"model": ErrorResponse}})
async def verify(body: VerifyRequest, state: State) -> Response:
    """Join a rubric-side call with a scoring-side call and run the verifier."""
    try:
        uses_pool = uses_workers(parse_call(body.reference, side="rubric").name)
    except VerifierError:
        uses_pool = False  # verify_call_result reports the bad reference below
    result = await state.in_thread(uses_pool, uuid.uuid4().hex, verify_call_result, body.reference, body.prediction,
                                   state.verify_config)  # fmt: skip
    state.metrics.observe_verification(result.status)
    if result.status in ("bad_call", "unparseable_target"):
        reference_side = result.status == "unparseable_target" or result.reason.startswith("reference")
        field = "reference" if reference_side else "prediction"
        raise RequestError(422, ["body", field], result.reason, result.status)
    if result.status == "busy":
        raise RequestError(503, ["server"], result.reason, "busy", {"Retry-After": "1"})
    payload = VerifyResponse(score=result.score, status=result.status, reason=result.reason, verifier=result.verifier)
    return json_response(payload, 500 if result.status == "error" else 200)
