"""The reliability table of a judge (RLR3 table 4): how often its answers are well formed, executable and right.

For each labelled example (:class:`genrm.methods.rubric.judge_data.JudgeExample`) the judge's answer is read against
the rubric and compared with the labels:

- **Schema** (per answer): one JSON object with every required field of the right type, fuzzy credits in {0, 0.5, 1};
- **Criterion** (per answer): the sections hold exactly the rubric's criteria, each copied;
- **Execution** (per criterion): the right path (a credit for a fuzzy criterion, a call for a verifiable one) and the
  right verifier, with a call that parses;
- **Grounded** (per verifiable criterion): the extracted value is found in the response
  (``genrm.methods.rubric.execution``), as it must be to count when grounding is on;
- **Arguments** (per verifiable criterion): the extracted value matches the label's, judged by the criterion's own
  verifier (score >= ``argument_threshold``), not by string equality, and, when grounding is on, is grounded;
- **Credit** (per fuzzy criterion): the credit equals the label's (under the ``evidence`` format, a credit above 0
  counts only with a quote that is evidence of the response, as in scoring);
- **Criterion-level** (per criterion): executed and right (arguments or credit);
- **Sample-level** (per answer): every criterion right.

A failed form counts against every finer measure of the same answer: an unreadable answer has no criterion right.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from genrm.choices import DEFAULT_CONCURRENCY, DEFAULT_SCORING_FORMAT, Grounding, ScoringFormat, grounding_checks
from genrm.engine import run_blocking
from genrm.methods.rubric.evaluation.answers import AnswerLine
from genrm.methods.rubric.execution import fuzzy_score, missing_value
from genrm.methods.rubric.judge_data import CriterionLabel, JudgeExample, sft_record
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.judge_rewards import arguments_score, expected_credit, format_reward
from genrm.methods.rubric.prompts import Exposure
from genrm.methods.rubric.readers import GroupRequest, RubricReader

_FORM_FAILURES = ("not_json", "schema", "backend_error")
_EXECUTION_FAILURES = ("wrong_path", "wrong_verifier", "bad_call", "unscored")


@dataclass(frozen=True)
class AnswerCheck:
    """The checks of one answer: form per answer, then per criterion (``None`` where a measure does not apply)."""

    schema: bool
    criterion_slots: bool
    execution: tuple[bool, ...]
    arguments: tuple[bool | None, ...]
    credit: tuple[bool | None, ...]
    grounded: tuple[bool | None, ...] = ()

    @property
    def criteria_right(self) -> tuple[bool, ...]:
        """Per criterion: executed and right."""
        measures = zip(self.execution, self.arguments, self.credit, strict=True)
        return tuple(bool(ran and (args if args is not None else credit)) for ran, args, credit in measures)

    @property
    def sample_right(self) -> bool:
        """Every criterion right (and the form with it)."""
        return self.schema and self.criterion_slots and all(self.criteria_right)

    def record(self, example: JudgeExample) -> AnswerLine:
        """One line of ``genrm eval --answers``: which ``example`` was checked and what was right in its answer, to
        pick the examples a judge gets wrong (``genrm data hard``)."""
        return AnswerLine(id=example.id, input_id=example.input_id, sample_right=self.sample_right,
                          schema=self.schema, criterion_slots=self.criterion_slots,
                          criteria_right=list(self.criteria_right), execution=list(self.execution),
                          arguments=list(self.arguments), credit=list(self.credit))  # fmt: skip


def check_answer(
    parsed: ParsedJudgement,
    example: JudgeExample,
    argument_threshold: float = 0.9,
    grounded: bool = True,
    evidence: bool = False,
) -> AnswerCheck:
    """Check one parsed answer against ``example``'s labels (see the module docstring).

    Args:
        parsed: the judge's answer read against ``example.plans(exposure)``.
        example: the labelled example.
        argument_threshold: verifier score at or above which an extracted value counts as right, in (0, 1].
        grounded: whether a value must be found in the response to count (grounded extraction, on by default).
        evidence: whether a fuzzy credit needs a quote of the response (the ``evidence`` format; with ``grounded``).
    """
    needs_quote = grounded and evidence and not parsed.read_by_rule
    labels: list[CriterionLabel] = example.labels
    count = len(labels)
    schema = parsed.failure not in _FORM_FAILURES and not any(c.failure == "schema" for c in parsed.criteria)
    slots = (schema and parsed.failure != "criterion_mismatch" and len(parsed.criteria) == count
             and not any(c.failure == "criterion_mismatch" for c in parsed.criteria))  # fmt: skip
    if not slots:
        verifiable = [label.call is not None for label in labels]
        return AnswerCheck(schema, False, (False,) * count, tuple(False if v else None for v in verifiable),
                           tuple(None if v else False for v in verifiable))  # fmt: skip
    execution, arguments, credit, found = [], [], [], []
    for judged, label in zip(parsed.criteria, labels, strict=True):
        ran = judged.failure is None
        execution.append(ran)
        if judged.plan.verifier is not None:
            stated = (
                None
                if judged.call is None
                else (parsed.read_by_rule or missing_value(judged.plan, judged.call, example.response) is None)
            )
            found.append(stated)
            right = ran and label.call is not None and judged.call is not None and (stated or not grounded)
            arguments.append(right and arguments_score(judged.plan, label.call, judged.call) >= argument_threshold)
            credit.append(None)
        else:
            found.append(None)
            arguments.append(None)
            score = fuzzy_score(judged.plan, judged, example.response, needs_quote).score if ran else None
            credit.append(ran and score == expected_credit(label))
    return AnswerCheck(schema, slots, tuple(execution), tuple(arguments), tuple(credit), tuple(found))


class ReliabilityRow(BaseModel):
    """One measure: how many were right out of how many, and the rate in percent (None when there were none)."""

    measure: str
    unit: str
    right: int
    total: int
    percent: float | None


class ReliabilityReport(BaseModel):
    """The reliability table of one judge on one data set."""

    judge: str
    examples: int
    rows: list[ReliabilityRow]

    def row(self, measure: str) -> ReliabilityRow:
        """The row named ``measure`` (e.g. ``Schema``)."""
        return next(r for r in self.rows if r.measure == measure)

    def markdown(self) -> str:
        """The table as markdown."""
        lines = [f"Reliability of {self.judge} on {self.examples} answers", "",
                 "| measure | unit | right | total | % |", "| --- | --- | ---: | ---: | ---: |"]  # fmt: skip
        for r in self.rows:
            percent = "n/a" if r.percent is None else f"{r.percent:.1f}"
            lines.append(f"| {r.measure} | {r.unit} | {r.right} | {r.total} | {percent} |")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The table as JSON."""
        return json.dumps(self.model_dump(), indent=2)


