"""The GPU command's dry run (``bash studies/gpu/run.sh --cpu``): the gpu-marked tests and the GPU benchmark on the
CPU, through the same script a GPU machine runs, ending in its summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_command_runs_its_tests_and_benchmark_on_the_cpu(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(["bash", "studies/gpu/run.sh", "--cpu", "--out", str(tmp_path), "--wheels",
                           str(tmp_path / "no-wheels")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "CPU dry run" in summary and "tests (exit 0)" in summary and "benchmark (exit 0)" in summary
    assert "passed" in summary and "skipped" not in summary  # the gpu tests ran, on the CPU
    figures = json.loads((tmp_path / "benchmark.json").read_text())
    modes = {(row["mode"], row["schema"], row["in_flight"]) for row in figures["rows"]}
    # one at a time is one rate per request, measured once per schema
    assert modes == {(m, s, n) for m in ("loop", "generate") for s in ("XGrammar", "free") for n in (1, 8)} | {
        ("alone", s, 1) for s in ("XGrammar", "free")
    }
    assert figures["complete"] and figures["skipped"] == []
    assert all(row["responses_per_s"] > 0 and row["tokens_per_s"] > 0 for row in figures["rows"])
    assert figures["training"]["sft_steps_per_s"] > 0 and figures["training"]["rlvr_steps_per_s"] > 0
    assert figures["summary"].startswith("summary: tiny constrained, 8 in flight")


def test_the_gpu_command_refuses_what_it_cannot_run(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    wrong = subprocess.run(["bash", "studies/gpu/run.sh", "--nope"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert wrong.returncode == 2 and "unknown argument --nope" in wrong.stderr
    if not __import__("torch").cuda.is_available():
        bare = subprocess.run(["bash", "studies/gpu/run.sh", "--out", str(tmp_path)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert bare.returncode == 2 and "no CUDA device (--cpu runs the dry run)" in bare.stderr


@pytest.mark.slow
def test_the_gpu_benchmark_stops_at_its_budget_and_says_what_it_skipped(tmp_path):
    # a budget of a millisecond: the first measurement may not start, and nothing after it; the report still comes
    out = tmp_path / "benchmark.json"
    done = subprocess.run([sys.executable, "benchmarks/gpu_judge.py", "--dry-run", "--budget-s", "0.001", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["complete"] and figures["rows"] == [] and figures["training"] == {}
    assert figures["skipped"] == ["tiny decoding", "tiny LoRA SFT and RLVR steps"]
    assert "not measured" in figures["summary"] and "skipped for the budget: 2" in figures["summary"]
