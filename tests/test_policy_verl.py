"""verl's custom reward function contract: per-response and batch forms scored by our judge.

verl itself is not a test dependency (it pins numpy<2 and needs ray): these tests call the functions the way verl's
reward managers do (keyword names from ``verl.workers.reward_manager.naive`` and ``batch``). With
``GENRM_VERL_PYTHON`` pointing at an environment where verl is installed (``.ci/conformance-envs`` builds one; CI
runs it), the last test has verl's own trainer reorder a batch and verl's own ``BatchRewardManager`` score it.
"""

import ipaddress
import json
import os
import subprocess
from pathlib import Path

import pytest

from genrm.methods.captions import CaptionInstance
from genrm.methods.rubric.models import Instance
from policy_rl.data import policy_record
from policy_rl.method_reward import INSTANCE_COLUMN
from policy_rl.verl_reward import UnknownReward, compute_score, compute_score_batch, verl_row

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"

INSTANCE = Instance(
    id="q1", prompt="What is 6 x 7? Put the answer in \\boxed{}.", task_type="math",
    rubric={"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')", "weight": 3}]},
)  # fmt: skip
FUZZY = Instance(
    id="q2", prompt="Describe the sky.", task_type="general",
    rubric={"essential": [{"criterion": "Mentions a colour.", "reference": "blue", "weight": 2}]},
)  # fmt: skip


def test_verl_rows_carry_the_instance_as_ground_truth_and_their_split():
    row = verl_row(INSTANCE, 3)
    assert row["prompt"][-1] == {"role": "user", "content": INSTANCE.prompt}
    assert Instance.model_validate_json(row["reward_model"]["ground_truth"]).rubric == INSTANCE.rubric
    assert row["extra_info"] == {"index": 3, "id": "q1", "split": "train"}
    assert verl_row(INSTANCE, 3, split="test")["extra_info"]["split"] == "test"


def test_the_batch_form_remaps_consecutive_groups():
    truth = verl_row(INSTANCE, 0)["reward_model"]["ground_truth"]
    responses = ["\\boxed{41}", "\\boxed{40}", "\\boxed{42}", "\\boxed{42}"]
    scores = compute_score_batch(data_sources=["genrm"] * 4, solution_strs=responses, ground_truths=[truth] * 4,
                                 extra_infos=[{}] * 4)  # fmt: skip
    assert [s["score"] for s in scores] == [0.0, 0.0, 1.0, 1.0]
    assert all(s["judge_failed"] == 0.0 for s in scores)


def test_the_per_response_form_scores_a_method_that_needs_no_group_and_refuses_one_that_does():
    caption = CaptionInstance(id="c1", image="park.png", reference="A red car and two dogs.")
    truth = policy_record(caption)[INSTANCE_COLUMN]
    alone = compute_score("genrm", "A red car and two dogs.", truth, method="rouge_l")
    assert alone["score"] == pytest.approx(1.0) and alone["judge_failed"] == 0.0
    batch = compute_score_batch(["genrm"], ["A red car and two dogs."], [truth], None, method="rouge_l")
    assert alone == batch[0]
    # the rubric's remap needs the group: alone, a response would be a group of one
    rubric_truth = verl_row(INSTANCE, 0)["reward_model"]["ground_truth"]
    with pytest.raises(ValueError, match="group of one: set custom_reward_function.name=compute_score_batch") as told:
        compute_score(data_source="genrm", solution_str="\\boxed{42}", ground_truth=rubric_truth)
    assert "reward_loop_class_name=GroupedRewardManager" in str(told.value) and "\n" not in str(told.value)


def test_an_unknown_reward_raises_unless_a_value_is_configured():
    truth = verl_row(FUZZY, 0)["reward_model"]["ground_truth"]
    with pytest.raises(UnknownReward, match="set custom_reward_function.reward_kwargs.unknown_reward to the value"):
        compute_score_batch(["genrm"], ["It is blue."], [truth])
    (result,) = compute_score_batch(["genrm"], ["It is blue."], [truth], unknown_reward=0.0)
    assert result["score"] == 0.0 and result["judge_failed"] == 1.0


def test_the_batch_form_finds_groups_wherever_their_rows_are():
    # verl's trainer reorders rows by length before the reward (trainer.balance_batch, on by default)
    other = INSTANCE.model_copy(update={"id": "q3"})
    truth, other_truth = (verl_row(i, 0)["reward_model"]["ground_truth"] for i in (INSTANCE, other))
    texts = ["\\boxed{41}", "\\boxed{42}", "\\boxed{40}", "\\boxed{42}"]
    rows = [(truth, texts[0]), (other_truth, texts[0]), (truth, texts[1]), (other_truth, texts[2]),
            (truth, texts[2]), (other_truth, texts[3]), (truth, texts[3]), (other_truth, texts[1])]  # fmt: skip
    scores = compute_score_batch(["genrm"] * 8, [t for _, t in rows], [g for g, _ in rows], None)
    assert [s["score"] for s in scores] == [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]


