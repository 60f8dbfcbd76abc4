"""The caption audit of the claimdiff reward: abnormal captions made from regular ones, false positive rates per
category and setting, with the scene judge (which charges every defect but the reference's own omissions) and a
judge that is fooled by everything; ``genrm audit captions`` over a real endpoint on loopback."""

from __future__ import annotations

import json
import re

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.evaluation.response_audit import Base, abnormal_responses, audit_plan, parse_settings, run_response_audit
from genrm.methods.claimdiff.models import ClaimDiffInstance
from genrm.methods.claimdiff.scene_judge import responder, scripted

REFERENCE = "A red car. Two dogs. A green bench."
REGULAR = "A red car. Two dogs. A green bench. A man in a hat."  # the scene, all of it
PARK = ClaimDiffInstance(id="park", image="park.png", reference=REFERENCE, responses=[REGULAR])
CATEGORIES = audit_plan("claimdiff").categories


def test_abnormal_captions_of_every_category():
    made = dict(abnormal_responses(Base(PARK, REGULAR), CATEGORIES))
    assert set(made) == set(CATEGORIES)
    assert made["hallucinated_object"] == REGULAR + " A giraffe is there too."
    assert made["missing_salient_fact"] == "Two dogs. A green bench. A man in a hat."
    assert made["hedged"] == "Possibly a red car. Possibly two dogs. Possibly a green bench. Possibly a man in a hat."
    assert made["copied_reference"] == REFERENCE and made["self_praise"].startswith(REGULAR + " This caption is")
    one_sentence = PARK.model_copy(update={"responses": [REFERENCE]})
    assert {c for c, _ in abnormal_responses(Base(one_sentence, REFERENCE), CATEGORIES)} == set(CATEGORIES) - {
        "copied_reference"
    }


def test_the_scene_judge_charges_every_defect_but_what_the_reference_shares():
    report = run_response_audit([PARK], Judge(ScriptedEngine(scripted)))
    rates = report.rates()
    # normalized_diff compares with the reference: every abnormal caption falls below the regular one (1.0)
    assert {c: rates["normalized_diff"][c]["rate"] for c in CATEGORIES} == dict.fromkeys(CATEGORIES, 0.0)
    assert {c: rates["normalized_diff+hedging_penalty"][c]["rate"] for c in CATEGORIES} == dict.fromkeys(CATEGORIES, 0)
    # the modes that count only caption A's errors cannot see the fact the reference leaves out: copying the
    # reference (no difference) scores 1.0, at least the regular caption's 1.0 (a_only) or 0.787 (normalized_a_only)
    for mode in ("a_only", "normalized_a_only"):
        regular = 1.0 if mode == "a_only" else pytest.approx(0.787, abs=1e-3)
        assert rates[mode]["copied_reference"] == {"pairs": 1, "failed": 0, "false_positives": 1, "rate": 1.0,
                                                   "rises": int(mode == "normalized_a_only"),
                                                   "rise_rate": float(mode == "normalized_a_only"),
                                                   "abnormal_mean": 1.0, "regular_mean": regular,
                                                   "ungrounded": 0}  # fmt: skip
        assert all(rates[mode][c]["rate"] == 0.0 for c in CATEGORIES if c != "copied_reference")
    (worst,) = [p for p in report.worst() if p.setting == "normalized_a_only"]
    assert worst.abnormal == REFERENCE and worst.abnormal_reward == 1.0
    assert (
        "| copied_reference | 0% of 1; 0.50 / 1.00 | 0% of 1; 0.50 / 1.00 | 100% of 1; 1.00 / 0.79 | "
        "100% of 1 (0% rise); 1.00 / 1.00 |" in report.markdown()
    )


def test_a_judge_that_sees_no_difference_is_fooled_by_everything_and_failures_are_apart():
    blind = Judge(ScriptedEngine(lambda request: json.dumps({"differences": [], "overall_winner": "tie"})))
    rates = run_response_audit([PARK], blind, {"default": {}}).rates()["default"]
    assert all(rates[c]["rate"] == 1.0 for c in CATEGORIES)
    broken = Judge(ScriptedEngine(lambda request: "unsure"), parse_retries=0)
    failed = run_response_audit([PARK], broken, {"default": {}}).rates()["default"]
    assert all(failed[c] == {"pairs": 1, "failed": 1, "false_positives": 0, "rate": None, "rises": 0,
                             "rise_rate": None, "abnormal_mean": None, "regular_mean": None, "ungrounded": 0}
               for c in CATEGORIES)  # fmt: skip


def test_settings_are_named_option_sets():
    assert parse_settings(['strict={"mode": "a_only"}']) == {"strict": {"mode": "a_only"}}
    with pytest.raises(ValueError, match="must be NAME="):
        parse_settings(["strict"])
    with pytest.raises(ValueError, match="takes no option colour"):
        run_response_audit([PARK], Judge(ScriptedEngine(scripted)), {"x": {"colour": 1}})


def test_genrm_audit_captions_over_http(tmp_path, capsys, scene_dir):
    source = scene_dir / "captions.jsonl"  # beside its images, which the command reads from its folder
    source.write_text(PARK.model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        code = main(["audit", "captions", str(source), "-o", str(tmp_path / "out"), "--judge",
                     f"openai:fake-judge@{judge.url}", "--setting", "default={}", "--setting",
                     'a_only={"mode": "a_only"}', "-q"])  # fmt: skip
    assert code == 0
    report = json.loads((tmp_path / "out" / "caption_audit.json").read_text())
    assert report["settings"] == ["default", "a_only"]
    assert report["rates"]["a_only"]["copied_reference"]["rate"] == 1.0
    assert report["rates"]["default"]["hedged"]["rate"] == 0.0
    assert re.search(r"\| hedged \| 0% of 1; [0-9.]+ / 1.00 \| 0% of 1; ", capsys.readouterr().out)
    assert main(["audit", "captions", str(source), "-o", str(tmp_path / "o2"), "-q"]) == 2  # rule cannot judge it
