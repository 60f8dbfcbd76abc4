"""Scoring an instance JSONL file: one output line per instance, errors reported per line, a summary at the end.

Each non-blank input line is one instance (``genrm.schemas.Instance``). Each gets one output line, in input order:
``{"id": ..., "rewards": [float|null per response], "records": [...], "error": null, "line": n}``. A line that
cannot be scored (not JSON, not an instance, a rubric that fails its checks, a judge that raised) gets
``"rewards": null`` and an ``error`` that names the problem; the other lines are still scored. Blank lines are
skipped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

from pydantic import ValidationError

from genrm.judge import Judge
from genrm.rubric import RubricError
from genrm.schemas import Instance
from genrm.scoring import InstanceResult, ScoringConfig, score_instance

MAX_LINE_CHARS = 16_000_000


@dataclass
class ScoreSummary:
    """Counts over one scored file, for the table printed at the end."""

    lines: int = 0
    failed: list[tuple[int, str]] = field(default_factory=list)
    responses: int = 0
    rewards: list[float] = field(default_factory=list)
    unknown: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, result: InstanceResult) -> None:
        """Count one output line."""
        self.lines += 1
        if result.error is not None:
            self.failed.append((result.line or 0, result.error))
            return
        for record in result.records:
            self.responses += 1
            if record.reward is None:
                self.unknown += 1
            else:
                self.rewards.append(record.reward)
            self.statuses.update(c.status for c in record.criteria)
            if record.judge_failure:
                self.statuses[f"judge:{record.judge_failure}"] += 1

    def table(self) -> str:
        """The summary as a small plain-text table."""
        mean = f"mean {sum(self.rewards) / len(self.rewards):.3f}" if self.rewards else ""
        rate = f"{self.responses / self.seconds:,.0f} responses/s" if self.seconds > 0 and self.responses else ""
        rows = [
            ("instances", f"{self.lines}", ""),
            ("  scored", f"{self.lines - len(self.failed)}", ""),
            ("  failed", f"{len(self.failed)}", "see their error lines" if self.failed else ""),
            ("responses", f"{self.responses}", rate),
            ("  reward known", f"{len(self.rewards)}", mean),
            ("  reward unknown", f"{self.unknown}", "depends on unscored criteria" if self.unknown else ""),
        ]
        lines = [f"{name:<18} {count:>8}  {note}".rstrip() for name, count, note in rows]
        if self.statuses:
            lines.append("criteria by status: " + ", ".join(f"{k} {v}" for k, v in self.statuses.most_common()))
        for number, error in self.failed[:10]:
            lines.append(f"line {number}: {error[:160]}")
        if len(self.failed) > 10:
            lines.append(f"... and {len(self.failed) - 10} more failed lines")
        return "\n".join(lines)


def _validation_message(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    shown = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'instance'}: {e['msg']}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"invalid instance: {shown}{more}"


def score_line(text: str, number: int, judge: Judge, config: ScoringConfig) -> InstanceResult:
    """Score one input line; never raises: every problem becomes an error line."""
    if len(text) > MAX_LINE_CHARS:
        return InstanceResult(id=None, rewards=None, error=f"line longer than {MAX_LINE_CHARS:,} characters",
                              line=number)  # fmt: skip
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return InstanceResult(id=None, rewards=None, error=f"invalid JSON: {exc}", line=number)
    raw_id = raw.get("id") if isinstance(raw, dict) else None
    ident = raw_id if isinstance(raw_id, str) else None
    if not isinstance(raw, dict):
        return InstanceResult(id=None, rewards=None, error="invalid instance: expected a JSON object", line=number)
    try:
        instance = Instance.model_validate(raw)
    except ValidationError as exc:
        return InstanceResult(id=ident, rewards=None, error=_validation_message(exc), line=number)
    try:
        result = score_instance(instance, judge, config)
    except RubricError as exc:
        return InstanceResult(id=ident, rewards=None, error=f"invalid rubric: {exc}", line=number)
    except Exception as exc:  # noqa: BLE001 - one failing line must not lose the others; it is reported
        return InstanceResult(id=ident, rewards=None, error=f"internal error: {type(exc).__name__}: {exc}",
                              line=number)  # fmt: skip
    result.line = number
    return result


def score_lines(lines: Iterable[str], judge: Judge, config: ScoringConfig) -> Iterator[InstanceResult]:
    """Score every non-blank line of an instance JSONL stream, in order (line numbers are 1-based)."""
    for number, text in enumerate(lines, 1):
        if text.strip():
            yield score_line(text, number, judge, config)


def score_file(
    source: IO[str], sink: IO[str], judge: Judge, config: ScoringConfig, progress: bool = True
) -> ScoreSummary:
    """Score ``source`` (instance JSONL) into ``sink`` (one JSON line per instance); returns the summary."""
    from tqdm import tqdm

    summary = ScoreSummary()
    start = time.perf_counter()
    with tqdm(desc=f"scoring ({judge.name})", unit=" instances", disable=not progress, leave=False) as bar:
        for result in score_lines(source, judge, config):
            sink.write(result.model_dump_json() + "\n")
            summary.add(result)
            bar.update(1)
    summary.seconds = time.perf_counter() - start
    return summary
