"""Asking an engine and reading its replies, with new samples for replies that could not be read.

Every reward method asks the same way: send its requests, read each reply into the method's own result, and send
again, sampling, the requests whose reply could not be read (a greedy decoder would only repeat itself). A reply
that failed (``error``) becomes the method's failed result with the engine's reason; nothing here guesses a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from genrm.engine.types import CallFailed, ChatRequest, Engine, Reply

T = TypeVar("T")


@dataclass(frozen=True)
class Reader(Generic[T]):
    """How a method reads replies: ``read`` turns a reply into (result, readable); ``failed`` turns an engine's
    failure reason into the method's failed result."""

    read: Callable[[Reply], tuple[T, bool]]
    failed: Callable[[str], T]


async def ask(
    engine: Engine,
    requests: Sequence[ChatRequest],
    reader: Reader[T],
    parse_retries: int = 1,
    retry_temperature: float = 0.7,
) -> list[T]:
    """One result per request, in order.

    Args:
        engine: who answers.
        requests: what to ask.
        reader: how replies are read (see :class:`Reader`).
        parse_retries: new samples for a reply that could not be read (>= 0); the last reading is kept.
        retry_temperature: the sampling temperature of those new samples (> 0).

    Raises BackendUnavailable (from the engine) when the model cannot be reached at all.
    """
    if parse_retries < 0:
        raise ValueError("parse_retries must be >= 0")
    results: list[T | None] = [None] * len(requests)
    todo, asked = list(range(len(requests))), list(requests)
    for _ in range(parse_retries + 1):
        replies = await engine.complete([asked[i] for i in todo])
        again = []
        for index, reply in zip(todo, replies, strict=True):
            if reply.error is not None:
                results[index] = reader.failed(reply.error)
                continue
            results[index], readable = reader.read(reply)
            if not readable:
                again.append(index)
        todo = again
        asked = [replace(request, temperature=retry_temperature) for request in asked]
        if not todo:
            break
    return [result if result is not None else reader.failed("no answer") for result in results]


async def complete_text(engine: Engine, request: ChatRequest) -> str:
    """The text of one reply; raises :class:`genrm.engine.types.CallFailed` with the engine's reason when it failed
    (and BackendUnavailable when the model cannot be reached)."""
    (reply,) = await engine.complete([request])
    if reply.error is not None:
        raise CallFailed(reply.error)
    return reply.text
