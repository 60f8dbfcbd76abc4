"""The claimdiff method's arithmetic (genrm.methods.claimdiff.rewards), pinned with values computed by hand from the
source's formulas, and its reader of judge answers (JSON and the source's plain-text blocks)."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genrm.methods.claimdiff.reading import read_answer
from genrm.methods.claimdiff.rewards import (
    ClaimDiffConfig,
    DiffTally,
    ErrorCounts,
    answer_text,
    count_errors,
    count_hedges,
    diff_base_reward,
    error_difference,
    final_reward,
    format_score,
    hall_vs_miss_base,
    hedging,
    infer_severity,
    map_to_range,
    normalized_a_only_reward,
)


def _tally(a: float, b: float, n: int, a_wins: int = 0, b_wins: int = 0, winner: str = "tie") -> DiffTally:
    return DiffTally(n, ErrorCounts(int(a), float(a)), ErrorCounts(int(b), float(b)), a_wins, b_wins, winner)


@pytest.mark.parametrize(
    "errors,expected",
    [
        # 5 differences: bonus ln 6 / ln 11 = 0.747224, factor 0.7 + 0.3 * 0.747224 = 0.924167
        (0, 0.9241665),  # density 0: base 1, no decay
        (2, 0.2197298),  # density 0.4: base 0.05 + 0.95 * 0.36 = 0.392; decay exp(-0.5) = 0.606531
        (5, 0.0132389),  # density 1: base 0.05; decay exp(-1.25) = 0.286505
    ],
)
def test_normalized_a_only_of_five_differences(errors, expected):
    assert normalized_a_only_reward(errors, 5, ClaimDiffConfig()) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("normalized_diff", 0.3),  # (3 - 1) / 5 = 0.4 -> 0.5 - 0.2
        ("raw_diff", 0.4),  # (3 - 1) / 10 = 0.2 -> 0.5 - 0.1
        ("a_only", 0.7),  # 1 - 3 / 10
        ("judgment_based", 0.25),  # (1 - 3) / 5 = -0.4, winner B: -0.5 -> 0.5 - 0.25
        ("normalized_a_only", 0.0881822),  # density 0.6: base 0.202, decay exp(-0.75) = 0.472367, factor 0.924167
    ],
)
def test_every_diff_mode_on_three_errors_against_one_of_five(mode, expected):
    config = ClaimDiffConfig(mode=mode)
    assert diff_base_reward(_tally(3, 1, 5, a_wins=1, b_wins=3, winner="B"), config) == pytest.approx(expected)


@pytest.mark.parametrize(
    "mode,expected",
    [("normalized_diff", 0.5), ("raw_diff", 0.5), ("a_only", 1), ("judgment_based", 0.5), ("normalized_a_only", 1)],
)
def test_no_difference_found(mode, expected):
    assert diff_base_reward(_tally(0, 0, 0), ClaimDiffConfig(mode=mode)) == expected


def test_judgment_based_winner_shift_is_capped():
    config = ClaimDiffConfig(mode="judgment_based")
    assert diff_base_reward(_tally(0, 0, 2, a_wins=2, winner="A"), config) == 1.0  # 1 + 0.1, capped at 1
    assert error_difference(_tally(0, 0, 4, a_wins=1, winner="A"), config) == pytest.approx(-0.35)


def test_raw_and_a_only_clip_at_max_error_diff():
    assert diff_base_reward(_tally(14, 1, 15), ClaimDiffConfig(mode="raw_diff")) == 0.0  # 13 clipped to 10
    assert diff_base_reward(_tally(4, 0, 4), ClaimDiffConfig(mode="a_only", max_error_diff=2)) == 0.0


def test_severity_from_error_type_words_and_from_the_judge():
    assert [infer_severity(t) for t in ("color_hallucination", "count_mismatch", "detail_omission",
                                        "spatial_relation_error", "style_misinterpretation", "vague")] == [
        3, 3, 2, 2, 1, 2]  # fmt: skip
    errors = [("color_hallucination", 0), ("detail_omission", 0), ("style_misinterpretation", 0), ("none", 3),
              ("NA", 0)]  # fmt: skip
    plain = count_errors(errors, ClaimDiffConfig())
    assert (plain.count, plain.weighted, plain.by_severity) == (3, 3.0, (1, 1, 1))
    weighted = count_errors(errors, ClaimDiffConfig(severity_weighted=True))
    assert weighted.weighted == pytest.approx(1.6 + 1.25 + 1.0)
    judged = count_errors([("color_hallucination", 1)], ClaimDiffConfig(severity_weighted=True, judge_severity=True))
    assert judged.weighted == 1.0 and judged.by_severity == (1, 0, 0)
    ignored = count_errors([("color_hallucination", 1)], ClaimDiffConfig(severity_weighted=True))
    assert ignored.weighted == 1.6  # the judge's level counts only when asked for


def test_severity_weighting_normalizes_by_the_largest_weight():
    config = ClaimDiffConfig(severity_weighted=True)
    tally = DiffTally(5, ErrorCounts(3, 3.85), ErrorCounts(1, 1.6), 0, 0, "tie")
    assert error_difference(tally, config) == pytest.approx(2.25 / 8)  # (3.85 - 1.6) / (1.6 * 5)
    assert diff_base_reward(tally, config) == pytest.approx(0.5 - 0.5 * 2.25 / 8)
    a_only = ClaimDiffConfig(mode="a_only", severity_weighted=True)
    assert diff_base_reward(tally, a_only) == pytest.approx(1 - 3.85 / 16)  # ceiling 10 * 1.6


def test_hall_vs_miss_base():
    assert hall_vs_miss_base(4, 1, 1) == 0.5 and hall_vs_miss_base(0, 0, 0) == 1.0 and hall_vs_miss_base(2, 2, 1) == 0


def test_scale_and_range_mapping():
    config = ClaimDiffConfig(reward_scale=2.0, min_reward=-1.0, max_reward=1.0)
    assert map_to_range(0.25, config) == 0.0  # 0.5 in [0, 1] -> the middle of [-1, 1]
    assert map_to_range(0.8, config) == 1.0  # 1.6 clipped to 1


def test_hedges_and_their_penalty():
    caption = "A red car or a blue car, possibly parked near a red/blue sign."
    assert count_hedges(caption) == 3  # or, possibly, red/blue
    assert count_hedges("It likely appears to be an orange sportscar, and/or a bus.") == 3  # not "or" in orange
    off = hedging(caption, ClaimDiffConfig())
    assert (off.count, off.penalty) == (3, 1.0)
    on = hedging(caption, ClaimDiffConfig(ambiguity_penalty=True))
    # 13 words: 13 / 90 hedges go free
    assert on.free == pytest.approx(13 / 90) and on.penalty == pytest.approx(math.exp(-0.1 * (3 - 13 / 90)))
    fixed = hedging(caption, ClaimDiffConfig(ambiguity_penalty=True, ambiguity_free=3))
    assert fixed.penalty == 1.0


_SOURCE_HEDGES = re.compile(r"\b(or|and/or|possibly|appears to|might be|could be|likely)\b|\w+/\w+", re.IGNORECASE)


_PIECES = [*"ab/ o,r", "or", "likely", "and/or", "might be", "é", "\n"]


@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_hedge_count_is_the_source_patterns(text):
    assert count_hedges(text) == len(_SOURCE_HEDGES.findall(text))


def test_format_part_and_final_mix():
    assert answer_text("<think>hm</think><answer> A cat. </answer>") == "A cat."
    assert answer_text("  A cat.  ") == "A cat." and answer_text("<answer>never closed") == "<answer>never closed"
    assert format_score("A cat.", ClaimDiffConfig()) == 1.0
    assert format_score("<answer> </answer>", ClaimDiffConfig()) == 0.0
    think = ClaimDiffConfig(require_think=True)
    assert format_score("<think>x</think>\n<answer>A cat.</answer>", think) == 1.0
    assert format_score("<answer>A cat.</answer>", think) == 0.0
    assert final_reward(0.3, 1.0, 1.0) == pytest.approx(0.65) and final_reward(0.3, 1.0, 0.0) == 0.3


@pytest.mark.parametrize(
    "options,message",
    [
        ({"mode": "best"}, "mode\n  Input should be 'normalized_diff', 'normalized_a_only'"),
        ({"severity_weights": {1: 1, 2: 1}}, "severity_weights\n  Value error, must give a positive weight to each"),
        ({"max_error_diff": 0}, "max_error_diff\n  Input should be greater than 0"),
        ({"min_reward": 1, "max_reward": 0}, "below min_reward"),
    ],
)
def test_config_refuses_values_out_of_range(options, message):
    with pytest.raises(ValueError, match=message):
        ClaimDiffConfig(**options)


_BLOCKS = """<think>Let me compare.</think>
[DIFFERENCE 1]
ASPECT: color
CAPTION_A_CLAIM: a blue car
CAPTION_B_CLAIM: a red car
JUDGMENT: B

