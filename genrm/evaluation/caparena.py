"""CapArena-style pairwise comparison of two caption files (RubiCap appendix D, prompt 6): for each image both files
caption, a judge (any judge spec that sees images) picks the better caption or a tie, with the two captions' positions
randomised per image (seeded) so that a judge's preference for a position cannot favour a file.

The files hold caption instances (``id``, ``image``, ``responses``; the first response is the caption compared); they
are matched by ``id``, and an image in only one file is left out (counted). A judgement that fails is counted apart,
never as a tie.

Figures per comparison of file A (``first``) against file B (``second``): wins, losses, ties, the **win rate**
``(wins + ties / 2) / judged`` and the **win-lose rate** ``(wins - losses) / judged``, and the share of judgements that
chose the caption shown first (a position-bias check: about 0.5 for an unbiased judge, whatever the files).

Not here: the judge (:mod:`genrm.engine`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from genrm.engine import ChatPrompt, ChatRequest, Judge, Reader, Reply, ask, run_blocking
from genrm.methods.answer_json import MAX_OUTPUT_CHARS, extract_json_object
from genrm.methods.base import MAX_RESPONSES

_SYSTEM = """You compare two captions of the image shown and decide which is better.

What matters:
1. Precision: the caption matches the image; errors of colour, count, spatial relation or posture are imprecision.
2. Informativeness: the salient content of the image is in the caption ("an otter" tells more than "a small animal").
3. Hallucination: describing things clearly absent from the image is heavily penalised.
4. Attention to detail.
5. Assistive description: would the caption serve a person who cannot see the image?
6. Reverse thinking: does the caption lead a reader to imagine the intended image?
7. Ties are acceptable when you genuinely cannot tell which is better.
What does not matter: writing style or phrasing, caption length, grammatical variations.

Answer with one JSON object: {"reason": "<why>", "judgment": "A", "B" or "Tie"}."""

Winner = Literal["first", "second", "tie"]


class ArenaCaptions(BaseModel):
    """One image's caption in a file compared (any caption method's instance reads as one: other fields are
    ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=256)
    image: str = Field(min_length=1, max_length=10_000_000)
    responses: list[str] = Field(default_factory=list, max_length=MAX_RESPONSES)


class ArenaAnswer(BaseModel):
    """The judge's answer: why, and which caption (as shown) is better."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=4_000)
    judgment: Literal["A", "B", "Tie"]


def arena_schema() -> dict[str, Any]:
    """The schema of the judge's answer."""
    return {"type": "object", "additionalProperties": False, "required": ["reason", "judgment"],
            "properties": {"reason": {"type": "string", "maxLength": 4000},
                           "judgment": {"enum": ["A", "B", "Tie"]}}}  # fmt: skip


def arena_request(image: str, caption_a: str, caption_b: str) -> ChatRequest:
    """The judge's request for two captions, shown as A and B."""
    return ChatRequest(ChatPrompt(_SYSTEM, f"Caption A: {caption_a}\n\nCaption B: {caption_b}", image),
                       arena_schema(), "caparena")  # fmt: skip


def read_arena(text: str) -> ArenaAnswer | str:
    """The answer in ``text``, or why it cannot be read (the judgment is read in any case)."""
    found = extract_json_object(text[:MAX_OUTPUT_CHARS]) if isinstance(text, str) else None
    if found is None:
        return "no JSON object in the judge's answer"
    judgment = found.get("judgment")
    if isinstance(judgment, str):
        found = {**found, "judgment": {"a": "A", "b": "B", "tie": "Tie"}.get(judgment.strip().lower(), judgment)}
    try:
        return ArenaAnswer.model_validate(found)
    except ValidationError as exc:
        return f"the judge's answer is not of the expected form: {exc.errors(include_url=False)[0]['msg']}"


@dataclass(frozen=True)
class Comparison:
    """One image's comparison: which file's caption was shown first, and the outcome (None when it failed)."""

    instance_id: str
    first_shown_first: bool
    winner: Winner | None
    failure: str | None = None


