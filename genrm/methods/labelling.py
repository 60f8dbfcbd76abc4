"""What every method's teacher labelling shares: the loop over inputs, the count of teachers a label needs, and the
report of what came of every response.

A method labels one input its own way (its teachers' prompts, readers and the rule that makes a label of their answers)
and hands :func:`label_each` that one step; the loop runs the inputs concurrently, at most ``concurrency`` at once,
with a progress bar over the responses, and gathers the labels in input order. The rubric method's median rule
(``genrm.methods.rubric.teacher_labels``), ClaimDiff-RL's caption labels and MJ1's pair traces all label through it.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from genrm.choices import DEFAULT_CONCURRENCY

Item = TypeVar("Item")
Label = TypeVar("Label")


@dataclass
class LabelReport:
    """What came of every response: how many were labelled, why the others were dropped, how teachers failed and,
    for labels per criterion, how often they agreed (any method's teacher labels report this way)."""

    responses: int = 0
    labelled: int = 0
    drop_reasons: Counter[str] = field(default_factory=Counter)
    teacher_failures: dict[str, Counter[str]] = field(default_factory=dict)
    criteria: int = 0
    unanimous: int = 0
    per_criterion: bool = True  # labels per criterion (the rubric method's), with teacher agreement counted

    def count_failures(self, teachers: Sequence[str], failures: Sequence[str | None]) -> None:
        """Count each teacher's failure (None where it answered) under its name."""
        for name, failure in zip(teachers, failures, strict=True):
            if failure is not None:
                self.teacher_failures.setdefault(name, Counter())[failure] += 1

    def enough_teachers(self, usable: int, needed: int) -> bool:
        """Whether ``usable`` readable teacher answers reach ``needed``; when not, the response is counted as dropped
        for it."""
        if usable >= needed:
            return True
        self.drop_reasons[f"fewer than {needed} teachers answered readably"] += 1
        return False

    def counts(self) -> dict[str, Any]:
        """The report as plain data (for JSON)."""
        counts: dict[str, Any] = {
            "responses": self.responses,
            "labelled": self.labelled,
            "dropped": self.responses - self.labelled,
            "drop_reasons": dict(self.drop_reasons),
            "teacher_failures": {name: dict(c) for name, c in self.teacher_failures.items()},
        }
        if self.per_criterion:
            counts["criteria_labelled"] = self.criteria
            counts["unanimous_share"] = self.unanimous / self.criteria if self.criteria else None
        return counts

    def markdown(self) -> str:
        """A short markdown summary."""
        share = f"{100 * self.unanimous / self.criteria:.1f}%" if self.criteria else "n/a"
        agreement = f"; teachers unanimous on {share} of {self.criteria} criteria" if self.per_criterion else ""
        lines = [f"labels: {self.labelled} of {self.responses} responses labelled{agreement}"]
        lines += [f"- dropped ({count}): {reason}" for reason, count in self.drop_reasons.most_common()]
        for name, failures in self.teacher_failures.items():
            lines.append(f"- {name} failed: " + ", ".join(f"{k} {v}" for k, v in failures.most_common()))
        return "\n".join(lines)


def teachers_needed(min_teachers: int | None, teachers: int, default: int) -> int:
    """How many teachers must answer readably for a label: ``min_teachers``, else ``default``; ValueError when there
    is no teacher, or that is not in 1..``teachers``."""
    if teachers < 1:
        raise ValueError("at least one teacher is needed")
    needed = default if min_teachers is None else min_teachers
    if not 1 <= needed <= teachers:
        raise ValueError(f"min_teachers must be between 1 and the number of teachers ({teachers}), got {needed}")
    return needed


async def label_each(
    items: Sequence[Item],
    label_one: Callable[[Item], Awaitable[Sequence[Label]]],
    responses: Callable[[Item], int] = lambda _: 1,
    unit: str = "response",
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> list[Label]:
    """``label_one`` of every item, at most ``concurrency`` at once, their labels in the items' order.

    Args:
        items: the inputs (instances, pairs).
        label_one: the labels of one input (none when all its responses were dropped).
        responses: how many responses an input holds, which the progress bar counts in ``unit``.
        concurrency: inputs labelled at once (each asks every teacher); at least 1.
        progress: show a progress bar (with its total) on standard error.
    """
    from tqdm import tqdm

    slots = asyncio.Semaphore(concurrency)
    bar = tqdm(total=sum(responses(i) for i in items), unit=unit, desc="labelling", disable=not progress)

    async def one(item: Item) -> Sequence[Label]:
        async with slots:
            labels = await label_one(item)
        bar.update(responses(item))
        return labels

    try:
        batches = await asyncio.gather(*(one(item) for item in items))
    finally:
        bar.close()
    return [label for batch in batches for label in batch]


E = TypeVar("E")


def balance(examples: Sequence[E], seed: int = 0) -> list[E]:
    """As many examples that lose credit as examples that do not (the larger side is subsampled, order kept). A set
    with one side empty has nothing to balance against and is kept whole, rather than emptied."""
    losing = [e for e in examples if e.loses_credit]  # type: ignore[attr-defined]
    full = [e for e in examples if not e.loses_credit]  # type: ignore[attr-defined]
    if not losing or not full:
        return list(examples)
    size = min(len(losing), len(full))
    rng = random.Random(seed)
    kept = {id(e) for e in rng.sample(losing, size) + rng.sample(full, size)}
    return [e for e in examples if id(e) in kept]


def split_by_input(examples: Sequence[E], test_fraction: float = 0.15, seed: int = 0) -> tuple[list[E], list[E]]:
    """Train and test examples, split by ``input_id`` so that no input appears in both.

    Args:
        examples: the examples to split.
        test_fraction: share of inputs held out, in (0, 1).
        seed: shuffles the inputs.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    inputs = sorted({_input(e) for e in examples})
    random.Random(seed).shuffle(inputs)
    held = set(inputs[: max(1, round(len(inputs) * test_fraction))])
    return [e for e in examples if _input(e) not in held], [e for e in examples if _input(e) in held]


def _input(example: Any) -> str:
    return example.input_id