def test_verls_uid_in_extra_info_separates_groups_of_one_instance():
    # two groups of one instance with partial text scores: each is remapped over itself, not over both
    sign = Instance(
        id="sign", prompt="What does the sign say?", task_type="ocr",
        rubric={"essential": [{"criterion": "Reads the sign.",
                               "reference": "text_verify(target='North Gate Bus Station')", "weight": 3}]},
    )  # fmt: skip
    truth = verl_row(sign, 0)["reward_model"]["ground_truth"]
    texts = [
        "\\boxed{North Gate Bus Station}",
        "\\boxed{Nort Gat Bus Station}",
        "\\boxed{North Gat Bus Station}",
        "\\boxed{No Ga Bu Station}",
    ]
    infos = [{"uid": "a"}, {"uid": "b"}, {"uid": "a"}, {"uid": "b"}]
    together = [s["score"] for s in compute_score_batch(["genrm"] * 4, texts, [truth] * 4, infos)]
    apart = [compute_score_batch(["genrm"] * 2, texts[i::2], [truth] * 2, None) for i in (0, 1)]
    assert together == [apart[0][0]["score"], apart[1][0]["score"], apart[0][1]["score"], apart[1][1]["score"]]
    merged = [s["score"] for s in compute_score_batch(["genrm"] * 4, texts, [truth] * 4, None)]
    assert merged != together  # grouped by instance alone, the two groups would be remapped as one


