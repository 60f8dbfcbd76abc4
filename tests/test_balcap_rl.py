"""Policy GRPO with the balcap reward: ``genrm rl --method balcap`` runs TRL's trainer on a tiny policy against a judge
behind a real endpoint on loopback, logs the three reward columns, judges each completion once, and TRL's
``normalize_then_sum`` advantages equal our c-GDPO computation (:mod:`genrm.methods.columns`) on the same columns,
the linear length rule's penalty subtracted."""

from __future__ import annotations

import json
import math

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.columns import decoupled_advantages, summed_advantages
from verifiers.provenance import holds_content

pytestmark = pytest.mark.slow

SCENE_WORDS = {"a", "red", "car", "two", "dogs", "green", "bench"}


def _varied(body: dict) -> str:
    # A judge double whose three figures vary with a random caption's words, so that every column has spread.
    text = body["messages"][-1]["content"][-1]["text"]
    reference, caption = text.removeprefix("GROUND TRUTH CAPTION (reference):\n").split(
        "\n\nSYNTHETIC CAPTION (to evaluate):\n", 1
    )
    words = [w.strip(".,").lower() for w in caption.split() if w.strip(".,")]
    facts = [s.strip().lower() for s in reference.split(".") if s.strip()]
    return json.dumps({
        "synthetic_features": {
            "atomic_assertions": [{"text": w, "is_verified": w in SCENE_WORDS} for w in words],
            "clarity_score": 1 + len(set(words)) % 10, "fluency_score": 1 + len(words) % 10, "coherency_score": 5,
            "linguistic_scores_explanation": "",
        },
        "gt_features": {"atomic_assertions": [{"text": f, "is_covered": all(w in words for w in f.split())}
                                              for f in facts]},
    })  # fmt: skip


def _run(tmp_path, monkeypatch, options: dict, decoupled: bool = True):
    from policy_rl.trainer import MethodGRPOTrainer

    seen: dict[str, list] = {"rewards": [], "advantages": [], "penalties": [], "completions": []}
    calculate, generate = MethodGRPOTrainer._calculate_rewards, MethodGRPOTrainer._generate_and_score_completions

    def calculate_and_keep(self, *args):
        rewards = calculate(self, *args)
        completions = args[2]  # (inputs, prompts, completions, completion_ids_list)
        seen["completions"] += [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        seen["rewards"].append(rewards.tolist())
        return rewards

    def generate_and_keep(self, inputs):
        output = generate(self, inputs)
        seen["advantages"].append(output["advantages"].tolist())
        seen["penalties"].append(list(self.reward_funcs[0].batch.penalties))
        return output

    monkeypatch.setattr(MethodGRPOTrainer, "_calculate_rewards", calculate_and_keep)
    monkeypatch.setattr(MethodGRPOTrainer, "_generate_and_score_completions", generate_and_keep)
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the training file: the judge is sent their bytes
    prompts = tmp_path / "captions.jsonl"
    rows = [BalCapInstance(id="park", image="park.png", reference="A red car. Two dogs. A green bench."),
            BalCapInstance(id="lot", image="park.png", reference="Two red cars. A bench.")]  # fmt: skip
    prompts.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    out = tmp_path / "rl"
    with FakeJudgeServer() as judge:
        judge.state.responder = _varied
        args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "policy"),
                "--output_dir", str(out), "--train_file", str(prompts), "--method", "balcap",
                "--method_options", json.dumps(options), "--decoupled", str(decoupled).lower(),
                "--judge", f"openai:fake-judge@{judge.url}", "--max_steps", "2", "--logging_steps", "1",
                "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_completion_length", "12",
                "--plot", "false"]  # fmt: skip
        assert main(args) == 0
        asked = len(judge.state.requests)
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "reward" in e]
    return seen, logged, asked


def _groups(rewards: list[list[float]], size: int = 4) -> list[list[list[float | None]]]:
    rows = [[None if math.isnan(v) else v for v in row] for row in rewards]
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def test_grpo_steps_log_three_columns_judged_once_and_trls_advantages_are_c_gdpo(tmp_path, monkeypatch):
    seen, logged, asked = _run(tmp_path, monkeypatch, {"length_rule": "linear", "length_low": 100.0,
                                                        "length_high": 200.0, "length_lambda": 0.01})  # fmt: skip
    # 2 steps x 8 completions, one judge call each for three columns; a caption with no content word (the tiny
    # policy's words may all be function words) is not sent, and gets 0
    assert len(seen["completions"]) == 16
    assert asked == sum(holds_content(caption) for caption in seen["completions"])
    assert len(logged) == 2
    for entry in logged:
        for column in ("precision", "recall", "linguistic"):
            assert 0.0 <= entry[f"rewards/{column}/mean"] <= 1.0
        assert entry["balcap/reward_unknown"] == 0 and entry["balcap/length_in_band"] == 0.0
    spread = 0
    for rewards, advantages, penalties in zip(seen["rewards"], seen["advantages"], seen["penalties"], strict=True):
        assert all(p > 0 for p in penalties)  # every caption is far below the band [100, 200]
        ours = [a for group in decoupled_advantages(_groups(rewards), [0.1, 0.3, 0.3]) for a in group]
        assert advantages == pytest.approx([a - p for a, p in zip(ours, penalties, strict=True)], abs=1e-4)
        spread += len({round(v, 6) for row in rewards for v in row})
    assert spread > 6  # the columns had values to normalize, not only zeros


def test_without_decoupling_trl_sums_then_normalizes(tmp_path, monkeypatch):
    seen, logged, _ = _run(tmp_path, monkeypatch, {}, decoupled=False)
    for rewards, advantages in zip(seen["rewards"], seen["advantages"], strict=True):
        ours = [a for group in summed_advantages(_groups(rewards), [0.1, 0.3, 0.3]) for a in group]
        assert advantages == pytest.approx(ours, abs=1e-3)
