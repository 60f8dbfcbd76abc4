"""A scored file as a table, worst first: what ``genrm records`` prints.

It reads what ``genrm score`` writes (one result line per instance) and the record log of ``genrm score
--record-log`` and ``genrm serve --record-log`` (``{"time", "instance", "result"}`` a line). Each response is one
row: its reward and, in a line, why (the method's :class:`~genrm.methods.base.ExplainsRewards` text; else its logged
figures, or for a reward that is unknown what the method says is missing). A group that failed is one row with its
error. Worst first: failed groups, then unknown rewards, then known rewards from the lowest; the file's order within
each.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from genrm.jsonl import bounded_lines, json_problem
from genrm.methods.answer_json import validation_problems
from genrm.methods.base import ExplainsRewards, GroupResult, RewardMethod

#: The longest line read (a longer one is refused, naming it): as long as ``genrm score`` reads.
MAX_LINE_CHARS = 16_000_000


@dataclass(frozen=True)
class Row:
    """One response of a scored file (or one failed group).

    Attributes:
        line: the 1-based line of the file it was read from.
        id: the instance's id (None when the failed line had none).
        index: the response's index in its group; None for a failed group.
        reward: the reward in [0, 1]; None when unknown or when the group failed.
        why: one line on how the reward came about, or why there is none.
    """

    line: int
    id: str | None
    index: int | None
    reward: float | None
    why: str

    def rank(self) -> tuple[int, float, int, int]:
        """The sort key of worst first: a failed group, then an unknown reward, then the lowest reward."""
        kind = 0 if self.index is None else 1 if self.reward is None else 2
        return kind, self.reward or 0.0, self.line, self.index or 0


def result_rows(result: GroupResult, method: RewardMethod, line: int) -> list[Row]:
    """The rows of one scored group: one per response, or one for the group when it failed."""
    if result.error is not None or result.rewards is None:
        return [Row(line, result.id, None, None, f"failed: {result.error}")]
    rows = []
    for index, reward in enumerate(result.rewards):
        if isinstance(method, ExplainsRewards):  # it covers an unknown reward too
            why = method.explain(result, index)
        elif reward is None:
            why = method.unknown_reward(result, index).message
        else:
            why = ", ".join(f"{name} {value:.3g}" for name, value in method.extra_logs(result, index).items())
        rows.append(Row(line, result.id, index, reward, why))
    return rows


def read_rows(lines: Iterable[str], method: RewardMethod, name: str) -> list[Row]:
    """Every row of a scored file's ``lines`` (``name``: the file, for errors); raises ValueError naming the file,
    the line and what is wrong with it, for a line that is neither a result of ``method`` nor a record-log line."""
    rows: list[Row] = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        where = f"{name} line {number}"
        if len(text) > MAX_LINE_CHARS:
            raise ValueError(f"{where} is longer than {MAX_LINE_CHARS:,} characters")
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where} is not JSON: {json_problem(text, exc)}") from None
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{where} is not JSON: {exc}") from None
        if isinstance(raw, dict) and isinstance(raw.get("result"), dict) and "instance" in raw:
            raw = raw["result"]  # a record-log line
        try:
            result = method.result_model.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(
                f"{where} is not a {method.name} result (what genrm score writes, or a record log): "
                f"{validation_problems(exc, 'line')}"
            ) from None
        if result.error is None and result.rewards is not None and len(result.records) != len(result.rewards):
            raise ValueError(f"{where} has {len(result.rewards)} rewards and {len(result.records)} records; "
                             "a scored line has one record per reward")  # fmt: skip
        rows.extend(result_rows(result, method, number))
    return rows


def worst_first(rows: Iterable[Row]) -> list[Row]:
    """``rows`` sorted worst first (:meth:`Row.rank`)."""
    return sorted(rows, key=Row.rank)


def render(rows: list[Row], shown: int | None, width: int) -> str:
    """The table of the first ``shown`` rows (None: all), each line cut to ``width`` characters (at least 60), with a
    last line saying how many of how many are shown."""
    picked = rows if shown is None else rows[:shown]
    ids = max([len(str(row.id)) for row in picked] + [2])
    ids = min(ids, 24)
    header = f"{'line':>5}  {'id':<{ids}}  {'#':>3}  {'reward':>6}  why"
    lines = [header]
    for row in picked:
        reward = "failed" if row.index is None else "-" if row.reward is None else f"{row.reward:.3f}"
        index = "" if row.index is None else str(row.index)
        text = f"{row.line:>5}  {str(row.id)[:ids]:<{ids}}  {index:>3}  {reward:>6}  {row.why}"
        lines.append(text if len(text) <= max(width, 60) else text[: max(width, 60) - 3] + "...")
    failed = sum(row.index is None for row in rows)
    unknown = sum(row.index is not None and row.reward is None for row in rows)
    counts = f"{len(rows) - failed} responses, {unknown} unknown" + (f", {failed} failed groups" if failed else "")
    more = "" if len(picked) == len(rows) else " (--all shows every row)"
    lines.append(f"{len(picked)} of {len(rows)} rows shown, worst first ({counts}){more}")
    return "\n".join(lines)


def table_of(path: str, method: RewardMethod, shown: int | None, width: int) -> str:
    """The table of the scored file at ``path`` (``-``: standard input; :func:`render`); raises ValueError naming a
    bad line, OSError when it cannot be read."""
    if path == "-":
        rows = read_rows(bounded_lines(sys.stdin, MAX_LINE_CHARS), method, "standard input")
    else:
        with open(path, encoding="utf-8") as source:
            rows = read_rows(bounded_lines(source, MAX_LINE_CHARS), method, path)
    return render(worst_first(rows), shown, width)
