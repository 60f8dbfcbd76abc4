"""How the server refuses a request: the error a route raises, and the handlers that turn errors into answers.

Every refusal is ``{"detail": [{"loc": [...], "msg": ..., "type": ...}]}``, FastAPI's own shape, with ``loc`` naming
the field at fault (``["body", "groups", 3, "rubric", "essential", 0, "reference"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from genrm.engine import BackendUnavailable
from serving.record_log import RecordLogFailed

_MAX_ERRORS = 20  # validation errors reported per request


class RequestError(Exception):
    """A request the server refuses: HTTP ``status`` with a FastAPI-style ``detail`` list naming the field."""

    def __init__(self, status: int, loc: list[Any], message: str, kind: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.detail = [{"loc": loc, "msg": message, "type": kind}]
        self.headers = headers or {}


def _validation_detail(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """FastAPI's validation errors without the offending input (it may be huge, or NaN, or a lone surrogate, none
    of which belong in a JSON answer); the location, message and type say what was wrong."""
    detail = []
    for error in list(errors)[:_MAX_ERRORS]:
        loc = [part if isinstance(part, int) else str(part)[:100] for part in error.get("loc", ())]
        detail.append({"loc": loc, "msg": str(error.get("msg", ""))[:500], "type": str(error.get("type", ""))})
    return detail


def install_handlers(app: FastAPI) -> None:
    """Answer validation errors (422, without the offending input), :class:`RequestError` (its status), an
    unreachable judge (503 with ``Retry-After``) and a record log that cannot be written (507 when its storage is
    full, else 503) in that shape."""

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

    @app.exception_handler(RecordLogFailed)
    async def _log_failed(_: Request, exc: RecordLogFailed) -> JSONResponse:
        detail = [{"loc": ["server", "record_log"], "msg": exc.strerror, "type": "record_log"}]
        return JSONResponse({"detail": detail}, status_code=507 if exc.full else 503, headers={"Retry-After": "5"})
