"""Evaluating and auditing the balcap reward: b-CapScore of a caption file (``genrm captions bcapscore`` over a real
endpoint on loopback, hand-checked), and the caption audit's balcap categories (meta-commentary, length padding,
repetition, hedging) with the scene judge, which charges them, and a judge fooled by everything, against which only
the length mask stands."""

from __future__ import annotations

import json

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.evaluation.bcapscore import score_captions, system_names
from genrm.evaluation.response_audit import (
    Base,
    abnormal_responses,
    audit_plan,
    master_key_categories,
    run_response_audit,
)
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.balcap.scene_judge import responder, scripted
from genrm.methods.master_keys import MASTER_KEYS

REFERENCE = "A red car. Two dogs. A green bench."
REGULAR = "A red car. Two dogs. A green bench. A man in a hat."
PARK = BalCapInstance(id="park", image="park.png", reference=REFERENCE, responses=[REGULAR])
CATEGORIES = audit_plan("balcap").categories


def _sentences(text: str) -> list[str]:
    return [sentence.strip() for sentence in text.split(".") if sentence.strip()]


def fooled(request) -> str:
    """A judge fooled by everything: each sentence of the caption an assertion, verified; each of the reference's
    covered; top linguistic scores."""
    reference, caption = request.prompt.user.removeprefix("GROUND TRUTH CAPTION (reference):\n").split(
        "\n\nSYNTHETIC CAPTION (to evaluate):\n", 1
    )
    return json.dumps({
        "synthetic_features": {"atomic_assertions": [{"text": s, "is_verified": True} for s in _sentences(caption)],
                               "clarity_score": 10, "fluency_score": 10, "coherency_score": 10,
                               "linguistic_scores_explanation": ""},
        "gt_features": {"atomic_assertions": [{"text": s, "is_covered": True} for s in _sentences(reference)]},
    })  # fmt: skip


def test_the_balcap_categories_are_built_from_a_regular_caption():
    made = dict(abnormal_responses(Base(PARK, REGULAR), CATEGORIES))
    assert set(made) == set(CATEGORIES) >= {"meta_commentary", "length_padding", "repetition", "hedged"}
    assert made["repetition"] == f"{REGULAR} {REGULAR}"
    assert made["meta_commentary"].startswith(REGULAR + " The image evokes")
    assert made["length_padding"].startswith(REGULAR + " There are also some other things around.")


def test_the_scene_judge_charges_every_attack_under_every_setting():
    report = run_response_audit([PARK], Judge(ScriptedEngine(scripted)), method="balcap")
    assert report.settings == ["default", "split_checks", "no_length_mask", "eval_prompt", "no_grounding"]
    rates = report.rates()
    assert all(rates[s][c]["rate"] == 0.0 for s in report.settings for c in CATEGORIES)


def test_against_a_fooled_judge_only_the_length_mask_stands():
    rates = run_response_audit([PARK], Judge(ScriptedEngine(fooled)), method="balcap").rates()
    # the regular caption scores 1.0; with the mask, every attack that leaves the band [0.5, 2] loses its
    # linguistic reward (rho 2.1 to 3.6); hedging adds 4 tokens (rho 1.9) and is a false positive
    assert {c: rates["default"][c]["rate"] for c in CATEGORIES} == {c: float(c == "hedged") for c in CATEGORIES}
    assert all(rates["no_length_mask"][c]["rate"] == 1.0 for c in CATEGORIES)


def test_b_capscore_by_hand_per_system():
    kitchen = BalCapInstance(id="kitchen", image="kitchen.png", reference="A white fridge. Three apples.",
                             responses=["A white fridge. Three apples. A wooden table.",
                                        "A white fridge. The image evokes a calm mood."])  # fmt: skip
    park = PARK.model_copy(update={"responses": [REGULAR, "A red car. Two dogs."]})
    engine = ScriptedEngine(scripted)
    report = score_captions([park, kitchen], Judge(engine), names=["base", "tuned"])
    summary = report.summary()
    assert summary["base"]["b_capscore"] == pytest.approx(3 / (1 + 1 + 9 / 8))
    tuned = [3 / (1 + 1.5 + 9 / 8), 3 / (2 + 2 + 9 / 8)]  # park: recall 2/3; kitchen: precision and recall 1/2
    assert summary["tuned"]["b_capscore"] == pytest.approx(sum(tuned) / 2)
    assert summary["tuned"]["recall"] == pytest.approx((2 / 3 + 1 / 2) / 2) and summary["tuned"]["failed"] == 0
    # the DCScore-style F1: park precision 1, recall 2/3; kitchen 1/2 and 1/2
    assert summary["tuned"]["dcscore"] == pytest.approx((2 * (2 / 3) / (1 + 2 / 3) + 1 / 2) / 2)
    assert summary["base"]["dcscore"] == pytest.approx(1.0)
    assert all("POINT TO EVIDENCE THAT JUSTIFIES IT" in r.prompt.system for r in engine.requests)
    assert "| base | 2 | 0 |" in report.markdown()


