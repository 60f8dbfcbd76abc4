"""Scoring an instance JSONL file with any reward method: one output line per instance, errors reported per line, a
summary at the end.

Each non-blank input line is one instance of the method's instance model (for the rubric method,
``genrm.methods.rubric.models.Instance``). Each gets one output line, in input order: ``{"id": ..., "rewards":
[float|null per response], "records": [...], "error": null, "line": n}``. A line that cannot be scored (not JSON, not
an instance, an instance the method refuses such as a rubric that fails its checks, a judge that raised) gets
``"rewards": null`` and an ``error`` that names the problem; the other lines are still scored. Blank lines are
skipped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from genrm.engine.judge import Judge
from genrm.engine.types import BackendUnavailable
from genrm.jsonl import bounded_lines, json_problem
from genrm.methods.answer_json import validation_problems
from genrm.methods.base import (
    STATUS_MEANINGS,
    GroupResult,
    MethodInputError,
    ResultTally,
    RewardMethod,
    failed_result,
)
from genrm.methods.run import score_instance
from genrm.rates import per_second
from genrm.records import record_line
from verifiers.result import VERDICT_STATUSES

MAX_LINE_CHARS = 16_000_000
_UNKNOWN_NOTE = "its record says which criterion has no score"


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

    def add(self, result: GroupResult, tally: ResultTally | None = None) -> None:
        """Count one output line, and the judge failures and verifier statuses its method found in it."""
        self.lines += 1
        if result.error is not None:
            self.failed.append((result.line or 0, result.error))
            return
        for reward in result.rewards or []:
            self.responses += 1
            if reward is None:
                self.unknown += 1
            else:
                self.rewards.append(reward)
        if tally is not None:
            self.statuses.update(tally.verifier_statuses)
            self.statuses.update(f"judge:{failure}" for failure in tally.judge_failures)

    def shortfall(self, min_judged: float | None) -> str | None:
        """Why this run did not do its job, or None: no response could be judged, or fewer than ``min_judged``
        (a share in [0, 1]) of them. A reward left unknown by design (a fuzzy criterion under the rule judge) counts
        as not judged: the run's output holds no reward for it."""
        judged = len(self.rewards)
        if self.responses == 0:
            return "no response was scored" if self.lines else None
        share = judged / self.responses
        if judged and (min_judged is None or share >= min_judged):
            return None
        wanted = "any" if min_judged is None else f"at least {min_judged:.0%}"
        causes = ", ".join(f"{k} {v}" for k, v in self.statuses.most_common() if k not in VERDICT_STATUSES)
        return (
            f"{judged} of {self.responses} responses ({share:.0%}) got a reward, where {wanted} should have"
            + (f"; most common: {causes}" if causes else "")
            + "; the records in the output say why"
        )

    def table(self, output: str | None = None) -> str:
        """The summary as a small plain-text table; with ``output`` (the file the lines went to), a first line
        naming it and the command that shows its records."""
        mean = f"mean {sum(self.rewards) / len(self.rewards):.3f}" if self.rewards else ""
        rate = per_second(self.responses, self.seconds, "responses") if self.responses else ""
        rows = [
            ("instances", f"{self.lines}", ""),
            ("  scored", f"{self.lines - len(self.failed)}", ""),
            ("  failed", f"{len(self.failed)}", "the error of each is in its line" if self.failed else ""),
            ("responses", f"{self.responses}", rate),
            ("  reward known", f"{len(self.rewards)}", mean),
            ("  reward unknown", f"{self.unknown}", _UNKNOWN_NOTE * bool(self.unknown)),
        ]
        lines = []
        if output is not None:
            lines.append(f"wrote {self.lines} lines to {output}, one per instance; genrm records {output} shows them "
                         "worst first")  # fmt: skip
        lines += [f"{name:<18} {count:>8}  {note}".rstrip() for name, count, note in rows]
        if self.statuses:
            lines.append("checks by status:")
            for status, count in self.statuses.most_common():
                meaning = STATUS_MEANINGS.get(status.removeprefix("judge:"), "")
                lines.append(f"  {status:<16} {count:>8}  {meaning}".rstrip())
        for number, error in self.failed[:10]:
            lines.append(f"line {number}: {error[:160]}")
        if len(self.failed) > 10:
            lines.append(f"... and {len(self.failed) - 10} more failed lines")
        return "\n".join(lines)


def _validation_message(exc: ValidationError) -> str:
    return f"invalid instance: {validation_problems(exc, 'instance')}"


def score_line(text: str, number: int, method: RewardMethod, judge: Judge) -> GroupResult:
    """Score one input line with ``method``; never raises: every problem becomes an error line."""
    return _scored(text, number, method, judge)[1]


