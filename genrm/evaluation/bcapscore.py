"""b-CapScore (BalCapRL A.5) of a caption file: each caption judged once by the balcap method with the evaluation
prompt (A.4: visible evidence that justifies an inference passes the pointability test), and the harmonic mean of its
precision, recall and linguistic quality; the metric is the mean over captions. The DCScore-style F1 of precision and
recall comes with it (:func:`genrm.methods.balcap.rewards.decomposition_f1`).

The file is balcap instances (:class:`genrm.methods.balcap.models.BalCapInstance`): an image, a reference caption and
the captions to evaluate as ``responses``. When every instance holds the same number K of captions, caption k of each
instance is taken as system k's (K captioners compared on the same images), and the report has one row per system.

Evaluation settings differ from training on purpose: the evaluation prompt, and no length mask (the metric scores the
caption as written; a length band is a training device). Other method options can be given and win.

A caption whose judgement failed is counted apart (``failed``), never scored 0.

Not here: the judge (:mod:`genrm.engine`), the formulas (:mod:`genrm.methods.balcap.rewards`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from genrm.engine.judge import Judge
from genrm.methods import make_method, score_instance
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.balcap.rewards import b_capscore, decomposition_f1

#: The balcap options of the metric (the caller's options win).
EVAL_OPTIONS: dict[str, Any] = {"prompt": "eval", "length_rule": "none"}


@dataclass(frozen=True)
class CaptionScore:
    """One caption's figures (all None when its judgement failed, with the reason)."""

    instance_id: str
    system: str
    precision: float | None
    recall: float | None
    linguistic: float | None
    b_capscore: float | None
    tokens: int
    failure: str | None = None
    dcscore: float | None = None


@dataclass
class BCapReport:
    """Every caption's figures and the per-system means."""

    captions: list[CaptionScore] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, float | int | None]]:
        """system -> ``{"captions", "failed", "precision", "recall", "linguistic", "b_capscore", "dcscore",
        "tokens"}``: means over the judged captions (None when none was judged)."""
        out: dict[str, dict[str, float | int | None]] = {}
        for system in self.systems:
            rows = [c for c in self.captions if c.system == system]
            judged = [c for c in rows if c.failure is None]
            figures: dict[str, float | int | None] = {"captions": len(rows), "failed": len(rows) - len(judged)}
            for name in ("precision", "recall", "linguistic", "b_capscore", "dcscore", "tokens"):
                values = [getattr(c, name) for c in judged]
                figures[name] = sum(values) / len(values) if values else None
            out[system] = figures
        return out

    def markdown(self) -> str:
        """The per-system means as a table."""
        lines = ["| system | captions | failed | precision | recall | linguistic | b-CapScore | tokens |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for system, row in self.summary().items():
            cells = [f"{row[n]:.3f}" if row[n] is not None else "n/a" for n in
                     ("precision", "recall", "linguistic", "b_capscore")]  # fmt: skip
            tokens = "n/a" if row["tokens"] is None else f"{row['tokens']:.1f}"
            lines.append(f"| {system} | {row['captions']} | {row['failed']} | {' | '.join(cells)} | {tokens} |")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The summary and every caption's figures, as JSON."""
        return json.dumps({"summary": self.summary(), "captions": [asdict(c) for c in self.captions]}, indent=1)


def system_names(instances: Sequence[BalCapInstance], names: Sequence[str] | None = None) -> list[str]:
    """The name of each caption position: ``names`` when given (one per position), else ``caption 1`` ... when every
    instance has the same number of captions, else ``all``. Raises ValueError for names that do not fit."""
    counts = {len(i.responses) for i in instances}
    if names:
        if counts != {len(names)}:
            raise ValueError(f"{len(names)} system names for instances with {sorted(counts)} captions each")
        return list(names)
    return [f"caption {k + 1}" for k in range(counts.pop())] if len(counts) == 1 else ["all"]


def score_captions(
    instances: Sequence[BalCapInstance],
    judge: Judge,
    options: Mapping[str, Any] | None = None,
    names: Sequence[str] | None = None,
    progress: bool = False,
) -> BCapReport:
    """b-CapScore of every caption of ``instances`` (see the module docstring).

    Raises ValueError for options the balcap method refuses, system names that do not fit, or an instance without a
    caption; ``genrm.engine.BackendUnavailable`` when the judge cannot be reached at all.
    """
    from tqdm import tqdm

    method = make_method("balcap", options={**EVAL_OPTIONS, **dict(options or {})})
    for instance in instances:
        if not instance.responses:
            raise ValueError(f"instance {instance.id} has no caption (its responses) to score")
    systems = system_names(instances, names)
    report = BCapReport(systems=systems)
    for instance in tqdm(instances, desc="b-CapScore", unit="image", disable=not progress):
        result = score_instance(method, instance, judge)
        for index, record in enumerate(result.records):
            system = systems[0] if systems == ["all"] else systems[index]
            if record.reward is None:
                failure = f"{record.failure}: {record.failure_reason}"
                report.captions.append(CaptionScore(instance.id, system, None, None, None, None,
                                                    record.caption_tokens, failure))  # fmt: skip
                continue
            score = b_capscore(record.precision, record.recall, record.linguistic)  # type: ignore[arg-type]
            f1 = decomposition_f1(record.precision, record.recall)  # type: ignore[arg-type]
            report.captions.append(CaptionScore(instance.id, system, record.precision, record.recall,
                                                record.linguistic, score, record.caption_tokens,
                                                dcscore=f1))  # fmt: skip
    return report
