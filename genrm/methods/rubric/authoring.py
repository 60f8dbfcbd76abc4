"""The prompts that ask a teacher to write a rubric for one instance, and to merge several teachers' rubrics into one
(the teacher pipeline of :mod:`.teacher_rubrics`). Only the verifiers the task type allows are offered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from genrm.engine.types import ChatPrompt
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import RubricPolicy
from genrm.methods.rubric.prompts import ROLE
from verifiers.registry import REGISTRY, render_specs

_PRINCIPLES = """Checklist principles:
- Atomic: each item checks exactly one key point or one sub-question.
- Comprehensive: together the items cover everything the question asks for.
- Precise: no redundant items and no items unrelated to the question.
- Objective: each item is decided by facts of the input or by logic, not by taste.
- Score-minded: do not count a point twice, and do not split one point into many items.

Two sections:
- essential: what the question asks for; a sound response must meet all of them, however short it is.
- additional: supporting facts, knowledge or intermediate steps that lead to the answer (may be empty).

Each item has three fields:
- criterion: a concrete assertion about the response. Never write the expected answer into it.
- reference: the ground truth for the item, or a verifier call (see below) when the answer can be checked by a tool.
- weight: 3 key (any miss is a definite error), 2 important (a noticeable flaw), 1 auxiliary (nice to have)."""

_RUBRIC_OUTPUT = """Answer with one JSON object and nothing else:
{"essential": [{"criterion": "...", "reference": "...", "weight": 3}], "additional": [...]}"""


def _verifier_block(task_type: str | None, policy: RubricPolicy) -> str:
    allowed = [name for name in REGISTRY if name in policy.allowed(task_type)]
    if not allowed:
        return "No verifier is available for this task type: every reference is ground-truth text."
    return (
        "When an item's answer can be checked by one of these verifiers, write the reference as a Python call of "
        "its rubric side with literal arguments, the answer being its target. Use only these:\n\n"
        + render_specs(allowed, side="rubric")
    )


def _task_block(prompt: str, reference_answer: str | None, task_type: str | None) -> str:
    lines = [f"# Question\n{prompt}"]
    if task_type:
        lines.append(f"# Task type\n{task_type}")
    if reference_answer is not None:
        lines.append(f"# Reference answer\n{reference_answer}")
    return "\n\n".join(lines)


def build_rubric_prompt(
    prompt: str,
    reference_answer: str | None = None,
    task_type: str | None = None,
    image: str | None = None,
    policy: RubricPolicy | None = None,
) -> ChatPrompt:
    """The conversation that asks a teacher to write a checklist rubric for one instance.

    With a ``reference_answer`` the teacher must run the dual check: confirm that the reference answer meets every
    essential item before answering, and repair any item it fails. Only the verifiers the task type allows are
    offered. Raises RubricError for an unknown task type.
    """
    policy = policy or RubricPolicy()
    parts = [
        ROLE + " Write the checklist for the question below (and its image, when there is one): it will be the "
        "only standard by which responses are scored.",
        _PRINCIPLES,
        _verifier_block(task_type, policy),
    ]
    if reference_answer is not None:
        parts.append(
            "Dual check: before you answer, check the reference answer against every essential item. An item the "
            "reference answer does not meet is wrong or unnecessary: fix it or remove it."
        )
    parts.append(_RUBRIC_OUTPUT)
    return ChatPrompt("\n\n".join(parts), _task_block(prompt, reference_answer, task_type), image)


def build_rubric_aggregation_prompt(
    prompt: str,
    candidates: Sequence[Rubric],
    reference_answer: str | None = None,
    task_type: str | None = None,
    image: str | None = None,
    policy: RubricPolicy | None = None,
) -> ChatPrompt:
    """The conversation that merges several teachers' rubrics for one instance into one.

    The merger keeps the items most candidates agree on, removes duplicates and unrelated items, does not split
    points, and checks every reference (against the reference answer when there is one).
    """
    if not candidates:
        raise ValueError("rubric aggregation needs at least one candidate rubric")
    policy = policy or RubricPolicy()
    parts = [
        ROLE + " Several writers have each produced a checklist for the same question. Merge them into one.",
        _PRINCIPLES,
        _verifier_block(task_type, policy),
        "Merging rules:\n- Keep only items that most candidate checklists check, in some wording.\n"
        "- Remove duplicates and items unrelated to the question.\n- Do not split one point into several items.\n"
        "- Make sure every reference is correct"
        + (
            ", and that the reference answer meets every essential item." if reference_answer is not None else "."
        ),  # fmt: skip
        _RUBRIC_OUTPUT,
    ]
    listed = "\n\n".join(
        f"## Candidate {n}\n{json.dumps(c.model_dump(), ensure_ascii=False)}" for n, c in enumerate(candidates, 1)
    )
    user = f"{_task_block(prompt, reference_answer, task_type)}\n\n# Candidate checklists\n{listed}"
    return ChatPrompt("\n\n".join(parts), user, image)
