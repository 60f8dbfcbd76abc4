"""Rubrics written by teachers: independent proposals, an aggregation call, and the dual check.

For each task (a question, optionally an image, a reference answer and a task type):

1. every teacher writes a rubric independently (:func:`genrm.methods.rubric.authoring.build_rubric_prompt`, answer
   constrained to :data:`RUBRIC_SCHEMA`); a proposal that is not a valid rubric (schema, verifier calls, targets
   leaked into the criterion text, verifiers the task type does not allow:
   :func:`genrm.methods.rubric.planning.plan_rubric`) is discarded;
2. with two or more valid proposals, the aggregator merges them, keeping what most teachers agree on
   (:func:`genrm.methods.rubric.authoring.build_rubric_aggregation_prompt`); with one, that one is kept;
3. the **dual check**, when the task has a reference answer: the reference answer is scored against the rubric (rule
   extraction by default, or a teacher as judge) and every essential verifiable criterion must pass. A rubric that
   fails is sent back to the aggregator with the failures named, once per ``repair_rounds``, and dropped if it still
   fails.

Nothing is silently kept: the report counts proposals, merges, first-time passes, repairs and drops with reasons.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from genrm.engine import CallFailed, ChatPrompt, Engine
from genrm.engine.teachers import complete_json
from genrm.methods.answer_json import extract_json_object
from genrm.methods.rubric.authoring import build_rubric_aggregation_prompt, build_rubric_prompt
from genrm.methods.rubric.execution import execute
from genrm.methods.rubric.models import Instance, Rubric
from genrm.methods.rubric.planning import RubricError, RubricPolicy, plan_rubric
from genrm.methods.rubric.readers import GroupRequest, RubricReader, RuleReader

# No minLength/maxLength on the strings: XGrammar (SGLang's grammar backend) then forbids every escape inside them,
# and references need backslashes (LaTeX targets) and quotes. The token budget bounds the answer; the Rubric model
# checks lengths after decoding.
_ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "criterion": {"type": "string"},
        "reference": {"type": "string"},
        "weight": {"enum": [1, 2, 3]},
    },
    "required": ["criterion", "reference", "weight"],
    "additionalProperties": False,
}

#: What a teacher's rubric answer is constrained to (a bounded number of items).
RUBRIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "essential": {"type": "array", "minItems": 1, "maxItems": 12, "items": _ITEM_SCHEMA},
        "additional": {"type": "array", "maxItems": 12, "items": _ITEM_SCHEMA},
    },
    "required": ["essential", "additional"],
    "additionalProperties": False,
}


class RubricTask(BaseModel):
    """One input to write a rubric for (a line of the tasks JSONL); responses, if any, are carried through."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    prompt: str = Field(min_length=1, max_length=100_000)
    image: str | None = Field(default=None, max_length=10_000_000)
    reference_answer: str | None = Field(default=None, max_length=100_000)
    task_type: str | None = Field(default=None, max_length=64)
    max_response_chars: StrictInt | None = Field(default=None, gt=0)
    responses: list[str] = Field(default_factory=list, max_length=1024)

    def instance(self, rubric: Rubric) -> Instance:
        """The instance this task becomes with ``rubric``."""
        return Instance(rubric=rubric, **self.model_dump())


def parse_rubric(text: str, task_type: str | None = None, policy: RubricPolicy | None = None) -> Rubric:
    """The rubric in a teacher's answer, fully checked; raises ValueError saying what is wrong."""
    value = extract_json_object(text)
    if value is None:
        raise ValueError("the answer holds no JSON object")
    rubric = Rubric.model_validate(value)
    plan_rubric(rubric, task_type, policy)  # raises RubricError listing every problem
    return rubric


@dataclass
class RubricOutcome:
    """What happened to one task: the final rubric (None when dropped) and the steps that led there."""

    task_id: str
    rubric: Rubric | None
    proposals: dict[str, str] = field(default_factory=dict)  # teacher -> "ok" or why its proposal was discarded
    merged: bool = False
    dual_check: str = "skipped"  # skipped (no reference), passed, repaired, failed
    dropped: str | None = None
    failures: list[str] = field(default_factory=list)


