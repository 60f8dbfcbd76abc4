"""A judge behind OpenAI-compatible endpoints (SGLang, vLLM, a hosted teacher), and a blocking adapter for it.

Each response of a group becomes one chat completion with the scoring prompt (:mod:`genrm.prompts`), explicit
sampling parameters and, by default, ``response_format`` of type ``json_schema`` with the rubric's schema
(:mod:`genrm.output_schema`), which SGLang, vLLM and others enforce by constrained decoding. The G calls of a group go
out concurrently and share everything before the response, so a server with a prefix cache (SGLang's radix cache)
computes the shared part once.

Why chat completions rather than SGLang's native ``/generate``: the server applies the model's own chat template
(image parts included, for the ``vlm`` exposure), accepts the schema as ``response_format``, returns token usage, and
the same request serves SGLang, vLLM and hosted teachers.

A call that still fails after its retries, or an answer that cannot be read after ``parse_retries`` new samples, is
that response's failed judgement (``backend_error``, ``not_json``, ...), never a credit; when no endpoint can be
reached at all, :class:`genrm.judge.BackendUnavailable` is raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar, runtime_checkable

from genrm.chat_endpoint import CallFailed, ChatEndpoint
from genrm.judge import GroupRequest, SamplingSettings
from genrm.judge_output import ParsedJudgement, parse_judge_output
from genrm.output_schema import response_format
from genrm.prompts import ScoringPrompt, build_group_prompts

_UNREADABLE = ("not_json", "schema")
T = TypeVar("T")


class RemoteJudge:
    """Judges groups through a :class:`genrm.chat_endpoint.ChatEndpoint` (see the module docstring)."""

    name = "openai"

    def __init__(
        self,
        endpoint: ChatEndpoint,
        sampling: SamplingSettings | None = None,
        constrained: bool = True,
        parse_retries: int = 1,
    ) -> None:
        """Configure the judge.

        Args:
            endpoint: where the judge model answers.
            sampling: how answers are sampled (greedy by default).
            constrained: send the rubric's JSON schema as ``response_format``.
            parse_retries: new samples for an answer that could not be read (>= 0).
        """
        if parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")
        self.endpoint, self.sampling = endpoint, sampling or SamplingSettings()
        self.constrained, self.parse_retries = constrained, parse_retries

    @property
    def usage_callback(self) -> Callable[[int, int], None] | None:
        """Called with (prompt tokens, completion tokens) of every answered call."""
        return self.endpoint.usage_callback

    @usage_callback.setter
    def usage_callback(self, callback: Callable[[int, int], None] | None) -> None:
        self.endpoint.usage_callback = callback

    async def _judge_one(self, prompt: ScoringPrompt, request: GroupRequest, schema: dict | None) -> ParsedJudgement:
        for _ in range(self.parse_retries + 1):
            try:
                reply = await self.endpoint.complete(prompt.messages(), self.sampling, schema)
            except CallFailed as exc:
                return ParsedJudgement("backend_error", str(exc))
            parsed = parse_judge_output(reply.text, request.plans)
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

    async def aclose(self) -> None:
        """Close the endpoint's connections."""
        await self.endpoint.aclose()


@runtime_checkable
class AsyncGroupJudge(Protocol):
    """An asynchronous judge (:class:`RemoteJudge`, a teacher, a server backend)."""

    name: str

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One checked judgement per response of the group, in order."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class EventLoopThread:
    """An asyncio event loop in a daemon thread, so that blocking code can run coroutines on one long-lived loop
    (HTTP connection pools stay bound to it)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="genrm-event-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result (its exception is raised here)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        """Stop the loop and its thread."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


class BlockingJudge:
    """:class:`genrm.judge.Judge` (blocking) over an asynchronous judge, for ``genrm eval``; owns its event loop."""

    def __init__(self, judge: AsyncGroupJudge) -> None:
        self._judge, self._loop = judge, EventLoopThread()
        self.name = judge.name

    def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response of ``request``; raises BackendUnavailable when the model cannot be reached."""
        return self._loop.run(self._judge.judge_group(request))

    def close(self) -> None:
        """Close the judge's connections and the loop."""
        self._loop.run(self._judge.aclose())
        self._loop.close()
