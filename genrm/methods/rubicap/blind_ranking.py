"""Blind ranking of captions (RubiCap's ranking evaluation, its prompt 7, after EXPERT's sub-dimensions): a judge sees
an image and every system's caption of it, labelled ``Caption A``, ``Caption B``, ... in an order shuffled per image
(seeded, and recorded), never the systems' names, and scores each caption from 0 to 10 on accuracy, completeness,
clarity and hallucination (a penalty: 0 is none, 10 pervasive).

Each caption's total is computed here from the four scores, as the source defines it:
``total = (accuracy + completeness + clarity) / 3 - 1.5 x hallucination`` (from -15 to 10); the judge's own totals
and ranking are not trusted. A caption's rank is 1 plus the number of captions of its image with a strictly higher
total (ties share a rank). Per system: the share of images where it ranks first, its mean rank, mean total and mean
of each dimension. When the judge's ranking list disagrees with the order of its own scores, the image is counted
(``inconsistent``): a sign of a judge that does not do its arithmetic.

A failed judgement fails the whole image (every system's caption of it) and is counted apart.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.engine import ChatPrompt, ChatRequest, Judge, Reader, ask
from genrm.methods.answer_json import ModelReading, model_reader

#: The schema name of a ranking request.
RANKING_SCHEMA_NAME = "blind_ranking"
#: The four dimensions, in the order they are asked.
DIMENSIONS = ("accuracy", "completeness", "clarity", "hallucination_penalty")
#: Most captions one image's request may compare (the labels A to Z).
MAX_CAPTIONS = 26
#: Images asked in one go (the judge answers them concurrently; the progress bar moves between batches).
BATCH = 16


def total_score(accuracy: int, completeness: int, clarity: int, hallucination_penalty: int) -> float:
    """The source's total of one caption, from its four 0-10 scores: ``(acc + comp + clar) / 3 - 1.5 x hall``."""
    return (accuracy + completeness + clarity) / 3.0 - 1.5 * hallucination_penalty


class CaptionAssessment(BaseModel):
    """The judge's scores of one caption (its justification is kept; its own total is not used)."""

    model_config = ConfigDict(extra="ignore")

    justification: str = Field(default="", max_length=5000)
    accuracy: int = Field(ge=0, le=10)
    completeness: int = Field(ge=0, le=10)
    clarity: int = Field(ge=0, le=10)
    hallucination_penalty: int = Field(ge=0, le=10)


class RankingAnswer(BaseModel):
    """The judge's answer: an assessment per label, and its ranking of the labels, best first."""

    model_config = ConfigDict(extra="ignore")

    assessments: dict[str, CaptionAssessment]
    ranking: list[str] = Field(default_factory=list, max_length=MAX_CAPTIONS)


def labels(count: int) -> list[str]:
    """``Caption A`` ... for ``count`` captions."""
    return [f"Caption {letter}" for letter in string.ascii_uppercase[:count]]


def ranking_schema(count: int) -> dict[str, Any]:
    """The schema of the answer for ``count`` captions (every label assessed, each score an integer 0-10)."""
    score = {"type": "integer", "minimum": 0, "maximum": 10}
    one = {"type": "object", "properties": {"justification": {"type": "string"}, **dict.fromkeys(DIMENSIONS, score)},
           "required": ["justification", *DIMENSIONS], "additionalProperties": False}  # fmt: skip
    names = labels(count)
    return {"type": "object", "properties": {
        "assessments": {"type": "object", "properties": dict.fromkeys(names, one), "required": names,
                        "additionalProperties": False},
        "ranking": {"type": "array", "items": {"type": "string", "enum": names}, "minItems": count,
                    "maxItems": count}},
        "required": ["assessments", "ranking"], "additionalProperties": False}  # fmt: skip


