"""Two-stage LaTeX parsing (verifiers.expressions.latex_parsing): the same expressions as ANTLR's default mode, LL
only after an SLL error, errors still raised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("math_verify")

from latex2sympy2_extended import latex2sympy  # noqa: E402
from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy  # noqa: E402
from math_verify import parser as mv_parser  # noqa: E402

from verifiers.expressions.latex_parsing import enable_two_stage_parsing  # noqa: E402

CASES = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "math_verify_cases.jsonl"
# Needs LL's full context: SLL reports an error on it.
NEEDS_LL = r"F_n = \sum_{k=0}^{n-1} F_k F_{n-k-1}"
EXPRESSIONS = [r"\frac{1}{2}", r"\sqrt{2}/2", r"x^2+2x+1", r"[1, 2)", r"\{1, 2, 3\}", r"(1, 2)", r"x = 2",
               r"\sin^2 x + \cos^2 x", r"2 \sin b \cos a", r"1\leq|z|\leq \frac{3}{2}", r"a_{n} = 2^{n}", r"1,000",
               r"3 \pm 2 \sqrt{2}", r"\begin{pmatrix} 0 & 3 \\ 0 & -1 \end{pmatrix}", r"x \in [-2, 7]", NEEDS_LL,
               r"-2 \le x \le 7", r"\frac{\pi r}{h+r}", r"e^{i\pi}", r"10^{10^{10}}", r"\text{red}",
               r"5\%"]  # fmt: skip


@pytest.fixture
def default_mode(monkeypatch: pytest.MonkeyPatch):
    """ANTLR's default (LL) parsing now, and the original restored after the test whatever the test enables."""
    monkeypatch.setattr(_Latex2Sympy, "create_parser", _Latex2Sympy.create_parser)


def _outcome(parse, text: str) -> str:
    try:
        return f"ok: {parse(text)!r}"
    except Exception as exc:  # the library's own error for text it cannot read: the same in both modes
        return f"error: {type(exc).__name__}"


def _parse_all(parse, texts: list[str]) -> list[str]:
    for name in dir(mv_parser):  # Math-Verify caches parses by text: each mode must parse for itself
        cache_clear = getattr(getattr(mv_parser, name), "cache_clear", None)
        if callable(cache_clear):
            cache_clear()
    return [_outcome(parse, text) for text in texts]


def test_two_stage_parses_as_the_default_mode(default_mode) -> None:
    before = _parse_all(latex2sympy, EXPRESSIONS)
    assert enable_two_stage_parsing()
    assert _parse_all(latex2sympy, EXPRESSIONS) == before
    assert sum(outcome.startswith("ok") for outcome in before) >= len(EXPRESSIONS) - 1


def test_ll_only_after_an_sll_error(default_mode, monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[str] = []
    original = _Latex2Sympy.create_parser

    def counting(self, latex_str):
        created.append(latex_str)
        return original(self, latex_str)

    monkeypatch.setattr(_Latex2Sympy, "create_parser", counting)
    assert enable_two_stage_parsing()
    latex2sympy(r"\frac{1}{2} + x")
    assert len(created) == 1  # SLL read it: no second parser
    created.clear()
    latex2sympy(NEEDS_LL)
    assert created == [NEEDS_LL, NEEDS_LL]  # SLL reported an error, LL read it
    created.clear()
    with pytest.raises(Exception, match="expected"):
        latex2sympy(r"\frac{1}{")
    assert len(created) == 2  # a real syntax error: tried in both modes, then raised as before


def test_enabling_twice_wraps_once(default_mode) -> None:
    assert enable_two_stage_parsing()
    wrapped = _Latex2Sympy.create_parser
    assert enable_two_stage_parsing()
    assert _Latex2Sympy.create_parser is wrapped


@pytest.mark.slow
def test_math_verify_reads_its_own_cases_alike_in_both_modes(default_mode) -> None:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    config = [LatexExtractionConfig(), ExprExtractionConfig()]
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [case[key] for case in cases for key in ("gold", "pred")]
    read = lambda text: parse(text, extraction_config=config, parsing_timeout=None)  # noqa: E731
    before = _parse_all(read, texts)
    assert enable_two_stage_parsing()
    assert _parse_all(read, texts) == before
