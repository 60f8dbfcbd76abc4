"""The rubric method's data, as pydantic models: rubric, instance, judge output.

A rubric (RLR3 appendix A.1) has ``essential`` and ``additional`` lists of criteria; each criterion has a text, a
reference (ground-truth text for a fuzzy criterion, or a rubric-side verifier call such as
``bbox_verify(target=[[531,118,892,435]])`` for a verifiable one) and a weight 1 (auxiliary), 2 (important) or 3
(key). An instance is one prompt with its rubric and the G responses to score; it is one line of the instance JSONL
that the command line and the HTTP API both read:

    {"id": str, "prompt": str, "image": str|null, "reference_answer": str|null, "task_type": str|null,
     "max_response_chars": int|null, "rubric": {"essential": [...], "additional": [...]}, "responses": [str]}

The judge's output (appendix A.2) mirrors the rubric: a ``thought`` and, per criterion, a ``rationale`` and a
``credit`` that is 0, 0.5 or 1 for a fuzzy criterion, or a scoring-side call string for a verifiable one. It comes in
versions (``genrm.choices.ScoringFormat``), and the reader takes every one whatever the judge was asked for:

- ``compact`` (the default): each item is ``{"rationale", "credit"}``, matched to the rubric by its position (the
  checklist's order and sections, which the JSON schema of constrained decoding fixes too);
- ``rlr3``: each item also copies its ``criterion`` first, as in the paper's appendix A.2. The copy tells nothing the
  position does not (constrained decoding even writes it as a constant), but it costs about 13 output tokens per
  criterion, about a third of an item; use it for a judge trained on it.
- ``brief``: the ``compact`` answer, asked for under a short system prompt (no tools' reference) for small judges
  trained from scratch (``genrm.methods.rubric.prompts``).
- ``evidence``: ``brief``, with a ``quote`` before each reference item's ``credit``: the shortest passage of the
  response that earns it. A credit above 0 counts only with a quote found in the response that holds content
  (``genrm.methods.rubric.execution``).

Sizes are bounded so that a hostile body cannot make the server allocate without limit; every model forbids unknown
fields, so a misspelt key is an error that names it rather than a silently ignored field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator

from genrm.methods.base import MAX_RESPONSES

Weight = Literal[1, 2, 3]
SectionName = Literal["essential", "additional"]
SECTIONS: tuple[SectionName, ...] = ("essential", "additional")

MAX_CRITERIA_PER_SECTION = 64


class Criterion(BaseModel):
    """One rubric item: an assertion about the response, its reference, and its weight."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(min_length=1, max_length=2_000, description="the assertion to check; never the answer")
    reference: str = Field(
        min_length=1, max_length=20_000, description="ground-truth text (fuzzy) or a rubric-side verifier call"
    )
    weight: Weight = Field(description="1 auxiliary, 2 important, 3 key")

    @field_validator("weight", mode="before")
    @classmethod
    def _integer_weight(cls, value: object) -> object:
        # Without this, True would pass as 1 and 2.0 as 2.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"weight must be the integer 1, 2 or 3, got {value!r:.40}")
        return value


class Rubric(BaseModel):
    """An instance-specific checklist: essential criteria gate the reward, additional ones refine it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    essential: list[Criterion] = Field(min_length=1, max_length=MAX_CRITERIA_PER_SECTION)
    additional: list[Criterion] = Field(default_factory=list, max_length=MAX_CRITERIA_PER_SECTION)

    def criteria(self) -> list[tuple[SectionName, int, Criterion]]:
        """Every criterion in order, essential first, with its section and its index within the section."""
        return [(section, i, c) for section in SECTIONS for i, c in enumerate(getattr(self, section))]


class Instance(BaseModel):
    """One prompt, its rubric, and the group of responses to score (one line of the instance JSONL)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    prompt: str = Field(max_length=100_000)
    image: str | None = Field(default=None, max_length=10_000_000, description="path, URL or data URI")
    reference_answer: str | None = Field(default=None, max_length=100_000)
    task_type: str | None = Field(default=None, max_length=64)
    max_response_chars: StrictInt | None = Field(default=None, gt=0, description="longer responses get reward 0")
    rubric: Rubric
    responses: list[str] = Field(default_factory=list, max_length=MAX_RESPONSES)


#: A fuzzy criterion's credit is a JSON number, a verifiable one's a call string. Read strictly: pydantic's lax mode
#: would turn ``true``, ``"1"`` and ``"1.0"`` into 1.0, a credit the judge never wrote as one.
Credit = StrictBool | StrictInt | StrictFloat | StrictStr


class JudgedCriterion(BaseModel):
    """The judge's verdict on one criterion: a short rationale and the credit or call (and under the ``rlr3``
    format the criterion copied)."""

    model_config = ConfigDict(extra="forbid")

    criterion: str | None = None
    rationale: str = ""
    quote: str | None = Field(default=None, max_length=2_000)
    credit: Credit


class JudgeOutput(BaseModel):
    """The judge's whole answer for one response, mirroring the rubric's two sections."""

    model_config = ConfigDict(extra="forbid")

    thought: str = ""
    essential: list[JudgedCriterion]
    additional: list[JudgedCriterion] = Field(default_factory=list)
