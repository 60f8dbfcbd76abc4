"""A reward method written the way a plug-in is: one module, registered by name, nothing of the stack changed.

``words`` asks the judge how many words each response has (a JSON answer constrained by a schema), and rewards
closeness to the instance's target count. Its instance has no rubric: it is its own model. It needs a model judge
(no fixed-rule reader). Its judge is trained like any method's (``genrm data labels``, ``genrm train sft|rlvr``
through :class:`genrm.methods.base.JudgeTraining`): teachers count the words, the judge learns to answer as they did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.engine import ChatPrompt, ChatRequest, Judge, Reader, Reply, ask
from genrm.methods.base import (
    LABEL_COLUMN,
    GroupResult,
    JudgeTraining,
    MethodInputError,
    ResultTally,
    UnknownReward,
    judge_labels,
)
from genrm.methods.completions import completion_text
from genrm.methods.config import MethodConfig
from genrm.methods.labelling import LabelReport, label_each, teachers_needed
from genrm.methods.options import MethodOptions

SCHEMA = {"type": "object", "properties": {"words": {"type": "integer"}}, "required": ["words"]}
SYSTEM = 'Count the words. Answer {"words": N}.'


class WordsInstance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    prompt: str = Field("", description="what a policy is asked (policy RL)")
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


def _read_text(text: str) -> Reading:
    try:
        words = json.loads(text)["words"]
    except (ValueError, KeyError, TypeError):
        return Reading(None, "not_json")
    return Reading(words) if isinstance(words, int) else Reading(None, "schema")


def _read(reply: Reply) -> tuple[Reading, bool]:
    reading = _read_text(reply.text)
    return reading, reading.failure is None


def _requests(texts: Sequence[str]) -> list[ChatRequest]:
    return [ChatRequest(ChatPrompt(SYSTEM, text), SCHEMA, "words") for text in texts]


def judge_corpus() -> list[str]:
    """What the words judge reads and writes: its prompt, responses and answers."""
    texts = ["one two three", "Write four words.", "a b c d e"]
    return [SYSTEM, *texts, *(json.dumps({"words": n}) for n in range(12))]


def _reader() -> Reader:
    return Reader(_read, lambda reason: Reading(None, "backend_error"))


class WordsExample(BaseModel):
    """One labelled response: the count the teachers gave."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    input_id: str = Field(min_length=1)
    response: str
    words: int = Field(ge=0)

    @property
    def loses_credit(self) -> bool:
        return self.words == 0


def sft_record(example: WordsExample, exposure: str = "minimal") -> dict[str, Any]:
    answer = json.dumps({"words": example.words})
    return {"prompt": ChatPrompt(SYSTEM, example.response).messages(),
            "completion": [{"role": "assistant", "content": answer}]}  # fmt: skip


def rlvr_record(example: WordsExample, exposure: str = "minimal") -> dict[str, Any]:
    return {"prompt": ChatPrompt(SYSTEM, example.response).messages(), LABEL_COLUMN: str(example.words)}


def count_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """1 for a completion that counts as the teachers did, else 0."""
    labels = judge_labels(columns, "count_reward_func", len(completions))
    return [float(_read_text(completion_text(c)).counted == int(label)) for c, label in zip(completions, labels,
                                                                                          strict=True)]  # fmt: skip


async def label_counts(
    instances: Sequence[WordsInstance], teachers: Sequence[Any], min_teachers: int | None = None,
    concurrency: int = 8, progress: bool = False,
) -> tuple[list[WordsExample], LabelReport]:  # fmt: skip
    """Each response labelled with the count its teachers agree on (the first readable one when they differ)."""
    import asyncio

    needed = teachers_needed(min_teachers, len(teachers), 1)
    report = LabelReport(per_criterion=False)

    async def one(instance: WordsInstance) -> list[WordsExample]:
        per_teacher = await asyncio.gather(*(ask(t, _requests(instance.responses), _reader(), 1) for t in teachers))
        examples = []
        for index, response in enumerate(instance.responses):
            report.responses += 1
            readings = [readings[index] for readings in per_teacher]
            report.count_failures([t.model for t in teachers], [r.failure for r in readings])
            counts = [r.counted for r in readings if r.counted is not None]
            if not report.enough_teachers(len(counts), needed):
                continue
            report.labelled += 1
            examples.append(WordsExample(id=f"{instance.id}-{index}", input_id=instance.id, response=response,
                                         words=max(set(counts), key=counts.count)))  # fmt: skip
        return examples

    examples = await label_each(instances, one, lambda i: len(i.responses), "response", concurrency, progress)
    return examples, report


class WordsOptions(MethodOptions):
    tolerance: float = Field(1.0, gt=0.0, description="words off at which the reward reaches 0")


class WordsMethod:
    name = "words"
    options_model = WordsOptions
    instance_model = WordsInstance
    result_model = WordsResult
    reads_without_engine = False

    def __init__(self, config: MethodConfig | None = None, options: WordsOptions | None = None) -> None:
        self.tolerance = (options or WordsOptions()).tolerance

    def prepare(self, instance: WordsInstance) -> Prepared:
        if instance.target_words <= 0:
            raise MethodInputError("must be a positive number of words", ["target_words"], kind="target")
        return Prepared(instance)

    async def judge(self, prepared: Prepared, judge: Judge) -> list[Reading]:
        assert judge.engine is not None
        return await ask(judge.engine, _requests(prepared.instance.responses), _reader(), judge.parse_retries)

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

    def judge_training(self) -> JudgeTraining:
        return JudgeTraining(WordsExample, sft_record, rlvr_record, (count_reward_func,), False, label_counts,
                             corpus=judge_corpus)  # fmt: skip