def _row(measure: str, unit: str, values: Iterable[bool | None]) -> ReliabilityRow:
    counted = [v for v in values if v is not None]
    right = sum(counted)
    percent = 100.0 * right / len(counted) if counted else None
    return ReliabilityRow(measure=measure, unit=unit, right=right, total=len(counted), percent=percent)


def reliability_report(checks: list[AnswerCheck], judge: str) -> ReliabilityReport:
    """Aggregate answer checks into the table (rates over answers or criteria, as each row's unit says)."""
    flat = lambda name: [v for c in checks for v in getattr(c, name)]  # noqa: E731
    rows = [
        _row("Schema", "answer", [c.schema for c in checks]),
        _row("Criterion", "answer", [c.criterion_slots for c in checks]),
        _row("Execution", "criterion", flat("execution")),
        _row("Grounded", "verifiable criterion", flat("grounded")),
        _row("Arguments", "verifiable criterion", flat("arguments")),
        _row("Credit", "fuzzy criterion", flat("credit")),
        _row("Criterion-level", "criterion", flat("criteria_right")),
        _row("Sample-level", "answer", [c.sample_right for c in checks]),
    ]
    return ReliabilityReport(judge=judge, examples=len(checks), rows=rows)


def judge_examples(
    judge: RubricReader,
    examples: Sequence[JudgeExample],
    exposure: Exposure = "minimal",
    progress: bool = False,
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> list[ParsedJudgement]:
    """Judge every example with ``judge`` under ``exposure``, asking for ``answer_format``; the parsed answers, in
    the order of ``examples``.

    Examples of the same input are judged as one group (one request, a shared prompt prefix); the image is shown only
    under the ``vlm`` exposure. Up to ``concurrency`` groups (>= 1) are judged at once, so that a judge in process
    decodes them in one batch and a served one has them in flight together.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    from tqdm import tqdm

    groups: dict[str, list[int]] = {}
    for index, example in enumerate(examples):
        groups.setdefault(example.input_id, []).append(index)
    bar = tqdm(total=len(examples), unit="answer", desc=f"judging ({judge.name}, {exposure})", disable=not progress)

    async def judge_all() -> list[list[ParsedJudgement]]:
        gate = asyncio.Semaphore(concurrency)

        async def one(indices: list[int]) -> list[ParsedJudgement]:
            first = examples[indices[0]]
            image = first.image if exposure == "vlm" else None
            request = GroupRequest(first.prompt, first.plans(exposure), [examples[i].response for i in indices], image,
                                   exposure, answer_format)  # fmt: skip
            async with gate:
                parsed = await judge.read(request)
            bar.update(len(indices))
            return parsed

        return list(await asyncio.gather(*(one(indices) for indices in groups.values())))

    answers: list[ParsedJudgement | None] = [None] * len(examples)
    try:
        for indices, parsed in zip(groups.values(), run_blocking(judge_all()), strict=True):
            for index, answer in zip(indices, parsed, strict=True):
                answers[index] = answer
    finally:
        bar.close()
    return [a if a is not None else ParsedJudgement("backend_error", "no answer") for a in answers]


def evaluate(
    judge: RubricReader,
    examples: list[JudgeExample],
    exposure: Exposure = "minimal",
    argument_threshold: float = 0.9,
    progress: bool = False,
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT,
    concurrency: int = DEFAULT_CONCURRENCY,
    grounding: Grounding = "on",
) -> tuple[ReliabilityReport, list[AnswerCheck]]:
    """Judge every example with ``judge`` (:func:`judge_examples`, asking for ``answer_format``, ``concurrency``
    groups at once) and build the reliability table, checking the answers against the responses as ``grounding``
    says (``genrm.choices.Grounding``).

    Returns the report and the per-answer checks, in the order of ``examples``.
    """
    answers = judge_examples(judge, examples, exposure, progress, answer_format, concurrency)
    grounded, evidence = grounding_checks(grounding, answer_format)
    checks = [check_answer(parsed, example, argument_threshold, grounded, evidence)
              for parsed, example in zip(answers, examples, strict=True)]  # fmt: skip
    return reliability_report(checks, judge.name), checks


def sampled_format_reward(
    checkpoint: str | Path,
    examples: Sequence[JudgeExample],
    samples: int,
    temperature: float = 0.7,
    max_new_tokens: int = 256,
    seed: int = 0,
) -> float:
    """Mean strict format reward (:func:`genrm.methods.rubric.judge_rewards.format_reward` against each rubric, in
    [0, 1]) of ``samples`` answers per example, sampled from the text judge at ``checkpoint`` the way RLVR samples them
    (``temperature``, full vocabulary, at most ``max_new_tokens`` tokens), under the minimal exposure.

    This is the reward RLVR raises, measured on fresh samples rather than read from the trainer's logs; the sampling
    is seeded (``seed``), so the same checkpoint gives the same value on the same machine.
    """
    import statistics

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from genrm.engine.checkpoints import checkpoint_path

    checkpoint = checkpoint_path(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(checkpoint).eval()
    prompts = [tokenizer.apply_chat_template(sft_record(e)["prompt"], tokenize=False, add_generation_prompt=True)
               for e in examples]  # fmt: skip
    batch = tokenizer(prompts, return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature,
                             top_k=0, num_return_sequences=samples)  # fmt: skip
    texts = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
    return statistics.mean(format_reward(text, examples[i // samples].plans()) for i, text in enumerate(texts))
