"""Training the claimdiff judge: labelled examples from teachers, SFT and RLVR records, and the RLVR rewards.

An example (:class:`DiffExample`) is one image, its reference caption, one caption to compare with it, and the
teacher's answer (:class:`.models.DiffAnswer`): the differences a judge should list. Records show the judge the
image, always (its rulings are about the image), with the same prompts the method sends (:mod:`.prompts`):

- SFT: ``{"prompt", "completion", "images"}``, the completion the teacher's answer as JSON;
- RLVR: ``{"prompt", "images", "judge_label"}``, the label the teacher's answer, read by the two rewards:

  - :func:`format_reward_func`: 1 when the completion reads as an answer (:mod:`.reading`), else 0;
  - :func:`f1_reward_func` (or, with the method option ``f1_judge``, the checked F1 of :mod:`.checked_f1`, a second
    judge with the image deciding, as the source's ``caption_judge``): the source's F1 of predicted differences
    against the teacher's, both kept only where a
    caption errs. Where the source asks a second judge, with the image, which predicted differences cover a
    teacher's and which are real, this one matches them deterministically: a predicted difference covers a
    teacher's when the same captions err and their claims are alike (token-sort similarity of the claims of at
    least ``MATCH_SIMILARITY``; the aspect, free text, is not compared), one to one (Hungarian matching). A
    predicted difference that matches none counts as not real, which is stricter than the source (it could not be
    checked against the image without a model). No prediction and no teacher difference: precision 1 and recall 1;
    no prediction alone: precision 0; no teacher difference alone: recall 1.

Labels (:func:`label_captions`): each teacher judges each caption through the method's own prompts and reader; the
label is the answer of the first teacher (in the order given, strongest first) whose answer reads, kept when at least
``min_teachers`` answers read. The labels of the source came from one proprietary judge; ours come from the
teachers a user serves.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from genrm.choices import DEFAULT_CONCURRENCY
from genrm.methods.base import IMAGES_COLUMN, LABEL_COLUMN, judge_labels
from genrm.methods.claimdiff.models import ClaimDiffInstance, DiffAnswer, Difference
from genrm.methods.claimdiff.prompts import caption_requests
from genrm.methods.claimdiff.reading import Reading, answer_reader, read_answer
from genrm.methods.claimdiff.rewards import answer_text, has_error
from genrm.methods.completions import completion_text
from genrm.methods.labelling import LabelReport, label_each, teachers_needed

#: How alike a predicted difference's claims must be to a teacher's to cover it (token-sort similarity).
MATCH_SIMILARITY = 0.6


class DiffExample(BaseModel):
    """One labelled comparison: image, reference caption, caption, and the differences a judge should list."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    input_id: str = Field(min_length=1, max_length=256, description="the image's instance: train/test never share one")
    image: str = Field(min_length=1, max_length=10_000_000)
    reference: str = Field(min_length=1, max_length=100_000)
    caption: str = Field(max_length=100_000)
    answer: DiffAnswer
    source: Literal["teachers", "synthetic"] = "teachers"

    @property
    def loses_credit(self) -> bool:
        """Whether the caption errs on some difference (the balancing key)."""
        return any(has_error(d.caption_a_error.error_type) for d in self.answer.differences)


def _prompt(example: DiffExample, judge_severity: bool = False) -> dict[str, Any]:
    (request,) = caption_requests(example.image, example.reference, [example.caption], False, judge_severity, "json")
    return {"id": example.id, "prompt": request.prompt.messages()[:1] + [
        {"role": "user", "content": request.prompt.user}], IMAGES_COLUMN: [example.image]}  # fmt: skip


def sft_record(example: DiffExample, exposure: str = "minimal") -> dict[str, Any]:
    """A prompt-completion record for TRL's ``SFTTrainer``, with the image (every exposure shows it); the answer
    leaves out severities, which the method's default prompt does not ask for."""
    answer = example.answer.model_dump()
    for difference in answer["differences"]:
        for side in ("caption_a_error", "caption_b_error"):
            del difference[side]["severity"]
    text = json.dumps(answer, ensure_ascii=False)
    return {**_prompt(example), "completion": [{"role": "assistant", "content": text}]}


def rlvr_record(example: DiffExample, exposure: str = "minimal") -> dict[str, Any]:
    """A prompt record for TRL's ``GRPOTrainer``; the teacher's answer rides along in ``judge_label``."""
    return {**_prompt(example), LABEL_COLUMN: example.answer.model_dump_json()}


