"""Training the claimdiff judge: the F1 of predicted differences against a teacher's (pinned by hand), the RLVR reward
functions on TRL's contract, teacher labels through ``genrm data labels --method claimdiff`` over a real endpoint,
and a few real SFT and RLVR steps of the tiny vision-language judge on those labels."""

from __future__ import annotations

import json

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods import make_method
from genrm.methods.claimdiff.judge_training import (
    DiffExample,
    diff_f1,
    f1_reward_func,
    format_reward_func,
    rlvr_record,
    sft_record,
)
from genrm.methods.claimdiff.models import ClaimDiffInstance, DiffAnswer
from genrm.methods.claimdiff.scene_judge import diff_answer, responder

REFERENCE = "A red car. Two dogs. A green bench."
SCENE = frozenset({"a red car", "two dogs", "a green bench", "a man in a hat"})


def _answer(caption: str) -> DiffAnswer:
    return DiffAnswer.model_validate(diff_answer(SCENE, REFERENCE, caption, severity=False))


def test_f1_of_identical_partial_and_empty_predictions():
    gold = _answer("A blue boat. Two dogs.")  # three differences, each with an error
    assert (diff_f1(gold, gold).matched, diff_f1(gold, gold).f1) == (3, 1.0)
    partial = gold.model_copy(update={"differences": gold.differences[:1]})
    score = diff_f1(partial, gold)
    assert (score.precision, score.recall) == (1.0, pytest.approx(1 / 3)) and score.f1 == pytest.approx(0.5)
    none = DiffAnswer(differences=[], overall_winner="tie")
    assert diff_f1(none, none).f1 == 1.0 and diff_f1(none, gold).f1 == 0.0 and diff_f1(gold, none).recall == 1.0
    assert diff_f1(gold, none).precision == 0.0  # differences the teacher did not see count as not real


def test_f1_matches_one_to_one_alike_claims_and_only_when_the_same_caption_errs():
    gold = _answer("A blue boat. Two dogs.")  # the boat (A errs), the car and the bench (A leaves them out)
    car = next(d for d in gold.differences if d.caption_b_claim == "a red car")
    reworded = car.model_copy(update={"caption_b_claim": "a car, red"})
    assert diff_f1(gold.model_copy(update={"differences": [reworded]}), gold).matched == 1
    other = car.model_copy(update={"caption_b_claim": "a yellow kite"})
    assert diff_f1(gold.model_copy(update={"differences": [other]}), gold).matched == 0
    twice = gold.model_copy(update={"differences": [gold.differences[0]] * 2})
    assert diff_f1(twice, gold).matched == 1  # two predictions of one difference cover it once
    first = gold.differences[0]
    flipped = first.model_copy(
        update={"caption_a_error": first.caption_b_error, "caption_b_error": first.caption_a_error}
    )
    wrong_side = gold.model_copy(update={"differences": [flipped]})
    assert diff_f1(wrong_side, gold).matched == 0  # the right claim, blamed on the wrong caption


def test_reward_functions_read_completions_and_labels():
    gold = _answer("A red car. Two dogs.")
    label = gold.model_dump_json()
    completions = [[{"role": "assistant", "content": gold.model_dump_json()}], [{"role": "assistant", "content": "?"}]]
    assert format_reward_func(completions, judge_label=[label] * 2) == [1.0, 0.0]
    assert f1_reward_func(completions, judge_label=[label] * 2) == [1.0, 0.0]
    with pytest.raises(ValueError, match="needs the 'judge_label' column"):
        f1_reward_func(completions)


