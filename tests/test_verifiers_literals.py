"""LaTeX in call strings is read as written: a backslash before a letter is never a Python escape.

Python reads ``'\\frac'`` as a form feed followed by ``rac``; rubric authors and teacher models write LaTeX with one
backslash. Every LaTeX command that starts with a letter Python treats as an escape (a, b, f, n, r, t, v, x, u, U, N)
is checked here on both sides of a call, in the written and in the doubled form, in the rubric check, and through
``genrm verify`` as a separate process.
"""

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import RubricError, plan_rubric
from verifiers import format_call, verify_call, verify_call_result
from verifiers.calls import parse_call
from verifiers.literals import read_literal
from verifiers.result import BadCallError

# Python's escape letters, each with LaTeX commands that begin with it.
ESCAPE_LETTER_COMMANDS = {
    "a": ["alpha", "approx", "angle", "arcsin", "arccos", "arctan", "ast", "aleph", "amalg"],
    "b": ["beta", "binom", "bar", "boxed", "bmod", "bigcup", "bullet", "bot", "begin"],
    "f": ["frac", "forall", "flat", "frown"],
    "n": ["nabla", "neq", "ne", "nu", "neg", "ni", "notin", "nmid", "nleq", "not"],
    "r": ["rho", "right", "rightarrow", "rangle", "rfloor", "rceil", "rm"],
    "t": ["theta", "times", "tan", "tau", "text", "textbf", "tfrac", "to", "top", "triangle", "tilde"],
    "v": ["vec", "varepsilon", "varphi", "vee", "vdots", "vert", "vartheta"],
    "x": ["xi", "xrightarrow", "xleftarrow"],
    "u": ["upsilon", "underline", "uparrow", "unit", "unlhd"],
    "U": ["Upsilon", "Uparrow"],
    "N": ["Nu"],
}
COMMANDS = [command for commands in ESCAPE_LETTER_COMMANDS.values() for command in commands]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("side, keyword", [("rubric", "target"), ("scoring", "predict")])
def test_a_command_keeps_its_backslash_on_either_side(command, side, keyword):
    value = f"\\{command}{{x}} + 1"
    written = f"expr_verify({keyword}='{value}')"  # one backslash, as in a .tex file
    doubled = f"expr_verify({keyword}='{value.replace(chr(92), chr(92) * 2)}')"  # the form repr() writes
    assert parse_call(written, side).as_dict() == {keyword: value}
    assert parse_call(doubled, side).as_dict() == {keyword: value}


@pytest.mark.parametrize(
    "target, prediction",
    [
        ("\\frac{2}{3}", "2/3"),
        ("\\tfrac{2}{3}", "\\frac{2}{3}"),
        ("2 \\times 3", "6"),
        ("\\theta = \\frac{\\pi}{2}", "\\theta = \\pi/2"),
        ("\\tan(\\frac{\\pi}{4})", "1"),
        ("\\text{5}", "5"),
        ("\\sqrt{\\frac{1}{4}}", "\\frac{1}{2}"),
        ("\\binom{4}{2}", "6"),
        ("\\left(1, 2\\right)", "(1, 2)"),
        ("\\nu + 1", "1 + \\nu"),
        ("\\vec{0}", "\\vec{0}"),
    ],
)
def test_latex_targets_score_as_written_and_doubled(target, prediction):
    doubled = target.replace("\\", "\\\\")
    for reference in (f"expr_verify(target='{target}')", f"expr_verify(target='{doubled}')"):
        for predicted in (prediction, prediction.replace("\\", "\\\\")):
            result = verify_call_result(reference, f"expr_verify(predict='{predicted}')")
            assert (result.status, result.score) == ("ok", 1.0), (reference, predicted, result.reason)


def test_a_wrong_answer_in_latex_is_still_wrong():
    result = verify_call_result("expr_verify(target='\\frac{2}{3}')", "expr_verify(predict='\\frac{3}{2}')")
    assert (result.status, result.score) == ("ok", 0.0)


def test_the_written_form_keeps_a_latex_line_break():
    written = "expr_verify(target='\\begin{pmatrix}1\\\\2\\end{pmatrix}')"
    assert parse_call(written).as_dict()["target"] == "\\begin{pmatrix}1\\\\2\\end{pmatrix}"
    doubled = "expr_verify(target='\\\\begin{pmatrix}1\\\\\\\\2\\\\end{pmatrix}')"
    assert parse_call(doubled).as_dict()["target"] == "\\begin{pmatrix}1\\\\2\\end{pmatrix}"


