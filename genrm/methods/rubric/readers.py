"""Rubric readers: one protocol, the ``rule`` reader that needs no model, and the reader of any engine's answers.

A rubric reader receives one group (a prompt, the rubric's plans, the G responses, the exposure setting) and returns
one checked judgement per response (:class:`genrm.methods.rubric.judge_output.ParsedJudgement`). :class:`EngineReader`
builds the scoring prompts (:mod:`genrm.methods.rubric.prompts`), asks a :class:`genrm.engine.Engine` (HTTP, in
process or scripted: all the same here) and parses each answer with
:func:`genrm.methods.rubric.judge_output.parse_judge_output`; :class:`RuleReader` reads the responses by fixed rules.
Execution and aggregation are the same whichever read. :func:`rubric_reader` is the rubric reader of a
:class:`genrm.engine.Judge` (the one spelling of a judge, made by :func:`genrm.engine.make_judge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from genrm.choices import DEFAULT_SCORING_FORMAT, Exposure, ScoringFormat
from genrm.engine import Engine, Judge, Reader, Reply, ask
from genrm.engine.types import ChatRequest
from genrm.methods.rubric.answer_extraction import (
    AnswerSpan,
    criterion_part,
    final_answer_span,
    part_span,
    read_prediction,
)
from genrm.methods.rubric.answer_schema import scoring_json_schema
from genrm.methods.rubric.judge_output import UNREADABLE, CriterionJudgement, ParsedJudgement, parse_judge_output
from genrm.methods.rubric.planning import CriterionPlan
from genrm.methods.rubric.prompts import build_group_prompts
from verifiers import format_call
from verifiers.literals import without_control_characters

#: The schema name of a scoring answer in an OpenAI ``response_format``.
SCORING_SCHEMA_NAME = "judge_output"


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """What a reader needs to judge the responses to one prompt.

    Attributes:
        prompt: the question the policy answered.
        plans: the rubric's plans as the judge's output is read (``genrm.methods.rubric.prompts.exposed_plans``).
        responses: the G responses, in order.
        image: the instance's image (path, URL or data URI); only the ``vlm`` exposure shows it.
        exposure: what the judge sees of the rubric.
        answer_format: the version of the answer format the judge is asked for (its reader takes both).
    """

    prompt: str
    plans: Sequence[CriterionPlan]
    responses: Sequence[str]
    image: str | None = None
    exposure: Exposure = "minimal"
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT


@runtime_checkable
class RubricReader(Protocol):
    """Reads a judgement of every response of a group against the rubric.

    Attributes:
        name: the backend's name in health reports and records (``rule``, ``sglang``, ...).
        model: the model that judges (served name or checkpoint path; ``rule`` for the rule judge).
        engine: the engine that answers, or None for a judge that runs no model.
        sees_images: whether the judge is shown an instance's image under the ``vlm`` exposure.
    """

    name: str
    model: str
    engine: Engine | None
    sees_images: bool

    async def read(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One checked judgement per response of ``request``, in order; never raises on a response's text (raises
        BackendUnavailable when the model cannot be reached)."""
        ...

    async def health(self) -> tuple[bool, str]:
        """Whether the judge can judge now, and a short detail."""
        ...

    async def aclose(self) -> None:
        """Release the engine."""
        ...


def _rule_judgement(plan: CriterionPlan, response: str, span: AnswerSpan | None) -> CriterionJudgement:
    if plan.verifier is None:
        reason = f"{plan.path} is a fuzzy criterion; the rule backend judges only verifiable criteria"
        return CriterionJudgement(plan, failure="unscored", reason=reason)
    part = criterion_part(plan.criterion.criterion)
    if part is not None:  # a criterion on one part of a multi-part question reads that part's answer
        span = part_span(response, part, span)
    # no value stated is predict=None (score 0), never '' or [], which would match an empty target ([] for an object
    # that is not in the image) and pay a response that answers nothing
    read, where = read_prediction(plan.verifier, span)
    keywords = {key: without_control_characters(value) for key, value in read.items()}
    call = format_call(plan.verifier, keywords)
    return CriterionJudgement(plan, rationale=where, call=call, reason=f"{plan.verifier} call")