def _erring(difference: Difference) -> tuple[bool, bool]:
    return has_error(difference.caption_a_error.error_type), has_error(difference.caption_b_error.error_type)


def kept_differences(answer: DiffAnswer) -> list[Difference]:
    """The differences of ``answer`` where a caption errs (the ones the F1 rewards count)."""
    return [d for d in answer.differences if any(_erring(d))]


def _similarity(predicted: Difference, gold: Difference) -> float:
    """How alike two differences are, in [0, 1]: 0 unless the same captions err; else the mean, over the captions
    whose claim either one states, of the claims' token-sort similarity (0 where only one of them states it)."""
    from rapidfuzz import fuzz

    if _erring(predicted) != _erring(gold):
        return 0.0
    scores = []
    for mine, theirs in ((predicted.caption_a_claim, gold.caption_a_claim),
                         (predicted.caption_b_claim, gold.caption_b_claim)):  # fmt: skip
        mine, theirs = mine.strip().lower(), theirs.strip().lower()
        if mine or theirs:
            scores.append(fuzz.token_sort_ratio(mine, theirs) / 100.0 if mine and theirs else 0.0)
    return sum(scores) / len(scores) if scores else 0.0


@dataclass(frozen=True)
class DiffF1:
    """Predicted differences against the teacher's: counts, precision, recall and F1 (all in [0, 1])."""

    predicted: int
    gold: int
    matched: int
    precision: float
    recall: float
    f1: float


def diff_f1(predicted: DiffAnswer, gold: DiffAnswer, threshold: float = MATCH_SIMILARITY) -> DiffF1:
    """The F1 of ``predicted`` against ``gold`` (see the module docstring)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    pred, truth = kept_differences(predicted), kept_differences(gold)
    matched = 0
    if pred and truth:
        scores = np.array([[_similarity(p, g) for g in truth] for p in pred])
        rows, cols = linear_sum_assignment(scores, maximize=True)
        matched = int(sum(scores[r, c] >= threshold for r, c in zip(rows, cols, strict=True)))
    precision = matched / len(pred) if pred else (1.0 if not truth else 0.0)
    recall = matched / len(truth) if truth else 1.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return DiffF1(len(pred), len(truth), matched, precision, recall, f1)


def format_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: 1.0 for each completion that reads as a diff answer, else 0.0."""
    return [float(read_answer(completion_text(c)).failure is None) for c in completions]


def f1_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: the F1 of each completion's differences against its row's ``judge_label`` (0 for an
    answer that does not read)."""
    labels = judge_labels(columns, "f1_reward_func", len(completions))
    rewards = []
    for completion, label in zip(completions, labels, strict=True):
        reading = read_answer(completion_text(completion))
        gold = DiffAnswer.model_validate_json(label)
        rewards.append(0.0 if not isinstance(reading.answer, DiffAnswer) else diff_f1(reading.answer, gold).f1)
    return rewards


async def _teacher_readings(teacher: Any, instance: ClaimDiffInstance, captions: list[str]) -> list[Reading]:
    from genrm.engine import ask

    requests = caption_requests(instance.image, instance.reference, captions, False, False, "json")
    return await ask(teacher, requests, answer_reader(), parse_retries=1)


async def label_captions(
    instances: Sequence[ClaimDiffInstance],
    teachers: Sequence[Any],
    min_teachers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> tuple[list[DiffExample], LabelReport]:
    """Label every caption (response) of ``instances`` with the teacher engines (see the module docstring);
    ``min_teachers`` defaults to 1."""
    needed = teachers_needed(min_teachers, len(teachers), 1)
    report = LabelReport(per_criterion=False)

    async def one(instance: ClaimDiffInstance) -> list[DiffExample]:
        captions = [answer_text(response) for response in instance.responses]
        per_teacher = await asyncio.gather(*(_teacher_readings(t, instance, captions) for t in teachers))
        examples = []
        for index, caption in enumerate(captions):
            report.responses += 1
            readings = [readings[index] for readings in per_teacher]
            report.count_failures([teacher.model for teacher in teachers], [r.failure for r in readings])
            usable = [r.answer for r in readings if isinstance(r.answer, DiffAnswer)]
            if not report.enough_teachers(len(usable), needed):
                continue
            report.labelled += 1
            examples.append(DiffExample(id=f"{instance.id}-{index}", input_id=instance.id, image=instance.image,
                                        reference=instance.reference, caption=caption, answer=usable[0]))  # fmt: skip
        return examples

    examples = await label_each(instances, one, lambda i: len(i.responses), "caption", concurrency, progress)
    return examples, report
