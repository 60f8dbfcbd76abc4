"""Request and response bodies of the reward server (pydantic; they are also its OpenAPI schema), and how answers
are written. The bodies of ``/v1/score`` are the reward method's own (``serving.routes.score.score_bodies``)."""

from __future__ import annotations

import functools
import json
from typing import Any

from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticSerializationError

from genrm.methods.base import GroupResult


@functools.cache
def score_request_model(instance_model: type[BaseModel]) -> type[BaseModel]:
    """The body of ``POST /v1/score`` for a method's instance model: ``{"groups": [instance, ...]}``."""
    return create_model(
        "ScoreRequest",
        __config__=ConfigDict(extra="forbid"),
        __doc__="Groups to score: each is an instance with the G responses to one prompt.",
        groups=(
            list[instance_model],
            Field(
                min_length=1,
                description="one entry per prompt; remapping sees the "  # type: ignore[valid-type]
                "whole group",
            ),
        ),  # fmt: skip
    )


@functools.cache
def score_response_model(result_model: type[GroupResult]) -> type[BaseModel]:
    """The answer of ``POST /v1/score`` for a method's result model: ``{"groups": [result, ...]}``, in request
    order."""
    return create_model(
        "ScoreResponse",
        __doc__="One result per group, in request order.",
        groups=(list[result_model], ...),  # type: ignore[valid-type]
        records_omitted=(
            str | None,
            Field(None, description="why every group's records were left out (the answer would have been too "
                  "large; see serving.defences.answers); null when they are all here"),
        ),
    )  # fmt: skip


class VerifyRequest(BaseModel):
    """A rubric-side call and a scoring-side call of the same verifier."""

    model_config = ConfigDict(extra="forbid")

    reference: str = Field(min_length=1, max_length=200_000, examples=["bbox_verify(target=[[531, 118, 892, 435]])"])
    prediction: str = Field(min_length=1, max_length=200_000, examples=["bbox_verify(predict=[[529, 119, 890, 433]])"])


class VerifyResponse(BaseModel):
    """The verifier's verdict: a score in [0, 1], its status and the reason."""

    score: float
    status: str
    reason: str
    verifier: str | None


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward model request.

    ``query`` holds prompt + response as the trainer formatted them, ``prompts`` the formatted prompts (the response
    is what follows the prompt in the query), and ``labels`` one JSON instance per query (id, prompt, rubric, ...;
    its ``responses`` are ignored). Queries whose labels share an ``id`` form one group for remapping (gathered
    across requests when the server has a ``group_size``). See ``serving.openrlhf`` for how a response is cut from its
    query.
    """

    model_config = ConfigDict(extra="allow")

    query: list[str]  # may be empty: OpenRLHF 0.11 posts an empty slice to every reward server but the first
    prompts: list[str]
    labels: list[str]


class RewardResponse(BaseModel):
    """OpenRLHF's remote reward model answer; ``extra_logs`` values are per query and averaged by the trainer."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class HealthResponse(BaseModel):
    """Whether the server and its judge backend can take requests."""

    status: str
    backend: str
    backend_reachable: bool
    detail: str = ""


class ErrorResponse(BaseModel):
    """A request the server refused or could not serve; ``detail`` names the field or the cause."""

    detail: Any


def json_text(model: BaseModel) -> str:
    """``model`` as JSON text that always encodes to UTF-8.

    Text from outside can hold lone surrogates (JSON's ``"\\ud800"`` escape decodes to one), which UTF-8 cannot carry:
    pydantic's fast serializer refuses them. Such a model is written with every non-ASCII character escaped instead,
    so the client reads back exactly the text it sent.
    """
    try:
        return model.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(model.model_dump(mode="json"), ensure_ascii=True, allow_nan=False)


def json_response(model: BaseModel, status: int = 200) -> Response:
    """An answer holding ``model``, serialized once by pydantic (:func:`json_text`; FastAPI would validate the model
    a second time)."""
    return Response(json_text(model), status_code=status, media_type="application/json")