@dataclass
class RubricReport:
    """Counts over all tasks (see :func:`RubricReport.markdown`)."""

    outcomes: list[RubricOutcome]

    def counts(self) -> dict[str, Any]:
        """Tasks, kept and dropped rubrics, proposals per teacher, merges, dual-check results, drop reasons."""
        per_teacher: dict[str, Counter[str]] = {}
        for outcome in self.outcomes:
            for teacher, status in outcome.proposals.items():
                per_teacher.setdefault(teacher, Counter())["valid" if status == "ok" else "invalid"] += 1
        return {
            "tasks": len(self.outcomes),
            "kept": sum(o.rubric is not None for o in self.outcomes),
            "dropped": sum(o.rubric is None for o in self.outcomes),
            "merged": sum(o.merged for o in self.outcomes),
            "proposals": {name: dict(counter) for name, counter in per_teacher.items()},
            "dual_check": dict(Counter(o.dual_check for o in self.outcomes)),
            "drop_reasons": dict(Counter(o.dropped for o in self.outcomes if o.dropped)),
        }

    def markdown(self) -> str:
        """The counts as a small markdown report."""
        counts = self.counts()
        lines = [
            f"rubrics: {counts['kept']} kept, {counts['dropped']} dropped of {counts['tasks']} tasks; "
            f"{counts['merged']} merged from several proposals",
            "",
            "| teacher | valid proposals | invalid proposals |",
            "| --- | ---: | ---: |",
        ]
        for name, counter in counts["proposals"].items():
            lines.append(f"| {name} | {counter.get('valid', 0)} | {counter.get('invalid', 0)} |")
        dual = counts["dual_check"]
        lines += ["", "dual check: " + ", ".join(f"{k} {dual.get(k, 0)}" for k in ("passed", "repaired", "failed",
                                                                                    "skipped"))]  # fmt: skip
        for reason, count in counts["drop_reasons"].items():
            lines.append(f"- dropped ({count}): {reason}")
        return "\n".join(lines)


async def dual_check(rubric: Rubric, task: RubricTask, checker: RubricReader, threshold: float = 0.9) -> list[str]:
    """The essential verifiable criteria the reference answer fails, each as a sentence (empty: it passes).

    Args:
        rubric: a rubric that has passed :func:`genrm.methods.rubric.planning.plan_rubric`.
        task: the task, with its reference answer.
        checker: the judge that reads the reference answer (its targets are never shown to it).
        threshold: verifier score a criterion needs to pass, in [0, 1].
    """
    if task.reference_answer is None:
        raise ValueError("the dual check needs a reference answer")
    plans = plan_rubric(rubric, task.task_type)
    request = GroupRequest(task.prompt, plans, [task.reference_answer], task.image, "minimal")
    (parsed,) = await checker.read(request)
    problems = []
    for score in execute(parsed, plans, response=task.reference_answer):
        plan = score.plan
        if plan.section != "essential" or plan.verifier is None:
            continue
        if score.score is None:
            problems.append(f"{plan.path} could not be checked on the reference answer ({score.status}: "
                            f"{score.reason:.160})")  # fmt: skip
        elif score.score < threshold:
            problems.append(f"{plan.path} ({plan.criterion.criterion!r:.80}): the reference answer scores "
                            f"{score.score:.2f} with {plan.criterion.reference!r:.120}; read as "
                            f"{score.extracted!r:.120}")  # fmt: skip
    return problems


def _repair_prompt(task: RubricTask, rubric: Rubric, problems: Sequence[str], policy: RubricPolicy) -> ChatPrompt:
    base = build_rubric_prompt(task.prompt, task.reference_answer, task.task_type, task.image, policy)
    failures = "\n".join(f"- {p}" for p in problems)
    user = (
        f"{base.user}\n\n# Checklist to repair\n{json.dumps(rubric.model_dump(), ensure_ascii=False)}\n\n"
        f"# Dual check failures\nThe reference answer fails these essential items:\n{failures}\n"
        "Fix each reference (or the item), or remove items that are wrong or unnecessary; keep the rest as it is."
    )
    return ChatPrompt(base.system, user, base.image)


