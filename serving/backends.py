"""Judge backends of the server: one asynchronous interface; the ``rule`` backend needs no model.

A backend judges one group and returns one checked judgement per response; the server then executes and aggregates
(``genrm.scoring.score_group``) off the event loop. A backend that cannot reach its model raises
:class:`BackendUnavailable`, which the server answers with 503 and ``Retry-After``; it never returns made-up credits.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import anyio

from genrm.judge import GroupRequest, RuleJudge
from genrm.judge_output import ParsedJudgement


class BackendUnavailable(RuntimeError):
    """The judge model cannot be reached now; the request may be retried after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@runtime_checkable
class AsyncJudge(Protocol):
    """What the server needs of a judge backend."""

    name: str

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One checked judgement per response of the group, in order; raises BackendUnavailable when down."""
        ...

    async def health(self) -> tuple[bool, str]:
        """Whether the backend can judge now, and a short detail."""
        ...

    async def aclose(self) -> None:
        """Release connections and processes."""
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


def make_backend(name: str) -> AsyncJudge:
    """The backend named ``name``; raises ValueError for an unknown one."""
    if name == "rule":
        return RuleBackend()
    raise ValueError(f"unknown backend {name!r}; available: rule")