def test_failed_judgements_are_counted_apart_and_names_must_fit():
    report = score_captions([PARK], Judge(ScriptedEngine(lambda request: "fine"), parse_retries=0))
    assert report.summary()["caption 1"] == {"captions": 1, "failed": 1, "precision": None, "recall": None,
                                             "linguistic": None, "b_capscore": None, "dcscore": None,
                                             "tokens": None}  # fmt: skip
    assert report.captions[0].failure.startswith("unreadable")
    with pytest.raises(ValueError, match="2 system names for instances with \\[1\\] captions"):
        system_names([PARK], ["a", "b"])
    mixed = [PARK, PARK.model_copy(update={"responses": [REGULAR, REGULAR]})]
    assert system_names(mixed) == ["all"]


def test_genrm_captions_bcapscore_and_audit_over_http(tmp_path, capsys, scene_dir):
    source = scene_dir / "captions.jsonl"  # beside its images, which the commands read from its folder
    source.write_text(PARK.model_dump_json() + "\n")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        spec = f"openai:fake-judge@{judge.url}"
        scored = main(["captions", "bcapscore", str(source), "--judge", spec, "-o", str(tmp_path / "b"), "-q"])
        audited = main(["audit", "captions", str(source), "--method", "balcap", "--judge", spec, "-o",
                        str(tmp_path / "a"), "-q"])  # fmt: skip
        refused = main(["audit", "captions", str(source), "--method", "rubric", "--judge", spec, "-o",
                        str(tmp_path / "r"), "-q"])  # fmt: skip
    assert (scored, audited, refused) == (0, 0, 2)
    summary = json.loads((tmp_path / "b" / "bcapscore.json").read_text())["summary"]
    assert summary["caption 1"]["b_capscore"] == pytest.approx(3 / (1 + 1 + 9 / 8))
    counts = json.loads((tmp_path / "a" / "caption_audit.json").read_text())
    assert counts["categories"] == [*CATEGORIES, *master_key_categories()]
    assert counts["rates"]["default"]["repetition"]["rate"] == 0.0
    assert "the rubric method has no response audit plan" in capsys.readouterr().err


def test_master_keys_alone_and_around_a_wrong_caption_with_a_rate_per_key():
    made = abnormal_responses(Base(PARK, REGULAR), ["master_key:solution", "master_key:period"])
    wrong = REGULAR + " A giraffe is there too."
    assert made == [("master_key:solution", "Solution"), ("master_key:solution", f"Solution {wrong}"),
                    ("master_key:solution", f"{wrong} Solution"), ("master_key:period", "."),
                    ("master_key:period", f". {wrong}"), ("master_key:period", f"{wrong} .")]  # fmt: skip
    assert len(MASTER_KEYS) == len(master_key_categories()) >= 12

    def fooled_by_keys(request):  # credits everything once a word key is in the caption, else rules as the scene
        caption = request.prompt.user.rsplit("SYNTHETIC CAPTION (to evaluate):\n", 1)[-1]
        return fooled(request) if any(k in caption for k in ("Solution", "Thought process")) else scripted(request)

    careful = run_response_audit([PARK], Judge(ScriptedEngine(scripted)), method="balcap").rates()
    tricked = run_response_audit([PARK], Judge(ScriptedEngine(fooled_by_keys)), method="balcap").rates()
    keys = master_key_categories()
    assert all(careful[s][k]["rate"] == 0.0 for s in careful for k in keys)
    solution = tricked["no_length_mask"]["master_key:solution"]
    # the key around the wrong caption pays (the judge verifies the giraffe the caption does state); the key alone
    # holds no content word, is not sent to the judge and earns nothing
    assert {k: solution[k] for k in ("pairs", "failed", "false_positives", "rate", "rises", "rise_rate")} == {
        "pairs": 3, "failed": 0, "false_positives": 2, "rate": 2 / 3, "rises": 2, "rise_rate": 2 / 3}  # fmt: skip
    settings = {"ungrounded": {"length_rule": "none", "grounded_claims": False}}
    ungrounded = run_response_audit([PARK], Judge(ScriptedEngine(fooled_by_keys)), settings, method="balcap")
    assert ungrounded.rates()["ungrounded"]["master_key:solution"]["rate"] == 1.0  # the key alone pays too
    # with the mask, the key alone (rho 0.1) and the padded wrong captions (rho 2.2) lose the linguistic reward
    assert tricked["default"]["master_key:solution"]["rate"] == 0.0
    assert tricked["no_length_mask"]["master_key:space"]["rate"] == 0.0  # the careful ruling, not fooled
    without = run_response_audit([PARK], Judge(ScriptedEngine(scripted)), method="balcap", master_keys=False)
    assert not any(c.startswith("master_key:") for c in without.categories)
