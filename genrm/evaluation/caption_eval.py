"""``genrm captions eval``: one report per caption file, the reference metrics and the judged ones side by side, per
system, and how well each metric's ranking of the systems agrees with a human ranking.

The file is balcap instances (an image, a reference caption, the captions as ``responses``); caption k of every
instance is system k's (:func:`genrm.evaluation.bcapscore.system_names`). Per system:

- the reference metrics (:mod:`genrm.evaluation.reference_metrics`: BLEU-4, METEOR, ROUGE-L, CIDEr-D, SPICE), each
  over the system's captions against the instances' references;
- with a judge, b-CapScore, the DCScore-style F1 and their parts (:mod:`genrm.evaluation.bcapscore`), means over
  judged captions, from one judgement per caption;
- with a judge and a question file, the accuracy of questions answered from the caption alone, whole and cut to
  word limits (:mod:`genrm.evaluation.caption_qa`);
- with a judge and two systems or more, the blind ranking (:mod:`genrm.methods.rubicap.blind_ranking`): the share of
  images where each system ranks first and its mean total, with the four dimensions apart;
- the mean caption length in words.

**Alignment** (BalCapRL table 5): given a human ranking of the systems (best first), the Spearman correlation between
each metric's ranking and the human one (``scipy.stats.spearmanr``; ties share a rank), with its p-value and the
number of systems. With fewer than three systems a correlation is +1 or -1 by construction; the report says so.

A metric that could not run is listed with its reason, never scored 0; a caption whose judgement failed is counted
apart, as b-CapScore counts it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from genrm.choices import BLIND_RANKING, CAPTION_QA, JUDGED_CAPTION_METRICS, REFERENCE_METRICS
from genrm.engine.types import ChatRequest
from genrm.evaluation.bcapscore import BCapReport, system_names
from genrm.evaluation.caption_qa import QAResult
from genrm.evaluation.reference_metrics import TITLES, reference_scores, tokenizer_name
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.rubicap.blind_ranking import DIMENSIONS, RankingResult

#: How every metric a report can hold is printed.
ALL_TITLES: dict[str, str] = {**TITLES, "b_capscore": "b-CapScore", "dcscore": "DCScore-style F1",
                              "precision": "precision", "recall": "recall", "linguistic": "linguistic",
                              CAPTION_QA: "QA accuracy", "ranking_first": "ranked first",
                              "ranking_total": "blind total"}  # fmt: skip
#: The figures the blind ranking puts in the table (both higher is better).
RANKING_FIGURES = {"ranking_first": "first", "ranking_total": "total"}


def qa_metric(limit: int | None) -> str:
    """The report's name of the question-answering accuracy at a word limit (``qa`` for the whole caption)."""
    return CAPTION_QA if limit is None else f"{CAPTION_QA}@{limit}"


def title(metric: str) -> str:
    """How ``metric`` is printed (``qa@50``: QA accuracy at 50 words)."""
    if metric.startswith(f"{CAPTION_QA}@"):
        return f"QA @{metric.split('@', 1)[1]} words"
    return ALL_TITLES.get(metric, metric)


@dataclass(frozen=True)
class Agreement:
    """One metric's agreement with the human ranking: Spearman's rho and its p-value (None when undefined: the
    metric does not vary over the systems, or too few systems), over ``systems`` systems."""

    rho: float | None
    p_value: float | None
    systems: int


