"""Judge backends that speak the OpenAI chat-completions protocol: any compatible endpoint, and SGLang.

Each response of a group becomes one ``POST {base_url}/chat/completions`` with the scoring prompt
(``genrm.prompts``), explicit sampling parameters and, by default, ``response_format`` of type ``json_schema`` with
the rubric's schema (``genrm.output_schema``), which SGLang, vLLM and others enforce by constrained decoding. The G
requests of a group go out concurrently and share everything before the response, so a server with a prefix cache
(SGLang's radix cache) computes the shared part once.

Why the OpenAI-compatible route rather than SGLang's native ``/generate``: it applies the model's own chat template
(including image parts for the ``vlm`` exposure) on the server, accepts the JSON schema as ``response_format``, returns
token usage, and is the same request for every compatible server, so one code path serves SGLang, vLLM and hosted
teachers. ``/generate`` would save little: the prompt still has to be templated, on our side.

Faults: transport errors, time-outs, 429 and 5xx are retried with backoff across the replicas (round robin). When
no replica can be reached at all the backend raises ``BackendUnavailable`` (the server answers 503 and Retry-After);
when a single response's call still fails, or its output cannot be read after ``parse_retries`` new samples, that
response's judgement is a failure (``backend_error``, ``not_json``, ...) and its reward is null, never 0 or 1.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from genrm.judge import GroupRequest, SamplingSettings
from genrm.judge_output import ParsedJudgement, parse_judge_output
from genrm.output_schema import response_format
from genrm.prompts import ScoringPrompt, build_group_prompts
from serving.backends import BackendUnavailable

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_UNREADABLE = ("not_json", "schema")


class _CallFailed(Exception):
    """One judge call failed after its retries, while the backend as a whole is reachable."""


class OpenAIBackend:
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
    ) -> None:
        if not base_urls:
            raise ValueError("at least one judge URL is needed")
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.model, self.sampling, self.constrained = model, sampling or SamplingSettings(), constrained
        self.retries, self.parse_retries, self.backoff_s = retries, parse_retries, backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout_s, limits=limits, transport=transport)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._next_url = itertools.cycle(range(len(self.base_urls)))
        self.usage_callback: Callable[[int, int], None] | None = None

    def _payload(self, prompt: ScoringPrompt, schema: dict[str, Any] | None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": prompt.messages(),
            # max_tokens is deprecated for chat completions (OpenAI, SGLang); vLLM and SGLang take this name.
            "max_completion_tokens": self.sampling.max_tokens,
            "temperature": self.sampling.temperature,
            "top_p": self.sampling.top_p,
        }
        if self.sampling.seed is not None:
            payload["seed"] = self.sampling.seed
        if schema is not None:
            payload["response_format"] = schema
        return payload

    async def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        reached, last = False, "no attempt"
        for attempt in range(self.retries + 1):
            url = self.base_urls[next(self._next_url)]
            try:
                async with self._slots:
                    response = await self._http.post(f"{url}/chat/completions", json=payload)
            except httpx.TimeoutException as exc:
                reached, last = True, f"timed out ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                reached = True
                if response.status_code not in _RETRY_STATUSES:
                    if response.is_success:
                        try:
                            return response.json()
                        except ValueError:
                            raise _CallFailed("the judge answered with a body that is not JSON") from None
                    raise _CallFailed(f"the judge endpoint answered {response.status_code}: {response.text[:300]}")
                last = f"HTTP {response.status_code}"
            if attempt < self.retries:
                await asyncio.sleep(random.uniform(0, self.backoff_s * 2**attempt))
        if not reached:
            raise BackendUnavailable(f"no judge endpoint reachable ({last})")
        raise _CallFailed(f"the judge call failed after {self.retries + 1} attempts: {last}")

    def _text(self, data: dict[str, Any]) -> str:
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise _CallFailed("the judge's answer has no choices[0].message.content") from None
        usage = data.get("usage") or {}
        if self.usage_callback is not None and isinstance(usage, dict):
            self.usage_callback(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        return text if isinstance(text, str) else ""

    async def _judge_one(self, prompt: ScoringPrompt, request: GroupRequest, schema: dict | None) -> ParsedJudgement:
        for _ in range(self.parse_retries + 1):
            try:
                text = self._text(await self._post(self._payload(prompt, schema)))
            except _CallFailed as exc:
                return ParsedJudgement("backend_error", str(exc))
            parsed = parse_judge_output(text, request.plans)
            if parsed.failure not in _UNREADABLE:
                break
        return parsed

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response; the G calls go out concurrently."""
        schema = response_format(request.plans) if self.constrained else None
        prompts = build_group_prompts(
            request.prompt, request.plans, request.responses, request.exposure, request.image
        )
        return list(await asyncio.gather(*(self._judge_one(p, request, schema) for p in prompts)))

    def _health_url(self, base_url: str) -> str:
        return f"{base_url}/models"

    async def health(self) -> tuple[bool, str]:
        """Reachable when at least one endpoint answers its health probe (``/models`` here)."""
        problems = []
        for url in map(self._health_url, self.base_urls):
            try:
                response = await self._http.get(url, timeout=5.0)
                if response.is_success:
                    return True, f"{url} answers"
                problems.append(f"{url}: HTTP {response.status_code}")
            except httpx.HTTPError as exc:
                problems.append(f"{url}: {type(exc).__name__}")
        return False, "; ".join(problems)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()


class SGLangBackend(OpenAIBackend):
    """An SGLang server (or router) through its OpenAI-compatible API; health from SGLang's own ``/health``."""

    name = "sglang"

    def _health_url(self, base_url: str) -> str:
        root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
        return f"{root}/health"
