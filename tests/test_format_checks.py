"""The format-mask detectors: repetition loops and language mixing, with the cases they must not flag."""

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genrm.methods.format_checks import (
    FormatConfig,
    find_language_mixing,
    find_repetition_loop,
    format_violations,
    script_counts,
    without_math_or_code,
)


@pytest.mark.parametrize(
    "text",
    [
        "Let me compute. " + "I think the answer is B. " * 8,
        "The answer is " + "very " * 60,
        "Result: " + "42, 42, 42, 42, " * 12,
        "First part is fine. " + "我们重复这句话。" * 10,
    ],
)
def test_loops_are_found(text):
    assert find_repetition_loop(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        " ".join(f"Step {i}: add {i} to the total, giving {i * (i + 1) // 2}." for i in range(1, 30)),
        "| a | b |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(40)),
        "The quick brown fox jumps over the lazy dog. " * 3,  # three copies: below min_repeats
        "short",
        "",
    ],
)
def test_ordinary_text_is_not_a_loop(text):
    assert find_repetition_loop(text) is None


def test_loop_thresholds_are_configurable():
    text = "The quick brown fox jumps over the lazy dog. " * 3
    assert find_repetition_loop(text, FormatConfig(min_repeats=3, min_loop_tokens=20)) is not None


@pytest.mark.parametrize(
    "response, prompt, references",
    [
        (
            "The answer is 42. 这是一个很长的中文句子，它不应该出现在英文回答里面。我们继续写更多的中文。",
            "What is it?",
            [],
        ),
        ("答案是四十二，因为图表中的柱子高度显示了这个数值。", "What is the value in the chart?", []),
        ("Ответ: сорок два, потому что так написано на графике.", "What is the value?", []),
    ],
)
def test_mixing_is_found(response, prompt, references):
    assert find_language_mixing(response, prompt, references) is not None


@pytest.mark.parametrize(
    "response, prompt, references",
    [
        ("The sign says 北京欢迎你, which means Beijing welcomes you.", "Read the sign.", ["北京欢迎你"]),
        ("We have $\\alpha + \\beta = \\gamma$ and α = 2, so the answer is 4.", "Find alpha.", []),
        ("The city is 東京 (Tokyo), the capital of Japan.", "Which city is the capital?", []),  # 2 letters
        ("答案是42。", "图中的数值是多少？", []),
        ("The answer is 42.", "", []),
    ],
)
def test_mixing_is_not_flagged(response, prompt, references):
    assert find_language_mixing(response, prompt, references) is None


def test_format_violations_collects_both_and_can_be_turned_off():
    text = "这是中文。" * 20 + " I think so." * 20
    found = format_violations(text, "What is it?")
    assert any(v.startswith("repetition loop") for v in found)
    assert any(v.startswith("language mixing") for v in found)
    assert (
        format_violations(text, "What is it?", config=FormatConfig(check_repetition=False, check_language=False)) == []
    )


_MATH_PATTERN = r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["`", "```", "$", "$$", "\\(", "\\)", "\\[", "\\]", "\\", "(", "x", "Ж", " ", "\n"]),
                max_size=30).map("".join))  # fmt: skip
def test_math_and_code_are_removed_in_one_pass_as_the_pattern_removed_them(text):
    assert without_math_or_code(text) == re.sub(_MATH_PATTERN, " ", text, flags=re.DOTALL)


def test_unclosed_math_is_scanned_in_time_linear_in_its_length():
    started = time.perf_counter()
    for text in ("\\(" * 100_000, "```" * 50_000, "$$x" * 50_000, "\\[" * 100_000):
        script_counts(text)
    # the pattern took 4.6-5.3 s over 40,000 unclosed \( alone; the scan takes ~0.2 s for all four
    assert time.perf_counter() - started < 10


def _letters_per_script_one_by_one(text: str) -> dict[str, int]:
    """The per-character count that script_counts replaced: each letter's code point looked up in the script table."""
    from genrm.methods.format_checks import _SCRIPTS

    counts: dict[str, int] = {}
    for ch in without_math_or_code(text):
        if ch.isalpha():
            for name, ranges in _SCRIPTS:
                if any(low <= ord(ch) <= high for low, high in ranges):
                    counts[name] = counts.get(name, 0) + 1
                    break
    return counts


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZé ЖжЯ中文かカ한ا ב क ก 0_9,.-$` αβ²½\u0301\n"), max_size=60))
def test_letters_are_counted_per_script_as_one_by_one_lookups_counted_them(text):
    assert dict(script_counts(text)) == _letters_per_script_one_by_one(text)


def _loop_token_by_token(text: str, config: FormatConfig) -> str | None:
    """The token-by-token detector that find_repetition_loop replaced, kept as the reference."""
    from collections import Counter

    toks = [m.group(0) for m in re.finditer(r"[0-9A-Za-z\u00c0-\u024f]+|([^\w\s])\1*|\S", text)]
    if len(toks) < config.min_loop_tokens:
        return None
    ids = [hash(t) for t in toks]
    last: dict[int, int] = {}
    distances: Counter[int] = Counter()
    for i, token in enumerate(ids):
        previous = last.get(token)
        if previous is not None and i - previous <= config.max_period:
            distances[i - previous] += 1
        last[token] = i
    best = None
    for period, count in distances.most_common(8):
        if count < config.min_repeats - 1:
            break
        run = longest = 0
        for i in range(len(ids) - period):
            run = run + 1 if ids[i] == ids[i + period] else 0
            longest = max(longest, run)
        covered = longest + period
        if covered // period >= config.min_repeats and covered >= config.min_loop_tokens:
            if best is None or covered > best[0]:
                best = (covered, period)
    if best is None:
        return None
    covered, period = best
    return f"a unit of {period} tokens repeats {covered // period} times in a row ({covered} of {len(ids)} tokens)"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["a ", "b ", "cc ", "I think ", "so. ", "--- ", "!!", "中", "x1 ", "\n"]),
                max_size=120).map("".join),
       st.sampled_from([FormatConfig(), FormatConfig(min_repeats=3, min_loop_tokens=8, max_period=5)]))  # fmt: skip
def test_the_repetition_detector_finds_what_the_token_by_token_one_found(text, config):
    assert find_repetition_loop(text, config) == _loop_token_by_token(text, config)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["ab", "Zé9", " ", "\n", "--", "-", "!", "_", "中", "(", "\\", "x" * 50, "é"]),
                max_size=40).map("".join), st.integers(min_value=1, max_value=9))  # fmt: skip
def test_text_tokenised_in_pieces_gives_the_tokens_of_one_pass(text, chunk):
    import genrm.methods.format_checks as checks

    whole = [m.group(0) for m in re.finditer(r"[0-9A-Za-z\u00c0-\u024f]+|([^\w\s])\1*|\S", text)]
    original = checks._CHUNK
    checks._CHUNK = chunk
    try:
        assert checks.tokens(text) == whole
    finally:
        checks._CHUNK = original