@dataclass
class ArenaReport:
    """Every comparison of file A (``first``) against file B (``second``), and the figures they give."""

    names: tuple[str, str] = ("first", "second")
    comparisons: list[Comparison] = field(default_factory=list)
    unmatched: int = 0

    def figures(self) -> dict[str, float | int | None]:
        """wins, losses, ties (of the first file), failed, unmatched, win_rate, win_lose_rate, chose_shown_first
        (rates over judged comparisons; None when none was judged)."""
        judged = [c for c in self.comparisons if c.winner is not None]
        wins = sum(c.winner == "first" for c in judged)
        losses = sum(c.winner == "second" for c in judged)
        ties = len(judged) - wins - losses
        decided = [c for c in judged if c.winner != "tie"]
        shown_first = sum((c.winner == "first") == c.first_shown_first for c in decided)
        n = len(judged)
        return {"comparisons": len(self.comparisons), "judged": n, "failed": len(self.comparisons) - n,
                "unmatched": self.unmatched, "wins": wins, "losses": losses, "ties": ties,
                "win_rate": (wins + ties / 2) / n if n else None, "win_lose_rate": (wins - losses) / n if n else None,
                "chose_shown_first": shown_first / len(decided) if decided else None}  # fmt: skip

    def markdown(self) -> str:
        """The figures as a table."""
        figures = self.figures()
        first, second = self.names
        rows = [
            ("judged", figures["judged"]),
            ("failed", figures["failed"]),
            ("unmatched", figures["unmatched"]),
            (f"{first} wins", figures["wins"]),
            (f"{second} wins", figures["losses"]),
            ("ties", figures["ties"]),
        ]
        for name in ("win_rate", "win_lose_rate", "chose_shown_first"):
            value = figures[name]
            rows.append((name.replace("_", " ") + (f" ({first})" if name != "chose_shown_first" else ""),
                         "n/a" if value is None else f"{value:.3f}"))  # fmt: skip
        return "\n".join(["| | |", "|---|---:|", *(f"| {name} | {value} |" for name, value in rows)])

    def to_json(self) -> str:
        """The figures and every comparison, as JSON."""
        return json.dumps({"names": self.names, "figures": self.figures(),
                           "comparisons": [asdict(c) for c in self.comparisons]}, indent=1)  # fmt: skip


def compare_files(
    first: Sequence[ArenaCaptions],
    second: Sequence[ArenaCaptions],
    judge: Judge,
    names: tuple[str, str] = ("first", "second"),
    seed: int = 0,
) -> ArenaReport:
    """Compare the captions of ``first`` and ``second`` image by image (see the module docstring).

    Raises ValueError for an instance with no caption; ``genrm.engine.BackendUnavailable`` when the judge cannot be
    reached at all.
    """
    if judge.engine is None or not judge.sees_images:
        raise ValueError(f"the arena needs a judge model that sees images; {judge.model} does not")
    by_id = {i.id: i for i in second}
    matched = [(a, by_id[a.id]) for a in first if a.id in by_id]
    for a, b in matched:
        if not a.responses or not b.responses:
            raise ValueError(f"instance {a.id} has no caption (its first response) in one of the files")
    rng = random.Random(seed)
    order = [rng.random() < 0.5 for _ in matched]
    requests = [arena_request(a.image, a.responses[0], b.responses[0]) if shown_first else
                arena_request(a.image, b.responses[0], a.responses[0])
                for (a, b), shown_first in zip(matched, order, strict=True)]  # fmt: skip

    def read(reply: Reply) -> tuple[ArenaAnswer | str, bool]:
        answer = read_arena(reply.text)
        return answer, isinstance(answer, ArenaAnswer)

    answers = run_blocking(ask(judge.engine, requests, Reader(read, lambda reason: reason), judge.parse_retries))
    report = ArenaReport(names, unmatched=len(first) + len(second) - 2 * len(matched))
    for (a, _), shown_first, answer in zip(matched, order, answers, strict=True):
        if not isinstance(answer, ArenaAnswer):
            report.comparisons.append(Comparison(a.id, shown_first, None, answer))
            continue
        if answer.judgment == "Tie":
            winner: Winner = "tie"
        else:
            winner = "first" if (answer.judgment == "A") == shown_first else "second"
        report.comparisons.append(Comparison(a.id, shown_first, winner))
    return report
