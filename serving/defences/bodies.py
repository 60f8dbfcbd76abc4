"""Request bodies read and validated off the event loop.

FastAPI parses and validates a body on the event loop, in the request's own task: a 32 MB body is about half a
second in which no other client is answered, and six clients sending them keep the loop busy. A route here declares
its body with :func:`json_body` instead, which reads the bytes on the loop (waiting only on the network) and parses and
validates them in a worker thread, with FastAPI's own errors (a 422 whose ``loc`` starts with ``body``). The OpenAPI
schema still shows the body: :func:`body_openapi` for the route and :func:`publish_body_schemas` for the app.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from serving.errors import RequestError

_SCHEMAS = "#/components/schemas/{model}"


def validated_body(model: type[BaseModel], raw: bytes) -> BaseModel:
    """``raw`` parsed as JSON and validated as ``model``; raises FastAPI's RequestValidationError (``loc`` starts with
    ``body``). Blocking."""
    try:
        value = json.loads(raw)
    except ValueError as exc:  # not JSON, or not UTF-8
        raise RequestValidationError([{"loc": ("body",), "msg": f"JSON decode error: {str(exc)[:200]}",
                                       "type": "json_invalid"}]) from None  # fmt: skip
    except RecursionError:
        raise _too_deep() from None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors(include_url=False)]
        ) from None
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> RequestValidationError:
    # json and pydantic both recurse per level: a small body nested thousands deep exhausts the stack
    message = "JSON nested too deep (more levels than Python's recursion limit): no field of a request nests that far"
    return RequestValidationError([{"loc": ("body",), "msg": message, "type": "json_invalid"}])


def request_tenant(request: Request) -> str:
    """The name of ``request`` in the server's fair queues (made on first use, kept for the request)."""
    tenant = getattr(request.state, "tenant", None)
    if tenant is None:
        tenant = request.state.tenant = uuid.uuid4().hex
    return tenant


async def body_bytes(request: Request) -> bytes:
    """The request's body, read whole (on the loop: it waits only on the network); 400 when the client left first."""
    try:
        return await request.body()
    except ClientDisconnect:  # the client left, or the guard refused the body (413) and answered already
        raise RequestError(400, ["body"], "the body did not arrive whole: the client left", "disconnected") from None


def json_body(model: type[BaseModel]) -> Any:
    """A FastAPI dependency giving the request's JSON body as ``model``, parsed and validated in a worker thread
    that takes one of the server's CPU slots as this request (declare the parameter as
    ``body: Annotated[Model, json_body(Model)]``)."""

    async def read(request: Request) -> BaseModel:
        raw = await body_bytes(request)
        return await request.app.state.server.cpu(request_tenant(request), validated_body, model, raw)

    return Depends(read)


def body_openapi(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` of a route whose body is ``model`` read by :func:`json_body`."""
    schema = {"$ref": _SCHEMAS.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def publish_body_schemas(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Add the JSON schemas of ``models`` (and the models they hold) to ``app``'s OpenAPI components, where
    :func:`body_openapi` points."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        components = document.setdefault("components", {}).setdefault("schemas", {})
        for model in models:
            schema = model.model_json_schema(ref_template=_SCHEMAS)
            for name, definition in schema.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components[model.__name__] = schema
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
