"""Policy GRPO with the pairwise judge as the reward: ``genrm rl --method pairwise`` runs TRL's trainer on a tiny
policy, each completion compared with the reference in both orders by the scripted colour judge behind a real
endpoint on loopback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.pairwise.method import PairwiseInstance
from genrm.methods.pairwise.scene_judge import colour_judge, responder

pytestmark = pytest.mark.slow

IMAGES = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs"


def test_grpo_steps_of_a_tiny_policy_with_the_pairwise_reward(tmp_path):
    for colour in ("red", "blue"):  # beside the training file: the judge is sent their bytes
        (tmp_path / f"{colour}.png").write_bytes((IMAGES / f"{colour}.png").read_bytes())
    prompts = tmp_path / "pairs.jsonl"
    rows = [PairwiseInstance(id=c, prompt="What colour fills this image?", image=f"{c}.png",
                             reference=f"The image is filled with {c}.") for c in ("red", "blue")]  # fmt: skip
    prompts.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    out = tmp_path / "rl"
    with FakeJudgeServer() as judge:
        judge.state.responder = responder(colour_judge, IMAGES)
        args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "policy"),
                "--output_dir", str(out), "--train_file", str(prompts), "--method", "pairwise",
                "--judge", f"openai:judge@{judge.url}", "--max_steps", "2", "--logging_steps", "1",
                "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_completion_length", "12",
                "--plot", "false"]  # fmt: skip
        assert main(args) == 0
        asked = len(judge.state.requests)
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "reward" in e]
    assert len(logged) == 2 and asked == 2 * 8 * 2  # 2 steps x 8 completions x both orders
    for entry in logged:
        assert entry["pairwise/reward_unknown"] == 0
        assert 0.0 <= entry["reward"] <= 1.0 and not math.isnan(entry["reward"])
        assert 0.0 <= entry["pairwise/swap_consistent"] <= 1.0