class RuleReader:
    """The non-parametric reader: reads each response's final answer by fixed rules
    (:mod:`genrm.methods.rubric.answer_extraction`).

    Verifiable criteria get a scoring-side call with what the rules extract (``predict=None`` when the response states
    no value, or several final answers, which scores 0 whatever the target); fuzzy criteria come back ``unscored``, so
    a reward that depends on them is unknown rather than guessed. The rubric's targets are never read.
    """

    name = model = "rule"
    engine: Engine | None = None
    sees_images = True  # it reads no image, so no exposure hides one from it

    def read_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response, in this thread: the extracted calls, and ``unscored`` for fuzzy criteria."""
        judgements = []
        for response in request.responses:
            text = response if isinstance(response, str) else ""
            span = final_answer_span(text) if isinstance(response, str) else None
            criteria = [_rule_judgement(plan, text, span) for plan in request.plans]
            thought = f"final answer ({span.source}): {span.text!r:.200}" if span else "no final answer found"
            judgements.append(ParsedJudgement(None, "rule extraction", thought, criteria, read_by_rule=True))
        return judgements

    async def read(self, request: GroupRequest) -> list[ParsedJudgement]:
        """:meth:`read_group` in a worker thread (responses may be long), so the event loop stays free."""
        return await asyncio.to_thread(self.read_group, request)

    async def health(self) -> tuple[bool, str]:
        """Always reachable: it runs in process."""
        return True, "in process"

    async def aclose(self) -> None:
        """Nothing to release."""


class EngineReader:
    """Reads groups' judgements from an engine's answers (see the module docstring).

    An answer that cannot be read (``not_json``, ``schema``) is asked for again, sampling, ``parse_retries`` times;
    a request the engine could not answer is that response's ``backend_error`` judgement with the engine's reason.
    Nothing is ever turned into a credit.
    """

    def __init__(self, engine: Engine, parse_retries: int = 1, name: str | None = None) -> None:
        """Configure the reader. Every request carries the rubric's JSON schema; the engine constrains decoding to it
        when it is configured to (``EngineOptions.constrained``).

        Args:
            engine: who answers.
            parse_retries: new samples for an answer that could not be read (>= 0).
            name: the reader's name in reports (default: the engine's kind, e.g. ``sglang``).
        """
        if parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")
        self.engine, self.parse_retries = engine, parse_retries
        self.name, self.model = name or engine.name, engine.model

    @property
    def sees_images(self) -> bool:
        """Whether the engine's model is shown images."""
        return self.engine.sees_images

    async def read(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response of ``request``, in order; the group's requests go to the engine together."""
        schema = scoring_json_schema(request.plans, answer_format=request.answer_format)
        prompts = build_group_prompts(request.prompt, request.plans, request.responses, request.exposure,
                                      request.image, request.answer_format)  # fmt: skip

        def read(reply: Reply) -> tuple[ParsedJudgement, bool]:
            parsed = parse_judge_output(reply.text, request.plans)
            if parsed.failure not in UNREADABLE:
                return parsed, True
            if not reply.finished:
                parsed = ParsedJudgement(parsed.failure, f"{parsed.reason} (the answer hit the token budget)")
            return parsed, False

        reader = Reader(read, lambda reason: ParsedJudgement("backend_error", reason))
        requests = [ChatRequest(prompt, schema, SCORING_SCHEMA_NAME) for prompt in prompts]
        return await ask(self.engine, requests, reader, self.parse_retries)

    async def health(self) -> tuple[bool, str]:
        """The engine's health."""
        return await self.engine.health()

    async def aclose(self) -> None:
        """Close the engine."""
        await self.engine.aclose()


def rubric_reader(judge: Judge) -> RubricReader:
    """The rubric reader of ``judge``: :class:`RuleReader` when no model judges, else an :class:`EngineReader` on its
    engine with its parse retries. Closing the judge closes the engine; the reader holds nothing of its own."""
    if judge.engine is None:
        return RuleReader()
    return EngineReader(judge.engine, judge.parse_retries, judge.label)
