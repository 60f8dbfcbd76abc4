"""Remapping and hierarchical aggregation, computed by hand; the length mask of the policy side."""

import pytest

from genrm.methods.rubric.aggregation import (
    CriterionSlot,
    aggregate_group,
    aggregate_response,
    content_mask,
    length_conditional_mask,
    remap_group,
)

E3, E2, A1 = CriterionSlot("essential", 3), CriterionSlot("essential", 2), CriterionSlot("additional", 1)


@pytest.mark.parametrize(
    "scores, expected",
    [
        # all equal above tau: everyone gets the upper bound 1
        ([0.8, 0.8, 0.8], [1.0, 1.0, 1.0]),
        # all equal below tau: everyone gets the lower bound 0
        ([0.3, 0.3], [0.0, 0.0]),
        # all equal at tau: min >= tau gives lower bound 0.5, and equal scores <= tau take the lower bound
        ([0.5, 0.5], [0.5, 0.5]),
        # mixed: bounds 0 and 1, min-max stretched
        ([0.2, 0.6, 1.0], [0.0, 0.5, 1.0]),
        # all passing but different (one edit vs ten): bounds 0.5 and 1, now far apart
        ([0.9, 0.99], [0.5, 1.0]),
        # all failing but different: bounds 0 and 0.5; nobody passes
        ([0.1, 0.4], [0.0, 0.5]),
        # unscored responses are left out of the statistics and stay unscored
        ([None, 0.2, 1.0], [None, 0.0, 1.0]),
        ([None, None], [None, None]),
    ],
)
def test_remap_group(scores, expected):
    assert remap_group(scores) == pytest.approx(expected)


def test_float_noise_does_not_flip_a_partial_score_into_a_failure():
    # (0.6 - 0.2) / 0.8 is 0.49999999999999994 in floating point
    assert remap_group([0.2, 0.6, 1.0])[1] == 0.5


def test_remap_threshold_is_configurable():
    assert remap_group([0.6, 0.7], tau=0.8) == pytest.approx([0.0, 0.5])


@pytest.mark.parametrize(
    "essential, mask",
    [([1.0, 1.0], 1), ([1.0, 0.5], 1), ([0.75, 0.5], 0), ([1.0, 0.49], 0), ([], 1)],
)
def test_content_mask(essential, mask):
    assert content_mask(essential)[0] == mask


def test_one_partial_essential_keeps_the_weighted_sum():
    result = aggregate_response([E3, E2, A1], [1.0, 0.5, 1.0])
    # weights 3/6, 2/6, 1/6
    assert result.reward == pytest.approx(3 / 6 * 1.0 + 2 / 6 * 0.5 + 1 / 6 * 1.0)
    assert result.content_mask == 1


def test_two_partial_essentials_zero_the_reward():
    result = aggregate_response([E3, E2, A1], [0.5, 0.75, 1.0])
    assert result.reward == 0.0 and result.content_mask == 0
    assert result.base == pytest.approx(3 / 6 * 0.5 + 2 / 6 * 0.75 + 1 / 6)
    assert "partially met" in result.explanation[0]


def test_additional_criteria_cannot_compensate_an_essential_failure():
    result = aggregate_response([E3, E2, A1, A1], [0.4, 1.0, 1.0, 1.0])
    assert result.reward == 0.0 and result.base > 0.5
    assert "#1" in result.explanation[0] and "fail" in result.explanation[0]


def test_group_end_to_end_by_hand():
    slots = [CriterionSlot("essential", 2), CriterionSlot("additional", 1)]
    raw = [[1.0, 0.0], [0.6, 1.0], [0.2, 0.5]]
    # essential remapped: [1, 0.5, 0]; additional remapped: [0, 1, 0.5]; weights 2/3 and 1/3
    results = aggregate_group(slots, raw)
    for result, expected in zip(results, [[1.0, 0.0], [0.5, 1.0], [0.0, 0.5]], strict=True):
        assert result.remapped == pytest.approx(expected)
    assert [r.reward for r in results] == pytest.approx([2 / 3, 2 / 3 * 0.5 + 1 / 3, 0.0])


def test_format_and_length_gates():
    results = aggregate_group([E3], [[1.0], [1.0], [1.0]], [[], ["repetition loop: ..."], []], [True, True, False])
    assert [r.reward for r in results] == [1.0, 0.0, 0.0]
    assert results[1].format_mask == 0 and not results[2].length_ok


def test_unscored_criterion_makes_the_reward_unknown():
    result = aggregate_response([E3, E2, A1], [1.0, 1.0, None])
    assert result.reward is None and result.base is None
    assert "depends on the unscored" in " ".join(result.explanation)


@pytest.mark.parametrize(
    "remapped, violations, length_ok",
    [([0.2, 1.0, None], [], True), ([1.0, 1.0, None], ["language mixing"], True), ([1.0, 1.0, None], [], False),
     ([0.5, 0.5, None], [], True)],
)  # fmt: skip
def test_unscored_criterion_with_a_decided_zero(remapped, violations, length_ok):
    result = aggregate_response([E3, E2, A1], remapped, violations, length_ok)
    assert result.reward == 0.0
    assert "whatever the unscored criteria would score" in " ".join(result.explanation)


def test_mismatched_rows_are_rejected():
    # tau is checked where it is given, as the rubric method's option (tests/test_methods.py)
    with pytest.raises(ValueError, match="2 criterion scores"):
        aggregate_group([E3], [[1.0, 1.0]])


@pytest.mark.parametrize("length, keep", [(100, True), (50, True), (200, True), (40, False), (250, False)])
def test_length_conditional_mask(length, keep):
    assert length_conditional_mask(length, 100, low=0.5, high=2.0) is keep
