"""What a request will cost the judge, known before any call is sent: its calls and the bytes they carry.

One request can multiply on the judge: 64 captions of one 10 MB image are 64 calls that each carry the image. The
server plans each group's judging with the method's own code against a planner in place of the engine (every call is
recorded and answered as failed, so nothing is re-asked and nothing is sent), adds the groups up, and refuses with 413
a request over ``max_judge_calls`` or ``max_judge_bytes`` before anything is judged. The bound is on the first ask of
each call: answers that cannot be read are asked again (``parse_retries`` times at most), so the most a request can
cost is ``1 + parse_retries`` times its plan.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from genrm.engine.judge import Judge
from genrm.engine.types import ChatRequest, Engine, Reply, UsageCallback
from genrm.methods.base import RewardMethod
from genrm.methods.run import judge_prepared


@dataclass
class JudgeCost:
    """Calls to the judge and the bytes of their messages (texts in UTF-8, images as sent, schemas as JSON)."""

    calls: int = 0
    bytes: int = 0

    def add(self, other: JudgeCost) -> None:
        """Count ``other`` in."""
        self.calls += other.calls
        self.bytes += other.bytes


def request_bytes(request: ChatRequest) -> int:
    """Bytes of one call's messages: system and user text (UTF-8), each image reference or data URI, the schema."""
    prompt = request.prompt
    size = len(prompt.system.encode("utf-8")) + len(prompt.user.encode("utf-8")) + sum(map(len, prompt.images))
    if request.schema is not None:
        size += len(json.dumps(request.schema))
    return size


class _Planner:
    """An engine that answers nothing: it counts what it is asked, and fails every call so that nothing follows."""

    def __init__(self, engine: Engine) -> None:
        self.name, self.model = engine.name, engine.model
        self.sees_images, self.constrained = engine.sees_images, engine.constrained
        self.usage_callback: UsageCallback | None = None
        self.cost = JudgeCost()

    async def complete(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        for request in requests:
            self.cost.calls += 1
            self.cost.bytes += request_bytes(request)
        return [Reply(error="planned, not sent")] * len(requests)

    async def health(self) -> tuple[bool, str]:
        return True, "planning"

    async def aclose(self) -> None:
        return None


async def planned_cost(method: RewardMethod, prepared: object, judge: Judge) -> JudgeCost:
    """What judging ``prepared`` (one group, prepared by ``method``) asks of ``judge`` on first asking; nothing for a
    judge without a model."""
    if judge.engine is None:
        return JudgeCost()
    planner = _Planner(judge.engine)
    await judge_prepared(method, prepared, Judge(planner, parse_retries=0, label=judge.label))
    return planner.cost


def plan_request(
    method: RewardMethod, prepared: Sequence[object], judge: Judge, max_calls: int, max_bytes: int
) -> tuple[JudgeCost, int]:
    """The cost of judging the groups ``prepared`` in order, planned until it passes ``max_calls`` or ``max_bytes``
    (the rest is not planned), and how many groups were planned. Blocking, with an event loop of its own: planning
    builds every prompt, which for a large request is seconds of CPU that must not run on the server's loop."""

    async def plan() -> tuple[JudgeCost, int]:
        total, planned = JudgeCost(), 0
        for group in prepared:
            total.add(await planned_cost(method, group, judge))
            planned += 1
            if total.calls > max_calls or total.bytes > max_bytes:
                break
        return total, planned

    return asyncio.run(plan())