@pytest.mark.parametrize(
    "call, value",
    [
        ("text_verify(target='it\\'s')", "it's"),  # an escaped quote only escapes the quote
        ("text_verify(target='\\\\text{it\\'s}')", "\\text{it's}"),
        ("text_verify(target='\\text{it\\'s}')", "\\text{it's}"),
        ('text_verify(target="say \\"hi\\" \\times")', 'say "hi" \\times'),
        ("expr_verify(target=r'\\frac{1}{2}')", "\\frac{1}{2}"),  # raw strings as Python reads them
        ("expr_verify(target='1,\\!000')", "1,\\!000"),  # a backslash before punctuation stays
        ("expr_verify(target='\\frac' '{1}{2}')", "\\frac{1}{2}"),  # implicit concatenation
        ("expr_verify(target='''\\frac{1}{2}''')", "\\frac{1}{2}"),
    ],
)
def test_quotes_raw_strings_and_punctuation(call, value):
    assert next(iter(parse_call(call).as_dict().values())) == value


@pytest.mark.parametrize(
    "call, words",
    [
        ("expr_verify(target='\times 3')", "(a tab, U+0009) at position 0: \\times was probably read as an escape"),
        ("expr_verify(target='\frac{1}{2}')", "a form feed, U+000C"),
        ("expr_verify(target='\\1')", "(U+0001)"),  # an octal escape in the doubled form
        ("expr_verify(target='a\nb')", "a line break, U+000A"),  # a JSON "\n" inside the quotes
        ("expr_verify(predict='\x7f')", "U+007F"),
    ],
)
def test_a_control_character_is_refused_with_its_likely_cause(call, words):
    with pytest.raises(BadCallError, match="control character") as caught:
        parse_call(call)
    assert words in str(caught.value)


def test_the_rubric_check_names_the_criterion_whose_latex_json_ate():
    line = '{"essential": [{"criterion": "Gives the ratio.", "reference": "expr_verify(target=\'\\times 2\')", ' \
           '"weight": 3}], "additional": [{"criterion": "Gives the angle.", "reference": ' \
           '"expr_verify(target=\'\\\\theta\')", "weight": 1}]}'  # fmt: skip
    rubric = Rubric.model_validate(json.loads(line))
    with pytest.raises(RubricError) as caught:
        plan_rubric(rubric)
    assert [path for path, _ in caught.value.issues] == ["essential[0].reference"]
    assert "\\\\times" in str(caught.value)  # the fix: the backslash written twice in the JSON


def test_a_control_character_in_the_prediction_is_a_failed_call_not_a_verdict():
    result = verify_call_result("expr_verify(target='\\frac{2}{3}')", "expr_verify(predict='\frac{2}{3}')")
    assert result.status == "bad_call" and not result.is_verdict and "form feed" in result.reason


def test_lists_in_a_prediction_string_read_latex_too():
    reference = "list_verify(target=['\\frac{1}{2}', '\\theta'])"
    assert verify_call(reference, "list_verify(predict=\"['\\frac{1}{2}', '\\theta']\")") == 1.0
    assert read_literal("['\\nu', '\\\\nu']") == ["\\nu", "\\nu"]


_VALUES = st.recursive(
    st.text(max_size=30) | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=10,
)


def _has_control(value) -> bool:
    if isinstance(value, str):
        return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)
    return isinstance(value, (list, tuple)) and any(_has_control(v) for v in value)


@given(_VALUES)
def test_format_call_reads_back_the_same_value_or_refuses_a_control_character(value):
    call = format_call("list_verify", {"predict": value})
    if _has_control(value):
        with pytest.raises(BadCallError, match="control character"):
            parse_call(call)
    else:
        assert parse_call(call).as_dict() == {"predict": value}


def test_genrm_verify_reads_latex_as_typed_in_a_shell():
    done = subprocess.run(
        [sys.executable, "-m", "genrm", "verify", "expr_verify(target='\\frac{2}{3}')", "expr_verify(predict='2/3')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "score: 1.0000" in done.stdout and "status: ok" in done.stdout
