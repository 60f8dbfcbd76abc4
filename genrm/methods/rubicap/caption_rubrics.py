"""Caption rubrics from a committee (RubiCap stage 1, algorithm 1): for each image, K captioners and the student
caption it, a rubric writer turns the student's deficiencies against the teachers' consensus into binary criteria,
and the checks of :mod:`genrm.methods.rubicap.writer` keep the sound ones. The output is rubicap instances, ready for
``genrm score`` and ``genrm rl --method rubicap``.

Every model is an engine named in the one spelling of a judge (``MODEL@URL``, ``transformers:PATH``, ...): served
captioners, local checkpoints, a student checkpoint or endpoint. The captioners and the student answer the image's
prompt (the instance's, or ``Describe this image in detail.``); images go to them as the instance gives them (a URL,
a data URI, or a path their server can read).

What happens when something fails, and why:

- a captioner that gives no caption for an image is left out of that image's committee, and the threshold stays
  that of the full committee (fewer teachers can only make consensus harder, never easier);
- a student or writer failure, or a writer answer with no ``rubrics`` list, skips the image (counted);
- an image whose every criterion is dropped is not written (the student meets everything the committee agrees on:
  its rollouts would all score alike), and counted apart.

The reference caption of an output instance is the input's when it has one, else the first answering captioner's
(what the Reference-Likert baseline compares with).

Not here: the writer's prompt and checks (:mod:`genrm.methods.rubicap.writer`).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.choices import DEFAULT_CONCURRENCY
from genrm.engine import ChatPrompt, ChatRequest, Engine
from genrm.engine.asking import complete_text
from genrm.engine.types import CallFailed
from genrm.methods.captions import DEFAULT_CAPTION_PROMPT
from genrm.methods.labelling import teachers_needed
from genrm.methods.rubicap.models import RubiCapInstance
from genrm.methods.rubicap.writer import DROP_REASONS, check_criteria, writer_request

_CAPTIONER_SYSTEM = "You are an expert at describing images in detail."


class ImageItem(BaseModel):
    """One image to write a rubric for (one line of the input JSONL)."""

    model_config = ConfigDict(extra="ignore")  # a caption or rubicap instance reads as one too

    id: str = Field(min_length=1, max_length=256)
    image: str = Field(min_length=1, max_length=10_000_000)
    prompt: str = Field(default=DEFAULT_CAPTION_PROMPT, max_length=100_000)
    reference: str | None = Field(default=None, max_length=100_000)


@dataclass
class RubricReport:
    """What was written, kept and dropped, and why."""

    images: int = 0
    written: int = 0
    no_rubric: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    captioner_failures: int = 0
    proposed: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    weights: Counter[int] = field(default_factory=Counter)

    def counts(self) -> dict[str, Any]:
        """The report as plain data (for JSON)."""
        return {"images": self.images, "written": self.written, "no_rubric": self.no_rubric,
                "skipped": dict(self.skipped), "captioner_failures": self.captioner_failures,
                "proposed": self.proposed, "kept": self.kept,
                "dropped": {reason: self.dropped.get(reason, 0) for reason in DROP_REASONS},
                "kept_by_weight": {w: self.weights.get(w, 0) for w in (1, 2, 3)}}  # fmt: skip

    def markdown(self) -> str:
        """The report as a short table."""
        lines = ["| | count |", "|---|---:|", f"| images | {self.images} |", f"| written | {self.written} |",
                 f"| no criterion kept | {self.no_rubric} |"]  # fmt: skip
        lines += [f"| skipped: {why} | {n} |" for why, n in sorted(self.skipped.items())]
        lines += [f"| captions a captioner failed to give | {self.captioner_failures} |",
                  f"| criteria proposed | {self.proposed} |", f"| criteria kept | {self.kept} |"]  # fmt: skip
        lines += [f"| dropped: {reason} | {self.dropped.get(reason, 0)} |" for reason in DROP_REASONS]
        lines += [f"| kept with weight {w} | {self.weights.get(w, 0)} |" for w in (1, 2, 3)]
        return "\n".join(lines)


async def _caption(engine: Engine, item: ImageItem) -> str | None:
    try:
        text = await complete_text(engine, ChatRequest(ChatPrompt(_CAPTIONER_SYSTEM, item.prompt, item.image)))
    except CallFailed:
        return None
    return text.strip() or None


async def rubric_for(
    item: ImageItem, captioners: Sequence[Engine], student: Engine, writer: Engine, needed: int, report: RubricReport
) -> RubiCapInstance | None:
    """The rubicap instance of one image (None when it is skipped or keeps no criterion; ``report`` says which)."""
    report.images += 1
    teachers = await asyncio.gather(*(_caption(engine, item) for engine in captioners))
    report.captioner_failures += sum(c is None for c in teachers)
    answered = [c for c in teachers if c is not None]
    if len(answered) < needed:
        report.skipped["too few captions"] += 1
        return None
    student_caption = await _caption(student, item)
    if student_caption is None:
        report.skipped["student failed"] += 1
        return None
    try:
        answer = await complete_text(writer, writer_request(item.image, student_caption, answered, needed))
    except CallFailed:
        report.skipped["writer failed"] += 1
        return None
    checked = check_criteria(answer, len(answered), needed)
    if checked is None:
        report.skipped["writer answer unreadable"] += 1
        return None
    kept, dropped = checked
    report.proposed += len(kept) + sum(dropped.values())
    report.kept += len(kept)
    report.dropped.update(dropped)
    report.weights.update(c.weight for c in kept)
    if not kept:
        report.no_rubric += 1
        return None
    report.written += 1
    return RubiCapInstance(id=item.id, image=item.image, prompt=item.prompt, reference=item.reference or answered[0],
                           rubric=kept)  # fmt: skip


async def write_caption_rubrics(
    items: Sequence[ImageItem],
    captioners: Sequence[Engine],
    student: Engine,
    writer: Engine,
    min_teachers: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: bool = False,
) -> tuple[list[RubiCapInstance], RubricReport]:
    """Rubicap instances for ``items`` (in their order, the skipped ones left out) and the report.

    Raises ValueError for a threshold outside 1..K; ``genrm.engine.BackendUnavailable`` when a model cannot be
    reached at all.
    """
    from tqdm import tqdm

    needed = teachers_needed(min_teachers, len(captioners), math.ceil(len(captioners) / 2))  # the source's K/2
    report, slots = RubricReport(), asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(items), unit="image", desc="writing rubrics", disable=not progress)

    async def one(item: ImageItem) -> RubiCapInstance | None:
        async with slots:
            instance = await rubric_for(item, captioners, student, writer, needed, report)
        bar.update(1)
        return instance

    try:
        made = await asyncio.gather(*(one(item) for item in items))
    finally:
        bar.close()
    return [instance for instance in made if instance is not None], report
