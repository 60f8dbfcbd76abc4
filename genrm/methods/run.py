"""Driving a reward method over one group: prepare, judge, score (see :mod:`genrm.methods.base`).

The async form is what a server awaits (it runs :meth:`~genrm.methods.base.RewardMethod.score` itself, in a worker
thread); the blocking form is what the command line, evaluation and in-process RL call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from genrm.engine.blocking import run_blocking
from genrm.engine.judge import Judge, make_judge
from genrm.engine.spec import EngineOptions, JudgeSpec
from genrm.engine.types import ChatRequest, Reply
from genrm.methods.base import GroupResult, HasScriptedJudge, RewardMethod


def check_judge(method: RewardMethod, judge: Judge) -> None:
    """Raise ValueError when ``judge`` cannot judge for ``method``: no model, and the method has no fixed-rule
    reader."""
    if judge.engine is None and not method.reads_without_engine:
        raise ValueError(f"the {method.name} method needs a judge model; 'rule' runs none (name one: "
                         "transformers:PATH, sglang:MODEL@URL or openai:MODEL@URL)")  # fmt: skip


def _failures_as_replies(script: Callable[[ChatRequest], str]) -> Callable[[ChatRequest], str | Reply]:
    def answer(request: ChatRequest) -> str | Reply:
        try:
            return script(request)
        except ValueError as exc:  # a request the script cannot answer is a failed judgement, as a model's would be
            return Reply(error=str(exc))

    return answer


def method_judge(
    method: RewardMethod, spec: JudgeSpec | str, options: EngineOptions | None = None, parse_retries: int = 1
) -> Judge:
    """The judge ``spec`` names, for ``method``: the method's own scripted judge for ``scripted``
    (:class:`genrm.methods.base.HasScriptedJudge`; relative image paths read against ``options.image_dir``), else
    :func:`genrm.engine.make_judge`'s. Checked with :func:`check_judge`.

    Raises ValueError for a malformed spec, a checkpoint that cannot be loaded, ``scripted`` for a method without a
    scripted judge, or a judge that cannot judge for the method.
    """
    from genrm.engine.scripted import ScriptedEngine

    spec = JudgeSpec.parse(spec) if isinstance(spec, str) else spec
    if spec.backend != "scripted":
        judge = make_judge(spec, options, parse_retries)
    elif isinstance(method, HasScriptedJudge):
        image_dir = Path(options.image_dir) if options is not None and options.image_dir else None
        script = _failures_as_replies(method.scripted_judge(image_dir))
        judge = Judge(ScriptedEngine(script, model=f"scripted-{method.name}"), parse_retries)
    else:
        raise ValueError(f"the {method.name} method has no scripted judge (its judge without a model is 'rule')")
    check_judge(method, judge)
    return judge


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
