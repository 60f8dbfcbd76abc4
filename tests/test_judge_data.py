"""Judge-training examples, the synthetic set, and the SFT / RLVR records TRL reads."""

import json
import re
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

import datasets
from genrm.cli import main
from genrm.methods.labelling import balance, split_by_input
from genrm.methods.rubric.answer_schema import scoring_json_schema
from genrm.methods.rubric.judge_data import JudgeExample, labelled_answer, read_examples, rlvr_record, sft_record
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.judge_rewards import read_label
from genrm.methods.rubric.synthetic import FAMILIES, generate_examples

SHIPPED = Path(__file__).resolve().parents[1] / "datasets" / "judge_synth"


@pytest.fixture(scope="module")
def examples():
    return generate_examples(70, seed=3)


def test_every_family_verifier_and_kind_of_response_is_covered(examples):
    verifiers = {plan.verifier for e in examples for plan in e.plans()}
    assert verifiers == {None, "expr_verify", "text_verify", "time_verify", "list_verify", "bbox_verify",
                         "point_verify"}  # fmt: skip
    assert {e.input_id.split("-")[1] for e in examples} == set(FAMILIES)
    credits = [label.credit for e in examples for label in e.labels]
    assert 0.0 in credits and 1.0 in credits and any(0.0 < c < 1.0 for c in credits)
    assert any(label.call and "predict=None" in label.call for e in examples for label in e.labels)  # no value


def test_labelled_answers_are_what_a_constrained_judge_can_write(examples):
    for example in examples:
        for exposure in ("minimal", "no_verifier"):
            plans = example.plans(exposure)
            answer = labelled_answer(example, exposure)
            jsonschema.validate(answer, scoring_json_schema(plans))
            assert parse_judge_output(json.dumps(answer), plans).ok


def test_sft_and_rlvr_records_load_with_datasets(examples, tmp_path):
    sft, rlvr = tmp_path / "sft.jsonl", tmp_path / "rlvr.jsonl"
    sft.write_text("".join(json.dumps(sft_record(e)) + "\n" for e in examples[:20]))
    rlvr.write_text("".join(json.dumps(rlvr_record(e)) + "\n" for e in examples[:20]))
    sft_set = datasets.load_dataset("json", data_files=str(sft), split="train")
    rlvr_set = datasets.load_dataset("json", data_files=str(rlvr), split="train")
    assert sft_set.column_names == ["id", "prompt", "completion"] and len(sft_set) == 20
    row = sft_set[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["completion"][0]["role"] == "assistant"
    assert examples[0].response in row["prompt"][1]["content"]
    example, exposure = read_label(rlvr_set[5]["judge_label"])
    assert example == examples[5] and exposure == "minimal"


def test_labels_must_follow_the_rubric(examples):
    raw = examples[0].model_dump()
    swapped = dict(raw, labels=list(reversed(raw["labels"])))
    with pytest.raises(ValidationError, match="in order"):
        JudgeExample.model_validate(swapped)
    wrong = dict(raw, labels=[dict(raw["labels"][0], call="text_verify(predict='1')"), *raw["labels"][1:]])
    with pytest.raises(ValidationError, match="the rubric expr_verify"):
        JudgeExample.model_validate(wrong)
    fuzzy_call = dict(raw, labels=[raw["labels"][0], dict(raw["labels"][1], call="expr_verify(predict='1')")])
    with pytest.raises(ValidationError, match="is fuzzy"):
        JudgeExample.model_validate(fuzzy_call)
    with pytest.raises(ValueError, match="line 2"):
        read_examples([examples[0].model_dump_json(), "{}"])


def test_balance_and_split(examples):
    balanced = balance(examples, seed=1)
    losing = sum(e.loses_credit for e in balanced)
    assert losing == len(balanced) - losing > 0
    train, test = split_by_input(balanced, 0.2, seed=1)
    assert not {e.input_id for e in train} & {e.input_id for e in test}
    assert len(train) + len(test) == len(balanced) and test
    with pytest.raises(ValueError):
        split_by_input(balanced, 1.0)
    # a set with one side empty has nothing to balance against: kept whole, never emptied
    full = [e for e in examples if not e.loses_credit]
    assert balance(full, seed=1) == full and balance([], seed=1) == []


def test_the_shipped_synthetic_set_is_what_the_generator_writes(tmp_path, capsys):
    assert main(["data", "synthetic", "-o", str(tmp_path)]) == 0
    for name in ("train.jsonl", "test.jsonl"):
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes()
    assert "240 with a criterion losing credit, 240 without" in capsys.readouterr().out


def test_held_out_families_stay_out_of_train_and_test_and_make_their_own_split(tmp_path, capsys):
    from genrm.choices import SYNTHETIC_FAMILIES

    assert tuple(FAMILIES) == SYNTHETIC_FAMILIES
    args = ["data", "synthetic", "-o", str(tmp_path), "--inputs", "120", "--held-out", "grounding", "time", "-q"]
    assert main(args) == 0
    read = {name: [JudgeExample.model_validate_json(line) for line in (tmp_path / f"{name}.jsonl").read_text()
                   .splitlines()] for name in ("train", "test", "test_held_out")}  # fmt: skip

    def families(examples):
        return {e.input_id.split("-")[1] for e in examples}

    assert families(read["train"]) == families(read["test"]) == {"arithmetic", "choice", "ocr", "parts"}
    assert families(read["test_held_out"]) == {"grounding", "time"}
    held = read["test_held_out"]
    assert held and sum(e.loses_credit for e in held) * 2 == len(held)  # balanced, as the others
    assert {e.input_id for e in held}.isdisjoint({e.input_id for e in read["train"] + read["test"]})
    assert "held-out examples of grounding, time in test_held_out.jsonl" in capsys.readouterr().out
    assert main(["data", "synthetic", "-o", str(tmp_path / "g"), "--inputs", "60", "--held-out", "grounding",
                 "-q"]) == 0  # fmt: skip
    grounding = (tmp_path / "g" / "test_held_out.jsonl").read_text().splitlines()
    # every grounding response loses some credit (boxes never match exactly): kept whole, never emptied by balancing
    assert grounding and all(JudgeExample.model_validate_json(line).loses_credit for line in grounding)
    assert f"{len(grounding)} losing credit, 0 without" in capsys.readouterr().out
    for bad, words in ((["--held-out", *SYNTHETIC_FAMILIES], "at least one family to train on"),
                       (["--inputs", "0"], "--inputs must be at least 1"),
                       (["--test-fraction", "1"], "--test-fraction must be in (0, 1)"),
                       (["--held-out-inputs", "5"], "--held-out-inputs sizes the --held-out split")):  # fmt: skip
        assert main(["data", "synthetic", "-o", str(tmp_path / "x"), *bad]) == 2
        assert words in capsys.readouterr().err and not (tmp_path / "x").exists()  # refused before any work
    with pytest.raises(ValueError, match="unknown task family 'poetry'"):
        generate_examples(3, families=["poetry"])


def test_record_commands(tmp_path):
    out = tmp_path / "sft.jsonl"
    assert main(["data", "sft", str(SHIPPED / "test.jsonl"), "-o", str(out), "--exposure", "no_verifier"]) == 0
    first = json.loads(out.read_text().splitlines()[0])
    answer = json.loads(first["completion"][0]["content"])
    assert all(isinstance(item["credit"], (int, float)) for item in answer["essential"] + answer["additional"])


def test_records_too_long_are_dropped_not_truncated(examples, tiny_judge_dir):
    from transformers import AutoTokenizer

    from genrm.training.common import records_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_judge_dir)
    records = [sft_record(e) for e in examples[:4]]
    records[1] = dict(records[1], completion=[{"role": "assistant", "content": "x " * 5000}])
    kept = records_dataset(records, ("prompt", "completion"), tokenizer, 4000, "test")
    assert len(kept) == 3 and all("x x x" not in row["completion"][0]["content"] for row in kept)
    with pytest.raises(ValueError, match="no record of test fits"):
        records_dataset(records, ("prompt",), tokenizer, 10, "test")