_SYSTEM = (
    "You evaluate image captions with care. You are shown an image and several captions of it, each under a label. "
    "Score every caption with whole numbers from 0 to 10 on four dimensions:\n"
    "- accuracy: are the objects, actions, text, colours and spatial relations it describes correct for this image? "
    "Take points off for every wrong attribute, misidentified object or wrong action.\n"
    "- completeness: does it cover what matters in the image (main subjects, notable actions, background, any text "
    "shown)? Take points off for missing key details.\n"
    "- clarity: is it specific, well written and unambiguous? Take points off for vague wording and repetition.\n"
    "- hallucination_penalty: how much does it assert that cannot be seen in the image? 0 means nothing, 10 means it "
    "is made up throughout; a plausible claim the image does not show is a mild hallucination (2 to 4).\n"
    "A caption's total is (accuracy + completeness + clarity) / 3 - 1.5 x hallucination_penalty. Give, for each "
    "label, a short justification that cites what the image shows, and the four scores; then rank the labels from "
    "the best total to the worst. Answer with one JSON object: "
    '{"assessments": {"<label>": {"justification": ..., "accuracy": ..., "completeness": ..., "clarity": ..., '
    '"hallucination_penalty": ...}, ...}, "ranking": ["<best label>", ...]}.'
)


def ranking_request(image: str, captions: Sequence[str]) -> ChatRequest:
    """The request comparing ``captions`` (already in their shown order) of ``image``."""
    body = "\n\n".join(f"{label}:\n{caption}" for label, caption in zip(labels(len(captions)), captions, strict=True))
    return ChatRequest(ChatPrompt(_SYSTEM, f"CAPTIONS TO EVALUATE:\n\n{body}", image), ranking_schema(len(captions)),
                       RANKING_SCHEMA_NAME)  # fmt: skip


def _reader(count: int) -> Reader[ModelReading[RankingAnswer]]:
    wanted = set(labels(count))

    def every_label(answer: RankingAnswer) -> str | None:
        if set(answer.assessments) == wanted:
            return None
        got = ", ".join(sorted(answer.assessments)[:MAX_CAPTIONS])
        return f"the assessments are of {got}, not {', '.join(sorted(wanted))}"

    return model_reader(RankingAnswer, every_label)


@dataclass(frozen=True)
class RankedCaption:
    """One system's caption of one image: where it was shown, its scores, total and rank (None when failed)."""

    image: str
    system: str
    label: str
    scores: dict[str, int] | None
    total: float | None
    rank: int | None
    failure: str | None = None


@dataclass
class RankingResult:
    """Every caption's outcome, the shown order per image, and the images whose ranking disagreed with the scores."""

    systems: list[str]
    captions: list[RankedCaption] = field(default_factory=list)
    orders: dict[str, list[str]] = field(default_factory=dict)
    inconsistent: int = 0

    def summary(self, system: str) -> dict[str, float | int | None]:
        """``{"images", "failed", "first", "mean_rank", "total", <each dimension>}`` of one system; the means are
        over judged images (None when none)."""
        rows = [c for c in self.captions if c.system == system]
        judged = [c for c in rows if c.failure is None]
        out: dict[str, float | int | None] = {"images": len(rows), "failed": len(rows) - len(judged)}
        if not judged:
            return {**out, "first": None, "mean_rank": None, "total": None, **dict.fromkeys(DIMENSIONS)}
        out["first"] = sum(c.rank == 1 for c in judged) / len(judged)
        out["mean_rank"] = sum(c.rank for c in judged) / len(judged)  # type: ignore[misc]
        out["total"] = sum(c.total for c in judged) / len(judged)  # type: ignore[misc]
        for name in DIMENSIONS:
            out[name] = sum(c.scores[name] for c in judged) / len(judged)  # type: ignore[index]
        return out

    def to_json(self) -> dict[str, Any]:
        """Every caption's outcome, the shown orders and the summary, as a JSON-ready dict."""
        return {"summary": {s: self.summary(s) for s in self.systems}, "orders": self.orders,
                "inconsistent": self.inconsistent, "captions": [asdict(c) for c in self.captions]}  # fmt: skip


