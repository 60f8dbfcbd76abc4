"""Training the judge for real steps on CPU: a tiny model from a config, SFT then RLVR through the command line."""

import json

import pytest
from fake_judge import ServeProcess
from transformers import AutoModelForCausalLM

from genrm.cli import main
from serving.client import RewardClient

pytestmark = pytest.mark.slow


def _losses(run):
    return [e["loss"] for e in json.loads((run / "log_history.json").read_text()) if "loss" in e]


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft")
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(root / "base"),
            "--output_dir", str(root / "out"), "--max_steps", "40", "--logging_steps", "5", "--learning_rate", "3e-3",
            "--warmup_steps", "2"]  # fmt: skip
    assert main(args) == 0
    return root / "out"


def test_sft_loss_falls_and_the_run_is_plotted(sft_run):
    losses = _losses(sft_run)
    assert len(losses) == 8
    assert losses[-1] < 0.6 * losses[0]
    assert (sft_run / "training_curves.png").stat().st_size > 1000


def test_the_sft_checkpoint_reloads_and_answers_through_the_server(sft_run, example_instances):
    assert AutoModelForCausalLM.from_pretrained(sft_run).num_parameters() > 0
    args = ("--backend", "transformers", "--model", str(sft_run), "--device", "cpu", "--max-tokens", "512")
    with ServeProcess(*args, "--log-level", "warning") as served, RewardClient(served.url, timeout_s=300) as client:
        results = client.score(example_instances[:3])
    records = [record for result in results for record in result.records]
    assert records and all(record.judge_failure is None for record in records)  # constrained: always readable


def test_lora_sft_saves_a_merged_judge_and_its_adapter(tmp_path, tiny_judge_dir):
    out = tmp_path / "lora"
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(tiny_judge_dir),
            "--output_dir", str(out), "--max_steps", "3", "--use_peft", "--lora_r", "4", "--lora_alpha", "8",
            "--lora_target_modules", "q_proj", "v_proj", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    assert (out / "adapter" / "adapter_config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out)
    assert not hasattr(merged, "peft_config")
    assert not (out / "training_curves.png").exists()


def test_rlvr_steps_log_both_rewards(sft_run, tmp_path):
    out = tmp_path / "rlvr"
    args = ["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft_run),
            "--output_dir", str(out), "--max_steps", "2", "--logging_steps", "1",
            "--max_completion_length", "64"]  # fmt: skip
    assert main(args) == 0
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "loss" in e]
    assert len(logged) == 2
    for entry in logged:
        for name in ("format_reward_func", "content_reward_func"):
            assert 0.0 <= entry[f"rewards/{name}/mean"] <= 1.0
    assert AutoModelForCausalLM.from_pretrained(out).num_parameters() > 0
