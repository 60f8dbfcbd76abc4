"""Reading the pairwise judge's tagged answer: which of the eleven tags are well formed, the text of each section,
and the two scores of ``\\boxed{a, b}``, with every failure classed and never turned into a verdict.

A tag is **well formed** when it opens once and closes once, in that order, and a nested tag (a response's claims or
verification) lies inside its parent. The scores are the last ``\\boxed{a, b}`` of the answer: two integers from 1 to
10 that differ. Failures: ``unreadable`` (no ``\\boxed{a, b}`` with two integers), ``schema`` (a score outside 1-10),
``tie`` (equal scores: the judge must choose), ``backend_error`` (the engine gave no answer). A tie or an unreadable
score is a failure, never a half point or a 0.

Bounded: at most ``MAX_OUTPUT_CHARS`` characters are read, with linear-time patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from genrm.engine import Reader, Reply
from genrm.methods.answer_json import MAX_OUTPUT_CHARS
from genrm.methods.pairwise.models import Side
from genrm.methods.pairwise.prompts import TAGS

Failure = Literal["unreadable", "schema", "tie", "backend_error"]
_BOXED = re.compile(r"\\boxed\{\s*(-?\d{1,3})\s*,\s*(-?\d{1,3})\s*\}")


@dataclass(frozen=True)
class PairJudgement:
    """One answer, read: the tags that are well formed, each section's text, and the scores (or why there are none).

    Attributes:
        tags: tag -> whether it is well formed (all eleven).
        sections: tag -> its text, for the well-formed ones.
        scores: ``(s_A, s_B)``, or None when the answer has no usable scores (``failure`` says why).
    """

    tags: dict[str, bool] = field(default_factory=dict)
    sections: dict[str, str] = field(default_factory=dict)
    scores: tuple[int, int] | None = None
    failure: Failure | None = None
    reason: str = "read"

    @property
    def preference(self) -> Side | None:
        """``A`` or ``B``: the response scored higher (None without scores)."""
        if self.scores is None:
            return None
        return "A" if self.scores[0] > self.scores[1] else "B"


def _span(text: str, tag: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """Where ``tag``'s content lies in ``text[start:end]`` when it opens once and closes once after it."""
    window = text[start:end]
    opening, closing = f"<{tag}>", f"</{tag}>"
    if window.count(opening) != 1 or window.count(closing) != 1:
        return None
    first, last = window.index(opening) + len(opening), window.index(closing)
    return (start + first, start + last) if first <= last else None


def read_judgement(text: str) -> PairJudgement:
    """Read one answer; never raises on any string."""
    if not isinstance(text, str):
        return PairJudgement(failure="unreadable", reason=f"the judge's answer is a {type(text).__name__}, not text")
    text = text[:MAX_OUTPUT_CHARS]
    spans: dict[str, tuple[int, int] | None] = {}
    for tag, parent in TAGS:
        outer = spans.get(parent) if parent else (0, len(text))
        spans[tag] = _span(text, tag, *outer) if outer is not None else None
    tags = {tag: span is not None for tag, span in spans.items()}
    sections = {tag: text[span[0] : span[1]].strip() for tag, span in spans.items() if span is not None}
    found = list(_BOXED.finditer(text))
    if not found:
        return PairJudgement(tags, sections, None, "unreadable", "no \\boxed{score A, score B} with two integers")
    a, b = int(found[-1].group(1)), int(found[-1].group(2))
    if not (1 <= a <= 10 and 1 <= b <= 10):
        return PairJudgement(tags, sections, None, "schema", f"scores must be integers from 1 to 10, got {a} and {b}")
    if a == b:
        return PairJudgement(tags, sections, None, "tie", f"both responses scored {a}: the judge must choose")
    return PairJudgement(tags, sections, (a, b))


def judgement_reader() -> Reader[PairJudgement]:
    """How :func:`genrm.engine.ask` reads the judge's replies: an answer without usable scores is asked for again, a
    failed call is a ``backend_error`` judgement with the engine's reason."""

    def read(reply: Reply) -> tuple[PairJudgement, bool]:
        judgement = read_judgement(reply.text)
        return judgement, judgement.scores is not None

    return Reader(read, lambda reason: PairJudgement(failure="backend_error", reason=reason))