async def rank_captions(
    images: Mapping[str, tuple[str, Sequence[str]]],
    systems: Sequence[str],
    judge: Judge,
    seed: int = 0,
    progress: bool = False,
) -> RankingResult:
    """Rank each image's captions (``images[id] = (image, captions)``, caption k being system k's) with one judge
    call per image, in a seeded shuffled order (see the module docstring). Raises ValueError for a judge that runs
    no model or sees no images, or an image with another number of captions than systems (or more than 26)."""
    from tqdm import tqdm

    if judge.engine is None or not judge.sees_images:
        raise ValueError(f"the blind ranking shows the judge each image: {judge.model} cannot see images")
    if len(systems) > MAX_CAPTIONS or len(systems) < 2:
        raise ValueError(f"the blind ranking compares 2 to {MAX_CAPTIONS} systems, not {len(systems)}")
    for key, (_, captions) in images.items():
        if len(captions) != len(systems):
            raise ValueError(f"image {key!r} has {len(captions)} captions for {len(systems)} systems")
    rng = random.Random(seed)
    result = RankingResult(list(systems))
    plans = []
    for key, (image, captions) in images.items():
        order = list(range(len(systems)))
        rng.shuffle(order)
        result.orders[key] = [systems[k] for k in order]
        plans.append((key, order, ranking_request(image, [captions[k] for k in order])))
    names, reader = labels(len(systems)), _reader(len(systems))
    with tqdm(total=len(plans), desc="blind ranking", unit="image", disable=not progress) as bar:
        for start in range(0, len(plans), BATCH):  # asked in batches, so that the bar moves as images are judged
            batch = plans[start : start + BATCH]
            reads = await ask(judge.engine, [request for _, _, request in batch], reader, judge.parse_retries)
            for (key, order, _), read in zip(batch, reads, strict=True):
                result.captions += _ranked(key, order, systems, names, read, result)
            bar.update(len(batch))
    return result


def _ranked(
    key: str,
    order: Sequence[int],
    systems: Sequence[str],
    names: Sequence[str],
    read: ModelReading[RankingAnswer],
    result: RankingResult,
) -> list[RankedCaption]:
    # One image's captions from the judge's scores (every one failed when the judgement did); counts the judge's own
    # ranking against its scores on ``result``.
    if read.answer is None:
        return [RankedCaption(key, systems[k], names[i], None, None, None, read.failure) for i, k in enumerate(order)]
    scores = {label: {d: getattr(read.answer.assessments[label], d) for d in DIMENSIONS} for label in names}
    totals = {label: total_score(**scores[label]) for label in names}
    if read.answer.ranking:
        result.inconsistent += _disagrees(read.answer.ranking, totals)
    ranks = {label: 1 + sum(t > totals[label] for t in totals.values()) for label in names}  # ties share a rank
    return [RankedCaption(key, systems[k], names[i], scores[names[i]], totals[names[i]], ranks[names[i]])
            for i, k in enumerate(order)]  # fmt: skip


def _disagrees(ranking: Sequence[str], totals: Mapping[str, float]) -> int:
    # 1 when the judge's list puts a caption above one with a strictly higher total (ties may go either way).
    if sorted(ranking) != sorted(totals):
        return 1
    return int(any(totals[ranking[i]] < totals[ranking[j]] for i in range(len(ranking))
                   for j in range(i + 1, len(ranking))))  # fmt: skip


def answer_text(assessments: Mapping[str, Mapping[str, int]]) -> str:
    """A ranking answer for these assessments (label -> the four scores), ranked by total: what a scripted judge
    writes."""
    ranking = sorted(assessments, key=lambda label: -total_score(**assessments[label]))
    return json.dumps({"assessments": {label: {"justification": "scripted", **scores}
                                       for label, scores in assessments.items()}, "ranking": ranking})  # fmt: skip
