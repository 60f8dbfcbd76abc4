"""``POST /judge`` and ``GET /``: the reward-server protocol of ClaimDiff-RL (one response per payload), mounted for a
reward method that answers it (:class:`genrm.methods.base.AnswersJudgePayloads`, the claimdiff method), so that the
source's verl remote reward manager, which checks ``GET /`` for its greeting and posts payloads to ``/judge``, runs
against this server unchanged.

The payload and the reply are the method's (:mod:`genrm.methods.claimdiff.judge_payload`). A payload the method
cannot score is a 422 naming the field, an image the server will not read (``serving.images``) a 422 or 413 naming
``image_path``; a judge that is down is a 503; a judgement that failed answers null rewards
with the reason, or the server's ``judge_payload_failure_reward`` when one is set. The source's manager sends no
bearer token: serve this protocol on a server without ``api_key`` (on loopback or a private network).

The module does not use postponed annotations: FastAPI reads the body's type from the route's signature.
"""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from genrm.methods.base import AnswersJudgePayloads, MethodInputError
from serving.defences.bodies import request_tenant
from serving.errors import RequestError
from serving.state import State

#: What ``GET /`` answers: the greeting the source's reward manager checks before it uses a server.
GREETING = {"message": "Reward Judge Server"}


def judge_payload_router(method: AnswersJudgePayloads) -> APIRouter:
    """The routes of the protocol for ``method``."""
    payload_model = method.payload_model
    router = APIRouter()

    @router.get("/")
    async def greeting() -> dict:
        """The greeting the source's reward manager checks."""
        return GREETING

    @router.post("/judge")
    async def judge(body: payload_model, state: State, request: Request) -> JSONResponse:  # type: ignore[valid-type]
        """One response's rewards, in the source's reply shape."""
        try:
            instance = method.instance_from_payload(body)
        except MethodInputError as exc:
            raise RequestError(422, ["body", *exc.loc], str(exc), exc.kind) from None
        tenant = request_tenant(request)
        instance = await state.resolve_image(instance, ["body", "image_path"], tenant)
        (result,) = await state.score([instance], ["body"], images_read=True, tenant=tenant)
        failure_reward = state.settings.judge_payload_failure_reward
        reply = method.payload_reply(body, result, failure_reward)
        await state.record([instance], [result])
        return JSONResponse(reply)

    return router
