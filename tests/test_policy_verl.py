"""verl's custom reward function contract: per-response and batch forms scored by our judge.

verl itself is not a test dependency (it pins numpy<2 and needs ray): these tests call the functions the way verl's
reward managers do (keyword names from ``verl.workers.reward_manager.naive`` and ``batch``); with
``GENRM_VERL_PYTHON`` pointing at an environment where verl is installed, the last test runs verl's own
``BatchRewardManager`` on a ``DataProto`` batch.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from genrm.schemas import Instance
from policy_rl.verl_reward import UnknownReward, compute_score, compute_score_batch, verl_row

INSTANCE = Instance(
    id="q1", prompt="What is 6 x 7? Put the answer in \\boxed{}.", task_type="math",
    rubric={"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')", "weight": 3}]},
)  # fmt: skip
FUZZY = Instance(
    id="q2", prompt="Describe the sky.", task_type="general",
    rubric={"essential": [{"criterion": "Mentions a colour.", "reference": "blue", "weight": 2}]},
)  # fmt: skip


def test_verl_rows_carry_the_instance_as_ground_truth():
    row = verl_row(INSTANCE, 3)
    assert row["prompt"][-1] == {"role": "user", "content": INSTANCE.prompt}
    assert Instance.model_validate_json(row["reward_model"]["ground_truth"]).rubric == INSTANCE.rubric
    assert row["extra_info"] == {"index": 3, "id": "q1"}


def test_the_batch_form_remaps_consecutive_groups():
    truth = verl_row(INSTANCE, 0)["reward_model"]["ground_truth"]
    responses = ["\\boxed{41}", "\\boxed{40}", "\\boxed{42}", "\\boxed{42}"]
    scores = compute_score_batch(data_sources=["genrm"] * 4, solution_strs=responses, ground_truths=[truth] * 4,
                                 extra_infos=[{}] * 4)  # fmt: skip
    assert [s["score"] for s in scores] == [0.0, 0.0, 1.0, 1.0]
    assert all(s["judge_failed"] == 0.0 for s in scores)


def test_the_per_response_form():
    truth = verl_row(INSTANCE, 0)["reward_model"]["ground_truth"]
    assert compute_score(data_source="genrm", solution_str="\\boxed{42}", ground_truth=truth)["score"] == 1.0
    assert compute_score("genrm", "\\boxed{7}", truth, extra_info={"index": 0})["score"] == 0.0


def test_an_unknown_reward_raises_unless_a_value_is_configured():
    truth = verl_row(FUZZY, 0)["reward_model"]["ground_truth"]
    with pytest.raises(UnknownReward, match="set custom_reward_function.reward_kwargs.unknown_reward to the value"):
        compute_score("genrm", "It is blue.", truth)
    result = compute_score("genrm", "It is blue.", truth, unknown_reward=0.0)
    assert result["score"] == 0.0 and result["judge_failed"] == 1.0


@pytest.mark.skipif(not os.environ.get("GENRM_VERL_PYTHON"), reason="GENRM_VERL_PYTHON: an environment with verl")
def test_verls_own_batch_reward_manager_calls_it():
    script = Path(__file__).with_name("verl_contract.py")
    truth = verl_row(INSTANCE, 0)["reward_model"]["ground_truth"]
    done = subprocess.run([os.environ["GENRM_VERL_PYTHON"], str(script), truth], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["scores"] == [0.0, 1.0]
    assert result["extra_keys"] == ["judge_failed", "raw_essential", "score"]
