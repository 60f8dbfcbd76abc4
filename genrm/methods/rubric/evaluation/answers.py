"""What was right in each answer of a judge (one line per example of ``genrm eval --answers``), and the examples it
got wrong, picked out of them (``genrm data hard``).

The examples a judge already gets right teach RLVR nothing: every sample of such a prompt scores alike, so the group's
advantages are all 0. Training on the examples it still gets wrong puts the steps where the reward has spread.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genrm.methods.rubric.judge_data import JudgeExample


class AnswerLine(BaseModel):
    """One line of ``genrm eval --answers``: which example was checked and what was right in the judge's answer (per
    criterion, in the rubric's order; ``None`` where a measure does not apply)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    input_id: str
    sample_right: bool
    # "schema" would shadow BaseModel.schema; the file spells it "schema"
    schema_: bool = Field(alias="schema")
    criterion_slots: bool
    criteria_right: list[bool]
    execution: list[bool]
    arguments: list[bool | None]
    credit: list[bool | None]

    @model_validator(mode="after")
    def _consistent(self) -> AnswerLine:
        lengths = {len(self.criteria_right), len(self.execution), len(self.arguments), len(self.credit)}
        if len(lengths) != 1:
            raise ValueError("criteria_right, execution, arguments and credit must have one item per criterion")
        if self.sample_right != (self.schema_ and self.criterion_slots and all(self.criteria_right)):
            raise ValueError("sample_right must be true exactly when schema, criterion_slots and every criteria_right "
                             "are")  # fmt: skip
        return self

    def to_json(self) -> str:
        """The line as the file holds it (field names as ``genrm eval --answers`` writes them)."""
        return self.model_dump_json(by_alias=True)


def hard_examples(
    examples: Sequence[JudgeExample],
    answers: Sequence[AnswerLine],
    answers_source: str = "answers",
    examples_source: str = "examples",
) -> list[JudgeExample]:
    """The ``examples`` whose answer in ``answers`` was not right (sample level: some criterion wrong, or the form),
    in the order of ``examples``; an example with no answer line (``genrm eval --limit``) is not kept.

    Raises ValueError naming ``examples_source`` when two examples share an id (answers are matched to examples by
    id), and naming ``answers_source`` when the answers were not written for these examples: an id twice, an id that
    is not an example's, or one whose input or criterion count differs from its example's.
    """
    by_id: dict[str, JudgeExample] = {}
    line_of: dict[str, int] = {}
    for number, example in enumerate(examples, 1):
        if example.id in line_of:
            raise ValueError(f"{examples_source} line {number}: id {example.id!r} is also line "
                             f"{line_of[example.id]}'s: answers are matched to examples by id, so each needs its "
                             "own")  # fmt: skip
        by_id[example.id], line_of[example.id] = example, number
    seen: set[str] = set()
    for number, answer in enumerate(answers, 1):
        where = f"{answers_source} line {number}"
        if answer.id in seen:
            raise ValueError(f"{where}: id {answer.id!r} is answered twice")
        seen.add(answer.id)
        example = by_id.get(answer.id)
        if example is None:
            raise ValueError(f"{where}: id {answer.id!r} is no example of the examples file: were these answers "
                             "written for another file?")  # fmt: skip
        if answer.input_id != example.input_id or len(answer.criteria_right) != len(example.labels):
            raise ValueError(f"{where}: the answer to {answer.id!r} is for another example (input "
                             f"{answer.input_id!r}, {len(answer.criteria_right)} criteria; the example's: input "
                             f"{example.input_id!r}, {len(example.labels)} criteria)")  # fmt: skip
    wrong = {answer.id for answer in answers if not answer.sample_right}
    return [example for example in examples if example.id in wrong]
