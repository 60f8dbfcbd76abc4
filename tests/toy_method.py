"""A reward method written the way a plug-in is: one module, registered by name, nothing of the stack changed.

``words`` asks the judge how many words each response has (a JSON answer constrained by a schema), and rewards
closeness to the instance's target count. Its instance has no rubric: it is its own model. It needs a model judge
(no fixed-rule reader), and it gives two named reward columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.engine import ChatPrompt, ChatRequest, Judge, Reader, Reply, ask
from genrm.methods.base import GroupResult, MethodInputError, ResultTally, UnknownReward
from genrm.methods.config import MethodConfig

SCHEMA = {"type": "object", "properties": {"words": {"type": "integer"}}, "required": ["words"]}


class WordsInstance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    target_words: int
    responses: list[str] = Field(default_factory=list)


class WordsRecord(BaseModel):
    reward: float | None
    counted: int | None
    failure: str | None = None


class WordsResult(GroupResult):
    records: list[WordsRecord] = Field(default_factory=list)
    exact: list[float | None] = Field(default_factory=list)


@dataclass(frozen=True)
class Prepared:
    instance: WordsInstance


@dataclass(frozen=True)
class Reading:
    counted: int | None
    failure: str | None = None


def _read(reply: Reply) -> tuple[Reading, bool]:
    try:
        words = json.loads(reply.text)["words"]
    except (ValueError, KeyError, TypeError):
        return Reading(None, "not_json"), False
    return (Reading(words), True) if isinstance(words, int) else (Reading(None, "schema"), False)


class WordsMethod:
    name = "words"
    instance_model = WordsInstance
    result_model = WordsResult
    reads_without_engine = False

    def __init__(self, config: MethodConfig | None = None, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        self.tolerance = float(options.pop("tolerance", 1.0))
        if options:
            raise ValueError(f"the words method takes only tolerance; got {', '.join(options)}")

    def prepare(self, instance: WordsInstance) -> Prepared:
        if instance.target_words <= 0:
            raise MethodInputError("must be a positive number of words", ["target_words"], kind="target")
        return Prepared(instance)

    async def judge(self, prepared: Prepared, judge: Judge) -> list[Reading]:
        assert judge.engine is not None
        requests = [ChatRequest(ChatPrompt("Count the words. Answer {\"words\": N}.", text), SCHEMA, "words")
                    for text in prepared.instance.responses]  # fmt: skip
        reader = Reader(_read, lambda reason: Reading(None, "backend_error"))
        return await ask(judge.engine, requests, reader, judge.parse_retries)

    def uses_workers(self, prepared: Prepared) -> bool:
        return False

    def score(self, prepared: Prepared, readings: Sequence[Reading]) -> WordsResult:
        target = prepared.instance.target_words
        rewards: list[float | None] = []
        for reading in readings:
            off = None if reading.counted is None else abs(reading.counted - target) / target
            rewards.append(None if off is None else max(0.0, 1.0 - off / self.tolerance))
        pairs = zip(rewards, readings, strict=True)
        records = [WordsRecord(reward=r, counted=x.counted, failure=x.failure) for r, x in pairs]
        exact = [None if x.counted is None else float(x.counted == target) for x in readings]
        return WordsResult(id=prepared.instance.id, rewards=rewards, records=records, exact=exact)

    def unknown_reward(self, result: WordsResult, index: int) -> UnknownReward:
        return UnknownReward(f"the judge failed: {result.records[index].failure}", True, kind="judge_failure")

    def extra_logs(self, result: WordsResult, index: int) -> dict[str, float]:
        return {"exact": result.exact[index] or 0.0}

    def tally(self, result: WordsResult) -> ResultTally:
        return ResultTally(judge_failures=[r.failure for r in result.records if r.failure])
