"""Training the pairwise judge (MJ1's cold start, and RLVR on its format and correctness): labelled traces from
teachers, SFT and RLVR records, and the RLVR rewards.

A trace (:class:`PairTrace`) is one labelled pair and a teacher's full tagged answer to it. The source's cold start
distils reasoning traces; here a trace is kept only when the teacher's answer reads, has all eleven tags well formed,
and prefers the labelled response (rejection sampling: a judge is not taught a wrong verdict). The label of a trace is
the first teacher's, in the order given, whose answer passes; a pair needs ``min_teachers`` readable answers (default
1). Pairs without a label or an image are dropped, with the reason: the records always show the judge the images.

Records use the method's own prompt (:mod:`.prompts`), its messages in parts with an image placeholder where each
image goes (the prompt's, each response's), the images in that order in the ``images`` column (TRL's vision layout):

- SFT: ``{"prompt", "completion", "images"}``, the completion the teacher's answer;
- RLVR: ``{"prompt", "images", "judge_label"}`` (``A`` or ``B``), read by :func:`format_reward_func` (eq. 2's format
  part, 0 without readable scores) and :func:`correctness_reward_func`.

The consistency reward needs the judge's reasoning resumed on the swapped pair inside the training loop, which TRL's
trainer does not do: RLVR here is eq. 2 without its third term.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from genrm.choices import DEFAULT_CONCURRENCY
from genrm.methods.base import IMAGES_COLUMN, LABEL_COLUMN, judge_labels
from genrm.methods.completions import completion_text
from genrm.methods.labelling import LabelReport, label_each, teachers_needed
from genrm.methods.pairwise.models import PairExample
from genrm.methods.pairwise.prompts import pair_request
from genrm.methods.pairwise.reading import PairJudgement, judgement_reader, read_judgement
from genrm.methods.pairwise.rewards import correctness, format_reward


class PairTrace(BaseModel):
    """One labelled pair and a teacher's tagged answer that prefers the labelled response."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    input_id: str = Field(min_length=1, max_length=256, description="the pair: train/test never share one")
    pair: PairExample
    answer: str = Field(min_length=1, max_length=50_000)
    source: Literal["teachers"] = "teachers"

    @property
    def loses_credit(self) -> bool:
        """The balancing key: whether the second response is the better one (so A and B labels are balanced)."""
        return self.pair.label == "B"


def _prompt(trace: PairTrace) -> dict[str, Any]:
    prompt = pair_request(trace.pair).prompt
    if not prompt.images:
        raise ValueError(f"trace {trace.id} has no image; the pairwise judge's records always show one")
    system, user = prompt.messages(image_placeholders=True)
    # Every part structured (the system's text too): one record's messages share a shape, as a dataset column must
    system = {**system, "content": [{"type": "text", "text": system["content"]}]}
    return {"id": trace.id, "prompt": [system, user], IMAGES_COLUMN: list(prompt.images)}


def sft_record(trace: PairTrace, exposure: str = "minimal") -> dict[str, Any]:
    """A prompt-completion record for TRL's ``SFTTrainer``, with the prompt's image."""
    return {**_prompt(trace), "completion": [{"role": "assistant", "content": trace.answer}]}


def rlvr_record(trace: PairTrace, exposure: str = "minimal") -> dict[str, Any]:
    """A prompt record for TRL's ``GRPOTrainer``; the label (``A`` or ``B``) rides along in ``judge_label``."""
    return {**_prompt(trace), LABEL_COLUMN: trace.pair.label}


def format_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: eq. 2's format part (0.2/11 per well-formed tag), 0 without readable scores."""
    rewards = []
    for completion in completions:
        judgement = read_judgement(completion_text(completion))
        rewards.append(format_reward(judgement) if judgement.scores is not None else 0.0)
    return rewards


def correctness_reward_func(completions: Sequence[Any], **columns: Any) -> list[float]:
    """TRL reward function: 1 when the completion prefers its row's ``judge_label``, else 0."""
    labels = judge_labels(columns, "correctness_reward_func", len(completions))
    return [correctness(read_judgement(completion_text(c)), label) for c, label in zip(completions, labels,
                                                                                      strict=True)]  # fmt: skip


def _teachable(judgement: PairJudgement, label: str) -> bool:
    return judgement.preference == label and all(judgement.tags.values())


async def label_pairs(
    pairs: Sequence[PairExample],
    teachers: Sequence[Any],
    min_teachers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> tuple[list[PairTrace], LabelReport]:
    """Traces of ``pairs`` from the teacher engines (see the module docstring); ``min_teachers`` defaults to 1."""
    from genrm.engine import Reader, ask

    needed = teachers_needed(min_teachers, len(teachers), 1)
    report = LabelReport(per_criterion=False)

    async def ask_teacher(teacher: Any, pair: PairExample) -> tuple[PairJudgement, str]:
        answers: list[str] = []

        def keep(reply: Any) -> tuple[PairJudgement, bool]:
            answers.append(reply.text)
            judgement = read_judgement(reply.text)
            return judgement, judgement.scores is not None

        (judgement,) = await ask(teacher, [pair_request(pair)], Reader(keep, judgement_reader().failed),
                                 parse_retries=1)  # fmt: skip
        return judgement, answers[-1] if answers else ""

    async def one(pair: PairExample) -> list[PairTrace]:
        report.responses += 1
        if pair.label is None or not pair.images():
            report.drop_reasons["no label" if pair.label is None else "no image"] += 1
            return []
        answered = await asyncio.gather(*(ask_teacher(t, pair) for t in teachers))
        report.count_failures(
            [teacher.model for teacher in teachers], [judgement.failure for judgement, _ in answered]
        )
        if not report.enough_teachers(sum(j.scores is not None for j, _ in answered), needed):
            return []
        chosen = next((text for j, text in answered if _teachable(j, pair.label)), None)
        if chosen is None:
            report.drop_reasons["no teacher's well-formed answer prefers the label"] += 1
            return []
        report.labelled += 1
        return [PairTrace(id=pair.id, input_id=pair.id, pair=pair, answer=chosen)]

    traces = await label_each(pairs, one, unit="pair", concurrency=concurrency, progress=progress)
    return traces, report
