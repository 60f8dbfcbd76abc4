"""text_verify: hand-checked similarities, each normalization option, candidates, bounds."""

import pytest

from verifiers import VerifyConfig, run_verifier, text_verify
from verifiers.result import TargetError

LONG = "The quick brown fox jumps over the lazy dog while the cat watches from the old wooden fence nearby"


def _edits(text: str, n: int) -> str:
    chars = list(text)
    for i in range(n):
        chars[i * 9] = "#"
    return "".join(chars)


@pytest.mark.parametrize(
    "target, predict, options, expected",
    [
        # exact and near matches: 1 - edits / max(len) for text of three words or more
        ("Export Volume", "Export Volume", {}, 1.0),
        ("Main Stoeet Pharmacy", "Main Street Pharmacy", {}, 1 - 1 / 20),
        ("the export volume", "The export volume", {}, 1 - 1 / 17),
        # a target of one or two words is compared word by word: another word is a miss, not a near one
        ("Export Volume", "export volume", {}, 0.0),
        ("abcd", "abce", {}, 0.0),
        ("Paris", "Parish", {}, 0.0),
        ("Pharmacy", "Pharmacv", {}, 1 - 1 / 8),  # a word of 8 letters or more may be misspelt once
        ("Pharmacy", "Phormacv", {}, 0.0),
        # a prediction that negates the target, or holds its word with a negating prefix, is a miss at any length
        ("proved", "disproved", {}, 0.0),
        ("possible", "impossible", {}, 0.0),
        ("true", "untrue", {}, 0.0),
        ("toxic", "non-toxic", {}, 0.0),
        ("Paris", "not Paris", {}, 0.0),
        ("The dog is brown and the cat is white", "The dog is not brown and the cat is white", {}, 0.0),
        ("The door is open to the public", "The door isn't open to the public", {}, 0.0),
        ("Do not enter", "Do not enter", {}, 1.0),
        ("abc", "", {}, 0.0),
        ("", "", {}, 1.0),
        # ignore_case
        ("Export Volume", "export volume", {"ignore_case": True}, 1.0),
        ("STRASSE", "strasse", {"ignore_case": True}, 1.0),
        # ignore_space, and the default collapse of runs of white space
        ("Export Volume", "ExportVolume", {}, 1 - 1 / 13),
        ("Export Volume", "ExportVolume", {"ignore_space": True}, 1.0),
        ("Export Volume", "  Export \n  Volume ", {}, 1.0),
        # ignore_punc
        ("Hello, world!", "Hello world", {"ignore_punc": True}, 1.0),
        ("Hello, world!", "Hello world", {}, 1 - 2 / 13),
        # ignore_st: Traditional and Simplified Chinese compare equal
        ("汉字", "漢字", {"ignore_st": True}, 1.0),
        ("汉字", "漢字", {}, 0.0),
        ("台湾后来的故事很长很长很长", "臺灣後來的故事很长很长很长", {}, 1 - 4 / 13),
        ("台湾后来", "臺灣後來", {"ignore_st": True}, 1.0),
        # use_latex strips text markup, delimiters, sizing and escapes
        (r"\text{Export Volume}", "Export Volume", {"use_latex": True}, 1.0),
        ("$x^{2}$", "x^{2}", {"use_latex": True}, 1.0),
        (r"\left( a \right)", "( a )", {"use_latex": True}, 1.0),
        (r"50\%", "50%", {"use_latex": True}, 1.0),
        (r"\textbf{\textit{bold}}", "bold", {"use_latex": True}, 1.0),
        (r"\dfrac{a}{b}", r"\frac{a}{b}", {"use_latex": True}, 1.0),
        # NFKC is always on: full-width letters equal ASCII
        ("ABC", "ＡＢＣ", {}, 1.0),
    ],
)
def test_text_table(target, predict, options, expected):
    assert text_verify(target=target, predict=predict, **options) == pytest.approx(expected)


def test_one_edit_is_separated_from_ten_on_a_long_string():
    one, ten = text_verify(target=LONG, predict=_edits(LONG, 1)), text_verify(target=LONG, predict=_edits(LONG, 10))
    assert one == pytest.approx(1 - 1 / len(LONG))
    assert ten == pytest.approx(1 - 10 / len(LONG))
    assert one - ten > 0.08


def test_candidates_take_the_maximum():
    assert text_verify(candidates=["cat", "dog"], predict="dog") == 1.0
    assert text_verify(candidates=["the abcd one", "wxyz"], predict="the abce one") == pytest.approx(1 - 1 / 12)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"target": "a", "candidates": ["b"]}, {"candidates": []}, {"target": 3}, {"target": "a", "ignore_case": 1}],
)
def test_bad_rubric_side_raises_target_error(kwargs):
    with pytest.raises(TargetError):
        text_verify(predict="a", **kwargs)


def test_prediction_over_the_bound_scores_zero_as_unparseable():
    config = VerifyConfig(max_text_chars=100)
    result = run_verifier("text_verify", {"target": "a"}, {"predict": "a" * 101}, config)
    assert (result.score, result.status) == (0.0, "unparseable_pred")
    assert text_verify(target="a", predict="a" * 101, config=config) == 0.0


def test_numeric_prediction_is_read_as_text():
    result = run_verifier("text_verify", {"target": "42"}, {"predict": 42})
    assert (result.score, result.status) == (1.0, "ok")


def test_the_bound_holds_after_normalization():
    # NFKC turns U+FDFA (one character) into 18 letters: 20,000 of them would be 360,000 letters to compare
    result = run_verifier("text_verify", {"target": "\ufdfb" * 10}, {"predict": "\ufdfa" * 20_000})
    assert result.status == "unparseable_pred" and "once normalized" in result.reason
    bad_target = run_verifier("text_verify", {"target": "\ufdfb" * 20_000}, {"predict": "a"})
    assert bad_target.status == "unparseable_target"
    within = run_verifier("text_verify", {"target": "\ufdfa"}, {"predict": "\ufdfa" * 100})
    assert within.status == "ok"


def test_lone_surrogates_are_read_as_replacement_characters():
    for options in ({}, {"ignore_st": True}, {"ignore_punc": True, "ignore_case": True}):
        result = run_verifier("text_verify", {"target": "abc def ghi", **options}, {"predict": "abc d\ud800f ghi"})
        assert (result.status, round(result.score, 4)) == ("ok", round(1 - 1 / 11, 4)), options