@pytest.mark.skipif(not os.environ.get("GENRM_VERL_PYTHON"), reason="GENRM_VERL_PYTHON: an environment with verl")
def test_verls_own_reordering_and_batch_reward_manager_give_genrm_scores_rewards(tmp_path):
    # Instances with partial rewards (boxes, OCR, time, points): a group split or merged by the reordering changes them
    wanted = ("box-001", "ocr-001", "ocr-002", "time-001", "point-001")
    lines = (EXAMPLES / "reward_core.jsonl").read_text(encoding="utf-8").splitlines()
    chosen = [line for line in lines if line.strip() and json.loads(line)["id"] in wanted]
    assert len(chosen) == len(wanted)
    instances = tmp_path / "instances.jsonl"
    instances.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    script = Path(__file__).with_name("verl_contract.py")
    done = subprocess.run([os.environ["GENRM_VERL_PYTHON"], str(script), str(instances)], capture_output=True,
                          text=True, timeout=600, cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["moved"] >= result["rows"] // 2  # verl really reordered the batch
    expected = result["expected"]
    assert len(set(expected)) > 2  # partial rewards, not only 0 and 1
    for row, score in result["rewards"]:
        assert score == pytest.approx(expected[row], abs=1e-6), (row, score, expected[row])
    assert result["extra_keys"] == ["content_mask", "format_mask", "judge_failed", "length_ok", "score"]


@pytest.mark.skipif(not os.environ.get("GENRM_VERL_PYTHON"), reason="GENRM_VERL_PYTHON: an environment with verl")
def test_verls_own_manager_and_estimator_take_the_c_gdpo_advantage_with_the_linear_penalty(tmp_path):
    # c-GDPO through verl (BalCapRL eq. 2.4-2.6 then A.5): the reward function's score is each response's advantage,
    # normalized per column over its group, summed, normalized over the batch, less the linear length penalty;
    # verl's genrm_cgdpo estimator, registered by loading the reward file as verl does, keeps it as it is. The
    # third group's captions are all too short by the same amount: a group baseline would cancel their penalty.
    from fake_judge import FakeJudgeServer

    from genrm.engine import Judge
    from genrm.engine.scripted import ScriptedEngine
    from genrm.methods import make_method, score_instance
    from genrm.methods.balcap.models import BalCapInstance
    from genrm.methods.balcap.scene_judge import responder, scripted
    from genrm.methods.columns import decoupled_advantages

    instances = [
        BalCapInstance(id="park", image="park.png", reference="A red car. Two dogs. A green bench.", responses=[
            "A red car. Two dogs. A green bench. A man in a hat.", "A red car. Two dogs.", "A blue boat.",
            "A red car. The image evokes a calm mood. Two dogs."]),
        BalCapInstance(id="kitchen", image="kitchen.png", reference="A white fridge. Three apples.", responses=[
            "A white fridge. Three apples. A wooden table.", "A white fridge.", "Three apples. Three apples.",
            "A green bench. A white fridge. Three apples. A wooden table. A red car. Two dogs."]),
        BalCapInstance(id="park-short", image="park.png", reference="A red car. Two dogs. A green bench.",
                       responses=["A red car.", "A green bench.", "A blue boat.", "A red dog."]),
    ]  # fmt: skip
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the instances: the judge is sent their bytes
    source = tmp_path / "instances.jsonl"
    source.write_text("".join(i.model_dump_json() + "\n" for i in instances), encoding="utf-8")
    options = {"length_rule": "linear", "length_lambda": 2.0}
    method = make_method("balcap", options=options)
    groups, penalties = [], []
    for instance in instances:
        result = score_instance(method, instance, Judge(ScriptedEngine(scripted)))
        groups.append([list(method.column_values(result, i).values()) for i in range(len(instance.responses))])
        penalties += [method.advantage_penalty(result, i) for i in range(len(instance.responses))]
    advantages = [a for group in decoupled_advantages(groups, list(method.reward_columns.values())) for a in group]
    expected = [a - p for a, p in zip(advantages, penalties, strict=True)]
    assert len({round(p, 6) for p in penalties[-4:]}) == 1 and penalties[-1] > 0  # one penalty shared by a group
    script = Path(__file__).with_name("verl_cgdpo_contract.py")
    with FakeJudgeServer() as judge:
        judge.state.responder = responder
        done = subprocess.run([os.environ["GENRM_VERL_PYTHON"], str(script), str(source),
                               f"openai:fake-judge@{judge.url}", json.dumps(options)], capture_output=True, text=True,
                              timeout=600, cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    rows, scores = result["rows"], result["scores"]
    assert rows != sorted(rows)  # verl really reordered the batch
    assert scores == pytest.approx([expected[row] for row in rows], abs=1e-5)
    assert result["advantages"] == pytest.approx(scores, abs=1e-6) and result["uniform"]
    assert result["extra"]["length_penalty"] == pytest.approx([penalties[row] for row in rows], abs=1e-6)
    assert {"precision", "recall", "linguistic", "reward", "judge_failed"} <= set(result["extra"])


@pytest.mark.skipif(not os.environ.get("GENRM_VERL_PYTHON"), reason="GENRM_VERL_PYTHON: an environment with verl")
def test_verls_reward_loop_on_ray_scores_whole_groups_as_genrm_score_does(tmp_path):
    # verl's default reward path: rows scored one by one in RewardLoopWorker actors on a local Ray cluster, each
    # group's rows split between two workers by verl's reordering and chunking; gathered, every reward is genrm
    # score's, and the reward server is asked once per whole group.
    from fake_judge import ServeProcess

    from genrm.methods.rubric.method import score_instance
    from serving.record_log import read_records

    wanted = ("box-001", "ocr-001", "ocr-002", "time-001", "point-001")
    lines = (EXAMPLES / "reward_core.jsonl").read_text(encoding="utf-8").splitlines()
    instances = [Instance.model_validate_json(line) for line in lines if line.strip()]
    instances = [i for i in instances if i.id in wanted]
    assert len(instances) == len(wanted) and len({len(i.responses) for i in instances}) == 1
    source = tmp_path / "instances.jsonl"
    source.write_text("".join(i.model_dump_json() + "\n" for i in instances), encoding="utf-8")
    log = tmp_path / "records.jsonl"
    script = Path(__file__).with_name("verl_reward_loop_contract.py")
    with ServeProcess("--record-log", str(log), "--log-level", "warning") as served:
        done = subprocess.run([os.environ["GENRM_VERL_PYTHON"], str(script), str(source), str(tmp_path), served.url],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    addresses = [ipaddress.ip_address(a) for a in result["listening"]]
    assert addresses
    assert all((getattr(a, "ipv4_mapped", None) or a).is_loopback for a in addresses)  # Ray on loopback only

    expected = [reward for instance in instances for reward in score_instance(instance).rewards]
    assert len(set(expected)) > 2  # partial rewards: a group split or merged would change them
    for run in ("by_path", "legacy"):
        rows, scores = result[run]["rows"], result[run]["scores"]
        assert rows != sorted(rows)  # verl really reordered the batch
        assert scores == pytest.approx([expected[row] for row in rows], abs=1e-6), run
    extra = result["by_path"]["extra"]
    assert set(extra["group_rows"]) == {4.0} and set(extra["group_partial"]) == {0.0}
    assert {"content_mask", "format_mask", "length_ok", "judge_failed"} <= set(extra)
    logged = [record["instance"] for record in read_records(log)]
    grouped, per_row, crowded = result["refused"]
    assert (
        "raise actor_rollout_ref.rollout.agent.num_workers" in crowded
        and "16384 rows over 8 rollout workers" in crowded
    )
    assert "custom_reward_function.name=compute_score_batch" in grouped and "\n" not in grouped
    assert "group of one" in per_row and "reward_loop_class_name=GroupedRewardManager" in per_row
    # the server answered each whole group once in the reward loop, and once in the legacy task
    assert sorted(r["id"] for r in logged) == sorted(wanted * 2)
    assert all(len(r["responses"]) == 4 for r in logged)

    # in process, loaded by pkg://, two rows of the first group left out: that group is scored with its two rows
    # after group_wait_s and says so; the others are whole
    short = instances[0].model_copy(update={"responses": instances[0].responses[2:]})
    partial = score_instance(short).rewards
    rows, scores = result["by_package"]["rows"], result["by_package"]["scores"]
    extra = result["by_package"]["extra"]
    for place, row in enumerate(rows):
        assert row >= 2
        whole = row >= 4
        assert scores[place] == pytest.approx(expected[row] if whole else partial[row - 2], abs=1e-6)
        assert (extra["group_partial"][place], extra["group_rows"][place]) == ((0.0, 4.0) if whole else (1.0, 2.0))
