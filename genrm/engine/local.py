"""The engine of a checkpoint loaded in this process (CPU or GPU): text models and vision-language ones.

For a single machine without SGLang, CPU-only set-ups, teachers run locally and tests with tiny models. Requests from
any thread or event loop meet in a :class:`genrm.engine.batching.BatchingGenerator`, so concurrent groups decode
together on the one model (in one continuous loop, :mod:`genrm.engine.decoding`, where the model allows it);
answers are constrained to their schema by XGrammar where it is installed
(:mod:`genrm.engine.generation`). For throughput on GPUs, serve the same checkpoint with SGLang instead.

Needs torch and transformers (the ``local`` extra), imported when a checkpoint is loaded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from genrm.engine.batching import BatchingGenerator
from genrm.engine.types import ChatRequest, Reply, UsageCallback

if TYPE_CHECKING:
    from genrm.engine.generation import LocalGenerator
    from genrm.engine.spec import EngineOptions, JudgeSpec


class LocalEngine:
    """A :class:`~genrm.engine.generation.LocalGenerator` behind dynamic batching, as an engine."""

    name = "transformers"

    def __init__(self, generator: LocalGenerator, max_batch_size: int = 16, max_wait_s: float = 0.005) -> None:
        """Start the batching worker for ``generator`` (see :class:`~genrm.engine.batching.BatchingGenerator`)."""
        self.generator, self.model = generator, generator.name
        loop = generator.open_loop if generator.continuous else None
        self._batcher = BatchingGenerator(generator.generate, max_batch_size, max_wait_s, generator.temperature, loop)
        self.usage_callback: UsageCallback | None = None

    @property
    def sees_images(self) -> bool:
        """Whether the checkpoint is a vision-language model (it has an image processor)."""
        return self.generator.sees_images

    @property
    def constrained(self) -> bool:
        """Whether answers are constrained to their schema (XGrammar installed and asked for)."""
        return self.generator.constrained

    @property
    def batches(self) -> int:
        """Batches generated so far."""
        return self._batcher.batches

    def _count(self, replies: list[Reply]) -> list[Reply]:
        if self.usage_callback is not None:
            for reply in replies:
                if reply.error is None:
                    self.usage_callback(reply.prompt_tokens, reply.completion_tokens)
        return replies

    async def complete(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        """One reply per request; they join the next batch (awaited without holding a thread)."""
        futures = [asyncio.wrap_future(future) for future in self._batcher.submit(requests)]
        return self._count(list(await asyncio.gather(*futures)))

    async def health(self) -> tuple[bool, str]:
        """Reachable while the batching worker runs."""
        constraint = "xgrammar" if self.generator.constrained else "unconstrained"
        state = "ready" if self._batcher.alive else "stopped"
        return self._batcher.alive, f"{self.generator.name} on {self.generator.device} ({constraint}), {state}"

    async def aclose(self) -> None:
        """Answer what is queued, then stop the batching worker."""
        await asyncio.to_thread(self._batcher.close)


def make_local_engine(spec: JudgeSpec, options: EngineOptions) -> LocalEngine:
    """The engine of a checkpoint run in this process (``transformers:PATH``), configured by ``options``."""
    from genrm.engine.generation import LocalGenerator

    generator = LocalGenerator.from_pretrained(
        str(spec.model), device=options.device, dtype=options.dtype, trust_remote_code=options.trust_remote_code,
        sampling=options.sampling, constrained=options.constrained, name=options.name or str(spec.model),
        chat_template_kwargs=options.chat_template_kwargs, prefix_cache=options.prefix_cache,
        image_dir=options.image_dir, continuous=options.continuous_batching, image_budget=options.image_budget,
    )  # fmt: skip
    return LocalEngine(generator, options.max_batch_size, options.batch_wait_s)
