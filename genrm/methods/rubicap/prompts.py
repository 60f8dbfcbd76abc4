"""What the rubicap judge is sent: a caption and the rubric's criteria (one call per criterion, or one call for all),
or the Likert baselines' questions, with the JSON schema of each answer for constrained decoding.

Layout for the prefix cache: the instructions depend only on the setting; the criterion (or the whole list of
criteria) comes first and the caption under evaluation last, so the G captions of one image share everything but
their own text: with one call per criterion, the G calls of a criterion share its prefix; with one call for all, the
G calls share the whole rubric.

The rubric judge is text-only by default (the source's judge is an LLM: the criteria carry what the committee saw);
the ``vlm`` exposure attaches the image. The Likert baselines are VLM judges and always see the image.

Not here: reading the answers (:mod:`.reading`), the rubric writer's prompt (:mod:`.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genrm.engine.types import ChatPrompt, ChatRequest
from genrm.methods.rubicap.models import CaptionCriterion

_AUDITOR = """You are a quality assurance auditor for image captions. You decide whether a caption satisfies a \
criterion by its meaning and intent, not by matching keywords.

1. Work out the facts or concepts the criterion and its evaluation rule require.
2. Check whether the caption conveys them, even in other words: synonyms ("automobile" for "car") and changes of \
structure ("a cup is held by the man" for "the man holds a cup") are fine.
3. Score 1 (pass) when the caption conveys the meaning the rule asks for, with the details it needs, however it is \
phrased. Score 0 (fail) when the caption leaves out key information, contradicts the facts, or asserts details the \
rule does not support.
Judge only against the criterion given; nothing else about the caption matters here."""

_ONE_JSON = """
Answer with one JSON object: {"reasoning": "<why the caption does or does not meet the criterion>", \
"score": 0 or 1}."""

_ALL_JSON = """
Several criteria are given, numbered. Judge each one on its own, as if it were the only one. Answer with one JSON \
object: {"verdicts": [{"reasoning": "<why>", "score": 0 or 1}, ...]}, one verdict per criterion, in their order."""

_LIKERT = """You are an expert image caption evaluator.%s

Evaluate the generated caption on these criteria:
1. Accuracy: does it correctly describe what is in the image?
2. Completeness: does it cover the important details?
3. Quality: is it well written and coherent?
Score it from 0 to 10: 0-3 poor (major inaccuracies or missing key information), 4-6 adequate (the main elements, \
but little detail or minor issues), 7-8 good (accurate and detailed), 9-10 excellent (comprehensive, high quality).
Answer with one JSON object: {"score": <0-10>}."""


def _criterion_text(criterion: CaptionCriterion) -> str:
    lines = [f"- Criterion: {criterion.criterion}"]
    if criterion.description:
        lines.append(f"- Description: {criterion.description}")
    lines.append(f"- Evaluation rule: {criterion.evaluation_rule}")
    return "\n".join(lines)


def _caption_part(caption: str) -> str:
    return f"\n\nGENERATED CAPTION TO EVALUATE:\n{caption}"


def verdict_schema() -> dict[str, Any]:
    """The schema of one criterion's verdict."""
    return {"type": "object", "additionalProperties": False, "required": ["reasoning", "score"],
            "properties": {"reasoning": {"type": "string", "maxLength": 2000}, "score": {"enum": [0, 1]}}}  # fmt: skip


def verdicts_schema(count: int) -> dict[str, Any]:
    """The schema of the verdicts on ``count`` criteria at once (exactly that many)."""
    listing = {"type": "array", "minItems": count, "maxItems": count, "items": verdict_schema()}
    return {"type": "object", "additionalProperties": False, "required": ["verdicts"],
            "properties": {"verdicts": listing}}  # fmt: skip


def likert_schema() -> dict[str, Any]:
    """The schema of a Likert baseline's score."""
    return {"type": "object", "additionalProperties": False, "required": ["score"],
            "properties": {"score": {"enum": list(range(11))}}}  # fmt: skip


def criterion_requests(
    rubric: Sequence[CaptionCriterion], captions: Sequence[str], image: str | None
) -> list[ChatRequest]:
    """One request per criterion and caption, criterion-major (the G captions of a criterion together)."""
    system, schema = _AUDITOR + _ONE_JSON, verdict_schema()
    return [ChatRequest(ChatPrompt(system, "CRITERION TO EVALUATE:\n" + _criterion_text(c) + _caption_part(caption),
                                   image), schema, "rubicap_criterion")
            for c in rubric for caption in captions]  # fmt: skip


def rubric_requests(
    rubric: Sequence[CaptionCriterion], captions: Sequence[str], image: str | None
) -> list[ChatRequest]:
    """One request per caption with every criterion of the rubric."""
    listing = "\n".join(f"{n}.\n{_criterion_text(c)}" for n, c in enumerate(rubric, 1))
    system, schema = _AUDITOR + _ALL_JSON, verdicts_schema(len(rubric))
    return [ChatRequest(ChatPrompt(system, "CRITERIA TO EVALUATE:\n" + listing + _caption_part(caption), image),
                        schema, "rubicap_rubric") for caption in captions]  # fmt: skip


def likert_requests(captions: Sequence[str], image: str, reference: str | None) -> list[ChatRequest]:
    """One request per caption for a Likert baseline: Direct-Likert (no reference) or Reference-Likert."""
    if reference is None:
        system, head = _LIKERT % "", ""
    else:
        system = _LIKERT % " Compare the generated caption with the reference caption of the same image."
        head = f"REFERENCE CAPTION:\n{reference}\n\n"
    return [ChatRequest(ChatPrompt(system, f"{head}GENERATED CAPTION:\n{caption}", image), likert_schema(),
                        "rubicap_likert") for caption in captions]  # fmt: skip