@dataclass
class CaptionEvalReport:
    """Per system, each metric's figure (None where it could not be computed); what was skipped and why."""

    systems: list[str]
    metrics: list[str]
    figures: dict[str, dict[str, float | None]] = field(default_factory=dict)
    captions: dict[str, int] = field(default_factory=dict)
    words: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    tokenizer: str = "ptb"
    judged: BCapReport | None = None
    human_ranking: list[str] | None = None
    alignment: dict[str, Agreement] = field(default_factory=dict)
    per_caption: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    qa: QAResult | None = None
    ranking: RankingResult | None = None

    def computed(self) -> list[str]:
        """The figures computed for at least one system, in the metrics' order (the blind ranking gives two)."""
        names = [n for m in self.metrics for n in (RANKING_FIGURES if m == BLIND_RANKING else [m])]
        return [n for n in names if any(self.figures[s].get(n) is not None for s in self.systems)]

    def markdown(self) -> str:
        """The per-system table, what was skipped, and the alignment with the human ranking."""
        shown = self.computed()
        head = ["system", "captions", "words", *(title(m) for m in shown)]
        lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for system in self.systems:
            cells = [_cell(self.figures[system].get(m)) for m in shown]
            lines.append(f"| {system} | {self.captions[system]} | {self.words[system]:.1f} | {' | '.join(cells)} |")
        if self.tokenizer != "ptb" and any(m in REFERENCE_METRICS for m in shown):
            lines.append("\nReference metrics on the plain tokenizer (no Java): not comparable with published COCO "
                         "figures.")  # fmt: skip
        if self.qa is not None:
            lines += self._qa_lines()
        if self.ranking is not None:
            lines += self._ranking_lines()
        if self.judged is not None:
            failed = sum(c.failure is not None for c in self.judged.captions)
            if failed:
                lines.append(f"\n{failed} of {len(self.judged.captions)} judgements failed: left out of the judged "
                             "metrics.")  # fmt: skip
        for metric, why in self.skipped.items():
            lines.append(f"\nskipped {title(metric)}: {why}")
        if self.human_ranking:
            lines += ["", f"Agreement with the human ranking ({' > '.join(self.human_ranking)}), Spearman:", "",
                      "| metric | rho | p | systems |", "|---|---:|---:|---:|"]  # fmt: skip
            for metric, agreement in self.alignment.items():
                lines.append(f"| {title(metric)} | {_cell(agreement.rho)} | {_cell(agreement.p_value)} | "
                             f"{agreement.systems} |")  # fmt: skip
            if len(self.systems) < 3:
                lines.append("\nWith fewer than three systems every correlation is +1 or -1.")
        return "\n".join(lines)

    def _qa_lines(self) -> list[str]:
        qa = self.qa
        assert qa is not None
        limits = qa.limits()
        lines = ["", "Question answering from the caption alone (right / cannot tell / failed of the questions):", "",
                 "| system | words | questions | right | cannot tell | failed | accuracy |",
                 "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for system in self.systems:
            for limit in limits:
                row = qa.accuracy(system, limit)
                lines.append(f"| {system} | {'all' if limit is None else limit} | {row['questions']} | {row['right']} "
                             f"| {row['cannot_tell']} | {row['failed']} | {_cell(row['accuracy'])} |")  # fmt: skip
        categories = qa.categories()
        if categories:
            lines += ["", "QA accuracy by category (whole captions):", "",
                      "| system | " + " | ".join(categories) + " |", "|---|" + "---:|" * len(categories)]  # fmt: skip
            for system in self.systems:
                cells = [_cell(qa.accuracy(system, None, c)["accuracy"]) for c in categories]
                lines.append(f"| {system} | " + " | ".join(cells) + " |")
        if qa.unmatched:
            lines.append(f"\n{qa.unmatched} images of the caption file have no questions.")
        return lines

    def _ranking_lines(self) -> list[str]:
        ranking = self.ranking
        assert ranking is not None
        heads = ["images", "failed", "ranked first", "mean rank", "total", *DIMENSIONS]
        lines = ["", "Blind ranking (captions shown without their system's name, in a shuffled order; total = "
                 "(accuracy + completeness + clarity) / 3 - 1.5 x hallucination_penalty):", "",
                 "| system | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]  # fmt: skip
        for system in self.systems:
            row = ranking.summary(system)
            cells = [
                str(row["images"]),
                str(row["failed"]),
                *(_cell(row[k]) for k in ("first", "mean_rank", "total", *DIMENSIONS)),
            ]  # type: ignore[arg-type]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
        if ranking.inconsistent:
            lines.append(f"\nOn {ranking.inconsistent} images the judge's own ranking disagreed with its scores; the "
                         "ranks above follow the scores.")  # fmt: skip
        return lines

    def to_json(self) -> str:
        """Everything in the report, with each caption's reference-metric figures, as JSON."""
        return json.dumps({
            "systems": self.systems, "metrics": self.metrics, "figures": self.figures, "captions": self.captions,
            "words": self.words, "skipped": self.skipped, "tokenizer": self.tokenizer,
            "human_ranking": self.human_ranking, "alignment": {m: asdict(a) for m, a in self.alignment.items()},
            "per_caption": self.per_caption,
            "judged": None if self.judged is None else json.loads(self.judged.to_json()),
            "qa": None if self.qa is None else [asdict(o) for o in self.qa.outcomes],
            "ranking": None if self.ranking is None else self.ranking.to_json(),
        }, indent=1)  # fmt: skip

    def plot(self, path: str | Path) -> Path:
        """One panel per computed metric, a bar per system (PNG). Raises ImportError without matplotlib (extra
        ``captions``)."""
        from genrm.figures import pyplot, save

        plt = pyplot()

        shown = self.computed() or self.metrics[:1]
        figure, axes = plt.subplots(1, len(shown), figsize=(2.6 * len(shown) + 1, 3.4), squeeze=False)
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for axis, metric in zip(axes[0], shown, strict=True):
            values = [self.figures[s].get(metric) for s in self.systems]
            bars = axis.bar(range(len(self.systems)), [v or 0.0 for v in values],
                            color=[colours[i % len(colours)] for i in range(len(self.systems))])  # fmt: skip
            axis.bar_label(bars, labels=[_cell(v) for v in values], fontsize=7)
            axis.set_xticks(range(len(self.systems)), self.systems, rotation=30, ha="right", fontsize=8)
            heading = title(metric)
            if metric in self.alignment and self.alignment[metric].rho is not None:
                heading += f"\nrho {self.alignment[metric].rho:+.2f}"
            axis.set_title(heading, fontsize=9)
            axis.margins(y=0.15)
        return save(figure, path)


def _cell(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def agreement(values: Sequence[float | None], human_ranking_positions: Sequence[int]) -> Agreement:
    """Spearman's rho between metric ``values`` (higher is better) and a human ranking (position 0 is best), over the
    systems with a value."""
    from scipy.stats import spearmanr

    pairs = [(v, -p) for v, p in zip(values, human_ranking_positions, strict=True) if v is not None]
    if len(pairs) < 2 or len({v for v, _ in pairs}) < 2:
        return Agreement(None, None, len(pairs))
    result = spearmanr([v for v, _ in pairs], [h for _, h in pairs])
    rho, p = float(result.statistic), float(result.pvalue)
    return Agreement(None if math.isnan(rho) else rho, None if math.isnan(p) else p, len(pairs))


def check_ranking(systems: Sequence[str], human_ranking: Sequence[str] | None) -> None:
    """Raise ValueError unless ``human_ranking`` (when given) names each of ``systems`` exactly once."""
    if human_ranking is not None and sorted(human_ranking) != sorted(systems):
        raise ValueError(f"the human ranking must name each system once ({', '.join(systems)}); got "
                         f"{', '.join(human_ranking)}")  # fmt: skip


def evaluate_captions(
    instances: Sequence[BalCapInstance],
    metrics: Sequence[str],
    names: Sequence[str] | None = None,
    judged: BCapReport | None = None,
    human_ranking: Sequence[str] | None = None,
    skipped: Mapping[str, str] | None = None,
    qa: QAResult | None = None,
    ranking: RankingResult | None = None,
) -> CaptionEvalReport:
    """The report of ``instances`` (see the module docstring) over ``metrics`` (reference metrics are computed here;
    judged ones are read from ``judged``, b-CapScore's report of the same instances and names; the question-answering
    accuracies, ``qa`` and ``qa@N``, from ``qa``; the blind ranking's figures from ``ranking``).

    Raises ValueError for duplicate instance ids, an instance without captions, names that do not fit, or a human
    ranking that is not a permutation of the systems."""
    ids = [i.id for i in instances]
    if len(set(ids)) != len(ids):
        raise ValueError("instance ids must be unique: a reference metric keys captions by id")
    for instance in instances:
        if not instance.responses:
            raise ValueError(f"instance {instance.id} has no caption (its responses) to score")
    systems = system_names(instances, names)
    check_ranking(systems, human_ranking)
    report = CaptionEvalReport(systems=systems, metrics=list(metrics), skipped=dict(skipped or {}),
                               tokenizer=tokenizer_name(), judged=judged, qa=qa, ranking=ranking,
                               human_ranking=list(human_ranking) if human_ranking else None)  # fmt: skip
    wanted = [m for m in metrics if m in REFERENCE_METRICS]
    rows = {system: [(f"{i.id}#{k}", text) for i in instances for k, text in enumerate(i.responses)
                     if systems == ["all"] or k == position] for position, system in enumerate(systems)}  # fmt: skip
    references = {f"{i.id}#{k}": [i.reference] for i in instances for k in range(len(i.responses))}
    scores, failed = reference_scores(references, {s: dict(r) for s, r in rows.items()}, wanted)
    for metric, why in failed.items():
        report.skipped.setdefault(metric, why)
    summaries = judged.summary() if judged is not None else {}
    for system in systems:
        report.captions[system] = len(rows[system])
        report.words[system] = sum(len(text.split()) for _, text in rows[system]) / max(len(rows[system]), 1)
        figures: dict[str, float | None] = {m: None for m in metrics}
        for metric, score in scores[system].items():
            figures[metric] = score.value
            report.per_caption.setdefault(metric, {})[system] = score.per_caption
        for metric in JUDGED_CAPTION_METRICS:
            value = summaries.get(system, {}).get(metric)
            if metric in metrics and value is not None:
                figures[metric] = float(value)
        for limit in qa.limits() if qa else ():
            if qa_metric(limit) in metrics:
                figures[qa_metric(limit)] = qa.accuracy(system, limit)["accuracy"]  # type: ignore[union-attr]
        if ranking is not None and BLIND_RANKING in metrics:
            summary = ranking.summary(system)
            for name, key in RANKING_FIGURES.items():
                figures[name] = summary[key]  # type: ignore[assignment]
        report.figures[system] = figures
    if human_ranking:
        positions = [list(human_ranking).index(s) for s in systems]
        for metric in report.computed():
            report.alignment[metric] = agreement([report.figures[s][metric] for s in systems], positions)
    return report


def report_files(
    report: CaptionEvalReport, directory: str | Path, stem: str = "eval"
) -> tuple[list[Path], str | None]:
    """Write ``STEM.md``, ``STEM.json`` and ``STEM.png`` into ``directory`` (made if missing). Returns the paths
    written, and why the PNG was not (matplotlib not installed), or None."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{stem}.md", out / f"{stem}.json"]
    written[0].write_text(report.markdown() + "\n", encoding="utf-8")
    written[1].write_text(report.to_json() + "\n", encoding="utf-8")
    try:
        written.append(report.plot(out / f"{stem}.png"))
    except ImportError:
        return written, "no PNG: matplotlib is not installed (pip install 'genrm[captions]')"
    return written, None


class EvaluationJudge:
    """What ``genrm captions eval`` checks its judge against: a model is needed, and ``--judge scripted`` answers
    every kind of request the evaluation sends: the balcap method's scripted judge its b-CapScore requests,
    :func:`genrm.evaluation.caption_qa.scripted_answer` the questions, the rubicap method's the blind ranking."""

    name = "captions eval"
    reads_without_engine = False

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The three scripted judges, by the request's schema."""
        from genrm.evaluation.caption_qa import QA_SCHEMA_NAME, scripted_answer
        from genrm.methods import make_method
        from genrm.methods.rubicap.blind_ranking import RANKING_SCHEMA_NAME

        captions = make_method("balcap").scripted_judge(image_dir)  # type: ignore[attr-defined]
        ranks = make_method("rubicap").scripted_judge(image_dir)  # type: ignore[attr-defined]

        def answer(request: ChatRequest) -> str:
            if request.schema_name == QA_SCHEMA_NAME:
                return scripted_answer(request)
            return (ranks if request.schema_name == RANKING_SCHEMA_NAME else captions)(request)

        return answer