def test_the_checked_f1_asks_a_judge_with_the_image_which_predictions_are_real_and_which_they_cover():
    from genrm.methods.claimdiff.checked_f1 import CheckedF1Reward, DifferenceCheck, checked_f1
    from genrm.methods.scene_images import scene_png

    assert checked_f1([DifferenceCheck(real=True, covers=1), DifferenceCheck(real=False, covers=0)], 2, 2) == \
        pytest.approx(2 * 0.5 * 0.5 / 1.0)  # fmt: skip
    assert checked_f1([], 0, 0) == 1.0 and checked_f1([], 0, 3) == 0.0
    with pytest.raises(ValueError, match="1 checks for 2 predicted"):
        checked_f1([DifferenceCheck(real=True, covers=1)], 2, 2)
    gold = _answer("A blue boat. Two dogs.")  # the boat (A made it up), the car and the bench (A leaves them out)
    missed = gold.model_copy(update={"differences": [d for d in gold.differences if d.caption_b_claim !=
                                                     "a green bench"]})  # fmt: skip
    boat = next(d for d in gold.differences if d.caption_a_claim == "a blue boat")
    invented = boat.model_copy(update={"caption_a_claim": "two dogs"})  # blames A for a fact the scene holds
    example = DiffExample(id="x", input_id="park", image="park.png", reference=REFERENCE, caption="A blue boat. Two "
                          "dogs.", answer=missed)  # fmt: skip
    record = rlvr_record(example)

    def ask(predicted, judge="scripted"):
        reward = CheckedF1Reward(judge)
        return reward([[{"role": "assistant", "content": predicted.model_dump_json()}]],
                      prompts=[record["prompt"]], judge_label=[record["judge_label"]],
                      images=[[{"bytes": scene_png("park.png"), "path": None}]])[0]  # fmt: skip

    # every prediction real, the teacher's two covered: the bench the teacher missed is not held against it
    assert ask(gold) == pytest.approx(1.0)
    assert f1_reward_func(
        [[{"role": "assistant", "content": gold.model_dump_json()}]], judge_label=[record["judge_label"]]
    ) == [pytest.approx(0.8)]  # the plain F1: 2/3 precision
    with_invented = gold.model_copy(update={"differences": [*gold.differences, invented]})
    assert ask(with_invented) == pytest.approx(2 * 0.75 * 1.0 / 1.75)  # 3 of 4 real
    unread = CheckedF1Reward("scripted")([[{"role": "assistant", "content": "?"}]], prompts=[record["prompt"]],
                                         judge_label=[record["judge_label"]], images=[None])  # fmt: skip
    assert unread == [0.0]
    unknown = CheckedF1Reward("scripted")([[{"role": "assistant", "content": gold.model_dump_json()}]],
                                          prompts=[record["prompt"]], judge_label=[record["judge_label"]],
                                          images=[[{"bytes": scene_png("elsewhere.png"), "path": None}]])  # fmt: skip
    assert unknown == [None]  # the check failed (a scene the judge does not know): no reward, not a 0
    method = make_method("claimdiff", options={"f1_judge": "scripted"})
    assert method.judge_training().reward_funcs[1].__name__ == "checked_f1_reward_func"
    with pytest.raises(ValueError, match="the claimdiff option f1_judge: Input should be a valid string"):
        make_method("claimdiff", options={"f1_judge": 3})


def test_records_show_the_image_and_teach_the_answer_without_severities():
    example = DiffExample(id="e", input_id="park", image="park.png", reference=REFERENCE, caption="A red car.",
                          answer=_answer("A red car."))  # fmt: skip
    sft, rlvr = sft_record(example), rlvr_record(example)
    assert sft["images"] == ["park.png"] and rlvr["images"] == ["park.png"]
    assert [m["role"] for m in sft["prompt"]] == ["system", "user"] and isinstance(sft["prompt"][1]["content"], str)
    taught = json.loads(sft["completion"][0]["content"])
    assert DiffAnswer.model_validate(taught) == example.answer and "severity" not in json.dumps(taught)
    assert DiffAnswer.model_validate_json(rlvr["judge_label"]) == example.answer and example.loses_credit


def _scene_images(folder):
    from PIL import Image

    for name, colour in (("park.png", (30, 160, 40)), ("kitchen.png", (230, 230, 230))):
        Image.new("RGB", (32, 32), colour).save(folder / name)


@pytest.fixture
def labelled(tmp_path):
    """Teacher labels of six captions of two scenes, written by ``genrm data labels --method claimdiff``."""
    park = ["A red car. Two dogs.", "A blue boat.", REFERENCE + " A man in a hat."]
    kitchen = ["A white fridge.", "Possibly three apples.", "A wooden table."]
    instances = [ClaimDiffInstance(id="park", image="park.png", reference=REFERENCE, responses=park),
                 ClaimDiffInstance(id="kitchen", image="kitchen.png", reference="A white fridge. Three apples.",
                                   responses=kitchen)]  # fmt: skip
    from genrm.methods.scene_images import SCENES, write_scene_images

    write_scene_images(tmp_path, SCENES)  # beside the input: the teacher is sent their bytes
    source = tmp_path / "captions.jsonl"
    source.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    out = tmp_path / "labels"
    with FakeJudgeServer() as teacher:
        teacher.state.responder = responder
        code = main(["data", "labels", str(source), "-o", str(out), "--method", "claimdiff", "--teacher",
                     f"fake-judge@{teacher.url}", "--no-balance", "--test-fraction", "0.5", "-q"])  # fmt: skip
    assert code == 0
    _scene_images(out)
    return out


