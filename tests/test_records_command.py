"""`genrm records` and the records reference: a scored file as a table worst first, and every field and status of
a record defined in docs/rubric.md."""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

from conftest import EXAMPLE_SET

from genrm.methods.base import STATUS_MEANINGS, UNGROUNDED
from genrm.methods.rubric.judge_output import FailureClass
from genrm.methods.rubric.scoring import CriterionRecord, InstanceResult, ResponseRecord
from verifiers.result import Status

ROOT = Path(__file__).resolve().parents[1]
GOOD = {
    "id": "good",
    "prompt": "What is 6 times 7?",
    "rubric": {"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')",
                              "weight": 3}]},
    "responses": ["\\boxed{42}", "\\boxed{41}", "Let me think about this product with care, step by step. " * 5],
}  # fmt: skip
FUZZY = {
    "id": "fuzzy",
    "prompt": "Describe the scene.",
    "rubric": {"essential": [{"criterion": "Names the river.", "reference": "The river is the Seine.", "weight": 2}]},
    "responses": ["The Seine.", "A river."],
}


def _genrm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "genrm", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, input=stdin, env=_wide())


def _wide() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "400"}


def _section(name: str) -> str:
    text = (ROOT / "docs/rubric.md").read_text()
    start = text.index(f"\n## {name}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def _table_rows(section: str, first_column: str) -> dict[str, list[str]]:
    # the rows of the markdown tables whose header starts with first_column, keyed by their first cell's code name
    rows: dict[str, list[str]] = {}
    inside = False
    for line in section.splitlines():
        if line.startswith(f"| {first_column} |"):
            inside = True
            continue
        if inside and line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if cells[0].startswith("`"):
                rows[cells[0].strip("`")] = cells[1:]
        elif inside:
            inside = False
    return rows


def test_the_records_reference_defines_every_field_of_a_line_a_record_and_a_criterion():
    fields = _table_rows(_section("Records"), "field")
    for model in (InstanceResult, ResponseRecord, CriterionRecord):
        missing = set(model.model_fields) - set(fields)
        assert not missing, f"{model.__name__} fields not in docs/rubric.md's Records: {sorted(missing)}"
        for name in model.model_fields:
            value, null_when = fields[name]
            assert value and null_when, name  # what it holds, and when it is null ("never" included)


def test_the_reference_glosses_every_status_a_criterion_can_get_as_the_summary_does():
    statuses = _table_rows(_section("Records"), "status")
    possible = {*get_args(Status), *get_args(FailureClass), UNGROUNDED}
    assert possible <= set(statuses), sorted(possible - set(statuses))
    for status, (meaning,) in statuses.items():
        assert meaning == STATUS_MEANINGS[status], status  # the words genrm score's summary prints beside it


def _rows(stdout: str) -> list[dict]:
    lines = stdout.splitlines()
    assert lines[0].split() == ["line", "id", "#", "reward", "why"]
    rows = []
    for text in lines[1:-1]:
        match = re.match(r"\s*(\d+)\s+(\S+)\s+(\d*)\s+(failed|-|\d\.\d{3})\s+(.*)$", text)
        assert match, text
        line, ident, index, reward, why = match.groups()
        rows.append({"line": int(line), "id": ident, "index": index, "reward": reward, "why": why})
    return rows


def _worst_first(rows: list[dict]) -> bool:
    def rank(row):
        kind = {"failed": 0, "-": 1}.get(row["reward"], 2)
        return kind, 0.0 if kind < 2 else float(row["reward"])

    return [rank(r) for r in rows] == sorted(rank(r) for r in rows)


def test_a_scored_file_shows_worst_first_with_why(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([json.dumps(GOOD), "{not json", json.dumps(FUZZY)]) + "\n")
    scored = tmp_path / "rewards.jsonl"
    log = tmp_path / "records.jsonl"
    assert _genrm("score", str(source), "-o", str(scored), "--record-log", str(log), "-q").returncode == 1
    done = _genrm("records", str(scored), "--all")
    assert done.returncode == 0 and not done.stderr, done.stderr
    rows = _rows(done.stdout)
    assert _worst_first(rows) and len(rows) == 1 + 3 + 2  # the failed line, then every response
    assert rows[0]["reward"] == "failed" and rows[0]["line"] == 2 and "invalid JSON" in rows[0]["why"]
    unknown = [r for r in rows if r["reward"] == "-"]
    assert {r["id"] for r in unknown} == {"fuzzy"} and all("essential[0] unscored" in r["why"] for r in unknown)
    by_index = {r["index"]: r for r in rows if r["id"] == "good"}
    assert by_index["0"]["reward"] == "1.000" and "content mask 1" in by_index["0"]["why"]
    assert "essential[0] ok 0: " in by_index["1"]["why"] and "content mask 0" in by_index["1"]["why"]
    assert "essential[0] unparseable_pred 0: " in by_index["2"]["why"]
    assert done.stdout.splitlines()[-1] == "6 of 6 rows shown, worst first (5 responses, 2 unknown, 1 failed groups)"
    # the record log holds the scored instances: the same rows but the failed line's
    logged = _rows(_genrm("records", str(log), "--all").stdout)

    def keys(found):
        return [(r["id"], r["index"], r["reward"]) for r in found]

    assert keys(logged) == keys(rows[1:])


def test_the_example_set_shows_its_top_rows_and_how_many_are_left(tmp_path):
    scored = tmp_path / "rewards.jsonl"
    assert _genrm("score", str(EXAMPLE_SET), "-o", str(scored), "-q").returncode == 0
    responses = sum(len(json.loads(line)["rewards"]) for line in scored.read_text().splitlines())
    done = _genrm("records", str(scored), "--top", "5")
    rows = _rows(done.stdout)
    assert done.returncode == 0 and len(rows) == 5 and _worst_first(rows)
    assert done.stdout.splitlines()[-1].startswith(f"5 of {responses} rows shown, worst first (")
    assert "(--all shows every row)" in done.stdout


def test_a_file_that_is_not_a_scored_file_is_one_line_naming_the_file_and_line(tmp_path):
    wrong = tmp_path / "instances.jsonl"
    wrong.write_text(json.dumps({"id": "x", "rewards": None, "error": "x"}) + "\n" + json.dumps(GOOD) + "\n")
    done = _genrm("records", str(wrong))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"genrm records: {wrong} line 2 is not a rubric result (what genrm score writes")
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"id": "x", "rewards": [1.0]}) + "\n")
    done = _genrm("records", str(short))
    assert done.returncode == 2 and done.stderr.strip() == (
        f"genrm records: {short} line 1 has 1 rewards and 0 records; a scored line has one record per reward"
    )
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "rewards": null, "error": "x"}\n{"id": \n')
    done = _genrm("records", str(broken))
    assert done.returncode == 2 and done.stderr.strip().startswith(f"genrm records: {broken} line 2 is not JSON")
    assert _genrm("records", str(tmp_path / "absent.jsonl")).returncode == 2


def test_the_other_methods_rows_show_their_figures(tmp_path):
    scored = tmp_path / "rewards.jsonl"
    captions = ROOT / "datasets/examples/captions/captions.jsonl"
    assert _genrm("score", str(captions), "-o", str(scored), "--method", "balcap", "--judge", "scripted",
                  "-q").returncode == 0  # fmt: skip
    rows = _rows(_genrm("records", str(scored), "--method", "balcap", "--all").stdout)
    assert rows and _worst_first(rows) and all("precision" in r["why"] and "recall" in r["why"] for r in rows)
