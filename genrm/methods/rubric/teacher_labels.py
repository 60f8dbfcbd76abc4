"""Judge-training labels from several teachers executing the same rubric (the median rule of section 4.4).

Every teacher judges every response of an instance, as the reward server's judge would (same prompts, schema and
parser). Per response and criterion, each teacher's answer gives a credit: the verifier's score of its extracted value
for a verifiable criterion, its 0 / 0.5 / 1 for a fuzzy one. The label keeps the **median credit** (the lower median
for an even count, so that it is always some teacher's credit and never rounds a split vote up), and, for a
verifiable criterion, the extracted value (call) of a teacher whose credit equals that median; its rationale comes
along. A criterion with fewer than ``min_teachers`` usable answers drops the response, with the reason in the report:
a label is never guessed.

Teachers are asked in the ``evidence`` format: a fuzzy credit above 0 comes with the passage of the response that
earns it, and counts only where that quote is evidence of the response (``genrm.methods.rubric.execution``), as a
value counts only where the response states it. A fuzzy label keeps the chosen teacher's quote, which the judge is
trained to write under the ``evidence`` format.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from genrm.choices import DEFAULT_CONCURRENCY
from genrm.methods.base import UNGROUNDED
from genrm.methods.labelling import LabelReport, label_each, teachers_needed
from genrm.methods.rubric.execution import CriterionScore, execute
from genrm.methods.rubric.judge_data import CriterionLabel, JudgeExample
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.readers import GroupRequest, RubricReader
from verifiers import format_call


def _usable(score: CriterionScore) -> bool:
    return score.score is not None


def median_label(
    scores: Sequence[CriterionScore | None],
    rationales: Sequence[str],
    min_teachers: int,
    quotes: Sequence[str | None] | None = None,
) -> tuple[CriterionLabel | None, int | None, str]:
    """The label of one criterion from each teacher's score of it (None where the teacher gave none).

    Args:
        scores: per teacher, its executed score of the criterion, or None.
        rationales: per teacher, its rationale for the criterion ("" where none).
        min_teachers: usable scores needed for a label (>= 1).
        quotes: per teacher, the passage of the response its credit quotes (None where none); a fuzzy label takes
            the chosen teacher's.

    Returns the label (or None), the index of the teacher whose answer it took, and a reason when there is no label.
    """
    usable = [(t, s) for t, s in enumerate(scores) if s is not None and _usable(s)]
    if len(usable) < min_teachers:
        plan = next(s.plan for s in scores if s is not None)
        return None, None, f"fewer than {min_teachers} teachers gave a usable answer on a criterion ({plan.section})"
    median = statistics.median_low([float(s.score) for _, s in usable])  # type: ignore[arg-type]
    teacher, chosen = next((t, s) for t, s in usable if float(s.score) == median)  # type: ignore[arg-type]
    plan = chosen.plan
    call = str(chosen.extracted) if plan.verifier is not None else None
    if chosen.status == UNGROUNDED:  # a value the response does not state: the judge is taught to state none
        call = format_call(str(plan.verifier), {"predict": None})
    quote = quotes[teacher] if quotes is not None and plan.verifier is None and median > 0 else None
    label = CriterionLabel(path=plan.path, call=call, credit=median, rationale=rationales[teacher][:2000],
                           quote=quote[:2000] if quote else None)  # fmt: skip
    return label, teacher, ""


async def _judge_all(judges: Sequence[RubricReader], request: GroupRequest) -> list[list[ParsedJudgement]]:
    # A teacher that cannot be reached at all raises BackendUnavailable and stops the run: labelling on with one
    # teacher fewer would change what the median means without anyone deciding it.
    return list(await asyncio.gather(*(judge.read(request) for judge in judges)))


async def label_instance(
    instance: Instance, judges: Sequence[RubricReader], min_teachers: int, report: LabelReport
) -> list[JudgeExample]:
    """The judge examples of one instance's responses (dropped responses are counted in ``report``)."""
    plans = plan_rubric(instance.rubric, instance.task_type)
    # Teachers quote the response for every fuzzy credit (the evidence format), so that a label is evidence of it and
    # a credit a teacher cannot quote is not taught.
    request = GroupRequest(instance.prompt, plans, instance.responses, instance.image, "minimal", "evidence")
    per_teacher = await _judge_all(judges, request)
    examples = []
    for index, response in enumerate(instance.responses):
        report.responses += 1
        judgements = [answers[index] for answers in per_teacher]
        scores: list[list[CriterionScore] | None] = []
        report.count_failures([judge.name for judge in judges], [parsed.failure for parsed in judgements])
        for parsed in judgements:
            scores.append(None if parsed.failure is not None else execute(parsed, plans, response=response,
                                                                           evidence=True))  # fmt: skip
        labels, chosen, reason = [], Counter[int](), ""
        for k in range(len(plans)):
            rationales = [j.criteria[k].rationale if j.criteria else "" for j in judgements]
            quotes = [j.criteria[k].quote if j.criteria else None for j in judgements]
            label, teacher, reason = median_label([s[k] if s else None for s in scores], rationales, min_teachers,
                                                  quotes)  # fmt: skip
            if label is None or teacher is None:
                break
            labels.append(label)
            chosen[teacher] += 1
            credits = {float(s[k].score) for s in scores if s and s[k].score is not None}  # type: ignore[arg-type]
            report.unanimous += len(credits) == 1
        if len(labels) != len(plans):
            report.drop_reasons[reason] += 1
            continue
        report.criteria += len(labels)
        report.labelled += 1
        lead = chosen.most_common(1)[0][0]
        examples.append(
            JudgeExample(
                id=f"{instance.id}-r{index}", input_id=instance.id, prompt=instance.prompt, image=instance.image,
                task_type=instance.task_type, rubric=instance.rubric, response=response, labels=labels,
                thought=judgements[lead].thought[:4000], source="teachers",
            )
        )  # fmt: skip
    return examples


async def label_instances(
    instances: Sequence[Instance],
    judges: Sequence[RubricReader],
    min_teachers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> tuple[list[JudgeExample], LabelReport]:
    """Label every response of ``instances`` with the teachers ``judges``; ``min_teachers`` defaults to a majority."""
    needed = teachers_needed(min_teachers, len(judges), len(judges) // 2 + 1)
    report = LabelReport()

    async def one(instance: Instance) -> list[JudgeExample]:
        return await label_instance(instance, judges, needed, report)

    examples = await label_each(instances, one, lambda i: len(i.responses), "response", concurrency, progress)
    return examples, report


async def label_with_teachers(
    instances: Sequence[Instance],
    teachers: Sequence[Any],
    min_teachers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> tuple[list[JudgeExample], LabelReport]:
    """:func:`label_instances` with teacher engines (``genrm.engine.Engine``), each judging through the server's
    prompts, schema and parser (the rubric method's ``JudgeTraining.label``)."""
    from genrm.methods.rubric.teachers import teacher_reader

    judges = [teacher_reader(teacher) for teacher in teachers]
    return await label_instances(instances, judges, min_teachers, concurrency, progress)
