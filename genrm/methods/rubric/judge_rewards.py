"""The two verifiable rewards a judge is trained on with RLVR, and the argument check they share with evaluation.

- :func:`format_reward`: 1 only when the answer is one JSON object (after an optional reasoning block) with every
  field the rubric requires, of the right type: the scoring schema (``genrm.methods.rubric.models.JudgeOutput``), one
  item per rubric criterion in each section with the criterion's text, a call of the criterion's own verifier where it
  is verifiable and a credit of 0, 0.5 or 1 where it is fuzzy (what ``genrm.methods.rubric.answer_schema`` constrains
  decoding to). Checking the generic shape alone is not enough: RLVR on it taught a tiny judge to drop criteria, since
  fewer criteria are easier to write (free-decoding schema validity 74% -> 98%, criterion slots 48% -> 0%).
- :func:`content_reward`: the mean over the rubric's criteria of: for a verifiable criterion, how well the extracted
  value matches the label's, judged by that criterion's own verifier with the label's value as the target (so
  ``expr_verify(predict='0.5')`` matches a label of ``1/2``, and a box a few units off still scores its IoU); for a
  fuzzy criterion, 1 when the credit equals the label's. Both are held to grounding as when they are scored (on by
  default): an extracted value the response does not state earns 0, however near the label's (a box a few units off
  that the response never wrote is invented, not read: its IoU would teach the judge to approximate instead of to
  copy; ``genrm.methods.rubric.execution.missing_value``), and a credit given with a quote (the ``evidence`` format)
  counts only where the quote is evidence of the response (``fuzzy_score``: found in it, with content). A criterion
  the answer gets wrong in form scores 0.

Free-text fields (``thought``, ``rationale``) are never rewarded. :func:`format_reward_func` and
:func:`content_reward_func` have the signature of TRL reward functions: they read conversational completions and the
``judge_label`` column of :func:`genrm.methods.rubric.judge_data.rlvr_record`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from genrm.choices import Exposure, check_exposure
from genrm.methods.base import judge_labels
from genrm.methods.completions import completion_text
from genrm.methods.rubric.execution import fuzzy_score, missing_value
from genrm.methods.rubric.judge_data import CriterionLabel, JudgeExample
from genrm.methods.rubric.judge_output import FUZZY_CREDITS, CriterionJudgement, ParsedJudgement, parse_judge_output
from genrm.methods.rubric.models import JudgeOutput
from genrm.methods.rubric.planning import CriterionPlan
from verifiers import run_verifier
from verifiers.calls import parse_call
from verifiers.registry import get_spec
from verifiers.result import VerifierError


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list)) and len(value) == 0)


def expected_credit(label: CriterionLabel) -> float:
    """The fuzzy credit a label calls for: its credit rounded to the nearest of 0, 0.5 and 1."""
    return min(FUZZY_CREDITS, key=lambda allowed: (abs(allowed - label.credit), allowed))


def arguments_score(plan: CriterionPlan, label_call: str, predicted_call: str) -> float:
    """How well ``predicted_call`` extracts the label's value, in [0, 1], judged by ``plan``'s verifier.

    The label's scoring-side values become the rubric-side target (``predict`` → ``target``, ``pformat`` →
    ``tformat``), with the rubric's own options kept (``ignore_case`` ...). A label of ``predict=None`` (the response
    states no value for this criterion) is matched only by ``predict=None``, and one of the empty value (the response
    says there is none) only by the empty value. Never raises: an unreadable call scores 0.
    """
    if plan.verifier is None:
        raise ValueError(f"{plan.path} is fuzzy; arguments are checked on verifiable criteria only")
    try:
        label = parse_call(label_call, side="scoring").as_dict()
        predicted = parse_call(predicted_call, side="scoring").as_dict()
    except VerifierError:
        return 0.0
    wanted, given = label.get("predict"), predicted.get("predict")
    if wanted is None:  # the response states no value: only predict=None reads it right
        return 1.0 if given is None else 0.0
    if _empty(wanted):  # the response says there is none: only the empty value reads it right
        return 1.0 if given is not None and _empty(given) else 0.0
    rubric_side = get_spec(plan.verifier).target_of_prediction(plan.target_kwargs, label)
    result = run_verifier(plan.verifier, rubric_side, predicted)
    return result.score if result.status == "ok" else 0.0


def criterion_content(judged: CriterionJudgement, label: CriterionLabel, response: str | None = None) -> float:
    """The content score of one judged criterion against its label, in [0, 1] (0 when it failed in form); given the
    ``response``, an extracted value counts only where the response states it, and a fuzzy credit that comes with a
    quote only where the quote is evidence of it."""
    if judged.failure is not None:
        return 0.0
    if judged.plan.verifier is None:
        credit = fuzzy_score(judged.plan, judged, response, judged.quote is not None).score
        return 1.0 if credit == expected_credit(label) else 0.0
    if label.call is None or judged.call is None:
        return 0.0
    if response is not None and missing_value(judged.plan, judged.call, response) is not None:
        return 0.0
    return arguments_score(judged.plan, label.call, judged.call)


def judgement_content(parsed: ParsedJudgement, example: JudgeExample) -> float:
    """The mean content score over the example's criteria, in [0, 1]; 0 when the answer could not be read."""
    if parsed.failure is not None or not parsed.criteria:
        return 0.0
    scores = [criterion_content(j, label, example.response)
              for j, label in zip(parsed.criteria, example.labels, strict=True)]  # fmt: skip
    return sum(scores) / len(scores)


def format_reward(text: str, plans: Sequence[CriterionPlan] | None = None) -> float:
    """1.0 when ``text`` is one JSON object of the scoring schema (an optional ``<think>`` block may precede it)
    and, given the rubric's ``plans``, fills every criterion slot with the right text and type; else 0.0."""
    if not isinstance(text, str):
        return 0.0
    body = text.strip()
    if body.lower().startswith("<think>") and "</think>" in body.lower():
        body = body[body.lower().index("</think>") + len("</think>") :].strip()
    try:
        JudgeOutput.model_validate(json.loads(body))
    except (ValueError, RecursionError, TypeError):
        return 0.0
    if plans is not None and not parse_judge_output(body, plans).ok:
        return 0.0
    return 1.0


def content_reward(text: str, example: JudgeExample, exposure: Exposure = "minimal") -> float:
    """The content reward of a judge answer ``text`` for ``example`` (see the module docstring), in [0, 1]."""
    return judgement_content(parse_judge_output(text, example.plans(exposure)), example)


def read_label(raw: str) -> tuple[JudgeExample, Exposure]:
    """The example and exposure of a ``judge_label`` column value."""
    value = json.loads(raw)
    return JudgeExample.model_validate(value["example"]), check_exposure(value["exposure"])


def _labels(name: str, completions: Sequence[Any], columns: dict[str, Any]) -> list[tuple[JudgeExample, Exposure]]:
    return [read_label(raw) for raw in judge_labels(columns, name, len(completions))]


def format_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: :func:`format_reward` of each completion against its row's rubric (``judge_label``)."""
    labels = _labels("format_reward_func", completions, columns)
    return [format_reward(completion_text(c), e.plans(x)) for c, (e, x) in zip(completions, labels, strict=True)]


def content_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: :func:`content_reward` of each completion against its row's ``judge_label``."""
    labels = _labels("content_reward_func", completions, columns)
    return [content_reward(completion_text(c), e, x) for c, (e, x) in zip(completions, labels, strict=True)]
