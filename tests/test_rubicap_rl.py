"""Policy GRPO with the rubicap reward: ``genrm rl --method rubicap`` runs TRL's trainer on a tiny policy against the
scripted rubric judge behind a real endpoint on loopback, one judge call per criterion and completion, and logs the
reward and the share of criteria met."""

from __future__ import annotations

import json
import math

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.rubicap.models import CaptionCriterion, RubiCapInstance
from genrm.methods.rubicap.scene_judge import responder

pytestmark = pytest.mark.slow


def _criterion(fact: str, weight: int) -> CaptionCriterion:
    return CaptionCriterion(criterion=f"States {fact}", evaluation_rule=f"Pass if the caption states {fact}.",
                            weight=weight)  # fmt: skip


@pytest.mark.parametrize("layout, calls", [("per_criterion", 2 * 8 * 2), ("all_criteria", 2 * 8)])
def test_grpo_steps_of_a_tiny_policy_with_the_rubicap_reward(tmp_path, layout, calls):
    prompts = tmp_path / "rubrics.jsonl"
    park = [_criterion("a red car", 3), _criterion("two dogs", 1)]
    lot = [_criterion("a green bench", 2), _criterion("a man in a hat", 2)]
    rows = [RubiCapInstance(id="park", image="park.png", rubric=park),
            RubiCapInstance(id="lot", image="park.png", rubric=lot)]  # fmt: skip
    prompts.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    out = tmp_path / "rl"
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "policy"),
                "--output_dir", str(out), "--train_file", str(prompts), "--method", "rubicap",
                "--method_options", json.dumps({"layout": layout}), "--judge", f"openai:judge@{judge.url}",
                "--max_steps", "2", "--logging_steps", "1", "--per_device_train_batch_size", "8",
                "--num_generations", "4", "--max_completion_length", "12", "--plot", "false"]  # fmt: skip
        assert main(args) == 0
        asked = len(judge.state.requests)
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "reward" in e]
    assert len(logged) == 2 and asked == calls  # 2 steps x 8 completions x (2 criteria | 1 call)
    for entry in logged:
        assert entry["rubicap/reward_unknown"] == 0
        assert 0.0 <= entry["reward"] <= 1.0 and not math.isnan(entry["reward"])
        assert 0.0 <= entry["rubicap/criteria_met"] <= 1.0
