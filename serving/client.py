"""Python clients of the reward server, synchronous and asynchronous, with timeouts and retries.

    with RewardClient("http://127.0.0.1:8000") as client:
        results = client.score([instance])          # list of genrm.methods.rubric.scoring.InstanceResult
        results[0].rewards                          # [1.0, 0.0, None, ...]

``transport`` takes any httpx transport (``httpx.ASGITransport(app)`` serves an app in process).

Retried, with exponential backoff (and the server's ``Retry-After`` when it sends one): connection errors, timeouts,
429, 502, 503 and 504. Not retried: any other 4xx, which means the request itself is wrong; it raises
:class:`RewardServerError` with the server's ``detail`` (the field at fault).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from genrm.methods.base import GroupResult
from genrm.methods.rubric.scoring import InstanceResult
from serving.payloads import HealthResponse, VerifyResponse, score_response_model

RETRY_STATUSES = frozenset({429, 502, 503, 504})
_TRANSPORT_ONLY: frozenset[int] = frozenset()
Model = TypeVar("Model", bound=BaseModel)


class RewardServerError(RuntimeError):
    """The server refused or failed a request: ``status`` (None when it never answered) and its ``detail``."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


def _groups_payload(groups: Sequence[BaseModel | Mapping[str, Any]]) -> dict[str, Any]:
    return {"groups": [g.model_dump(mode="json") if isinstance(g, BaseModel) else dict(g) for g in groups]}


def _delay(attempt: int, response: httpx.Response | None, backoff_s: float, max_backoff_s: float) -> float:
    retry_after = response.headers.get("retry-after") if response is not None else None
    if retry_after is not None:
        try:
            return min(max_backoff_s, max(0.0, float(retry_after)))
        except ValueError:
            pass
    # Full jitter keeps many trainer processes from retrying in lockstep.
    return random.uniform(0, min(max_backoff_s, backoff_s * 2**attempt))


def _decode(response: httpx.Response, model: type[Model]) -> Model:
    if response.is_success or (model is HealthResponse and response.status_code == 503):
        return model.model_validate_json(response.content)
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text[:500]
    raise RewardServerError(f"HTTP {response.status_code}: {detail}", response.status_code, detail)


class _Base:
    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, retries: int, backoff_s: float,
                 max_backoff_s: float, result_model: type[GroupResult]) -> None:  # fmt: skip
        if retries < 0 or timeout_s <= 0:
            raise ValueError("retries must be >= 0 and timeout_s > 0")
        self.score_response = score_response_model(result_model)
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s, self.retries, self.backoff_s, self.max_backoff_s = timeout_s, retries, backoff_s, max_backoff_s

    def _check_attempts(self, attempt: int, error: Exception) -> None:
        if attempt >= self.retries:
            raise RewardServerError(
                f"no answer from {self.base_url} after {attempt + 1} attempts: {error!r}"
            ) from error


class RewardClient(_Base):
    """Blocking client of the reward server (one pooled HTTP connection set; use as a context manager)."""

    def __init__(self, base_url: str = "http://127.0.0.1:8000", api_key: str | None = None, timeout_s: float = 300.0,
                 retries: int = 4, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 transport: httpx.BaseTransport | None = None,
                 result_model: type[GroupResult] = InstanceResult) -> None:  # fmt: skip
        super().__init__(base_url, api_key, timeout_s, retries, backoff_s, max_backoff_s, result_model)
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=timeout_s, transport=transport)

    def _request(
        self, method: str, path: str, json: Any = None, statuses: frozenset[int] = RETRY_STATUSES
    ) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=json)
            except httpx.TransportError as exc:
                self._check_attempts(attempt, exc)
                response = None
            else:
                if response.status_code not in statuses or attempt >= self.retries:
                    return response
            time.sleep(_delay(attempt, response, self.backoff_s, self.max_backoff_s))
            attempt += 1

    def score(self, groups: Sequence[BaseModel | Mapping[str, Any]]) -> list[Any]:
        """Rewards and records of each group (an instance with its responses), in order: results of the client's
        ``result_model`` (the rubric method's by default)."""
        return _decode(self._request("POST", "/v1/score", _groups_payload(groups)), self.score_response).groups

    def verify(self, reference: str, prediction: str) -> VerifyResponse:
        """Run one verifier call pair on the server."""
        body = {"reference": reference, "prediction": prediction}
        return _decode(self._request("POST", "/v1/verify", body), VerifyResponse)

    def health(self) -> HealthResponse:
        """The server's health (``backend_reachable`` False when its judge is down); retries only while unreachable."""
        return _decode(self._request("GET", "/health", statuses=_TRANSPORT_ONLY), HealthResponse)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRewardClient(_Base):
    """Asynchronous client of the reward server (for event loops; use as an async context manager)."""

    def __init__(self, base_url: str = "http://127.0.0.1:8000", api_key: str | None = None, timeout_s: float = 300.0,
                 retries: int = 4, backoff_s: float = 0.5, max_backoff_s: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None,
                 result_model: type[GroupResult] = InstanceResult) -> None:  # fmt: skip
        super().__init__(base_url, api_key, timeout_s, retries, backoff_s, max_backoff_s, result_model)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers, timeout=timeout_s,
                                       transport=transport)  # fmt: skip

    async def _request(
        self, method: str, path: str, json: Any = None, statuses: frozenset[int] = RETRY_STATUSES
    ) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(method, path, json=json)
            except httpx.TransportError as exc:
                self._check_attempts(attempt, exc)
                response = None
            else:
                if response.status_code not in statuses or attempt >= self.retries:
                    return response
            await asyncio.sleep(_delay(attempt, response, self.backoff_s, self.max_backoff_s))
            attempt += 1

    async def score(self, groups: Sequence[BaseModel | Mapping[str, Any]]) -> list[Any]:
        """Rewards and records of each group (an instance with its responses), in order (see
        :meth:`RewardClient.score`)."""
        return _decode(await self._request("POST", "/v1/score", _groups_payload(groups)), self.score_response).groups

    async def verify(self, reference: str, prediction: str) -> VerifyResponse:
        """Run one verifier call pair on the server."""
        body = {"reference": reference, "prediction": prediction}
        return _decode(await self._request("POST", "/v1/verify", body), VerifyResponse)

    async def health(self) -> HealthResponse:
        """The server's health; retries only while unreachable."""
        return _decode(await self._request("GET", "/health", statuses=_TRANSPORT_ONLY), HealthResponse)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
