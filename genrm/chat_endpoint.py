"""One model behind OpenAI-compatible chat-completions endpoints (SGLang, vLLM, a hosted API): the transport.

Used by the judge that scores through such endpoints (:mod:`genrm.remote_judge`, the server's ``openai`` and
``sglang`` backends) and by the teachers that write rubrics and labels (:mod:`genrm.teachers`). Replicas are tried
round robin; transport errors, time-outs, 408/429 and 5xx are retried with full-jitter backoff. When no replica can be
reached at all, :class:`genrm.judge.BackendUnavailable` is raised (a server answers 503); when the endpoint is
reachable but one call still fails, :class:`CallFailed` names why. Calls in flight are bounded by a semaphore.

Needs httpx (the ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from genrm.judge import BackendUnavailable, SamplingSettings

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class CallFailed(Exception):
    """One call failed after its retries, while the endpoint as a whole is reachable."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    """The text of ``choices[0].message.content`` and the call's token usage (0 when not reported)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatEndpoint:
    """A model behind one or more OpenAI-compatible endpoints (``base_urls`` end in ``/v1``)."""

    def __init__(
        self,
        base_urls: Sequence[str],
        model: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        retries: int = 2,
        max_in_flight: int = 64,
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Configure the endpoint.

        Args:
            base_urls: one URL per replica, e.g. ``http://10.0.0.5:30000/v1``.
            model: the ``model`` field of each request.
            api_key: sent as a bearer token when given.
            timeout_s: time limit of one HTTP call, in seconds.
            retries: further attempts after a retryable failure (>= 0).
            max_in_flight: calls in flight at once, over all replicas (>= 1).
            backoff_s: base of the exponential backoff between attempts, in seconds.
            transport: an httpx transport (tests route calls to an in-process app with it).
        """
        if not base_urls:
            raise ValueError("at least one endpoint URL is needed")
        if retries < 0 or max_in_flight < 1:
            raise ValueError("retries must be >= 0 and max_in_flight >= 1")
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.model, self.retries, self.backoff_s = model, retries, backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout_s, limits=limits, transport=transport)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._next_url = itertools.cycle(range(len(self.base_urls)))
        self.usage_callback: Callable[[int, int], None] | None = None

    def payload(
        self, messages: list[dict[str, Any]], sampling: SamplingSettings, response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The request body of one chat completion."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            # max_tokens is deprecated for chat completions (OpenAI, SGLang); vLLM and SGLang take this name.
            "max_completion_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if response_format is not None:
            body["response_format"] = response_format
        return body

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        reached, last = False, "no attempt"
        for attempt in range(self.retries + 1):
            url = self.base_urls[next(self._next_url)]
            try:
                async with self._slots:
                    response = await self._http.post(f"{url}/chat/completions", json=body)
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
                            raise CallFailed("the endpoint answered with a body that is not JSON") from None
                    raise CallFailed(f"the endpoint answered {response.status_code}: {response.text[:300]}")
                last = f"HTTP {response.status_code}"
            if attempt < self.retries:
                await asyncio.sleep(random.uniform(0, self.backoff_s * 2**attempt))
        if not reached:
            raise BackendUnavailable(f"no endpoint of {self.model!r} reachable ({last})")
        raise CallFailed(f"the call failed after {self.retries + 1} attempts: {last}")

    async def complete(
        self,
        messages: list[dict[str, Any]],
        sampling: SamplingSettings,
        response_format: dict[str, Any] | None = None,
    ) -> ChatReply:
        """One chat completion. Raises CallFailed, or BackendUnavailable when no replica can be reached."""
        data = await self._post(self.payload(messages, sampling, response_format))
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise CallFailed("the answer has no choices[0].message.content") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        reply = ChatReply(
            text if isinstance(text, str) else "",
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        if self.usage_callback is not None:
            self.usage_callback(reply.prompt_tokens, reply.completion_tokens)
        return reply

    async def probe(self, urls: Sequence[str]) -> tuple[bool, str]:
        """Reachable when at least one of ``urls`` answers a GET with success; a short detail either way."""
        problems = []
        for url in urls:
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