CAPTION_A_ERROR:
ERROR_TYPE: color_hallucination
ERROR_DETAIL: The car is red.
SEVERITY_LEVEL: 3

CAPTION_B_ERROR:
ERROR_TYPE: NONE
ERROR_DETAIL: No error.
SEVERITY_LEVEL: NA

[DIFFERENCE 2]
ASPECT: count
CAPTION_A_CLAIM: two dogs
CAPTION_B_CLAIM:
JUDGMENT: both_supported

CAPTION_A_ERROR:
ERROR_TYPE: NONE
ERROR_DETAIL: No error.

CAPTION_B_ERROR:
ERROR_TYPE: detail_omission
ERROR_DETAIL: The dogs are not mentioned.

[OVERALL_WINNER]
Tie
"""


def test_the_sources_plain_text_blocks_are_read():
    reading = read_answer(_BLOCKS)
    assert reading.failure is None, reading.reason
    first, second = reading.answer.differences
    assert (first.aspect, first.caption_a_claim, first.judgment) == ("color", "a blue car", "B")
    assert (first.caption_a_error.error_type, first.caption_a_error.severity) == ("color_hallucination", 3)
    assert first.caption_b_error.severity == 0 and second.caption_b_claim == ""
    assert (second.judgment, second.caption_b_error.error_type) == ("both_supported", "detail_omission")
    assert reading.answer.overall_winner == "tie"


def test_json_answers_are_read_in_fences_and_after_reasoning():
    item = {"aspect": "count", "caption_a_claim": "two", "caption_b_claim": "three", "judgment": "a",
            "caption_a_error": {"error_type": "none", "error_detail": ""},
            "caption_b_error": {"error_type": "count_mismatch", "error_detail": "three"}}  # fmt: skip
    text = "<think>{not this}</think>```json\n" + json.dumps({"differences": [item], "overall_winner": "A"}) + "\n```"
    reading = read_answer(text)
    assert reading.failure is None and reading.answer.differences[0].judgment == "A"
    assert read_answer(json.dumps({"differences": [], "overall_winner": "tie"})).answer.differences == []


@pytest.mark.parametrize(
    "text,failure,reason",
    [
        ("The captions look alike.", "unreadable", "no JSON object and no [DIFFERENCE n] block"),
        (_BLOCKS.replace("JUDGMENT: B", "JUDGMENT: maybe"), "schema", "differences.0.judgment"),
        (_BLOCKS.replace("[OVERALL_WINNER]\nTie", ""), "schema", "overall_winner"),
        (_BLOCKS.replace("ERROR_TYPE: color_hallucination\n", ""), "schema", "caption_a_error.error_type"),
        (json.dumps({"differences": [{"aspect": "x"}] * 65, "overall_winner": "A"}), "schema", "at most 64"),
        (json.dumps({"differences": [], "overall_winner": "A", "score": 1}), "schema", "score: Extra inputs"),
    ],
)
def test_malformed_answers_fail_with_their_class(text, failure, reason):
    reading = read_answer(text)
    assert reading.answer is None and reading.failure == failure and reason in reading.reason


def test_hall_vs_miss_blocks_are_read_and_checked():
    text = ("[DIFFERENCE 1]\nTYPE: extra_info\nCONTENT: a boat\nCATEGORY: natural\nVERIFICATION: false\n"
            "REASON: no boat\nIS_HALLUCINATION: true\n")  # fmt: skip
    reading = read_answer(text, hall_vs_miss=True)
    assert reading.failure is None and reading.answer.differences[0].is_hallucination is True
    broken = read_answer(text.replace("VERIFICATION: false", "VERIFICATION: sure"), hall_vs_miss=True)
    assert broken.failure == "schema" and "verification" in broken.reason