def test_a_record_that_fits_only_without_its_image_is_dropped(examples, tiny_vlm_judge_dir):
    from transformers import AutoProcessor

    from genrm.engine.images import load_image
    from genrm.training.common import records_dataset, token_count

    processor = AutoProcessor.from_pretrained(tiny_vlm_judge_dir)
    pictured = next(e for e in examples if e.image)
    record = sft_record(pictured, "vlm")
    text_only = token_count(processor, dict(record, images=[]))
    shown = dict(record, images=[load_image(pictured.image)])
    with_image = token_count(processor, shown)
    assert with_image > text_only  # the image's tokens are counted
    assert len(records_dataset([shown], ("prompt", "completion", "images"), processor, with_image, "t")) == 1
    with pytest.raises(ValueError, match="no record of t fits"):
        records_dataset([shown], ("prompt", "completion", "images"), processor, with_image - 1, "t")


def test_grounding_inputs_carry_a_picture_of_their_target(examples):
    from PIL import Image, ImageChops

    from genrm.engine.images import load_image

    grounding = [e for e in examples if e.task_type == "grounding"]
    assert grounding and all(e.image for e in grounding)
    assert not any(e.image for e in examples if e.task_type != "grounding")
    for example in grounding:
        picture = load_image(example.image)
        assert picture.size == (64, 64) and len(picture.getcolors()) == 2  # a background and the object
        drawn = ImageChops.difference(picture, Image.new("RGB", picture.size, max(picture.getcolors())[1])).getbbox()
        numbers = [int(v) * 63 / 1000 for v in re.findall(r"\d+", example.rubric.essential[0].reference)]
        if example.rubric.essential[0].reference.startswith("bbox_verify"):
            assert all(abs(a - b) <= 1.5 for a, b in zip(drawn, numbers, strict=True))
        else:  # the point is inside the object
            assert drawn[0] <= numbers[0] + 1 and numbers[0] - 1 <= drawn[2] and drawn[1] <= numbers[1] + 1


def test_vlm_records_carry_the_image_in_trls_vision_column(examples, tmp_path):
    grounding = next(e for e in examples if e.image)
    text_only = next(e for e in examples if not e.image)
    for build in (sft_record, rlvr_record):
        assert "images" not in build(grounding)  # minimal exposure: no image anywhere
        assert build(grounding, "vlm")["images"] == [grounding.image]
        assert build(text_only, "vlm")["images"] == []
        assert all(isinstance(m["content"], str) for m in build(grounding, "vlm")["prompt"])
    path = tmp_path / "vlm.jsonl"
    path.write_text("".join(json.dumps(sft_record(e, "vlm")) + "\n" for e in examples[:30]))
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert sum(len(row) for row in loaded["images"]) == sum(1 for e in examples[:30] if e.image)


def test_the_vlm_exposure_needs_a_vision_language_judge(tmp_path, tiny_judge_dir, capsys):
    args = ["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(tiny_judge_dir),
            "--exposure", "vlm", "--output_dir", str(tmp_path / "out"), "--max_steps", "1"]  # fmt: skip
    assert main(args) == 2
    assert "has no image processor: the vlm exposure needs a vision-language judge" in capsys.readouterr().err
