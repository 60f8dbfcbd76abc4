"""list_verify: Hungarian matching over text similarity, unequal counts, candidates, lenient prediction reading."""

import pytest

from verifiers import VerifyConfig, list_verify, run_verifier
from verifiers.result import TargetError


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        # the seed's example: two of three items found
        (["M-30", "M-31", "M-31UK"], ["M-30", "M-31"], 2 / 3),
        # order does not matter
        (["M-30", "M-31", "M-31UK"], ["M-31UK", "M-30", "M-31"], 1.0),
        # extra items cost as much as missing ones
        (["a", "b", "c"], ["a", "b", "c", "zzz"], 3 / 4),
        # partial similarity of matched items: (1 + 18 / 19) / 2
        (["apple", "the quick brown fox"], ["the quick brown fax", "apple"], (1 + 18 / 19) / 2),
        # items are compared as text_verify compares them: another short word, or a negated item, is a miss
        (["Paris", "Lyon"], ["Parish", "not Lyon"], 0.0),
        # the assignment is one-to-one: a single prediction cannot match two targets
        (["abc", "abc"], ["abc"], 0.5),
        ([], [], 1.0),
        (["a"], [], 0.0),
        ([], ["a"], 0.0),
    ],
)
def test_list_table(target, predict, expected):
    assert list_verify(target=target, predict=predict) == pytest.approx(expected)


def test_candidates_take_the_best_list():
    assert list_verify(candidates=[["a", "b"], ["c"]], predict=["c"]) == 1.0
    assert list_verify(candidates=[["a", "b"], ["c"]], predict=["a"]) == 0.5


def test_options_apply_to_items():
    assert list_verify(target=["Export Volume"], predict=["export  volume"], ignore_case=True) == 1.0


def test_prediction_read_leniently():
    assert run_verifier("list_verify", {"target": ["a", "b"]}, {"predict": "['a', 'b']"}).score == 1.0
    assert run_verifier("list_verify", {"target": ["a"]}, {"predict": "a"}).score == 1.0
    assert run_verifier("list_verify", {"target": ["1", "2"]}, {"predict": [1, 2]}).score == 1.0


def test_bounds():
    config = VerifyConfig(max_list_items=3)
    result = run_verifier("list_verify", {"target": ["a"]}, {"predict": ["a"] * 4}, config)
    assert (result.score, result.status) == (0.0, "unparseable_pred")
    with pytest.raises(TargetError):
        list_verify(target=["a"] * 4, predict=["a"], config=config)
    with pytest.raises(TargetError):
        list_verify(target=["a"], candidates=[["a"]], predict=["a"])


def test_item_bound_holds_after_normalization_and_over_all_candidates():
    wide = run_verifier("list_verify", {"target": ["a"]}, {"predict": ["\ufdfa" * 60]})  # 1,080 letters once read
    assert wide.status == "unparseable_pred" and "once normalized" in wide.reason
    config = VerifyConfig(max_list_items=4)
    many = run_verifier("list_verify", {"candidates": [["a", "b"], ["c", "d"], ["e"]]}, {"predict": ["a"]}, config)
    assert many.status == "unparseable_target" and "5 items together" in many.reason
