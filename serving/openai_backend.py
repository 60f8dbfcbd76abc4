"""Judge backends that speak the OpenAI chat-completions protocol: any compatible endpoint, and SGLang.

The judging itself is :class:`genrm.remote_judge.RemoteJudge` over :class:`genrm.chat_endpoint.ChatEndpoint`
(scoring prompt, explicit sampling, ``response_format`` with the rubric's schema, retries with backoff across replicas,
bounded calls in flight). What the server adds here is its construction from flat settings and a health probe:
``/models`` for an OpenAI-compatible endpoint, SGLang's own ``/health`` for SGLang.

Faults: when no replica can be reached at all the backend raises ``BackendUnavailable`` (the server answers 503 and
Retry-After); when a single response's call still fails, or its output cannot be read after ``parse_retries`` new
samples, that response's judgement is a failure (``backend_error``, ``not_json``, ...) and its reward is null.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from genrm.chat_endpoint import ChatEndpoint
from genrm.judge import SamplingSettings
from genrm.remote_judge import RemoteJudge


class OpenAIBackend(RemoteJudge):
    """A judge behind one or more OpenAI-compatible endpoints (``base_urls`` end in ``/v1``)."""

    name = "openai"

    def __init__(
        self,
        base_urls: Sequence[str],
        model: str,
        api_key: str | None = None,
        sampling: SamplingSettings | None = None,
        constrained: bool = True,
        timeout_s: float = 120.0,
        retries: int = 2,
        parse_retries: int = 1,
        max_in_flight: int = 64,
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        budget_s: float | None = None,
    ) -> None:
        endpoint = ChatEndpoint(base_urls, model, api_key, timeout_s, retries, max_in_flight, backoff_s, transport,
                                budget_s)  # fmt: skip
        super().__init__(endpoint, sampling, constrained, parse_retries)

    @property
    def base_urls(self) -> list[str]:
        """The replicas' base URLs."""
        return self.endpoint.base_urls

    def _health_url(self, base_url: str) -> str:
        return f"{base_url}/models"

    async def health(self) -> tuple[bool, str]:
        """Reachable when at least one endpoint answers its health probe (``/models`` here) and the recent chat
        completions did not all fail (:meth:`genrm.chat_endpoint.ChatEndpoint.probe`)."""
        return await self.endpoint.probe([self._health_url(url) for url in self.base_urls])


class SGLangBackend(OpenAIBackend):
    """An SGLang server (or router) through its OpenAI-compatible API; health from SGLang's own ``/health``."""

    name = "sglang"

    def _health_url(self, base_url: str) -> str:
        root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
        return f"{root}/health"
