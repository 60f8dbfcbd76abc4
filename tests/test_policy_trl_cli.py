"""TRL's own command line with our reward functions, exactly as docs/policy-rl.md writes it: `genrm policy-data`, then
`trl grpo --reward_funcs policy_rl.trl_rewards.rubric_reward policy_rl.trl_rewards.method_reward` on a tiny policy,
two steps, CPU."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policy_rl.tiny_policy import save_tiny_policy
from policy_rl.trl_rewards import rubric_reward

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "datasets" / "examples" / "reward_core.jsonl"


def test_the_reward_function_reads_its_judge_from_the_environment(monkeypatch):
    from policy_rl import trl_rewards

    trl_rewards._reward.cache_clear()
    monkeypatch.setenv("GENRM_JUDGE", "nonsense")
    with pytest.raises(ValueError, match="judge 'nonsense'"):
        rubric_reward(["p"], ["c"], genrm_instance=["{}"])
    trl_rewards._reward.cache_clear()
    monkeypatch.setenv("GENRM_JUDGE", "rule")
    instance = json.loads(EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    instance.pop("responses")
    rewards = rubric_reward(["p"] * 2, ["\\boxed{12}", "\\boxed{13}"], genrm_instance=[json.dumps(instance)] * 2)
    assert rewards == [1.0, 0.0]
    trl_rewards._reward.cache_clear()


def test_the_method_reward_function_reads_its_method_from_the_environment(monkeypatch):
    from policy_rl import trl_rewards

    instance = json.loads(EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    column = [json.dumps(instance)] * 2
    for name, value, message in [("GENRM_METHOD", "nope", "unknown reward method 'nope'"),
                                 ("GENRM_METHOD_OPTIONS", "{oops", "must be a JSON object"),
                                 ("GENRM_METHOD_OPTIONS", '{"colour": 1}', "takes no option colour")]:  # fmt: skip
        trl_rewards._method_reward.cache_clear()
        monkeypatch.setenv(name, value)
        with pytest.raises(ValueError, match=message):
            trl_rewards.method_reward(["p"] * 2, ["a", "b"], genrm_instance=column)
        monkeypatch.delenv(name)
    trl_rewards._method_reward.cache_clear()
    monkeypatch.setenv("GENRM_JUDGE", "rule")
    logged = {}
    rewards = trl_rewards.method_reward(["p"] * 2, ["\\boxed{12}", "\\boxed{13}"], genrm_instance=column,
                                        log_metric=logged.__setitem__)  # fmt: skip
    assert rewards == [1.0, 0.0] and logged["method_reward/reward_unknown"] == 0.0
    assert logged["method_reward/content_mask"] == 0.5
    trl_rewards._method_reward.cache_clear()


def _trl() -> str:
    return str(Path(sys.executable).with_name("trl"))


@pytest.mark.slow
def test_trl_grpo_command_line_trains_with_the_rubric_reward(tmp_path):
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()[:8]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GENRM_JUDGE": "rule"}
    data = tmp_path / "policy-data"
    made = subprocess.run([sys.executable, "-m", "genrm", "policy-data", str(instances), "-o", str(data)],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    policy = save_tiny_policy(tmp_path / "policy", [json.loads(line)["prompt"] for line in lines])
    command = [_trl(), "grpo", "--model_name_or_path", str(policy), "--dataset_name", str(data),
               "--reward_funcs", "policy_rl.trl_rewards.rubric_reward", "policy_rl.trl_rewards.method_reward",
               "--max_steps", "2",
               "--per_device_train_batch_size", "4", "--num_generations", "4", "--max_completion_length", "8",
               "--output_dir", str(tmp_path / "out"), "--report_to", "none", "--use_cpu",
               "--logging_steps", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    logs = [ast.literal_eval(line[line.index("{'loss'") :].split("}")[0] + "}")
            for line in (done.stdout + done.stderr).splitlines() if "{'loss'" in line]  # fmt: skip
    assert len(logs) == 2  # two optimizer steps, each logged with our reward's own metrics
    for log in logs:
        assert "rewards/rubric_reward/mean" in log
        assert float(log["rubric_reward/judge_failed"]) == 0.0 and float(log["rubric_reward/reward_unknown"]) == 0.0
        # the method-generic reward function (the rubric method by default) gives the same rewards, as the method
        # computed them, whole groups on one process
        assert float(log["rewards/method_reward/mean"]) == pytest.approx(float(log["rewards/rubric_reward/mean"]))
        assert float(log["method_reward/reward_unknown"]) == 0.0
