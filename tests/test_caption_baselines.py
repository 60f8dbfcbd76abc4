"""The caption baselines as reward methods, on any caption file: ``holistic`` (ClaimDiff-RL's B1: a 0-10 score of the
whole caption by a judge that sees the image and the reference) and ``rouge_l`` (no judge), through ``genrm score``,
the reward server on loopback and a judge behind HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import make_method, score_instance
from genrm.methods.captions import CaptionInstance
from serving.app import create_app
from serving.settings import ServerSettings

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions"
PARK = CaptionInstance(id="park", image="park.png", reference="A red car. Two dogs. A green bench.",
                       responses=["A red car. Two dogs. A green bench.", "A red car. A blue boat.", ""])  # fmt: skip


def test_holistic_rewards_the_judges_score_over_ten_with_or_without_the_reference():
    from genrm.methods.rubicap.scene_judge import scripted

    engine = ScriptedEngine(scripted)
    result = score_instance(make_method("holistic"), PARK, Judge(engine))
    # the scripted Reference-Likert judge: coverage of the reference's facts out of 10
    assert result.rewards == pytest.approx([1.0, 0.3, 0.0]) and [r.score for r in result.records] == [10, 3, 0]
    assert all("REFERENCE CAPTION:\nA red car. Two dogs. A green bench." in r.prompt.user for r in engine.requests)
    assert {r.prompt.image for r in engine.requests} == {"park.png"}
    alone = ScriptedEngine(scripted)
    image_only = score_instance(make_method("holistic", options={"reference": False}), PARK, Judge(alone))
    assert not any("REFERENCE" in r.prompt.user for r in alone.requests)
    # the scripted Direct-Likert judge: coverage of the scene's 4 facts, less 3 per made-up one
    assert image_only.rewards == pytest.approx([0.8, 0.0, 0.0])
    assert make_method("holistic").extra_logs(result, 1) == {"holistic_score": 3.0}


def test_a_holistic_judgement_that_fails_is_no_reward():
    blind = score_instance(make_method("holistic"), PARK, Judge(ScriptedEngine(lambda r: "9", sees_images=False)))
    assert blind.rewards == [None, None, None] and "cannot see the image" in blind.records[0].failure_reason
    garbled = score_instance(make_method("holistic"), PARK, Judge(ScriptedEngine(lambda r: "great"), parse_retries=0))
    assert garbled.rewards == [None, None, None] and garbled.records[0].failure == "unreadable"
    assert make_method("holistic").unknown_reward(garbled, 0).retry
    with pytest.raises(ValueError, match="takes no option mode"):
        make_method("holistic", options={"mode": "x"})


def test_rouge_l_is_the_coco_f_measure_of_rouge_scores_published_example():
    from genrm.methods.baselines.rouge_l import rouge_l

    # rouge-score's README example: LCS precision 5/8 and recall 5/9; COCO's F-measure has beta 1.2
    p, r = 5 / 8, 5 / 9
    expected = (1 + 1.2**2) * p * r / (r + 1.2**2 * p)
    assert rouge_l("The quick brown dog jumps on the log.", "The quick brown fox jumps over the lazy dog") == \
        pytest.approx(expected)  # fmt: skip
    result = score_instance(make_method("rouge_l"), PARK, Judge(None))  # the rule judge: no model
    assert result.rewards[0] == pytest.approx(1.0) and result.rewards[2] == 0.0 and 0 < result.rewards[1] < 1
    with pytest.raises(ValueError, match="takes no option"):
        make_method("rouge_l", options={"beta": 2})


def test_genrm_score_and_the_reward_server_give_the_baselines(tmp_path, scene_dir):
    from genrm.methods.rubicap.scene_judge import responder

    shutil.copy(EXAMPLES / "captions.jsonl", tmp_path / "captions.jsonl")
    assert main(["score", str(tmp_path / "captions.jsonl"), "-o", str(tmp_path / "rouge.jsonl"), "--method", "rouge_l",
                 "-q"]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "rouge.jsonl").read_text().splitlines()]
    assert all(row["rewards"][0] == pytest.approx(1.0) and row["rewards"][1] < 1.0 for row in rows)
    with AppServer(create_app(ServerSettings(method="rouge_l", judge="rule", image_dir=scene_dir))) as server:
        body = {"query": ["Describe. " + c for c in PARK.responses[:2]], "prompts": ["Describe. "] * 2,
                "labels": [PARK.model_copy(update={"responses": []}).model_dump_json()] * 2}  # fmt: skip
        reply = httpx.post(f"{server.root}/get_reward", json=body)
    assert reply.status_code == 200 and reply.json()["rewards"][0] == pytest.approx(1.0)
    # holistic behind a real endpoint: the judge is sent the image's bytes and the reference
    with FakeJudgeServer() as judge:
        seen = []
        judge.state.responder = lambda body: seen.append(body) or responder(body)
        settings = ServerSettings(method="holistic", judge=f"openai:fake@{judge.url}", image_dir=scene_dir)
        with AppServer(create_app(settings)) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [PARK.model_dump()]}).json()
    assert scored["groups"][0]["rewards"] == pytest.approx([1.0, 0.3, 0.0]) and len(seen) == 3
    parts = seen[0]["messages"][-1]["content"]
    assert (
        parts[0]["image_url"]["url"].startswith("data:image/png;base64,") and "REFERENCE CAPTION" in parts[-1]["text"]
    )
