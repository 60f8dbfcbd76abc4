"""Judge-training data: one labelled judgement per line, and the dataset formats TRL's trainers read.

A :class:`JudgeExample` is one response to one input (prompt + rubric) with a label per criterion: for a verifiable
criterion the scoring-side call holding the value to extract (``expr_verify(predict='12')``), for a fuzzy one the
credit (0, 0.5 or 1); each label also keeps the credit the criterion earns. Labels come from teachers or
from the synthetic generator (:mod:`.synthetic`), which knows them by construction. The same file feeds:

- SFT (:func:`sft_record`): ``{"prompt": [system, user], "completion": [assistant]}``, the conversational
  prompt-completion format of TRL's ``SFTTrainer`` (loss on the completion only), the prompt built by the same
  builders the server uses, the completion the labelled answer as JSON;
- RLVR (:func:`rlvr_record`): ``{"prompt": [system, user], "judge_label": "<JSON>"}`` for TRL's ``GRPOTrainer``,
  whose reward functions receive the ``judge_label`` column (:mod:`genrm.methods.rubric.judge_rewards`);
- evaluation (:mod:`genrm.methods.rubric.evaluation.reliability`).

Message contents are plain strings. Under the ``vlm`` exposure a record also has an ``images`` column (a list with the
example's image reference, empty when it has none): TRL's vision format, where the trainer puts the image before the
user's text; :func:`genrm.training.common.judge_datasets` reads the pixels (:mod:`genrm.engine.images`).

Both record formats load with ``datasets.load_dataset("json", data_files=...)``; the label is a JSON string so that
Arrow never has to unify rubrics of different shapes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genrm.choices import DEFAULT_SCORING_FORMAT, ScoringFormat, copies_criterion, quotes_evidence
from genrm.engine.answer_grammar import answer_text
from genrm.jsonl import read_models
from genrm.methods.base import IMAGES_COLUMN, LABEL_COLUMN
from genrm.methods.rubric.judge_output import FUZZY_CREDITS
from genrm.methods.rubric.models import SECTIONS, Rubric
from genrm.methods.rubric.planning import CriterionPlan, plan_rubric
from genrm.methods.rubric.prompts import Exposure, build_scoring_prompt, exposed_plans
from verifiers.calls import parse_call
from verifiers.result import VerifierError


class CriterionLabel(BaseModel):
    """The label of one criterion: the value a judge should extract (verifiable) or the credit (fuzzy)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(pattern=r"^(essential|additional)\[\d+\]$", description="e.g. essential[0]")
    call: str | None = Field(None, max_length=20_000, description="scoring-side call (verifiable criteria)")
    credit: float = Field(ge=0.0, le=1.0, description="credit the criterion earns (fuzzy: 0, 0.5 or 1)")
    rationale: str = Field("", max_length=2_000, description="a short reason, shown to SFT; never rewarded")
    quote: str | None = Field(
        None, max_length=2_000, description="fuzzy: the shortest passage of the response that earns the credit"
    )


