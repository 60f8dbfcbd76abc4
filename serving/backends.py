"""Judge backends of the server: one asynchronous interface; the ``rule`` backend needs no model.

A backend judges one group and returns one checked judgement per response; the server then executes and aggregates
(``genrm.scoring.score_group``) off the event loop. A backend that cannot reach its model raises
:class:`BackendUnavailable`, which the server answers with 503 and ``Retry-After``; it never returns made-up credits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio

from genrm.judge import BackendUnavailable, GroupRequest, RuleJudge, SamplingSettings
from genrm.judge_output import ParsedJudgement
from genrm.remote_judge import AsyncGroupJudge

__all__ = ["AsyncJudge", "BackendUnavailable", "RuleBackend", "make_backend"]

if TYPE_CHECKING:
    from serving.settings import ServerSettings


@runtime_checkable
class AsyncJudge(AsyncGroupJudge, Protocol):
    """What the server needs of a judge backend: an asynchronous judge (``judge_group`` raises BackendUnavailable
    when the model is down; ``aclose`` releases connections and processes) with a health probe."""

    async def health(self) -> tuple[bool, str]:
        """Whether the backend can judge now, and a short detail."""
        ...


class RuleBackend:
    """The ``rule`` backend (``genrm.judge.RuleJudge``), run in a worker thread so the event loop stays free."""

    name = "rule"

    def __init__(self) -> None:
        self._judge = RuleJudge()

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """Rule extraction for every response of the group."""
        return await anyio.to_thread.run_sync(self._judge.judge_group, request)

    async def health(self) -> tuple[bool, str]:
        """Always reachable: it runs in process."""
        return True, "in process"

    async def aclose(self) -> None:
        """Nothing to release."""


def make_backend(settings: ServerSettings) -> AsyncJudge:
    """The backend ``settings.backend`` names, configured from ``settings``."""
    if settings.backend == "rule":
        return RuleBackend()
    if settings.backend == "transformers":
        from serving.transformers_backend import TransformersBackend

        return TransformersBackend.from_settings(settings)
    from serving.openai_backend import OpenAIBackend, SGLangBackend

    cls = SGLangBackend if settings.backend == "sglang" else OpenAIBackend
    key = settings.judge_api_key.get_secret_value() if settings.judge_api_key else None
    sampling = SamplingSettings(settings.judge_max_tokens, settings.judge_temperature, settings.judge_top_p)
    return cls(
        settings.judge_urls, str(settings.judge_model), api_key=key, sampling=sampling,
        constrained=settings.constrained_decoding, timeout_s=settings.judge_timeout_s, retries=settings.judge_retries,
        max_in_flight=settings.judge_max_in_flight, budget_s=settings.judge_budget_s,
    )  # fmt: skip
