"""Reading the judge's answer: find the JSON, check it against the rubric, and classify every failure.

The judge is asked for one JSON object (``genrm.methods.rubric.models.JudgeOutput``). Models wrap it in code fences,
put a reasoning block (``<think>...</think>``) before it, or add text after it; all of that is accepted. What is found
is then checked against the rubric's execution plan, criterion by criterion. Failures are never hidden, and never
turned into a credit; each has a class:

- ``not_json``: no JSON object could be read from the output;
- ``schema``: the object lacks a required field, has one of the wrong type, or a fuzzy credit that is not the number
  0, 0.5 or 1 (``true``, ``"1"`` and ``"1.0"`` are not numbers);
- ``criterion_mismatch``: the sections hold a different number of criteria than the rubric, or a criterion's copied
  text (the ``rlr3`` format; the ``compact`` one copies none and is read by position) is not the rubric's (compared
  after normalizing case and white space, with a similarity of at least 0.8);
- ``wrong_path``: a number where the rubric asks for a verifier call, or a call where it asks for a credit;
- ``wrong_verifier``: a call to another verifier than the criterion's;
- ``bad_call``: a call string that does not parse, or uses keywords the scoring side does not take.

The first three concern the whole output (no criterion is usable); the last three concern one criterion, and the
others remain usable. One more class, ``unscored``, is set by a backend that does not judge a kind of criterion at all
(the ``rule`` backend and fuzzy criteria): nothing went wrong, but there is no score either. And ``backend_error``: the
judge model was not reached or gave no usable answer for this response (time-out, server error after retries).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError
from rapidfuzz.distance import Levenshtein

from genrm.methods.answer_json import extract_json_object
from genrm.methods.rubric.models import SECTIONS, JudgedCriterion, JudgeOutput
from genrm.methods.rubric.planning import CriterionPlan, looks_like_call
from verifiers.calls import parse_call
from verifiers.result import UnknownVerifierError, VerifierError

FailureClass = Literal[
    "not_json", "schema", "criterion_mismatch", "wrong_path", "wrong_verifier", "bad_call", "unscored", "backend_error"
]

#: Whole-answer failures a new sample may cure: the answer is not JSON, or not of the scoring schema.
UNREADABLE: frozenset[FailureClass] = frozenset({"not_json", "schema"})
FUZZY_CREDITS: frozenset[float] = frozenset({0.0, 0.5, 1.0})
_MIN_CRITERION_SIMILARITY = 0.8
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class CriterionJudgement:
    """The judge's answer on one criterion, checked against its plan.

    Exactly one of ``credit`` (fuzzy) and ``call`` (verifiable) is set when ``failure`` is None.
    """

    plan: CriterionPlan
    rationale: str = ""
    credit: float | None = None
    call: str | None = None
    failure: FailureClass | None = None
    reason: str = ""
    quote: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedJudgement:
    """The whole judge output, checked: a whole-output failure, or one judgement per rubric criterion.

    ``read_by_rule`` marks the rule reader's judgements, whose values are copied out of the response by construction
    (a model judge's are looked for in the response before they count: ``genrm.methods.rubric.execution``)."""

    failure: FailureClass | None
    reason: str
    thought: str = ""
    criteria: list[CriterionJudgement] = field(default_factory=list)
    read_by_rule: bool = False

    @property
    def ok(self) -> bool:
        """True when the output and every criterion in it were read without failure."""
        return self.failure is None and all(c.failure is None for c in self.criteria)


def _normalized(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _check_item(plan: CriterionPlan, item: JudgedCriterion) -> CriterionJudgement:
    base = {"plan": plan, "rationale": item.rationale}
    expected = _normalized(plan.criterion.criterion)
    copied = item.criterion
    similarity = 1.0 if copied is None else Levenshtein.normalized_similarity(_normalized(copied), expected)
    if similarity < _MIN_CRITERION_SIMILARITY:
        reason = f"{plan.path} copies criterion {copied!r:.80} instead of the rubric's"
        return CriterionJudgement(**base, failure="criterion_mismatch", reason=reason)
    credit = item.credit
    if plan.verifier is None:
        if isinstance(credit, str) and looks_like_call(credit):
            reason = f"{plan.path} is a fuzzy criterion: credit must be 0, 0.5 or 1, not a call"
            return CriterionJudgement(**base, failure="wrong_path", reason=reason)
        if isinstance(credit, str):  # "1" is text, never read as the number: the judge is asked for a JSON number
            reason = f"{plan.path}: credit must be the number 0, 0.5 or 1, not the text {credit!r:.40}"
            return CriterionJudgement(**base, failure="schema", reason=reason)
        if isinstance(credit, bool) or credit not in FUZZY_CREDITS:
            reason = f"{plan.path}: credit {credit!r} is not 0, 0.5 or 1"
            return CriterionJudgement(**base, failure="schema", reason=reason)
        return CriterionJudgement(**base, credit=float(credit), reason="fuzzy credit", quote=item.quote)
    if not isinstance(credit, str):
        reason = f"{plan.path} is verifiable: credit must be a {plan.verifier}(predict=...) call, not {credit!r}"
        return CriterionJudgement(**base, failure="wrong_path", reason=reason)
    try:
        call = parse_call(credit, side="scoring")
    except UnknownVerifierError as exc:
        return CriterionJudgement(**base, failure="wrong_verifier", reason=f"{plan.path}: {exc}")
    except VerifierError as exc:
        return CriterionJudgement(**base, failure="bad_call", reason=f"{plan.path}: {exc}")
    if call.name != plan.verifier:
        reason = f"{plan.path} calls {call.name}; the rubric asks for {plan.verifier}"
        return CriterionJudgement(**base, failure="wrong_verifier", reason=reason)
    return CriterionJudgement(**base, call=credit, reason=f"{call.name} call")


def parse_judge_output(text: str, plans: Sequence[CriterionPlan]) -> ParsedJudgement:
    """Read a judge's raw output against the rubric's plans (essential first), in either answer format (items with
    or without their criterion copied; ``genrm.methods.rubric.models``). Never raises on any string."""
    if not isinstance(text, str):
        return ParsedJudgement("not_json", f"the judge output is a {type(text).__name__}, not text")
    raw = extract_json_object(text)
    if raw is None:
        return ParsedJudgement("not_json", "no JSON object found in the judge output")
    try:
        output = JudgeOutput.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'output'}: {e['msg']}" for e in exc.errors(include_url=False)[:5]
        )
        return ParsedJudgement("schema", f"the JSON does not follow the scoring schema: {problems}")
    expected = {section: [p for p in plans if p.section == section] for section in SECTIONS}
    for section in SECTIONS:
        got, want = len(getattr(output, section)), len(expected[section])
        if got != want:
            reason = f"{section} has {got} criteria; the rubric has {want}"
            return ParsedJudgement("criterion_mismatch", reason, output.thought)
    judged = [
        _check_item(plan, item)
        for section in SECTIONS
        for plan, item in zip(expected[section], getattr(output, section), strict=True)
    ]
    return ParsedJudgement(None, "read", output.thought, judged)