async def _ask(teacher: Engine, prompt: ChatPrompt, task: RubricTask, policy: RubricPolicy) -> Rubric | str:
    try:
        text = await complete_json(teacher, prompt, RUBRIC_SCHEMA, "rubric")
    except CallFailed as exc:
        return f"call failed: {exc}"
    try:
        return parse_rubric(text, task.task_type, policy)
    except RubricError as exc:
        return f"invalid rubric: {exc}"
    except ValueError as exc:
        return f"not a rubric: {str(exc).splitlines()[0]}"


async def build_rubric(
    task: RubricTask,
    teachers: Sequence[Engine],
    aggregator: Engine,
    checker: RubricReader | None = None,
    policy: RubricPolicy | None = None,
    repair_rounds: int = 1,
) -> RubricOutcome:
    """Propose, merge and dual-check the rubric of one task (see the module docstring); the reference answer is read
    by ``checker`` (default: :class:`genrm.methods.rubric.readers.RuleReader`)."""
    policy = policy or RubricPolicy()
    checker = checker or RuleReader()
    outcome = RubricOutcome(task.id, None)
    prompt = build_rubric_prompt(task.prompt, task.reference_answer, task.task_type, task.image, policy)
    answers = await asyncio.gather(*(_ask(t, prompt, task, policy) for t in teachers))
    valid = []
    for teacher, answer in zip(teachers, answers, strict=True):
        outcome.proposals[teacher.model] = "ok" if isinstance(answer, Rubric) else answer
        if isinstance(answer, Rubric):
            valid.append(answer)
    if not valid:
        outcome.dropped = "no teacher wrote a valid rubric"
        return outcome
    rubric: Rubric | str = valid[0]
    if len(valid) > 1:
        merge = build_rubric_aggregation_prompt(
            task.prompt, valid, task.reference_answer, task.task_type, task.image, policy
        )
        rubric = await _ask(aggregator, merge, task, policy)
        if isinstance(rubric, str):
            outcome.dropped = "the aggregation failed"
            outcome.failures.append(rubric)
            return outcome
        outcome.merged = True
    assert isinstance(rubric, Rubric)
    if task.reference_answer is None:
        outcome.rubric = rubric
        return outcome
    problems = await dual_check(rubric, task, checker)
    outcome.dual_check = "passed"
    for _ in range(repair_rounds):
        if not problems:
            break
        outcome.failures.extend(problems)
        repaired = await _ask(aggregator, _repair_prompt(task, rubric, problems, policy), task, policy)
        if isinstance(repaired, str):
            outcome.failures.append(repaired)
            break
        rubric, outcome.dual_check = repaired, "repaired"
        problems = await dual_check(rubric, task, checker)
    if problems:
        outcome.failures.extend(problems)
        outcome.dual_check, outcome.dropped = "failed", "the reference answer fails an essential criterion"
        return outcome
    outcome.rubric = rubric
    return outcome


async def build_rubrics(
    tasks: Sequence[RubricTask],
    teachers: Sequence[Engine],
    aggregator: Engine,
    checker: RubricReader | None = None,
    policy: RubricPolicy | None = None,
    repair_rounds: int = 1,
    concurrency: int = 16,
    progress: bool = False,
) -> RubricReport:
    """:func:`build_rubric` for every task, ``concurrency`` tasks at a time; outcomes in the order of ``tasks``."""
    from tqdm import tqdm

    if not teachers:
        raise ValueError("at least one teacher is needed")
    slots = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(tasks), unit="task", desc="writing rubrics", disable=not progress)

    async def one(task: RubricTask) -> RubricOutcome:
        async with slots:
            outcome = await build_rubric(task, teachers, aggregator, checker, policy, repair_rounds)
        bar.update(1)
        return outcome

    try:
        return RubricReport(list(await asyncio.gather(*(one(t) for t in tasks))))
    finally:
        bar.close()
