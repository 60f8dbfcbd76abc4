"""A scripted engine: answers come from a function, not a model. For tests, dry runs and demonstrations.

It behaves as any engine does towards its callers (one reply per request, usage reported, health, close), so a
reward method is tested on exactly the code path a model engine takes; only the text is written by the script.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from genrm.engine.types import ChatRequest, Reply, UsageCallback

Script = Callable[[ChatRequest], "str | Reply"]


class ScriptedEngine:
    """Answers each request with ``script(request)`` (a text, or a whole :class:`Reply` to script failures).

    Every request is kept in :attr:`requests`, in the order answered. A script that raises
    :class:`genrm.engine.types.BackendUnavailable` plays a model that cannot be reached.
    """

    name = "scripted"

    constrained = False  # a script writes what it writes

    def __init__(self, script: Script, model: str = "scripted", sees_images: bool = True) -> None:
        self.script, self.model, self.sees_images = script, model, sees_images
        self.requests: list[ChatRequest] = []
        self.calls = 0
        self.usage_callback: UsageCallback | None = None
        self.closed = False

    def _answer(self, request: ChatRequest) -> Reply:
        self.requests.append(request)
        answer = self.script(request)
        reply = answer if isinstance(answer, Reply) else Reply(answer, finished=True)  # usage unknown: 0
        if reply.error is None and self.usage_callback is not None:
            self.usage_callback(reply.prompt_tokens, reply.completion_tokens)
        return reply

    async def complete(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        """One scripted reply per request, in order."""
        self.calls += 1
        return [self._answer(request) for request in requests]

    async def health(self) -> tuple[bool, str]:
        """Reachable until closed."""
        return not self.closed, "scripted answers"

    async def aclose(self) -> None:
        """Mark the engine closed."""
        self.closed = True
