"""Policy GRPO with the claimdiff reward: ``genrm rl --method claimdiff`` runs TRL's trainer on a tiny policy against
the scene judge behind a real endpoint on loopback, and logs the method's reward and figures."""

from __future__ import annotations

import json
import math

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.claimdiff.models import ClaimDiffInstance
from genrm.methods.claimdiff.scene_judge import responder

pytestmark = pytest.mark.slow


def test_grpo_steps_of_a_tiny_policy_with_the_claimdiff_reward(tmp_path):
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the training file: the judge is sent their bytes
    prompts = tmp_path / "captions.jsonl"
    rows = [
        ClaimDiffInstance(id="park", image="park.png", reference="A red car. Two dogs. A green bench."),
        ClaimDiffInstance(id="kitchen", image="kitchen.png", reference="A white fridge. Three apples."),
    ]
    prompts.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    out = tmp_path / "rl"
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "policy"),
                "--output_dir", str(out), "--train_file", str(prompts), "--method", "claimdiff",
                "--method_options", json.dumps({"mode": "normalized_a_only", "ambiguity_penalty": True}),
                "--judge", f"openai:fake-judge@{judge.url}", "--max_steps", "2", "--logging_steps", "1",
                "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_completion_length", "12",
                "--plot", "false"]  # fmt: skip
        assert main(args) == 0
        asked = len(judge.state.requests)
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "reward" in e]
    assert len(logged) == 2 and asked == 16  # 2 steps x 8 completions, one judge call each
    for entry in logged:
        assert entry["claimdiff/reward_unknown"] == 0  # every completion was judged
        assert 0.0 <= entry["reward"] <= 1.0 and not math.isnan(entry["reward"])
        assert 0.0 <= entry["claimdiff/accuracy"] <= 1.0 and entry["claimdiff/differences"] >= 0


def test_options_of_another_method_are_refused_before_training(tmp_path, capsys):
    args = [
        "rl",
        "--config",
        "recipes/rl_tiny_cpu.yaml",
        "--model_name_or_path",
        str(tmp_path / "policy"),
        "--method",
        "claimdiff",
        "--method_options",
        '{"tau": 1}',
        "--output_dir",
        str(tmp_path / "rl"),
    ]
    assert main(args) == 2
    assert "the claimdiff method takes no option tau" in capsys.readouterr().err
