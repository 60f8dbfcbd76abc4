"""Execution: turn a checked judge output into one raw score per criterion.

A verifiable criterion's scoring-side call (from the judge) is joined with its hidden rubric-side arguments (from the
rubric plan) and run by the verifier library; a fuzzy criterion's credit (0, 0.5 or 1) is its score. A criterion the
judge failed on, or whose check could not judge (a bad target, an internal error), has score ``None`` and says why:
it is never silently counted as 0 or 1. An unreadable prediction and a check past the deadline are verdicts of the
verifier and score 0.

A prediction of ``predict=None`` is the response stating no value (score 0 whatever the target). The empty value
(``''``, ``[]``) is the response saying there is none, which an empty target is met by; a judge trained before
``predict=None`` existed wrote the empty value for both, so when the response is known an empty prediction counts
only where the response's final answer says there is nothing
(:func:`genrm.methods.rubric.answer_extraction.states_emptiness`), and is read as ``predict=None`` otherwise.

**Grounded extraction.** A model judge's value must be found in the response it was read from
(:mod:`verifiers.provenance` says how values are compared). A value that is not there was invented: the criterion is
scored as the verifier scores no value stated (0), with status ``ungrounded`` and the judge's call kept in the record.
Values the rule reader copied out of the response (``ParsedJudgement.read_by_rule``) are not looked for again.

**Evidence for fuzzy credit.** Under the ``evidence`` answer format a reference item's credit above 0 counts only with
a quote found in the response that holds content (:func:`verifiers.provenance.find_evidence`: more than punctuation,
white space, a lone letter or a bare opener such as "Solution:"); otherwise the criterion scores 0 with status
``ungrounded``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from genrm.methods.base import UNGROUNDED
from genrm.methods.rubric.answer_extraction import final_answer_span, states_emptiness
from genrm.methods.rubric.judge_output import CriterionJudgement, ParsedJudgement
from genrm.methods.rubric.planning import CriterionPlan
from verifiers import VerifyConfig, run_verifier
from verifiers.calls import parse_call
from verifiers.provenance import find_evidence
from verifiers.registry import prediction_not_found
from verifiers.result import VerifierError


@dataclass(frozen=True, slots=True)
class CriterionScore:
    """The raw score of one criterion on one response, with where it came from.

    Attributes:
        plan: the criterion and how it is executed.
        score: raw score in [0, 1], or None when nothing was judged.
        status: ``ok``, a verifier status (``unparseable_pred``, ``timeout``, ...), or a judge failure class.
        reason: one sentence on how the score came about or what went wrong.
        extracted: the judge's call string or credit, as given.
    """

    plan: CriterionPlan
    score: float | None
    status: str
    reason: str
    extracted: str | float | None = None


def _says_none(response: str) -> bool:
    span = final_answer_span(response)
    return span is not None and states_emptiness(span.written)  # absence is read as written, as the rule reader does


def _run_call(
    plan: CriterionPlan,
    judged: CriterionJudgement,
    config: VerifyConfig | None,
    response: str | None,
    look_for_value: bool,
) -> CriterionScore:
    # The parser has checked that a model judge's call parses and names the plan's verifier (parsing again hits its
    # cache); a call that still cannot be read is a failed judgement, never an error of the whole group.
    try:
        prediction = parse_call(str(judged.call), side="scoring")
    except VerifierError as exc:
        return CriterionScore(plan, None, exc.status, f"{plan.path}: {exc}", judged.call)
    keywords = prediction.as_dict()
    # the response is read only for an empty prediction (the rare case), not for every call
    if keywords.get("predict") in ("", [], ()) and isinstance(response, str) and not _says_none(response):
        keywords["predict"] = None  # an empty value where the response does not say there is none: no value stated
    missing = None
    if look_for_value and isinstance(response, str):
        missing = prediction_not_found(str(plan.verifier), plan.target_kwargs, keywords, response)
        if missing is not None:
            keywords["predict"] = None  # an invented value is no value stated
    result = run_verifier(str(plan.verifier), plan.target_kwargs, keywords, config)
    if missing is not None and result.is_verdict:
        return CriterionScore(plan, result.score, UNGROUNDED, f"{plan.path}: {missing}", judged.call)
    score = result.score if result.is_verdict else None
    return CriterionScore(plan, score, result.status, result.reason, judged.call)


def fuzzy_score(
    plan: CriterionPlan, judged: CriterionJudgement, response: str | None, evidence: bool
) -> CriterionScore:
    """The score of a fuzzy criterion from the judge's credit; with ``evidence`` (and the ``response``), a credit above
    0 only with a quote of the response that earns it (else 0, ``ungrounded``)."""
    credit = float(judged.credit or 0.0)
    reason = f"judge credit {credit:g}"
    if evidence and credit > 0 and isinstance(response, str):
        problem = find_evidence(judged.quote, response)
        if problem is not None:
            return CriterionScore(plan, 0.0, UNGROUNDED, f"{plan.path}: {problem}", judged.credit)
        # the quote is in the response, but whether it earns the criterion is the judge's word: the record shows it
        reason += f", quoting {judged.quote!r:.120}"
    return CriterionScore(plan, credit, "ok", reason, judged.credit)


def missing_value(plan: CriterionPlan, call: str, response: str) -> str | None:
    """None when the value of a judge's ``call`` for ``plan`` is found in ``response`` (or states none, or cannot be
    read); else a sentence naming what is not there (:mod:`verifiers.provenance`)."""
    try:
        keywords = parse_call(call, side="scoring").as_dict()
    except VerifierError:
        return None
    return prediction_not_found(str(plan.verifier), plan.target_kwargs, keywords, response)


def execute(
    parsed: ParsedJudgement,
    plans: Sequence[CriterionPlan],
    config: VerifyConfig | None = None,
    response: str | None = None,
    grounded: bool = True,
    evidence: bool = False,
) -> list[CriterionScore]:
    """Raw score of every criterion of ``plans`` from one checked judge output (see the module docstring); with the
    ``response`` judged, an empty prediction counts only where it says there is nothing, and, when ``grounded``, a
    model judge's value only where the response states it and, with ``evidence`` too (the ``evidence`` format), a
    fuzzy credit only with a quote of the response that earns it."""
    checked = grounded and not parsed.read_by_rule
    if parsed.failure is not None:
        return [CriterionScore(plan, None, parsed.failure, parsed.reason) for plan in plans]
    scores = []
    for plan, judged in zip(plans, parsed.criteria, strict=True):
        if judged.failure is not None:
            extracted = judged.call if judged.call is not None else judged.credit
            scores.append(CriterionScore(plan, None, judged.failure, judged.reason, extracted))
        elif plan.verifier is None:
            scores.append(fuzzy_score(plan, judged, response, checked and evidence))
        else:
            scores.append(_run_call(plan, judged, config, response, checked))
    return scores
