"""The judge-learning study's time budget (``studies/judge_learning/run.py --budget-s``): steps start only while it
lasts, training runs get a share of what is left, and a study stopped by it reports what it measured and names what
it skipped."""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _study():
    spec = importlib.util.spec_from_file_location("judge_learning", ROOT / "studies" / "judge_learning" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(answer_format: str) -> argparse.Namespace:
    """The study's settings its report reads, for a small study in ``answer_format``."""
    return argparse.Namespace(inputs=60, held_out=["grounding"], hidden_size=64, layers=2, sft_steps=500, rlvr_steps=2,
                              answer_format=answer_format, decoding="free", device="cpu", held_out_keys=["period"],
                              loop_steps=4, loop_lr=1e-4, rlvr_prompts="hard", argument_threshold=0.9,
                              oversample=[])  # fmt: skip


def test_steps_start_only_while_the_budget_lasts_and_training_gets_a_share_of_what_is_left():
    study = _study()
    assert study.Clock(None).share(0.4) == [] and study.Clock(None).allows("SFT", {})
    flag, seconds = study.Clock(time.time() + 100).share(0.4)
    assert flag == "--stop_after_s" and 39 <= float(seconds) <= 40
    result = {}
    assert not study.Clock(time.time() - 1).allows("RLVR", result) and result["skipped"] == ["RLVR"]


def _seed_measured(study) -> dict[str, object]:
    """A seed's figures as a study stopped after SFT leaves them."""
    measured = {measure: 70.0 for measure in study.MEASURES}
    return {"tables": {"SFT|test": measured}, "curve": [(125, 43.3), (250, 69.4)], "whole_test": {},
            "master_key_fp": {}, "seconds_per_step": {"SFT": 0.22}, "steps_done": {"SFT": 500},
            "sft_loss": [(62, 1.5), (124, 0.24)], "skipped": ["RLVR", "base on test"],
            "negatives": {"negatives": 10, "master_keys": 4, "share": 0.3}}  # fmt: skip


def test_a_study_stopped_by_its_budget_reports_what_it_measured_and_names_what_it_skipped():
    study = _study()
    report = study._report({0: _seed_measured(study)}, _args("brief"))
    assert "values right at a verifier score of at least 0.9" in report.splitlines()[0]
    assert "| Criterion-level | n/a | 70.0 ± 0.0 | n/a |" in report
    assert "SFT: 0.2 ± 0.0 s/step; steps made per seed: 500" in report
    assert "RLVR prompts: no seed reached RLVR" in report and "| 0 | not measured |" in report
    assert "Skipped for the budget: seed 0: RLVR, base on test" in report


def test_the_grounding_table_has_a_row_per_trained_judge_and_setting_and_rlvr_rows_only_where_measured():
    study = _study()

    def table(level: float) -> dict[str, float]:
        return {"Criterion-level": level, "Grounded": 90.0}

    def keys(percent: float, ungrounded: int, level: float | None = None) -> dict[str, object]:
        row = {"percent": percent, "responses": 96, "failed_criteria": 40, "ungrounded": ungrounded}
        return row if level is None else {**row, "table": table(level)}

    seed = {"tables": {"SFT|test": table(80.0), "RLVR|test": table(85.0)}, "curve": [], "whole_test": {},
            "master_key_fp": {"before": {**keys(0.0, 39), "criterion_level": 80.0}}, "seconds_per_step": {},
            "grounding": {"off": keys(12.5, 0, 90.0), "values": keys(6.2, 20, 89.0)},
            "negatives": {"negatives": 10, "master_keys": 4, "share": 0.3}}  # fmt: skip
    args = _args("evidence")
    report = study._report({0: seed}, args)
    assert "| SFT | off | 12.5 ± 0.0 | 0 | 90.0 ± 0.0 | 90.0 ± 0.0 |" in report
    assert "| SFT | on | 0.0 ± 0.0 | 39 | 80.0 ± 0.0 | 90.0 ± 0.0 |" in report
    assert "| RLVR | off |" not in report  # no RLVR judge measured: no rows for it
    seed["rlvr_grounding"] = {"off": keys(10.4, 0, 88.0), "values": keys(5.2, 18, 87.0), "on": keys(1.0, 35)}
    report = study._report({0: seed}, args)
    assert "| RLVR | values | 5.2 ± 0.0 | 18 | 87.0 ± 0.0 | 90.0 ± 0.0 |" in report
    # under the default the RLVR judge's criterion-level is its own test table's, not the SFT judge's
    assert "| RLVR | on | 1.0 ± 0.0 | 35 | 85.0 ± 0.0 | 90.0 ± 0.0 |" in report


def test_the_tables_count_a_value_right_at_the_study_s_argument_threshold(tmp_path, monkeypatch):
    """``--argument-threshold`` reaches every table's ``genrm eval`` (1.0: only the label's value counts)."""
    study = _study()
    commands = []

    def run(command: list[str]) -> None:
        commands.append(command)
        (tmp_path / "eval.json").write_text('{"rows": [{"measure": "Criterion-level", "percent": 50.0}]}')

    monkeypatch.setattr(study, "_run", run)
    args = argparse.Namespace(
        **{**vars(_args("evidence")), "eval_limit": 8, "eval_batch": 4, "argument_threshold": 1.0}
    )
    figures = study._table("model", tmp_path / "test.jsonl", args, tmp_path / "eval.json", grounding="values")
    (command,) = commands
    assert figures == {"Criterion-level": 50.0}
    assert command[command.index("--argument-threshold") + 1] == "1.0"
    assert command[command.index("--grounding") + 1] == "values"


def test_oversampling_repeats_only_the_named_familys_train_examples_and_leaves_the_split_as_made(tmp_path):
    from genrm.methods.rubric.synthetic import synthetic_family

    study = _study()
    ids = ["synth-parts-00004-r0", "synth-time-00003-r1", "synth-parts-00009-r2", "teacher-7"]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"id": i}) + "\n" for i in ids), encoding="utf-8")
    assert [synthetic_family(i) for i in ids] == ["parts", "time", "parts", None]
    assert synthetic_family("synth-unknown-00001-r0") is None
    assert study._sft_train_file(tmp_path, []) == train
    made = study._sft_train_file(tmp_path, [["parts", 3]])
    seen = Counter(json.loads(line)["id"] for line in made.read_text(encoding="utf-8").splitlines())
    assert seen == {"synth-parts-00004-r0": 3, "synth-parts-00009-r2": 3, "synth-time-00003-r1": 1, "teacher-7": 1}
    assert [json.loads(line)["id"] for line in train.read_text(encoding="utf-8").splitlines()] == ids
    written = made.stat().st_mtime_ns
    assert study._sft_train_file(tmp_path, [["parts", 3]]) == made and made.stat().st_mtime_ns == written
    assert not list(tmp_path.glob("*.partial"))
    report = study._report(
        {0: _seed_measured(study)}, argparse.Namespace(**{**vars(_args("brief")), "oversample": [["parts", 3]]})
    )
    assert "SFT 500 steps, parts examples 3 times as often, RLVR" in report.splitlines()[0]


def test_oversample_names_a_known_family_and_a_whole_number_of_times():
    study = _study()
    parser = argparse.ArgumentParser()
    assert study._oversampled(parser, "parts", "2") == ["parts", 2]
    for family, times in (("partz", "2"), ("parts", "0"), ("parts", "1.5")):
        with pytest.raises(SystemExit):
            study._oversampled(parser, family, times)
