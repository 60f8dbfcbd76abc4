"""The ``transformers`` backend: a judge checkpoint loaded in the server's own process (CPU or GPU).

Text judges and vision-language ones (the ``vlm`` exposure: images sent as data URIs, or files under the
``image_dir`` setting).

For a single machine without SGLang, for CPU-only set-ups and for tests with a tiny model. Requests run in worker
threads; their judge calls meet in a :class:`genrm.batching.BatchingGenerator`, so concurrent groups share batches on
the one model, and answers are constrained to each rubric's schema by XGrammar where it is installed
(:mod:`genrm.hf_generation`). For throughput on GPUs, serve the same checkpoint with SGLang instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from genrm.batching import BatchingGenerator
from genrm.judge import GroupRequest
from genrm.judge_output import ParsedJudgement
from genrm.model_judge import ModelJudge

if TYPE_CHECKING:
    from genrm.hf_generation import LocalGenerator
    from serving.settings import ServerSettings


class TransformersBackend:
    """A :class:`~genrm.hf_generation.LocalGenerator` behind dynamic batching, as an asynchronous judge backend."""

    name = "transformers"

    def __init__(
        self,
        generator: LocalGenerator,
        max_batch_size: int = 16,
        max_wait_s: float = 0.005,
        parse_retries: int = 1,
        max_concurrent_groups: int = 64,
    ) -> None:
        """Start the batching worker for ``generator`` (see :class:`~genrm.batching.BatchingGenerator`)."""
        self.generator = generator
        self._batcher = BatchingGenerator(generator.generate, max_batch_size, max_wait_s)
        self._judge = ModelJudge(
            self._batcher, temperature=generator.sampling.temperature, parse_retries=parse_retries, name=self.name,
            sees_images=generator.sees_images,
        )  # fmt: skip
        self._threads = anyio.CapacityLimiter(max_concurrent_groups)

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> TransformersBackend:
        """Load ``settings.model_path`` and configure batching and sampling from ``settings``."""
        from genrm.hf_generation import LocalGenerator
        from genrm.judge import SamplingSettings

        sampling = SamplingSettings(settings.judge_max_tokens, settings.judge_temperature, settings.judge_top_p)
        generator = LocalGenerator.from_pretrained(
            str(settings.model_path), device=settings.device, dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code, sampling=sampling,
            constrained=settings.constrained_decoding, chat_template_kwargs=settings.chat_template_kwargs,
            name=str(settings.judge_model or settings.model_path), prefix_cache=settings.prefix_cache,
            image_dir=settings.image_dir,
        )  # fmt: skip
        if settings.exposure == "vlm" and not generator.sees_images:
            raise ValueError(
                f"{generator.name} is a text-only judge (no image processor), but the vlm exposure shows it images: "
                "serve a vision-language checkpoint, or another exposure"
            )
        wait_s = settings.batch_wait_ms / 1000
        return cls(generator, settings.max_batch_size, wait_s, max_concurrent_groups=settings.max_concurrent_groups)

    @property
    def usage_callback(self) -> Callable[[int, int], None] | None:
        """Called with (prompt tokens, completion tokens) of every answer generated."""
        return self._judge.usage_callback

    @usage_callback.setter
    def usage_callback(self, callback: Callable[[int, int], None] | None) -> None:
        self._judge.usage_callback = callback

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response; the group's prompts join the next batch."""
        return await anyio.to_thread.run_sync(self._judge.judge_group, request, limiter=self._threads)

    async def health(self) -> tuple[bool, str]:
        """Reachable while the batching worker runs."""
        constraint = "xgrammar" if self.generator.constrained else "unconstrained"
        state = "ready" if self._batcher.alive else "stopped"
        return self._batcher.alive, f"{self.generator.name} on {self.generator.device} ({constraint}), {state}"

    async def aclose(self) -> None:
        """Answer what is queued, then stop the batching worker."""
        await anyio.to_thread.run_sync(self._batcher.close)
