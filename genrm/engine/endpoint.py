"""One model behind OpenAI-compatible chat-completions endpoints (SGLang, vLLM, a hosted API): the transport.

The transport of :class:`genrm.engine.http.HttpEngine` (the ``openai`` and ``sglang`` judges, and teachers behind
such endpoints). Replicas are tried
round robin; transport errors, time-outs, 408/429 and 5xx are retried with full-jitter backoff. When no replica can be
reached at all, :class:`genrm.engine.types.BackendUnavailable` is raised (a server answers 503); when the endpoint is
reachable but one call still fails, :class:`CallFailed` names why. Calls in flight are bounded by a semaphore.

Two limits bound a call in time: ``timeout_s`` each HTTP attempt, and ``budget_s`` the whole call, waiting for a slot,
every attempt and every backoff included, so that an endpoint that hangs answers within the budget (with
BackendUnavailable when no attempt reached it, CallFailed otherwise), not after ``retries + 1`` full time-outs.
The endpoint remembers how its recent calls ended: :meth:`ChatEndpoint.probe` reports it unhealthy when the last
:data:`UNHEALTHY_AFTER` calls all failed, whatever its health URL says.

Needs httpx (the ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from genrm.engine.types import BackendUnavailable, CallFailed, Reply, SamplingSettings

__all__ = ["UNHEALTHY_AFTER", "CallFailed", "ChatEndpoint"]

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: Consecutive failed calls after which the endpoint reports itself unhealthy (until a call succeeds).
UNHEALTHY_AFTER = 5


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
        budget_s: float | None = None,
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
            budget_s: time limit of one call over all its attempts, in seconds (None: only ``timeout_s`` each).
        """
        if not base_urls:
            raise ValueError("at least one endpoint URL is needed")
        if retries < 0 or max_in_flight < 1:
            raise ValueError("retries must be >= 0 and max_in_flight >= 1")
        if budget_s is not None and budget_s <= 0:
            raise ValueError(f"budget_s must be positive, got {budget_s}")
        self.budget_s = budget_s
        self._failures, self._last_failure = 0, ""
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.model, self.retries, self.backoff_s = model, retries, backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout_s, limits=limits, transport=transport)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._next_url = itertools.cycle(range(len(self.base_urls)))
        self.usage_callback: Callable[[int, int], None] | None = None

    def payload(
        self,
        messages: list[dict[str, Any]],
        sampling: SamplingSettings,
        response_format: dict[str, Any] | None,
        fields: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The request body of one chat completion; ``fields``: an engine's own fields besides OpenAI's (vLLM's
        ``structured_outputs``)."""
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
        return {**body, **(fields or {})}

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            data = await self._attempts(body)
        except (CallFailed, BackendUnavailable) as exc:
            self._failures, self._last_failure = self._failures + 1, str(exc)[:200]
            raise
        self._failures = 0
        return data

    async def _attempt(self, url: str, body: dict[str, Any]) -> httpx.Response:
        async with self._slots:
            return await self._http.post(url, json=body)

    async def _attempts(self, body: dict[str, Any]) -> dict[str, Any]:
        end = None if self.budget_s is None else time.monotonic() + self.budget_s
        reached, last = False, "no attempt"
        for attempt in range(self.retries + 1):
            url = self.base_urls[next(self._next_url)]
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                last = f"{last}; the call's {self.budget_s:g} s budget is spent"
                break
            try:
                response = await asyncio.wait_for(self._attempt(f"{url}/chat/completions", body), left)
            except asyncio.TimeoutError:  # the budget ran out inside the attempt (waiting for a slot or an answer)
                last = f"no answer within the call's {self.budget_s:g} s budget"
                break
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
                pause = random.uniform(0, self.backoff_s * 2**attempt)
                if end is not None:
                    pause = min(pause, max(0.0, end - time.monotonic()))
                await asyncio.sleep(pause)
        if not reached:
            where = ", ".join(self.base_urls)
            raise BackendUnavailable(f"no endpoint of {self.model!r} reachable at {where} ({last})")
        raise CallFailed(f"the call failed after {self.retries + 1} attempts: {last}")

    async def complete(
        self,
        messages: list[dict[str, Any]],
        sampling: SamplingSettings,
        response_format: dict[str, Any] | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Reply:
        """One chat completion: ``choices[0].message.content``, the token usage (0 when not reported), and whether
        the answer is finished (not cut by the token budget: ``finish_reason`` other than ``length``). Raises
        CallFailed, or BackendUnavailable when no replica can be reached."""
        data = await self._post(self.payload(messages, sampling, response_format, fields))
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise CallFailed("the answer has no choices[0].message.content") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        reply = Reply(
            text if isinstance(text, str) else "",
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            finished=not (isinstance(choice, dict) and choice.get("finish_reason") == "length"),
        )
        if self.usage_callback is not None:
            self.usage_callback(reply.prompt_tokens, reply.completion_tokens)
        return reply

    async def probe(self, urls: Sequence[str]) -> tuple[bool, str]:
        """Reachable when at least one of ``urls`` answers a GET with success and the last calls did not all fail
        (:data:`UNHEALTHY_AFTER` in a row); a short detail either way."""
        if self._failures >= UNHEALTHY_AFTER:
            return False, f"the last {self._failures} chat completions failed; last: {self._last_failure}"
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


def _count(value: Any) -> int:
    """A token count from an answer's usage: a non-negative integer, else 0 (an endpoint's odd value is not ours)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