def test_teacher_labels_are_the_teachers_differences(labelled):
    report = json.loads((labelled / "labels_report.json").read_text())
    assert report == {"responses": 6, "labelled": 6, "dropped": 0, "drop_reasons": {}, "teacher_failures": {}}
    examples = [DiffExample.model_validate_json(line) for name in ("train.jsonl", "test.jsonl")
                for line in (labelled / name).read_text().splitlines()]  # fmt: skip
    assert len(examples) == 6 and len({e.input_id for e in examples}) == 2
    park = next(e for e in examples if e.caption == "A blue boat.")
    assert park.answer == _answer("A blue boat.")


@pytest.mark.slow
def test_sft_then_rlvr_of_the_tiny_vision_judge_on_diff_labels(labelled, tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file

    base, sft, rlvr = tmp_path / "base", tmp_path / "sft", tmp_path / "rlvr"
    train = str(labelled / "train.jsonl")
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(base),
            "--method", "claimdiff", "--train_file", train, "--output_dir", str(sft), "--max_steps", "3",
            "--logging_steps", "1", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    before, after = load_file(base / "model.safetensors"), load_file(sft / "model.safetensors")
    vision = [name for name in before if name.startswith("vision_tower.")]
    assert vision and any(not torch.equal(before[name], after[name]) for name in vision)  # the images were seen
    losses = [e["loss"] for e in json.loads((sft / "log_history.json").read_text()) if "loss" in e]
    assert len(losses) == 3 and all(loss == loss and loss > 0 for loss in losses)  # finite, no NaN
    args = ["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft),
            "--method", "claimdiff", "--train_file", train, "--output_dir", str(rlvr), "--max_steps", "1",
            "--per_device_train_batch_size", "4", "--num_generations", "2", "--max_completion_length", "16",
            "--logging_steps", "1", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    logged = [e for e in json.loads((rlvr / "log_history.json").read_text()) if "loss" in e]
    assert logged and {"rewards/format_reward_func/mean", "rewards/f1_reward_func/mean"} <= set(logged[0])
    assert 0.0 <= logged[0]["rewards/f1_reward_func/mean"] <= 1.0
    # ClaimDiff-RL's caption_judge: the F1 checked by a second judge behind HTTP, shown each record's image
    checks, checked = [], tmp_path / "checked"

    def check(body):
        checks.append(body)
        predicted = body["messages"][-1]["content"][-1]["text"].split("PREDICTED DIFFERENCES:\n")[1].splitlines()
        return json.dumps({"checks": [{"real": True, "covers": 1}] * len(predicted)})

    from genrm.methods.claimdiff import reading

    # A tiny judge's 16 tokens never read as an answer: the checked reward reads each as one, so that TRL's own
    # columns (prompts, images, labels) reach the checking judge.
    monkeypatch.setattr(reading, "read_answer", lambda text: reading.Reading(_answer("A blue boat. Two dogs.")))
    with FakeJudgeServer() as judge:
        judge.state.responder = check
        options = json.dumps({"f1_judge": f"openai:fake@{judge.url}"})
        assert main([*args[:-2], "--output_dir", str(checked), "--method_options", options, "--plot", "false"]) == 0
    logged = [e for e in json.loads((checked / "log_history.json").read_text()) if "loss" in e]
    assert logged and 0.0 < logged[0]["rewards/checked_f1_reward_func/mean"] <= 1.0
    assert len(checks) == 4  # one check per completion of the step
    for body in checks:  # the image's pixels, never a path
        assert body["messages"][-1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_method_refuses_an_exposure_it_cannot_train_under(tmp_path, capsys):
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "m"),
            "--method", "claimdiff", "--exposure", "unlimited", "--output_dir", str(tmp_path / "o")]  # fmt: skip
    assert main(args) == 2
    assert "the unlimited exposure means nothing" in capsys.readouterr().err
