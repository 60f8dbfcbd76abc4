"""Driving a reward method over one group: prepare, judge, score (see :mod:`genrm.methods.base`).

The async form is what a server awaits (it runs :meth:`~genrm.methods.base.RewardMethod.score` itself, in a worker
thread); the blocking form is what the command line, evaluation and in-process RL call.
"""

from __future__ import annotations

from typing import Any

from genrm.engine.blocking import run_blocking
from genrm.engine.judge import Judge
from genrm.methods.base import GroupResult, RewardMethod


def check_judge(method: RewardMethod, judge: Judge) -> None:
    """Raise ValueError when ``judge`` cannot judge for ``method``: no model, and the method has no fixed-rule
    reader."""
    if judge.engine is None and not method.reads_without_engine:
        raise ValueError(f"the {method.name} method needs a judge model; 'rule' runs none (name one: "
                         "transformers:PATH, sglang:MODEL@URL or openai:MODEL@URL)")  # fmt: skip


async def judge_prepared(method: RewardMethod, prepared: Any, judge: Judge) -> list[Any]:
    """One reading per response of ``prepared`` (none asked for a group without responses)."""
    if not method_responses(prepared):
        return []
    return await method.judge(prepared, judge)


def method_responses(prepared: Any) -> list[str]:
    """The responses of a prepared group (every prepared group keeps its instance as ``instance``)."""
    return list(prepared.instance.responses)


def score_instance(method: RewardMethod, instance: Any, judge: Judge) -> GroupResult:
    """Prepare ``instance`` (one group of ``method.instance_model``), have ``judge`` judge its responses on the
    engine loop (:func:`genrm.engine.run_blocking`), and score them in this thread.

    Raises :class:`genrm.methods.base.MethodInputError` when the instance cannot be scored (nothing is judged).
    """
    prepared = method.prepare(instance)
    readings = run_blocking(judge_prepared(method, prepared, judge))
    return method.score(prepared, readings)
