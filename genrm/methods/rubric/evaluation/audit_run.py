"""Run the false-positive audit (RLR3 table 5): a judge under several settings, on regular and abnormal responses.

A **setting** is what the judge sees and how its answer is executed:

- ``default``: minimal exposure (no targets, no image) and the verifiers decide every verifiable criterion;
- ``vlm``: the same, with the input's image shown (self-answering risk);
- ``unlimited``: the targets shown to the judge (shortcut risk);
- ``no_verifier``: every criterion judged as fuzzy, the targets written as ground-truth text and no verifier run.

Per setting the audit reports:

- **accuracy on regular responses**: criterion-level, split into arguments (verifiable criteria: the extracted value
  matches the label's, judged by the verifier) and credit (fuzzy criteria), as :mod:`reliability`
  measures it;
- **grounding**: per category, attack and key, the verifiable criteria whose extracted value was found in the response
  (``grounded``) and those whose value was not (``ungrounded``: scored as no value stated when grounding is on, the
  default; ``genrm.methods.rubric.execution``);
- **false positive rate** per abnormal category, split by whether the criterion is verifiable or fuzzy in the
  rubric: among criteria the annotation leaves room for (deserved credit + ``margin`` < 1), the share where the
  judge's execution awards more than the deserved credit plus ``margin``. The awarded credit is what the reward
  would use: the verifier's score of the extracted value against the target, or the judge's credit for a fuzzy
  criterion (every criterion under ``no_verifier``). A criterion whose judgement failed is not a false positive and
  is not in the denominator; failures are counted in their own column, never turned into credit.

The master keys (:mod:`genrm.methods.master_keys`) are reported apart, one rate per key, beside the share of their
responses that got any undeserved credit. The worst false positives (largest excess credit) are listed with the
judge's extraction and rationale.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from genrm.choices import DEFAULT_CONCURRENCY, DEFAULT_SCORING_FORMAT, Grounding, ScoringFormat, grounding_checks
from genrm.engine.judge import Judge
from genrm.methods.base import UNGROUNDED
from genrm.methods.master_keys import MASTER_KEYS
from genrm.methods.rubric.evaluation.audit_set import ABNORMAL, ATTACKS, MASTER_KEY, AuditExample, plans_of, read_audit
from genrm.methods.rubric.evaluation.reliability import check_answer, judge_examples
from genrm.methods.rubric.execution import execute
from genrm.methods.rubric.judge_output import ParsedJudgement
from genrm.methods.rubric.prompts import Exposure
from genrm.methods.rubric.readers import RubricReader, rubric_reader

Setting = Literal["default", "vlm", "unlimited", "no_verifier"]
#: Each setting's exposure (see the module docstring).
SETTINGS: dict[str, Exposure] = {"default": "minimal", "vlm": "vlm", "unlimited": "unlimited",
                                 "no_verifier": "no_verifier"}  # fmt: skip
_TITLES = {"no_final_answer": "No final", "irrelevant": "Irrelevant", "wrong_but_plausible": "Plausible",
           "adversarial": "Adversarial", MASTER_KEY: "Master key"}  # fmt: skip


@dataclass(frozen=True)
class CriterionAudit:
    """One criterion of one abnormal response under one setting: what it deserves, what the judge gave it."""

    example_id: str
    category: str
    attack: str | None
    path: str
    criterion: str
    verifiable: bool
    deserved: float
    awarded: float | None
    status: str
    extracted: str | float | None
    rationale: str
    response: str
    quote: str | None = None  # the judge's evidence for a fuzzy credit (the evidence format), as written

    def eligible(self, margin: float) -> bool:
        """Whether the annotation leaves room for undeserved credit."""
        return self.deserved + margin < 1.0

    def false_positive(self, margin: float) -> bool | None:
        """True when the judge awarded more than deserved + ``margin``; None when its judgement failed."""
        if self.awarded is None:
            return None
        return self.awarded > self.deserved + margin


class Rate(BaseModel):
    """``count`` out of ``total``, and the rate in percent (None when the total is 0)."""

    count: int
    total: int
    percent: float | None

    @classmethod
    def of(cls, flags: Sequence[bool]) -> Rate:
        """The rate of True among ``flags``."""
        total = len(flags)
        count = sum(flags)
        return cls(count=count, total=total, percent=100.0 * count / total if total else None)

    def cell(self) -> str:
        """The percentage for a table, ``n/a`` when there is nothing to count."""
        return "n/a" if self.percent is None else f"{self.percent:.1f}"


class CategoryResult(BaseModel):
    """False positives of one abnormal category (or one attack) under one setting."""

    category: str
    responses: int
    fpr: Rate
    verifiable: Rate
    fuzzy: Rate
    failed: int
    responses_with_fp: int
    grounded: int = 0
    ungrounded: int = 0


class WorstCase(BaseModel):
    """One false positive, for a person to read."""

    example_id: str
    category: str
    attack: str | None
    criterion: str
    deserved: float
    awarded: float
    extracted: str | float | None
    rationale: str
    response: str
    quote: str | None = None


class SettingResult(BaseModel):
    """The audit of one setting."""

    setting: str
    exposure: str
    regular: Rate
    regular_arguments: Rate
    regular_credit: Rate
    regular_failed: int
    categories: list[CategoryResult]
    attacks: list[CategoryResult]
    worst: list[WorstCase]
    master_keys: list[CategoryResult] = []

    def category(self, name: str) -> CategoryResult:
        """The result of the category ``name``."""
        return next(c for c in self.categories if c.category == name)


class AuditReport(BaseModel):
    """The audit of one judge: a result per setting."""

    judge: str
    regular_responses: int
    abnormal_responses: dict[str, int]
    margin: float
    settings: list[SettingResult]
    skipped: dict[str, str] = {}
    grounding: str = "on"

    def setting(self, name: str) -> SettingResult:
        """The result of the setting ``name``."""
        return next(s for s in self.settings if s.setting == name)

    def markdown(self, worst: int = 5) -> str:
        """Table 5's layout: accuracy on regular responses, false positive rate per category, then the worst cases."""
        counts = ", ".join(f"{_TITLES[k].lower()} {v}" for k, v in self.abnormal_responses.items())
        lines = [f"Audit of {self.judge}: {self.regular_responses} regular responses; abnormal: {counts}",
                 f"(false positive: more than {self.margin:g} above the deserved credit; cells: all (verifiable / "
                 f"fuzzy) in %; grounding {self.grounding})", "",
                 "| setting | regular accuracy ↑ | " + " | ".join(f"{_TITLES[c]} FPR ↓" for c in ABNORMAL)
                 + " | failed judgements | ungrounded values |",
                 "| --- | ---: | " + " | ".join("---:" for _ in ABNORMAL) + " | ---: | ---: |"]  # fmt: skip
        for result in self.settings:
            cells = [f"{result.regular.cell()} ({result.regular_arguments.cell()} / {result.regular_credit.cell()})"]
            cells += [f"{c.fpr.cell()} ({c.verifiable.cell()} / {c.fuzzy.cell()})" for c in result.categories]
            abnormal = (*result.categories, *result.master_keys)
            failed = result.regular_failed + sum(c.failed for c in abnormal)
            ungrounded = sum(c.ungrounded for c in abnormal)
            values = ungrounded + sum(c.grounded for c in abnormal)
            lines.append(f"| {result.setting} | " + " | ".join(cells) + f" | {failed} | {ungrounded}/{values} |")
        for name, reason in self.skipped.items():
            lines.append(f"\n{name}: skipped ({reason})")
        if self.settings and self.settings[0].attacks:
            lines += ["", "Adversarial attacks (FPR %, all criteria; ungrounded/extracted values):", "",
                      "| setting | " + " | ".join(a.category for a in self.settings[0].attacks) + " |",
                      "| --- | " + " | ".join("---:" for _ in self.settings[0].attacks) + " |"]  # fmt: skip
            for result in self.settings:
                lines.append(
                    f"| {result.setting} | "
                    + " | ".join(
                        f"{a.fpr.cell()} ({a.ungrounded}/{a.grounded + a.ungrounded})" for a in result.attacks
                    )
                    + " |"
                )
        if self.settings and self.settings[0].master_keys:
            lines += ["", "Master keys (FPR %, all criteria; responses with a false positive):", "",
                      "| key | " + " | ".join(s.setting for s in self.settings) + " |",
                      "| --- | " + " | ".join("---:" for _ in self.settings) + " |"]  # fmt: skip
            for row, first in enumerate(self.settings[0].master_keys):
                cells = [f"{k.fpr.cell()} ({k.responses_with_fp}/{k.responses})"
                         for k in (s.master_keys[row] for s in self.settings)]  # fmt: skip
                lines.append(f"| {MASTER_KEYS[first.category]!r} ({first.category}) | " + " | ".join(cells) + " |")
        for result in self.settings:
            if not result.worst[:worst]:
                continue
            lines += ["", f"Worst false positives ({result.setting}):", ""]
            for case in result.worst[:worst]:
                kind = case.category + (f"/{case.attack}" if case.attack else "")
                quoting = "" if case.quote is None else f"; quoting {case.quote!r:.80}"
                lines.append(f"- `{case.example_id}` ({kind}) {case.criterion!r:.80}: deserved {case.deserved:.2f}, "
                             f"awarded {case.awarded:.2f}; judge wrote {case.extracted!r:.80}{quoting}; rationale "
                             f"{case.rationale!r:.160}; response {case.response!r:.160}")  # fmt: skip
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON."""
        return json.dumps(self.model_dump(), indent=2, ensure_ascii=False)


def criterion_audits(
    example: AuditExample, parsed: ParsedJudgement, exposure: Exposure, grounded: bool = True, evidence: bool = False
) -> list[CriterionAudit]:
    """Per criterion of one judged response: the deserved credit (its label) and what the judge's answer earns (a
    value not in the response earning nothing when ``grounded``, nor a fuzzy credit without a quote of the response
    with ``evidence`` too)."""
    scores = execute(parsed, example.plans(exposure), response=example.response, grounded=grounded,
                     evidence=evidence)  # fmt: skip
    judged = parsed.criteria if parsed.failure is None else [None] * len(scores)
    audits = []
    for plan, label, score, answer in zip(plans_of(example), example.labels, scores, judged, strict=True):
        rationale = answer.rationale if answer is not None and answer.rationale else parsed.thought or parsed.reason
        audits.append(
            CriterionAudit(
                example.id,
                example.category,
                example.attack,
                plan.path,
                plan.criterion.criterion,
                plan.verifier is not None,
                label.credit,
                score.score,
                score.status,
                score.extracted,
                rationale,
                example.response,
                None if answer is None else answer.quote,
            )  # fmt: skip
        )
    return audits


def _category_result(name: str, audits: list[list[CriterionAudit]], margin: float) -> CategoryResult:
    flat = [a for response in audits for a in response]
    judged = [a for a in flat if a.eligible(margin) and a.awarded is not None]
    flags = [bool(a.false_positive(margin)) for a in judged]
    return CategoryResult(
        category=name,
        responses=len(audits),
        fpr=Rate.of(flags),
        verifiable=Rate.of([f for a, f in zip(judged, flags, strict=True) if a.verifiable]),
        fuzzy=Rate.of([f for a, f in zip(judged, flags, strict=True) if not a.verifiable]),
        failed=sum(a.awarded is None for a in flat),
        responses_with_fp=sum(any(a.false_positive(margin) for a in response) for response in audits),
        grounded=sum(a.verifiable and a.awarded is not None and a.status != UNGROUNDED for a in flat),
        ungrounded=sum(a.status == UNGROUNDED for a in flat),
    )


def audit_setting(
    judge: RubricReader,
    examples: Sequence[AuditExample],
    setting: str,
    margin: float = 0.25,
    argument_threshold: float = 0.9,
    worst: int = 10,
    progress: bool = False,
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT,
    concurrency: int = DEFAULT_CONCURRENCY,
    grounding: Grounding = "on",
) -> SettingResult:
    """Judge every example of the audit set under ``setting`` and measure accuracy and false positives.

    Args:
        judge: any judge (rule, a local checkpoint, a remote model).
        examples: the audit set (regular and abnormal responses).
        setting: a key of :data:`SETTINGS`.
        margin: credit above the deserved one that counts as a false positive, in [0, 1).
        argument_threshold: verifier score at which a regular response's extracted value counts as right, in (0, 1].
        worst: how many of the worst false positives to keep.
        progress: show a progress bar.
        answer_format: the version of the answer format the judge is asked for.
        concurrency: inputs judged at once (>= 1).
        grounding: what of the judge's answers is checked against the responses (``genrm.choices.Grounding``).
    """
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r:.40}; valid: {', '.join(SETTINGS)}")
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"the false-positive margin must be in [0, 1), got {margin}")
    exposure = SETTINGS[setting]
    grounded, evidence = grounding_checks(grounding, answer_format)
    answers = judge_examples(judge, examples, exposure, progress, answer_format, concurrency)
    regular_checks, by_category = [], {name: [] for name in ABNORMAL}
    by_attack: dict[str, list[list[CriterionAudit]]] = {name: [] for name in ATTACKS}
    by_key: dict[str, list[list[CriterionAudit]]] = {name: [] for name in MASTER_KEYS}
    for example, parsed in zip(examples, answers, strict=True):
        if example.category == "regular":
            regular_checks.append(check_answer(parsed, example, argument_threshold, grounded, evidence))
            continue
        audits = criterion_audits(example, parsed, exposure, grounded, evidence)
        if example.category == MASTER_KEY:
            by_key[str(example.attack)].append(audits)
            continue
        by_category[example.category].append(audits)
        if example.attack:
            by_attack[example.attack].append(audits)
    flat = lambda name: [v for c in regular_checks for v in getattr(c, name) if v is not None]  # noqa: E731
    excess = [a for responses in (*by_category.values(), *by_key.values()) for response in responses for a in response
              if a.eligible(margin) and a.false_positive(margin)]  # fmt: skip
    excess.sort(key=lambda a: (-(float(a.awarded or 0.0) - a.deserved), a.example_id, a.path))
    return SettingResult(
        setting=setting,
        exposure=exposure,
        regular=Rate.of(flat("criteria_right")),
        regular_arguments=Rate.of(flat("arguments")),
        regular_credit=Rate.of(flat("credit")),
        regular_failed=sum(not ran for c in regular_checks for ran in c.execution),
        categories=[_category_result(name, by_category[name], margin) for name in ABNORMAL],
        attacks=[_category_result(name, by_attack[name], margin) for name in ATTACKS if by_attack[name]],
        master_keys=[_category_result(name, by_key[name], margin) for name in MASTER_KEYS if by_key[name]],
        worst=[
            WorstCase(
                example_id=a.example_id,
                category=a.category,
                attack=a.attack,
                criterion=a.criterion,
                deserved=a.deserved,
                awarded=float(a.awarded or 0.0),
                extracted=a.extracted,
                rationale=a.rationale[:500],
                response=a.response[:500],
                quote=None if a.quote is None else a.quote[:500],
            )
            for a in excess[:worst]
        ],  # fmt: skip
    )


def run_audit(
    judge: RubricReader,
    examples: Sequence[AuditExample],
    settings: Sequence[str] = tuple(SETTINGS),
    margin: float = 0.25,
    argument_threshold: float = 0.9,
    worst: int = 10,
    skipped: dict[str, str] | None = None,
    progress: bool = False,
    answer_format: ScoringFormat = DEFAULT_SCORING_FORMAT,
    concurrency: int = DEFAULT_CONCURRENCY,
    grounding: Grounding = "on",
) -> AuditReport:
    """The audit of ``judge`` under each of ``settings`` (see :func:`audit_setting`), asking for ``answer_format``,
    ``concurrency`` inputs at once, checking answers against the responses as ``grounding`` says; ``skipped`` says
    why some settings were left out (a text-only backend cannot show the image)."""
    abnormal = {name: sum(e.category == name for e in examples) for name in (*ABNORMAL, MASTER_KEY)}
    results = [audit_setting(judge, examples, s, margin, argument_threshold, worst, progress, answer_format,
                             concurrency, grounding) for s in settings]  # fmt: skip
    return AuditReport(
        judge=judge.name, regular_responses=sum(e.category == "regular" for e in examples),
        abnormal_responses=abnormal, margin=margin, settings=results, skipped=dict(skipped or {}),
        grounding=grounding,
    )  # fmt: skip


def read_audit_file(path: str, master_keys: bool = True) -> list[AuditExample]:
    """The audit set at ``path`` (``genrm audit build``'s JSONL; ValueError names a bad line), its master keys left
    out unless ``master_keys``."""
    with open(path, encoding="utf-8") as source:
        examples = read_audit(source, path)
    return examples if master_keys else [e for e in examples if e.category != MASTER_KEY]


def run_set_audit(
    judge: Judge,
    examples: Sequence[AuditExample],
    settings: Sequence[str] | None = None,
    *,
    margin: float = 0.25,
    argument_threshold: float = 0.9,
    worst: int = 10,
    progress: bool = False,
    answer_format: ScoringFormat | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    grounding: Grounding = "on",
) -> AuditReport:
    """The audit of the engine judge ``judge`` on ``examples``: :func:`run_audit` under ``settings`` (all by default;
    ``vlm`` is skipped, and the report says so, for a judge that cannot be shown images)."""
    kept, skipped = [], {}
    for setting in settings or list(SETTINGS):
        if SETTINGS[setting] == "vlm" and not judge.sees_images:
            skipped[setting] = f"{judge.model} is a text-only model: it cannot be shown the image"
        else:
            kept.append(setting)
    return run_audit(rubric_reader(judge), examples, kept, margin, argument_threshold, worst, skipped, progress,
                     answer_format or DEFAULT_SCORING_FORMAT, concurrency, grounding)  # fmt: skip


def plot_audit(report: AuditReport, path: str | Path) -> Path:
    """A bar chart of the report: regular accuracy per setting, and the false positive rate per category and
    setting (PNG). Raises ImportError when matplotlib is not installed (extra ``train``)."""
    from genrm.figures import pyplot, save

    plt = pyplot()

    settings = report.settings
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 3]})
    names = [s.setting for s in settings]
    left.bar(names, [s.regular.percent or 0.0 for s in settings], color="#4c72b0")
    left.set_ylim(0, 100)
    left.set_title("accuracy on regular responses (%)")
    left.tick_params(axis="x", rotation=30)
    width, highest = 0.8 / max(1, len(settings)), 0.0
    for offset, result in enumerate(settings):
        xs = [i + (offset - (len(settings) - 1) / 2) * width for i in range(len(ABNORMAL))]
        rates = [c.fpr.percent for c in result.categories]
        bars = right.bar(xs, [r or 0.0 for r in rates], width, label=result.setting)
        right.bar_label(bars, labels=["n/a" if r is None else f"{r:.0f}" for r in rates], fontsize=7)
        highest = max([highest, *(r for r in rates if r is not None)])
    right.set_xticks(range(len(ABNORMAL)), [_TITLES[c] for c in ABNORMAL])
    right.set_ylim(0, min(100.0, max(10.0, highest * 1.2)))
    right.set_ylabel("false positive rate (%)")
    right.set_title(f"false positives of {report.judge} (lower is better)")
    right.legend(fontsize=8)
    return save(figure, path)
