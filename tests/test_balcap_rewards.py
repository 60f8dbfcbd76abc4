"""The balcap method's formulas and reader, by hand: precision, recall, linguistic quality, the length rules,
b-CapScore, and c-GDPO against summed normalization (the source's proposition 1)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genrm.methods import make_method
from genrm.methods.balcap.lengths import PreTokenCounter, TokenizerCounter
from genrm.methods.balcap.models import BalCapAnswer
from genrm.methods.balcap.prompts import answer_schema, caption_requests, system_message
from genrm.methods.balcap.reading import read_answer
from genrm.methods.balcap.rewards import (
    BalCapConfig,
    b_capscore,
    band_deviation,
    linguistic,
    precision,
    recall,
    weighted_mean,
)
from genrm.methods.columns import decoupled_advantages, group_normalized_sum, summed_advantages


def _answer(verified=(True, True, False), covered=(True, False), scores=(7, 8, 9)) -> dict:
    return {
        "synthetic_features": {
            "atomic_assertions": [{"text": f"a{i}", "is_verified": v} for i, v in enumerate(verified)],
            "clarity_score": scores[0], "fluency_score": scores[1], "coherency_score": scores[2],
            "linguistic_scores_explanation": "fine",
        },
        "gt_features": {"atomic_assertions": [{"text": f"o{i}", "is_covered": c} for i, c in enumerate(covered)]},
    }  # fmt: skip


def test_precision_recall_and_linguistic_by_hand():
    answer = BalCapAnswer.model_validate(_answer())
    assert precision(answer) == pytest.approx(2 / 3)
    assert recall(answer) == pytest.approx(1 / 2)
    assert linguistic(answer) == pytest.approx((8 - 1) / 9)  # mean 8, affine
    assert linguistic(answer, "tenths") == pytest.approx(0.8)
    top = BalCapAnswer.model_validate(_answer(scores=(10, 10, 10)))
    bottom = BalCapAnswer.model_validate(_answer(scores=(1, 1, 1)))
    assert (linguistic(top), linguistic(bottom), linguistic(bottom, "tenths")) == (1.0, 0.0, pytest.approx(0.1))


def test_a_caption_without_assertions_gets_the_empty_precision():
    answer = BalCapAnswer.model_validate(_answer(verified=()))
    assert precision(answer) == 0.0 and precision(answer, empty_precision=0.5) == 0.5


def test_split_checks_make_verified_the_conjunction():
    raw = _answer()
    raw["synthetic_features"]["atomic_assertions"] = [
        {"text": "a red car", "is_pointable": True, "is_visible": True},
        {"text": "evokes calm", "is_pointable": False, "is_visible": True},
        {"text": "a boat", "is_pointable": True, "is_visible": False, "is_verified": True},  # the tests decide
    ]
    answer = BalCapAnswer.model_validate(raw)
    assert [a.is_verified for a in answer.synthetic_features.atomic_assertions] == [True, False, False]
    assert precision(answer) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "text, failure",
    [
        ("no json here", "unreadable"),
        (json.dumps({**_answer(), "gt_features": {"atomic_assertions": []}}), "schema"),  # recall would be 0/0
        (json.dumps(_answer(scores=(0, 5, 5))), "schema"),
        (json.dumps(_answer(scores=(11, 5, 5))), "schema"),
        (json.dumps(_answer(scores=(7.5, 5, 5))), "schema"),
        (json.dumps({**_answer(), "extra": 1}), "schema"),
        (json.dumps({"synthetic_features": _answer()["synthetic_features"]}), "schema"),
    ],
)
def test_the_reader_refuses_what_is_not_an_answer(text, failure):
    reading = read_answer(text)
    assert reading.answer is None and reading.failure == failure and reading.reason


def test_the_reader_takes_an_object_after_reasoning_and_in_a_fence():
    text = "<think>look at the car</think>\n```json\n" + json.dumps(_answer()) + "\n```\nDone."
    reading = read_answer(text)
    assert reading.failure is None and recall(reading.answer) == 0.5


def test_the_schema_accepts_exactly_what_the_reader_reads():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(_answer(), answer_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_answer(scores=(0, 1, 1)), answer_schema())
    split = _answer()
    split["synthetic_features"]["atomic_assertions"] = [{"text": "x", "is_pointable": True, "is_visible": False}]
    jsonschema.validate(split, answer_schema(split_checks=True))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_answer(), answer_schema(split_checks=True))


def test_the_prompt_shares_its_prefix_across_a_group_and_the_eval_rubric_relaxes_pointability():
    first, second = caption_requests("park.png", "A red car.", ["A car.", "Two dogs."])
    assert first.prompt.system == second.prompt.system and first.prompt.image == "park.png"
    shared = first.prompt.user.split("SYNTHETIC CAPTION")[0]
    assert second.prompt.user.startswith(shared) and first.prompt.user.endswith("A car.")
    assert "POINT TO EVIDENCE THAT JUSTIFIES IT" in system_message("eval")
    assert "POINT TO EVIDENCE" not in system_message("train")
    assert '"is_pointable"' in system_message(split_checks=True)


def test_the_band_deviation_of_the_linear_rule():
    assert band_deviation(1.0, 0.5, 2.0) == 0.0
    assert band_deviation(3.0, 0.5, 2.0) == pytest.approx(1.0)
    assert band_deviation(0.2, 0.5, 2.0) == pytest.approx(0.3)


def test_the_scalar_reward_and_b_capscore():
    assert weighted_mean((1.0, 0.5, 0.0), (0.1, 0.3, 0.3)) == pytest.approx((0.1 + 0.15) / 0.7)
    assert b_capscore(1.0, 0.5, 0.5) == pytest.approx(3 / (1 + 2 + 2))
    assert b_capscore(0.9, 0.0, 0.9) == 0.0


@pytest.mark.parametrize(
    "options, message",
    [
        ({"w_prec": 0, "w_rec": 0, "w_ling": 0}, "w_prec, w_rec, w_ling"),
        ({"w_rec": -1}, "the balcap option w_rec: Input should be greater than or equal to 0"),
        ({"length_low": 3, "length_high": 2}, "length_low, length_high"),
        ({"ling_scale": "percent"}, "ling_scale: Input should be 'affine' or 'tenths'"),
        ({"length_rule": "cut"}, "length_rule: Input should be 'mask', 'linear' or 'none'"),
        ({"prompt": "test"}, "prompt: Input should be 'train' or 'eval'"),
        ({"w_prec": [1]}, "w_prec: Input should be a valid number"),
        ({"tau": 0.3}, "takes no option tau"),
    ],
)
def test_options_out_of_range_are_refused_with_the_option_named(options, message):
    with pytest.raises(ValueError, match=message):
        make_method("balcap", options=options)


def test_exposures_that_mean_nothing_here_are_refused():
    from genrm.methods import MethodConfig

    with pytest.raises(ValueError, match="exposure means nothing"):
        make_method("balcap", MethodConfig(exposure="no_verifier"))
    assert BalCapConfig().weights == (0.1, 0.3, 0.3)


def test_token_counts():
    counter = PreTokenCounter()
    assert counter("A red car, parked.") == 6 and counter("") == 0

    class Whitespace:  # the shape of a Hugging Face tokenizer's call
        name_or_path = "ws"

        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": text.split() + (["<s>"] if add_special_tokens else [])}

    assert TokenizerCounter(Whitespace())("A red car, parked.") == 4


# The source's proposition 1: G >= 3 rollouts, K rewards, every column with spread in the group.
OTHERS = [[0.2, 0.85, 0.4], [0.82, 0.18, 0.6]]


def test_proposition_1_summed_normalization_cannot_tell_equal_sums_apart_and_c_gdpo_can():
    weights = [1.0, 1.0, 1.0]
    a, b = [0.5, 0.5, 0.5], [0.9, 0.1, 0.5]  # both sum to 1.5
    summed = [summed_advantages([[row, *OTHERS]], weights)[0][0] for row in (a, b)]
    assert summed[0] == pytest.approx(summed[1], abs=1e-12)
    decoupled = [decoupled_advantages([[row, *OTHERS]], weights)[0][0] for row in (a, b)]
    assert abs(decoupled[0] - decoupled[1]) > 0.05


@given(st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=3, max_size=8))
def test_summed_normalization_depends_only_on_the_sum(rows):
    # Moving a rollout along its sum's hyperplane leaves its summed advantage as it was.
    weights = [1.0, 1.0, 1.0]
    first = rows[0]
    moved = [sum(first), 0.0, 0.0]
    before = summed_advantages([rows], weights)[0][0]
    after = summed_advantages([[moved, *rows[1:]]], weights)[0][0]
    assert after == pytest.approx(before, abs=1e-6)


def test_c_gdpo_by_hand_with_trls_statistics():
    group = [[0.5, 0.5, 0.5], *OTHERS]
    weights = [0.1, 0.3, 0.3]
    means = [sum(r[k] for r in group) / 3 for k in range(3)]
    stds = [math.sqrt(sum((r[k] - means[k]) ** 2 for r in group) / 2) for k in range(3)]  # sample std, as torch
    sums = [sum(weights[k] * (r[k] - means[k]) / (stds[k] + 1e-4) for k in range(3)) for r in group]
    assert group_normalized_sum(group, weights) == pytest.approx(sums)
    mean = sum(sums) / 3
    std = math.sqrt(sum((s - mean) ** 2 for s in sums) / 2)
    assert decoupled_advantages([group], weights)[0] == pytest.approx([(s - mean) / (std + 1e-4) for s in sums])


def test_unknown_values_are_left_out_of_the_statistics():
    group = [[0.5, 0.2], [None, None], [0.9, None], [0.1, 0.6]]
    sums = group_normalized_sum(group, [1.0, 1.0])
    assert sums[1] is None
    known = group_normalized_sum([[0.5, 0.2], [0.1, 0.6]], [1.0, 1.0])
    # the second column of rows 0 and 3 is normalized over those two alone, as TRL's nanmean/nanstd do
    assert sums[0] - group_normalized_sum([[0.5], [0.9], [0.1]], [1.0])[0] == pytest.approx(known[0] - (
        group_normalized_sum([[0.5], [0.1]], [1.0])[0]))  # fmt: skip
    assert decoupled_advantages([group], [1.0, 1.0])[0][1] == 0.0
