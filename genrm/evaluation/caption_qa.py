"""Question answering from captions (CaptionQA-style): how useful a caption is to someone who cannot see the image.

A judge is shown one caption, never the image, and a multiple-choice question about the image; it answers from the
caption alone, or says the caption does not tell (an option added to every question). A system's accuracy is the
share of its judged questions answered right; "cannot tell" counts as not right and is reported apart, so a system
that says little and one that says wrong things can be told apart. Under a word limit, each caption is cut to its
first N words before it is shown: the accuracy at 50 words against the full caption says how much of the useful
content comes first.

The question file is JSONL, one line per image, matched to the caption file by ``id``::

    {"id": "red-square", "questions": [{"question": "What shape is in the image?",
      "choices": ["a square", "a circle", "a triangle"], "answer": "a square", "category": "objects"}]}

``category`` is optional; the report breaks accuracy down by it. A caption file's image with no questions is left
out (and counted); a question line with no caption is an error before anything is judged.

Not here: the report that holds the figures (:mod:`genrm.evaluation.caption_eval`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genrm.engine import ChatPrompt, ChatRequest, Judge, Reader, Reply, ask
from genrm.methods.answer_json import ModelReading, read_model

#: The option added to every question: the caption does not say.
CANNOT_TELL = "The description does not tell"
#: The schema name of a question's request.
QA_SCHEMA_NAME = "caption_qa"
#: Most options a question file may give (the added "does not tell" makes ten: the letters A to J).
MAX_CHOICES = 9
_LETTERS = "ABCDEFGHIJ"


class QAQuestion(BaseModel):
    """One multiple-choice question about an image: its options and the right one (by its text)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=2000)
    choices: list[str] = Field(min_length=2, max_length=MAX_CHOICES)
    answer: str = Field(min_length=1, max_length=500)
    category: str | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> QAQuestion:
        if any(not c.strip() or len(c) > 500 for c in self.choices):
            raise ValueError("every choice is a non-blank text of at most 500 characters")
        if len({c.strip().lower() for c in self.choices}) != len(self.choices):
            raise ValueError("the choices must differ")
        if any(c.strip().lower() == CANNOT_TELL.lower() for c in self.choices):
            raise ValueError(f"{CANNOT_TELL!r} is the option every question gets; it cannot be one of the choices")
        if self.answer not in self.choices:
            raise ValueError("answer must be one of the choices, written the same")
        return self


class QAItem(BaseModel):
    """The questions about one image (``id`` matches the caption file's)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    questions: list[QAQuestion] = Field(min_length=1, max_length=200)


class QAChoice(BaseModel):
    """The judge's answer: the letter of the option it picks."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field(min_length=1, max_length=1)


@dataclass(frozen=True)
class QAOutcome:
    """One question asked of one caption: the option picked (``None`` when the judgement failed, with why)."""

    item: str
    question: int
    system: str
    limit: int | None
    category: str | None
    picked: str | None
    right: bool
    cannot_tell: bool
    failure: str | None = None


@dataclass
class QAResult:
    """Every outcome; the figures per system and word limit."""

    outcomes: list[QAOutcome] = field(default_factory=list)
    unmatched: int = 0

    def accuracy(self, system: str, limit: int | None, category: str | None = None) -> dict[str, Any]:
        """``{"questions", "failed", "right", "cannot_tell", "accuracy"}`` of one system at one word limit (None:
        the whole caption), over one category or all; accuracy is None when nothing was judged."""
        rows = [o for o in self.outcomes if o.system == system and o.limit == limit
                and (category is None or o.category == category)]  # fmt: skip
        judged = [o for o in rows if o.failure is None]
        right = sum(o.right for o in judged)
        return {"questions": len(rows), "failed": len(rows) - len(judged), "right": right,
                "cannot_tell": sum(o.cannot_tell for o in judged),
                "accuracy": right / len(judged) if judged else None}  # fmt: skip

    def limits(self) -> list[int | None]:
        """The word limits asked at, the whole caption (None) first, then increasing."""
        return sorted({o.limit for o in self.outcomes}, key=lambda n: (n is not None, n or 0))

    def categories(self) -> list[str]:
        """The question categories met, sorted."""
        return sorted({o.category for o in self.outcomes if o.category is not None})


def cut_to_words(caption: str, limit: int | None) -> str:
    """The first ``limit`` words of ``caption`` (whitespace-separated; all of it when None)."""
    if limit is None:
        return caption
    return " ".join(caption.split()[:limit])


_SYSTEM = (
    "You answer multiple-choice questions about an image you cannot see. All you know of it is a description. "
    "Pick the option the description supports. If the description does not say, pick the option "
    f"'{CANNOT_TELL}': do not guess from what images usually show. "
    'Answer with a JSON object: {"answer": "<the option\'s letter>"}.'
)


def _options(question: QAQuestion) -> list[str]:
    return [*question.choices, CANNOT_TELL]