class JudgeExample(BaseModel):
    """One labelled judgement: an input (prompt and rubric), one response, and one label per criterion in order."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    input_id: str = Field(min_length=1, max_length=256, description="the input's id: train/test never share one")
    prompt: str = Field(max_length=100_000)
    image: str | None = Field(None, max_length=10_000_000)
    task_type: str | None = Field(None, max_length=64)
    rubric: Rubric
    response: str = Field(max_length=100_000)
    labels: list[CriterionLabel]
    thought: str = Field("", max_length=4_000, description="a short reading of the response, shown to SFT")
    source: Literal["synthetic", "teachers", "audit"] = Field(
        "teachers",
        description="synthetic, teachers, or audit (an abnormal response of an audit set, its annotation "
        "as the labels: a negative example)",
    )

    @model_validator(mode="after")
    def _labels_match_the_rubric(self) -> JudgeExample:
        plans = plan_rubric(self.rubric, self.task_type)
        paths = [plan.path for plan in plans]
        if [label.path for label in self.labels] != paths:
            raise ValueError(f"labels must follow the rubric's criteria in order: {paths}")
        for plan, label in zip(plans, self.labels, strict=True):
            if plan.verifier is None:
                if label.call is not None or label.credit not in FUZZY_CREDITS:
                    raise ValueError(f"{plan.path} is fuzzy: its label is a credit of 0, 0.5 or 1 and no call")
                continue
            if label.call is None:
                raise ValueError(f"{plan.path} is verifiable: its label needs a {plan.verifier}(...) call")
            try:
                call = parse_call(label.call, side="scoring")
            except VerifierError as exc:
                raise ValueError(f"{plan.path}: {exc}") from None
            if call.name != plan.verifier:
                raise ValueError(f"{plan.path}: the label calls {call.name}, the rubric {plan.verifier}")
        return self

    def plans(self, exposure: Exposure = "minimal") -> list[CriterionPlan]:
        """The rubric's plans as the judge's answer is read under ``exposure``."""
        return exposed_plans(plan_rubric(self.rubric, self.task_type), exposure)

    @property
    def loses_credit(self) -> bool:
        """Whether any criterion earns less than full credit (the balancing key)."""
        return any(label.credit < 1.0 for label in self.labels)


def labelled_answer(
    example: JudgeExample, exposure: Exposure = "minimal", answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT
) -> dict[str, Any]:
    """The judge answer the labels call for, as the JSON object the judge writes
    (``genrm.methods.rubric.models.JudgeOutput``) in ``answer_format``.

    Under the ``no_verifier`` exposure every criterion is fuzzy, so a verifiable label gives its credit rounded to
    the nearest of 0, 0.5 and 1. Under the ``evidence`` format a fuzzy item carries the label's quote ("" for credit
    0).
    """
    answer: dict[str, Any] = {"thought": example.thought, **{section: [] for section in SECTIONS}}
    for plan, label in zip(example.plans(exposure), example.labels, strict=True):
        if plan.verifier is not None:
            credit: Any = label.call
        else:
            credit = min(FUZZY_CREDITS, key=lambda allowed: abs(allowed - label.credit))
            credit = int(credit) if credit in (0.0, 1.0) else credit
        item = {"criterion": plan.criterion.criterion} if copies_criterion(answer_format) else {}
        item["rationale"] = label.rationale
        if plan.verifier is None and quotes_evidence(answer_format):
            item["quote"] = (label.quote or "") if credit else ""
        answer[plan.section].append({**item, "credit": credit})
    return answer


def _prompt_record(example: JudgeExample, exposure: Exposure, answer_format: ScoringFormat) -> dict[str, Any]:
    plans = example.plans(exposure)
    prompt = build_scoring_prompt(example.prompt, plans, example.response, exposure, answer_format=answer_format)
    record: dict[str, Any] = {"id": example.id, "prompt": prompt.messages()}
    if exposure == "vlm":
        record[IMAGES_COLUMN] = [example.image] if example.image else []
    return record


def sft_record(
    example: JudgeExample, exposure: Exposure = "minimal", answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT
) -> dict[str, Any]:
    """A conversational prompt-completion record for TRL's ``SFTTrainer`` (``images`` too under ``vlm``), asking
    for and answering in ``answer_format``."""
    answer = answer_text(labelled_answer(example, exposure, answer_format))
    prompt = _prompt_record(example, exposure, answer_format)
    return {**prompt, "completion": [{"role": "assistant", "content": answer}]}


def rlvr_record(
    example: JudgeExample, exposure: Exposure = "minimal", answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT
) -> dict[str, Any]:
    """A conversational prompt record for TRL's ``GRPOTrainer``, asking for ``answer_format`` (the rewards read
    either); the label rides along in ``judge_label``."""
    label = {"exposure": exposure, "example": example.model_dump(mode="json", exclude={"image"})}
    return {**_prompt_record(example, exposure, answer_format), LABEL_COLUMN: json.dumps(label)}


def read_examples(lines: Iterable[str], model: type[JudgeExample] = JudgeExample, source: str = "") -> list[Any]:
    """Examples of ``model`` (a judge example or a subclass) from JSONL lines of the file ``source``; ValueError names
    the first bad line and field (:func:`genrm.jsonl.read_models`)."""
    return read_models(lines, model, source)
