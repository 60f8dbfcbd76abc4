"""The rubric writer (RubiCap section 3.2, prompts 1-2): its prompt, the JSON schema of its answer, and the checks
every proposed criterion must pass before it enters a rubric.

The writer sees the image, the student's caption and the K teachers' captions, anonymised as ``Model 1`` to
``Model K`` (no teacher's name reaches it, so no house style is favoured). It keeps only elements on which enough
teachers agree, diagnoses what the student got wrong or left out, and writes one binary criterion per deficiency with
a severity weight (1 minor, 2 important, 3 critical), the teachers that support it and whether the student already
meets it.

**Consensus threshold.** The source says both "at least ⌈K/2⌉ teachers" (section 3.2, algorithm 1) and "at least 2
teachers" (its prompt, written for K = 5). Here it is a setting, ``min_teachers``, by default ⌈K/2⌉; the prompt states
the number in force, and :func:`check_criteria` enforces it on the writer's own ``reference_teachers`` (a writer that
cites too few teachers has its criterion dropped, whatever it claims).

Checks, each a reason a proposed criterion is dropped: ``malformed`` (not an object of the criterion's form),
``weight`` (not 1, 2 or 3), ``student_met`` (the writer says the student already meets it: such a criterion is not
discriminative), ``consensus`` (fewer supporting teachers than the threshold; unknown or repeated labels do not
count), ``duplicate`` (the same criterion text again), ``over_limit`` (beyond :data:`.models.MAX_CRITERIA`).

Not here: asking the captioners and the writer, and the report (:mod:`genrm.methods.rubicap.caption_rubrics`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from genrm.engine.types import ChatPrompt, ChatRequest
from genrm.methods.answer_json import extract_json_object
from genrm.methods.rubicap.models import MAX_CRITERIA, CaptionCriterion

#: The reasons a proposed criterion is dropped, in the order they are checked.
DROP_REASONS = ("malformed", "weight", "student_met", "consensus", "duplicate", "over_limit")
#: The most criteria a writer's answer may propose (more is a writer that loops).
MAX_PROPOSED = 64
_LABEL = re.compile(r"^\s*(?:model\s*)?(\d{1,3})\s*$", re.IGNORECASE)

_SYSTEM = """You are an expert evaluator writing highly discriminative rubrics for the captions of one image.

Find the criteria that separate an excellent caption of this image from the weak student caption, covering every \
critical dimension of caption quality, and nothing the student already does well.

Rules:
1. Discriminative power first: include a criterion only where the student caption fails against the teachers' \
consensus. Do not write criteria the student already meets.
2. Teacher consensus is the ground truth: an element (object, attribute, relation, interpretation) counts as true \
only if at least %(needed)d of the %(teachers)d teacher captions describe it correctly.
3. Weight by severity: 3 for critical failures (main subject misidentified, a major element hallucinated, an \
essential relation missing); 2 for important ones (secondary objects, spatial or contextual accuracy, attribute \
precision); 1 for minor polish (fluency, clarity, small details).
4. Binary and verifiable: every criterion has a clear pass/fail rule that can be checked from a caption alone.
5. Quality over quantity: a few sharp criteria beat many generic ones.

Answer with one JSON object: {"rubrics": [{"criterion", "description", "evaluation_rule", "weight", "justification", \
"student_already_met", "reference_teachers": ["Model k", ...], "teacher_consensus"}, ...]}."""


def writer_schema() -> dict[str, Any]:
    """The schema of the writer's answer (weights are left to the checks, so a wrong one is seen and counted)."""
    text = {"type": "string", "maxLength": 2000}
    item = {"type": "object", "additionalProperties": False,
            "required": ["criterion", "description", "evaluation_rule", "weight", "justification",
                         "student_already_met", "reference_teachers", "teacher_consensus"],
            "properties": {"criterion": text, "description": text, "evaluation_rule": text,
                           "weight": {"type": "number"}, "justification": text,
                           "student_already_met": {"type": "boolean"},
                           "reference_teachers": {"type": "array", "maxItems": 16,
                                                  "items": {"type": "string", "maxLength": 32}},
                           "teacher_consensus": text}}  # fmt: skip
    return {"type": "object", "additionalProperties": False, "required": ["rubrics"],
            "properties": {"rubrics": {"type": "array", "maxItems": MAX_PROPOSED, "items": item}}}  # fmt: skip


def writer_request(image: str, student: str, teachers: Sequence[str], needed: int) -> ChatRequest:
    """The writer's request: the image, the student's caption, then the teachers' captions as ``Model 1..K``."""
    listing = "\n".join(f"{k}. Model {k}: {caption}" for k, caption in enumerate(teachers, 1))
    user = (f"WEAK STUDENT CAPTION:\n{student}\n\nTEACHER CAPTIONS:\n{listing}\n\nExamine the image, find the "
            f"teachers' consensus, and write one binary criterion for each way the student caption falls short "
            f"of it (accuracy, completeness, clarity, detail, relations, context).")  # fmt: skip
    system = _SYSTEM % {"needed": needed, "teachers": len(teachers)}
    return ChatRequest(ChatPrompt(system, user, image), writer_schema(), "rubicap_writer")


def _supporters(labels: object, teachers: int) -> int:
    if not isinstance(labels, list):
        return 0
    seen = set()
    for label in labels:
        match = _LABEL.match(label) if isinstance(label, str) else None
        if match is not None and 1 <= int(match.group(1)) <= teachers:
            seen.add(int(match.group(1)))
    return len(seen)


def check_criteria(answer: str, teachers: int, needed: int) -> tuple[list[CaptionCriterion], Counter[str]] | None:
    """The criteria of the writer's ``answer`` that pass every check, and the count of those dropped per reason
    (:data:`DROP_REASONS`); None when the answer holds no ``rubrics`` list at all."""
    found = extract_json_object(answer) if isinstance(answer, str) else None
    proposed = found.get("rubrics") if isinstance(found, dict) else None
    if not isinstance(proposed, list):
        return None
    kept: list[CaptionCriterion] = []
    dropped: Counter[str] = Counter()
    seen: set[str] = set()
    for item in proposed[:MAX_PROPOSED]:
        reason = _drop_reason(item, teachers, needed, seen)
        if reason is None and len(kept) >= MAX_CRITERIA:
            reason = "over_limit"
        if reason is not None:
            dropped[reason] += 1
            continue
        kept.append(CaptionCriterion(criterion=item["criterion"], description=item.get("description", ""),
                                     evaluation_rule=item["evaluation_rule"], weight=item["weight"]))  # fmt: skip
        seen.add(item["criterion"].strip().lower())
    dropped["over_limit"] += max(0, len(proposed) - MAX_PROPOSED)
    return kept, +dropped


def _drop_reason(item: object, teachers: int, needed: int, seen: set[str]) -> str | None:
    if not isinstance(item, dict):
        return "malformed"
    try:
        CaptionCriterion(criterion=item.get("criterion"), description=item.get("description", ""),
                         evaluation_rule=item.get("evaluation_rule"), weight=2)  # fmt: skip
    except (ValidationError, TypeError):
        return "malformed"
    try:
        CaptionCriterion(criterion="x", evaluation_rule="x", weight=item.get("weight"))
    except ValidationError:
        return "weight"
    met = item.get("student_already_met")
    if not (met is False or (isinstance(met, str) and met.strip().lower() == "false")):  # met, or not said: no gap
        return "student_met"
    if _supporters(item.get("reference_teachers"), teachers) < needed:
        return "consensus"
    if item["criterion"].strip().lower() in seen:
        return "duplicate"
    return None
