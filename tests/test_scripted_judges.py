"""``--judge scripted``: every method that needs a model judge can be tried offline on the shipped examples, with the
method's own scripted judge (rules over the scenes the example images carry), in ``genrm score``, ``genrm audit run``
and a ``genrm serve`` process on loopback. A request the script cannot answer is a failed judgement, never a
reward."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_judge import ServeProcess

from genrm.cli.main import main
from genrm.engine import JudgeSpec, make_judge
from genrm.methods import make_method, method_judge, score_instance
from genrm.methods.scene_images import SCENES, UnknownScene, scene_of, scene_png, with_facts

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
CAPTIONS = EXAMPLES / "captions" / "captions.jsonl"
RUBRICS = EXAMPLES / "captions" / "rubrics.jsonl"
PAIRS = EXAMPLES / "pairs" / "rollouts.jsonl"
SHIPPED = [("claimdiff", CAPTIONS), ("balcap", CAPTIONS), ("rubicap", RUBRICS), ("pairwise", PAIRS)]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("method", "data"), SHIPPED, ids=[m for m, _ in SHIPPED])
def test_genrm_score_with_the_scripted_judge_rewards_every_shipped_example(method, data, tmp_path, capsys):
    out = tmp_path / "rewards.jsonl"
    assert main(["score", str(data), "-o", str(out), "--method", method, "--judge", "scripted", "-q"]) == 0
    results = _lines(out)
    assert [r["id"] for r in results] == [i["id"] for i in _lines(data)]
    for result in results:
        assert result["error"] is None and None not in result["rewards"]
        # each example's first response is right about its image, the second is not (a made-up, hedged or
        # missing fact, a wrong colour): every scripted judge ranks them so
        first, second = result["rewards"]
        assert first > second, (method, result["id"], result["rewards"])


def test_the_shipped_caption_images_carry_the_facts_their_references_state():
    for instance in _lines(CAPTIONS):
        facts = scene_of(instance["image"], base_dir=CAPTIONS.parent)
        stated = {sentence.strip().lower() for sentence in instance["reference"].split(".") if sentence.strip()}
        assert facts == stated, instance["id"]


def test_claimdiff_records_name_the_flawed_captions_errors(tmp_path):
    out = tmp_path / "rewards.jsonl"
    assert main(["score", str(CAPTIONS), "-o", str(out), "--method", "claimdiff", "--judge", "scripted", "-q"]) == 0
    for result in _lines(out):
        right, flawed = result["records"]
        assert right["caption_a_errors"] == 0 and flawed["caption_a_errors"] > 0, result["id"]


def test_audit_run_with_the_scripted_pairwise_judge_writes_its_report(tmp_path):
    out = tmp_path / "audit"
    assert main(["audit", "run", str(PAIRS), "--method", "pairwise", "--judge", "scripted", "-o", str(out)]) == 0
    assert (out / "audit.md").read_text().strip() and json.loads((out / "audit.json").read_text())


def test_a_method_without_a_scripted_judge_is_refused_in_one_line(tmp_path, capsys):
    code = main(["score", str(EXAMPLES / "reward_core.jsonl"), "-o", str(tmp_path / "r.jsonl"), "--judge", "scripted"])
    err = capsys.readouterr().err
    assert code == 2 and "the rubric method has no scripted judge" in err and "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists() or not (tmp_path / "r.jsonl").read_text()


def test_the_scripted_judge_is_a_methods_own_and_no_engine_of_its_own():
    assert JudgeSpec.parse("scripted") == JudgeSpec("scripted") and str(JudgeSpec("scripted")) == "scripted"
    with pytest.raises(ValueError, match="takes no model"):
        JudgeSpec("scripted", "some-model")
    with pytest.raises(ValueError, match="method_judge"):
        make_judge("scripted")


def test_an_image_of_no_known_scene_is_a_failed_judgement_not_a_reward(tmp_path):
    (tmp_path / "blank.png").write_bytes(scene_png("nowhere.png"))
    method = make_method("balcap")
    judge = method_judge(method, "scripted", None)
    instance = method.instance_model.model_validate(
        {"id": "x", "image": str(tmp_path / "blank.png"), "reference": "A red car.", "responses": ["A red car."]}
    )
    result = score_instance(method, instance, judge)
    assert result.rewards == [None]
    assert "knows only images that list their facts" in (result.records[0].failure_reason or "")


def test_scene_of_reads_facts_a_scene_name_or_a_known_name(tmp_path):
    from PIL import Image

    plain = tmp_path / "plain.png"
    Image.new("RGB", (8, 8), (0, 0, 0)).save(plain)
    (tmp_path / "facts.png").write_bytes(with_facts(plain.read_bytes(), ["A Dog", "a cat"]))
    (tmp_path / "named.png").write_bytes(scene_png("kitchen.png"))
    assert scene_of("facts.png", base_dir=tmp_path) == {"a dog", "a cat"}
    assert scene_of(str(tmp_path / "named.png")) == SCENES["kitchen.png"]
    assert scene_of("park.png", base_dir=tmp_path) == SCENES["park.png"]  # no such file: a known name
    for unknown in ("plain.png", "nowhere.png", "", None):
        with pytest.raises(UnknownScene):
            scene_of(unknown, base_dir=tmp_path)
    with pytest.raises(ValueError, match="non-empty lines"):
        with_facts(plain.read_bytes(), ["two\nlines"])


def test_genrm_serve_with_the_scripted_judge_scores_the_shipped_examples_over_http():
    import httpx

    groups = _lines(CAPTIONS)
    with ServeProcess("--method", "balcap", "--judge", "scripted", "--image-dir", str(CAPTIONS.parent),
                      "--log-level", "warning") as server:  # fmt: skip
        reply = httpx.post(f"{server.url}/v1/score", json={"groups": groups}, timeout=60)
        health = httpx.get(f"{server.url}/health", timeout=10).json()
    assert reply.status_code == 200, reply.text
    rewards = [group["rewards"] for group in reply.json()["groups"]]
    assert all(first > second for first, second in rewards)
    assert health["backend"] == "scripted" and health["backend_reachable"]
    # the server sent the judge bytes, not the paths: the same rewards as the judge reading the files in process
    method = make_method("balcap")
    from genrm.engine import EngineOptions

    judge = method_judge(method, "scripted", EngineOptions(image_dir=str(CAPTIONS.parent)))
    local = [score_instance(method, method.instance_model.model_validate(g), judge).rewards for g in groups]
    assert rewards == local


def test_the_evaluation_commands_take_the_scripted_judge_of_their_method(tmp_path, capsys):
    assert main(["pairs", "eval", str(EXAMPLES / "pairs" / "pairs.jsonl"), "--judge", "scripted"]) == 0
    assert "| real | 8 | 16 | 0 | 1.000 |" in capsys.readouterr().out  # the colour decides every shipped pair
    assert main(["captions", "bcapscore", str(CAPTIONS), "--judge", "scripted", "-q"]) == 0
    table = capsys.readouterr().out
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| caption ")]
    assert len(rows) == 2 and float(rows[0][6]) > float(rows[1][6])  # b-CapScore: the right captions above
    assert main(["captions", "arena", str(CAPTIONS), str(RUBRICS), "--judge", "scripted"]) == 0
    assert "| ties | 4 |" in capsys.readouterr().out  # the two files hold the same captions


def test_the_scripted_pairwise_judge_fails_an_image_it_cannot_read(tmp_path):
    method = make_method("pairwise")
    judge = method_judge(method, "scripted", None)
    instance = method.instance_model.model_validate(
        {
            "id": "x",
            "prompt": "What colour?",
            "image": str(tmp_path / "missing.png"),
            "reference": "Red.",
            "responses": ["It is red."],
        }
    )
    result = score_instance(method, instance, judge)
    assert result.rewards == [None] and "cannot read the image" in (result.records[0].failure_reason or "")