def qa_request(caption: str, question: QAQuestion) -> ChatRequest:
    """The request asking ``question`` of ``caption`` (text only: the judge is not shown the image)."""
    options = _options(question)
    lines = "\n".join(f"{_LETTERS[i]}. {text}" for i, text in enumerate(options))
    user = f"DESCRIPTION:\n{caption}\n\nQUESTION:\n{question.question}\n\nOPTIONS:\n{lines}"
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": list(_LETTERS[: len(options)])}},
              "required": ["answer"], "additionalProperties": False}  # fmt: skip
    return ChatRequest(ChatPrompt(_SYSTEM, user, None), schema, QA_SCHEMA_NAME)


def _read(reply: Reply) -> tuple[ModelReading[QAChoice], bool]:
    # A bare letter ("B", "(B)", "B.") reads too: small judges answer so without a schema.
    text = reply.text if isinstance(reply.text, str) else ""
    bare = re.fullmatch(r"\s*\(?([A-J])[).]?\s*", text[:20])
    reading = read_model(text, QAChoice, {"answer": bare.group(1)} if bare else None)
    return reading, reading.answer is not None


_READER: Reader[ModelReading[QAChoice]] = Reader(_read, lambda reason: ModelReading(None, f"backend_error: {reason}"))
#: Questions asked in one go (the judge answers them concurrently; the progress bar moves between batches).
BATCH = 64


async def answer_questions(
    captions: Mapping[str, Sequence[str]],
    items: Sequence[QAItem],
    systems: Sequence[str],
    judge: Judge,
    limits: Sequence[int | None] = (None,),
    progress: bool = False,
) -> QAResult:
    """Ask every question of ``items`` of each system's caption (``captions[id][k]`` is system k's; every caption
    is the only system ``all``'s), at each word limit. Raises ValueError when an item has no captions, or when the
    judge runs no model; ``genrm.engine.BackendUnavailable`` when it cannot be reached at all."""
    from tqdm import tqdm

    if judge.engine is None:
        raise ValueError("question answering needs a judge model; 'rule' runs none")
    missing = [item.id for item in items if item.id not in captions]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ValueError(f"questions about {missing[0]!r}{more} have no caption in the caption file")
    plan: list[tuple[str, int, str, int | None, QAQuestion]] = []
    requests: list[ChatRequest] = []
    for item in items:
        texts = captions[item.id]
        for position, system in enumerate(systems):
            for caption in texts if systems == ["all"] else [texts[position]]:
                for limit in limits:
                    shown = cut_to_words(caption, limit)
                    for number, question in enumerate(item.questions):
                        plan.append((item.id, number, system, limit, question))
                        requests.append(qa_request(shown, question))
    result = QAResult(unmatched=len(set(captions) - {item.id for item in items}))
    with tqdm(total=len(requests), desc="caption QA", unit="question", disable=not progress) as bar:
        for start in range(0, len(requests), BATCH):
            reads = await ask(judge.engine, requests[start : start + BATCH], _READER, judge.parse_retries)
            for (item_id, number, system, limit, question), read in zip(plan[start : start + BATCH], reads,
                                                                       strict=True):  # fmt: skip
                result.outcomes.append(_outcome(item_id, number, system, limit, question, read))
            bar.update(len(reads))
    return result


def _outcome(
    item: str, number: int, system: str, limit: int | None, question: QAQuestion, read: ModelReading[QAChoice]
) -> QAOutcome:
    options = _options(question)
    letter = read.answer.answer.upper() if read.answer is not None else None
    failure = read.failure
    if failure is None and (letter is None or _LETTERS.find(letter) not in range(len(options))):
        failure = f"schema: option {letter} does not exist"
    if failure is not None:
        return QAOutcome(item, number, system, limit, question.category, None, False, False, failure)
    picked = options[_LETTERS.index(letter)]  # type: ignore[arg-type]
    return QAOutcome(item, number, system, limit, question.category, picked, picked == question.answer,
                     picked == CANNOT_TELL)  # fmt: skip


def scripted_answer(request: ChatRequest) -> str:
    """A scripted reader for trying the evaluation offline: it picks the longest option whose words appear in the
    description (whole words, any case), else "cannot tell". Not a model: it shows the evaluation's path."""
    user = request.prompt.user
    try:
        description = user.split("DESCRIPTION:\n", 1)[1].split("\n\nQUESTION:\n", 1)[0].lower()
        options = user.split("\n\nOPTIONS:\n", 1)[1].splitlines()
    except IndexError:
        raise ValueError("not a caption question") from None
    found = []
    for line in options:
        letter, _, text = line.partition(". ")
        if text != CANNOT_TELL and re.search(rf"\b{re.escape(text.lower())}\b", description):
            found.append((len(text), letter))
    letter = max(found)[1] if found else options[-1].partition(". ")[0]
    return f'{{"answer": "{letter}"}}'
