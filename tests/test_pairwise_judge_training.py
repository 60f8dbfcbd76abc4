"""Training the pairwise judge: its RLVR reward functions on TRL's contract, records that show the image, teacher
traces through ``genrm data labels --method pairwise`` over a real endpoint (kept only when the teacher prefers the
label), and a few real SFT and RLVR steps of the tiny vision-language judge on them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.pairwise.judge_training import (
    PairTrace,
    correctness_reward_func,
    format_reward_func,
    rlvr_record,
    sft_record,
)
from genrm.methods.pairwise.models import PairExample
from genrm.methods.pairwise.scene_judge import colour_judge, position_judge, responder, tagged_answer

PAIRS = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs"


def test_reward_functions_read_completions_and_labels():
    right = tagged_answer("red", "red", "blue", (8, 3))
    completions = [[{"role": "assistant", "content": text}] for text in (right, "A wins", "\\boxed{2, 9}")]
    assert format_reward_func(completions) == [pytest.approx(0.2), 0.0, 0.0]  # no tags, but scores: 0 format
    assert correctness_reward_func(completions, judge_label=["A", "A", "B"]) == [1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="needs the 'judge_label' column"):
        correctness_reward_func(completions)


def test_records_show_the_image_and_carry_the_label():
    pair = PairExample.model_validate_json((PAIRS / "pairs.jsonl").read_text().splitlines()[1])
    trace = PairTrace(id=pair.id, input_id=pair.id, pair=pair, answer="<scores>\\boxed{3, 8}</scores>")
    sft, rlvr = sft_record(trace), rlvr_record(trace)
    assert sft["images"] == ["red.png"] and rlvr["images"] == ["red.png"] and rlvr["judge_label"] == "B"
    assert [m["role"] for m in sft["prompt"]] == ["system", "user"] and sft["completion"][0]["content"] == trace.answer
    assert trace.loses_credit
    with pytest.raises(ValueError, match="has no image"):
        sft_record(trace.model_copy(update={"pair": pair.model_copy(update={"image": None})}))


def _labels(tmp_path, judge, pairs="pairs.jsonl"):
    out = tmp_path / "labels"
    with FakeJudgeServer() as teacher:
        teacher.state.responder = responder(judge, PAIRS)
        code = main(["data", "labels", str(PAIRS / pairs), "-o", str(out), "--method", "pairwise", "-q",
                     "--teacher", f"teacher@{teacher.url}", "--no-balance", "--test-fraction", "0.25"])  # fmt: skip
    for image in PAIRS.glob("*.png"):
        shutil.copy(image, out / image.name)
    shutil.copytree(PAIRS / "squares", out / "squares")
    return code, out


def test_teacher_traces_are_kept_only_when_they_prefer_the_label(tmp_path):
    code, out = _labels(tmp_path, colour_judge)
    assert code == 0
    report = json.loads((out / "labels_report.json").read_text())
    assert (report["responses"], report["labelled"]) == (8, 8)
    traces = [PairTrace.model_validate_json(line) for name in ("train.jsonl", "test.jsonl")
              for line in (out / name).read_text().splitlines()]  # fmt: skip
    assert len(traces) == 8 and all("<evaluate_criteria>" in t.answer for t in traces)
    code, biased = _labels(tmp_path / "biased", position_judge)
    assert code == 0
    report = json.loads((biased / "labels_report.json").read_text())
    # the position judge prefers A: right on the four pairs labelled A, dropped on the four labelled B
    assert report["labelled"] == 4 and report["drop_reasons"] == {"no teacher's well-formed answer prefers the "
                                                                  "label": 4}  # fmt: skip


def test_labels_read_mmrb2_files(tmp_path):
    # MMRB2's task files label as a pairs JSONL does: each request carries the pair's images, read beside the file
    mmrb2 = PAIRS.parent / "mmrb2"
    out = tmp_path / "labels"
    with FakeJudgeServer() as teacher:
        teacher.state.responder = responder(colour_judge, mmrb2)
        code = main(["data", "labels", str(mmrb2 / "edit.json"), "-o", str(out), "--method", "pairwise", "-q",
                     "--teacher", f"teacher@{teacher.url}", "--no-balance", "--test-fraction", "0.5"])  # fmt: skip
        assert code == 0
        assert all(len(body["messages"][1]["content"]) > 3 for body in teacher.state.requests)
    report = json.loads((out / "labels_report.json").read_text())
    assert (report["responses"], report["labelled"]) == (2, 2)
    traces = [PairTrace.model_validate_json(line) for name in ("train.jsonl", "test.jsonl")
              for line in (out / name).read_text().splitlines()]  # fmt: skip
    assert {t.pair.family for t in traces} == {"image_editing"} and {t.pair.source for t in traces} == {"colour-edit"}
    bad = tmp_path / "edit.json"
    bad.write_text('{"pairs": [{"id": "x"}]}')
    assert main(["data", "labels", str(bad), "-o", str(tmp_path / "no"), "--method", "pairwise", "-q",
                 "--teacher", "teacher@http://127.0.0.1:9/v1"]) == 2  # fmt: skip
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
@pytest.mark.parametrize("pairs", ["pairs.jsonl", "image_pairs.jsonl"])
def test_sft_then_rlvr_of_the_tiny_vision_judge_on_pair_traces(tmp_path, pairs):
    # text responses about the prompt's image, and image responses (text-to-image, editing, interleaved): every
    # image in its place in the records, through TRL's own trainers
    code, labels = _labels(tmp_path, colour_judge, pairs)
    assert code == 0
    base, sft, rlvr = tmp_path / "base", tmp_path / "sft", tmp_path / "rlvr"
    train = str(labels / "train.jsonl")
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(base),
            "--method", "pairwise", "--train_file", train, "--output_dir", str(sft), "--max_steps", "3",
            "--logging_steps", "1", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    losses = [e["loss"] for e in json.loads((sft / "log_history.json").read_text()) if "loss" in e]
    assert len(losses) == 3 and all(loss == loss and loss > 0 for loss in losses)
    args = ["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft),
            "--method", "pairwise", "--train_file", train, "--output_dir", str(rlvr), "--max_steps", "1",
            "--per_device_train_batch_size", "4", "--num_generations", "2", "--max_completion_length", "16",
            "--logging_steps", "1", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    logged = [e for e in json.loads((rlvr / "log_history.json").read_text()) if "loss" in e]
    assert logged and {"rewards/format_reward_func/mean", "rewards/correctness_reward_func/mean"} <= set(logged[0])