def _scored(text: str, number: int, method: RewardMethod, judge: Judge) -> tuple[Any, GroupResult]:
    """The instance of one input line (None when it is not one) and its result (:func:`score_line`)."""
    if len(text) > MAX_LINE_CHARS:
        return None, failed_result(method, None, f"line longer than {MAX_LINE_CHARS:,} characters", number)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, failed_result(method, None, f"invalid JSON: {json_problem(text, exc)}", number)
    except (ValueError, RecursionError) as exc:
        return None, failed_result(method, None, f"invalid JSON: {exc}", number)
    if not isinstance(raw, dict):
        return None, failed_result(method, None, "invalid instance: expected a JSON object", number)
    raw_id = raw.get("id")
    ident = raw_id if isinstance(raw_id, str) else None
    try:
        instance = method.instance_model.model_validate(raw)
    except ValidationError as exc:
        return None, failed_result(method, ident, _validation_message(exc), number)
    try:
        result = score_instance(method, instance, judge)
    except MethodInputError as exc:
        return None, failed_result(method, ident, f"invalid {exc.kind}: {exc}", number)
    except BackendUnavailable:
        raise  # the judge, not this line: every line after it would fail the same way (the caller stops the run)
    except Exception as exc:  # noqa: BLE001 - one failing line must not lose the others; it is reported
        return None, failed_result(method, ident, f"internal error: {type(exc).__name__}: {exc}", number)
    result.line = number
    return instance, result


def score_lines(lines: Iterable[str], method: RewardMethod, judge: Judge) -> Iterator[tuple[Any, GroupResult]]:
    """Score every non-blank line of an instance JSONL stream, in order (line numbers are 1-based): each line's
    instance (None for a line that is not one) and result."""
    for number, text in enumerate(lines, 1):
        if text.strip():
            yield _scored(text, number, method, judge)


def _instances_in(source: IO[str]) -> int | None:
    """The non-blank lines of ``source`` when it can be read twice (a file; None for a pipe), read back to where it
    was: the progress bar's total, so that it shows an ETA."""
    try:
        if not source.seekable():
            return None
        where = source.tell()
        count = sum(1 for line in bounded_lines(source, MAX_LINE_CHARS) if line.strip())
        source.seek(where)
    except (OSError, ValueError):
        return None
    return count


#: Keys that mark a line of labelled judge examples (one response and its labels), which ``genrm eval`` and the
#: judge's training read, not ``genrm score``.
_JUDGE_EXAMPLE_KEYS = frozenset({"labels", "response"})


def input_problem(path: str) -> str | None:
    """Why the instance file ``path`` cannot be what ``genrm score`` reads, seen from its first non-blank line
    (None when it may be: each line is checked as it is scored): a file that holds no line, or one of judge examples.
    Reads one line at most (bounded)."""
    try:
        with open(path, encoding="utf-8") as source:
            first = next((line for line in bounded_lines(source, MAX_LINE_CHARS) if line.strip()), None)
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # said, with its line number, when it is read
    if first is None:
        return f"{path} holds no instance (the file is empty or blank); give a JSONL file of one instance a line"
    try:
        keys = set(json.loads(first)) if first.lstrip().startswith("{") else set()
    except (ValueError, RecursionError):
        return None
    if _JUDGE_EXAMPLE_KEYS <= keys and "responses" not in keys:
        return (
            f"{path} holds judge examples (one response with its labels a line), which genrm eval reads; "
            "genrm score reads instances (a prompt, a rubric and the responses to score)"
        )
    return None


def score_file(
    source: IO[str], sink: IO[str], method: RewardMethod, judge: Judge, progress: bool = True,
    records: IO[str] | None = None,
) -> ScoreSummary:  # fmt: skip
    """Score ``source`` (instance JSONL) into ``sink`` (one JSON line per instance) with ``method``; returns the
    summary. With ``records``, each scored instance is also written there as a record log line
    (:func:`genrm.records.record_line`, what ``genrm audit mine`` reads). Raises
    :class:`genrm.engine.BackendUnavailable` when the judge cannot be reached (the lines scored before are in
    ``sink``)."""
    from tqdm import tqdm

    summary = ScoreSummary()
    start = time.perf_counter()
    with tqdm(desc=f"scoring ({method.name}, {judge.name})", unit=" instances", disable=not progress,
              leave=False, total=_instances_in(source) if progress else None) as bar:  # fmt: skip
        for instance, result in score_lines(bounded_lines(source, MAX_LINE_CHARS), method, judge):
            sink.write(result.model_dump_json() + "\n")
            if records is not None and instance is not None:
                records.write(record_line(instance, result) + "\n")
            summary.add(result, None if result.error is not None else method.tally(result))
            bar.update(1)
    summary.seconds = time.perf_counter() - start
    return summary
