"""The pairwise judge's GRPO with the swap in the loop (``genrm pairs train``): eq. 2 and 3 over a group of originals
and their swapped continuations by hand; one update of the tiny vision judge whose sampling is replaced by known
answers (the rest real: the swapped prompts, the loss on the real model, its weights moving); and the whole loop on a
random tiny judge, whose unreadable answers make every group skipped, so that nothing is learnt from format alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genrm.cli import main
from genrm.methods.pairwise.grpo import SwapGRPOArguments, _Judge, _update, score_group
from genrm.methods.pairwise.models import PairExample
from genrm.methods.pairwise.scene_judge import tagged_answer

PAIRS = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs" / "pairs.jsonl"
PAIR = PairExample.model_validate_json(PAIRS.read_text().splitlines()[0])  # red image, label A
RIGHT = tagged_answer("red", "red", "green", (8, 3))
WRONG = tagged_answer("green", "red", "green", (3, 8))
TAIL_B = "<evaluate_criteria>B is right.</evaluate_criteria>\n<scores>\\boxed{3, 8}</scores>"
TAIL_A = "<evaluate_criteria>A is right.</evaluate_criteria>\n<scores>\\boxed{8, 3}</scores>"


def test_a_group_of_originals_and_continuations_by_hand():
    # the right judgement resumes on the swapped pair and prefers B (the same response): consistent; the wrong one
    # resumes preferring A (the same wrong response)
    outcome = score_group(PAIR, [RIGHT, WRONG], [RIGHT.split("<evaluate")[0] + TAIL_B, WRONG.split("<evaluate")[0]
                                                 + TAIL_A])  # fmt: skip
    assert outcome.rewards == pytest.approx([2.2, 0.2, 2.2, 0.2])
    assert outcome.advantages == pytest.approx([1.0, -1.0, 1.0, -1.0]) and all(outcome.train)
    assert (outcome.correct, outcome.consistent, outcome.skipped) == ([1.0, 0.0], [1.0, 0.0], False)
    hopeless = score_group(PAIR, [WRONG, WRONG], [WRONG, WRONG])
    assert hopeless.skipped and not any(hopeless.train)
    with pytest.raises(ValueError, match="has no label"):
        score_group(PAIR.model_copy(update={"label": None}), [RIGHT], [RIGHT])


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    from genrm.training.tiny_model import save_tiny_vlm_judge

    return save_tiny_vlm_judge(tmp_path_factory.mktemp("vlm") / "judge")


def _weights(model):
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def test_one_update_trains_the_originals_and_the_regenerated_tails_only(tiny_vlm, monkeypatch):
    import torch

    args = SwapGRPOArguments(train_file=str(PAIRS), model_name_or_path=str(tiny_vlm), num_generations=2,
                             max_completion_length=16, use_peft=False, device="cpu")  # fmt: skip
    judge = _Judge(args, PAIRS.parent)
    contexts, tails = [], iter([TAIL_B, TAIL_A])

    def known(inputs, count, temperature, max_tokens):  # sampling replaced by known answers; the rest is real
        if count > 1:
            return [judge.tokenizer(text, add_special_tokens=False)["input_ids"] for text in (RIGHT, WRONG)]
        contexts.append(judge.tokenizer.decode(inputs["input_ids"][0]))
        return [judge.tokenizer(next(tails), add_special_tokens=False)["input_ids"]]

    monkeypatch.setattr(judge, "generate", known)
    before = _weights(judge.model)
    optimizer = torch.optim.AdamW([p for p in judge.model.parameters() if p.requires_grad], lr=1e-3)
    figures = _update(judge, [PAIR], args, optimizer, 1)
    assert figures["sequences_trained"] == 4.0 and figures["groups_skipped"] == 0.0
    assert (figures["correct"], figures["consistent"]) == (0.5, 0.5)
    # the bias figures beside them: position A chosen 2 times of 4 (RIGHT and WRONG's continuation); both judgements
    # agree with their continuation (the same response in the other place), right or wrong, so the label-free
    # agreement is 1 where R_cons (consistent) is 0.5
    assert (figures["a_rate"], figures["swap_agreement"]) == (0.5, 1.0)
    after = _weights(judge.model)
    assert any(not torch.equal(before[name], after[name]) for name in before)
    # the continuations resume on the swapped pair, after the swapped reasoning and before any evaluation
    assert "RESPONSE A:\nThe image is filled with green." in contexts[0]
    assert contexts[0].rstrip().endswith("</consistency_verification>")
    assert "<response_b_claims>Response B says: red</response_b_claims>" in contexts[0]


@pytest.mark.slow
def test_the_loop_on_a_random_tiny_judge_skips_every_group_and_learns_nothing(tiny_vlm, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "grpo"
    args = ["pairs", "train", "--model_name_or_path", str(tiny_vlm), "--train_file", str(PAIRS), "--output_dir",
            str(out), "--num_generations", "2", "--max_completion_length", "12", "--max_steps", "2",
            "--lora_r", "4", "--lora_alpha", "8", "--device", "cpu"]  # fmt: skip
    assert main(args) == 0
    log = json.loads((out / "log_history.json").read_text())
    assert [e["groups_skipped"] for e in log] == [1.0, 1.0] and all(e["sequences_trained"] == 0 for e in log)
    before, after = load_file(tiny_vlm / "model.safetensors"), load_file(out / "model.safetensors")
    # a LoRA adapter that was never stepped merges into the judge it started from
    assert before.keys() == after.keys() and all((before[k] == after[k]).all() for k in before)
    assert (out / "adapter" / "adapter_config.json").is_file()


IMAGE_PAIRS = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs" / "image_pairs.jsonl"
MMRB2_EDIT = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "mmrb2" / "edit.json"


def test_the_loop_shows_each_response_its_images_and_the_swap_exchanges_them(tiny_vlm):
    import torch

    from genrm.methods.pairwise.mmrb2 import read_pairs

    edit = next(p for p in read_pairs(IMAGE_PAIRS) if p.id == "edit-yellow")
    judge = _Judge(SwapGRPOArguments(model_name_or_path=str(tiny_vlm), use_peft=False, device="cpu"),
                   IMAGE_PAIRS.parent)  # fmt: skip
    given, swapped = judge.inputs(edit)["pixel_values"], judge.inputs(edit.swapped())["pixel_values"]
    assert given.shape[0] == swapped.shape[0] == 3  # the input image, A's, B's
    assert not torch.equal(given[1], given[2])
    assert torch.equal(given[0], swapped[0])  # the prompt's image stays first
    assert torch.equal(given[1], swapped[2]) and torch.equal(given[2], swapped[1])


def test_pairs_train_on_an_mmrb2_file_and_a_text_only_judge_refused(tiny_vlm, tiny_judge_dir, tmp_path, capsys):
    common = ["--num_generations", "2", "--max_completion_length", "8", "--max_steps", "1", "--lora_r", "4",
              "--lora_alpha", "8", "--device", "cpu", "--train_file", str(MMRB2_EDIT)]  # fmt: skip
    assert main(["pairs", "train", "--model_name_or_path", str(tiny_vlm), "--output_dir", str(tmp_path / "vlm"),
                 *common]) == 0  # fmt: skip
    assert len(json.loads((tmp_path / "vlm" / "log_history.json").read_text())) == 1
    assert main(["pairs", "train", "--model_name_or_path", str(tiny_judge_dir), "--output_dir", str(tmp_path / "t"),
                 *common]) == 2  # fmt: skip
    assert "cannot see images, and the pairs of" in capsys.readouterr().err
