"""The judge interface every backend implements, and the ``rule`` backend that needs no model.

A judge receives one group (a prompt, the rubric's plans, the G responses, the exposure setting) and returns one
checked judgement per response (:class:`genrm.judge_output.ParsedJudgement`). Model backends build the scoring prompts
(:mod:`genrm.prompts`), generate, and parse each output with :func:`genrm.judge_output.parse_judge_output`; execution
and aggregation are the same whichever backend judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from genrm.answer_extraction import AnswerSpan, extract_prediction, final_answer_span
from genrm.judge_output import CriterionJudgement, ParsedJudgement
from genrm.prompts import Exposure
from genrm.rubric import CriterionPlan


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """What a judge needs to score the responses to one prompt.

    Attributes:
        prompt: the question the policy answered.
        plans: the rubric's plans as the judge's output is read (``genrm.prompts.exposed_plans``).
        responses: the G responses, in order.
        image: the instance's image (path, URL or data URI); only the ``vlm`` exposure shows it.
        exposure: what the judge sees of the rubric.
    """

    prompt: str
    plans: Sequence[CriterionPlan]
    responses: Sequence[str]
    image: str | None = None
    exposure: Exposure = "minimal"


@dataclass(frozen=True)
class SamplingSettings:
    """How a judge answer is sampled (greedy by default: rewards should not be noisy).

    Attributes:
        max_tokens: output token budget of one answer (> 0).
        temperature: 0 for greedy decoding, else the sampling temperature (0-2).
        top_p: nucleus sampling mass (0-1], used when sampling.
        seed: seed of the sampler, or None.
    """

    max_tokens: int = 1024
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None


class BackendUnavailable(RuntimeError):
    """The judge model cannot be reached now; the request may be retried after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@runtime_checkable
class Judge(Protocol):
    """A backend that judges every response of a group against the rubric."""

    name: str

    def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One checked judgement per response of ``request``, in order. Must not raise on any response text."""
        ...


def call_string(verifier: str, keywords: dict[str, object]) -> str:
    """A scoring-side call with literal keyword values, e.g. ``expr_verify(predict='42')``."""
    # repr() writes Python literals, which is what the call parser reads back (never evaluated).
    return f"{verifier}({', '.join(f'{key}={value!r}' for key, value in keywords.items())})"


def _rule_judgement(plan: CriterionPlan, span: AnswerSpan | None) -> CriterionJudgement:
    if plan.verifier is None:
        reason = f"{plan.path} is a fuzzy criterion; the rule backend judges only verifiable criteria"
        return CriterionJudgement(plan, failure="unscored", reason=reason)
    call = call_string(plan.verifier, extract_prediction(plan.verifier, span))
    where = f"from the {span.source.replace('_', ' ')} span {span.text!r:.80}" if span else "no final answer found"
    return CriterionJudgement(plan, rationale=where, call=call, reason=f"{plan.verifier} call")


class RuleJudge:
    """The non-parametric backend: reads each response's final answer by fixed rules (``genrm.answer_extraction``).

    Verifiable criteria get a scoring-side call with what the rules extract (empty when the response has no final
    answer, which scores 0); fuzzy criteria come back ``unscored``, so a reward that depends on them is unknown
    rather than guessed. The rubric's targets are never read.
    """

    name = "rule"

    def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        """One judgement per response: the extracted calls, and ``unscored`` for fuzzy criteria."""
        judgements = []
        for response in request.responses:
            span = final_answer_span(response) if isinstance(response, str) else None
            criteria = [_rule_judgement(plan, span) for plan in request.plans]
            thought = f"final answer ({span.source}): {span.text!r:.200}" if span else "no final answer found"
            judgements.append(ParsedJudgement(None, "rule extraction", thought, criteria))
        return judgements
