"""The call-string protocol: joining both sides, typed errors that name the problem, and no code execution."""

import pytest

from verifiers import VerifyConfig, verify_call, verify_call_result
from verifiers.calls import parse_call
from verifiers.result import BadCallError, TargetError, UnknownVerifierError


@pytest.mark.parametrize(
    "reference, prediction, expected",
    [
        # the seed's representative calls (table 6)
        ("text_verify(target='Export Volume', ignore_space=True, ignore_case=True)",
         "text_verify(predict='Export Volume')", 1.0),
        ("expr_verify(target=r'\\frac{4}{6}')", "expr_verify(predict='2/3')", 1.0),
        ("time_verify(target='18:15', tformat='%H:%M')", "time_verify(predict='18:15', pformat='%H:%M')", 1.0),
        ("list_verify(target=['M-30', 'M-31', 'M-31UK'])", "list_verify(predict=['M-30', 'M-31'])", 2 / 3),
        ("point_verify(target=[[591,234]])", "point_verify(predict=[[589,236]])", 1 - 8**0.5 / 100),
        # tuples read like lists, white space around the call
        ("  bbox_verify(target=((0, 0, 100, 100),))  ", "bbox_verify(predict=[(0, 0, 100, 50)])", 0.5),
        # a scoring-side value written as a string holding a list
        ("bbox_verify(target=[[0,0,100,100]])", "bbox_verify(predict='[[0,0,100,100]]')", 1.0),
        # "no prediction", as the scoring prompt asks
        ("text_verify(target='Boiler')", "text_verify(predict='')", 0.0),
        ("bbox_verify(target=[[0,0,100,100]])", "bbox_verify(predict=[])", 0.0),
    ],
)  # fmt: skip
def test_joined_calls(reference, prediction, expected):
    assert verify_call(reference, prediction) == pytest.approx(expected)
    assert verify_call_result(reference, prediction).status == "ok"


def test_bbox_seed_call():
    score = verify_call("bbox_verify(target=[[531,118,892,435]])", "bbox_verify(predict=[[529,119,890,433]])")
    assert score == pytest.approx(359 * 314 / (361 * 317 + 361 * 314 - 359 * 314))


@pytest.mark.parametrize(
    "reference, prediction, status, words",
    [
        ("nope_verify(target='a')", "nope_verify(predict='a')", "bad_call", "unknown verifier 'nope_verify'"),
        ("text_verify(target='a')", "expr_verify(predict='a')", "bad_call", "calls expr_verify but"),
        ("text_verify(target='a')", "text_verify('a')", "bad_call", "keyword arguments only"),
        ("text_verify(target='a')", "text_verify(predict='a', predict='b')", "bad_call", "given twice"),
        ("text_verify(target='a')", "text_verify(target='a')", "bad_call", "target belongs to the rubric side"),
        ("text_verify(predict='a')", "text_verify(predict='a')", "bad_call", "predict belongs to the scoring side"),
        ("text_verify(target='a')", "text_verify(predic='a')", "bad_call", "does not take 'predic'"),
        ("text_verify(target='a')", "text_verify()", "bad_call", "needs predict="),
        ("time_verify(target='18:15')", "time_verify(predict='18:15')", "bad_call", "needs tformat="),
        ("text_verify(target='a')", "text_verify(predict='a'", "bad_call", "not a valid call"),
        ("text_verify(target='a')", "'a'", "bad_call", "expected a call"),
        ("text_verify(target='a')", "predict='a'", "bad_call", "invalid syntax at column"),
        ("text_verify(target='a')", "os.text_verify(predict='a')", "bad_call", "plain verifier name"),
        ("text_verify(target='a')", "text_verify(**{'predict': 'a'})", "bad_call", "unpacking"),
        ("text_verify(target='a')", "text_verify(predict=x)", "bad_call", "a variable name"),
        ("text_verify(target='a')", "text_verify(predict=1+1)", "bad_call", "an arithmetic expression"),
        ("text_verify(target=1)", "text_verify(predict='a')", "unparseable_target", "must be a string"),
        ("text_verify(target='a', ignore_case='yes')", "text_verify(predict='a')", "unparseable_target", "True or"),
        ("bbox_verify(target=[[0,0,100]])", "bbox_verify(predict=[])", "unparseable_target", "4 finite numbers"),
        (42, "text_verify(predict='a')", "bad_call", "must be a string"),
    ],
)
def test_errors_name_the_problem(reference, prediction, status, words):
    result = verify_call_result(reference, prediction)
    assert (result.score, result.status) == (0.0, status)
    assert words in result.reason


def test_float_api_raises_typed_errors_for_the_caller_s_mistakes():
    with pytest.raises(BadCallError, match="unknown verifier"):
        verify_call("nope_verify(target='a')", "nope_verify(predict='a')")
    with pytest.raises(UnknownVerifierError, match="unknown verifier"):
        parse_call("nope_verify(predict='a')")
    assert issubclass(UnknownVerifierError, BadCallError)
    with pytest.raises(TargetError, match="must be a string"):
        verify_call("text_verify(target=1)", "text_verify(predict='a')")
    assert issubclass(BadCallError, ValueError)


def test_bad_target_is_reported_even_when_the_prediction_is_unreadable():
    result = verify_call_result("bbox_verify(target=[[0,0,100]])", "bbox_verify(predict='garbage')")
    assert result.status == "unparseable_target"


def test_call_length_is_bounded():
    config = VerifyConfig(max_call_chars=100)
    result = verify_call_result("text_verify(target='a')", f"text_verify(predict='{'a' * 200}')", config)
    assert result.status == "bad_call" and "at most 100" in result.reason


def test_parse_call_returns_literal_keywords():
    parsed = parse_call("bbox_verify(target=[[1, 2, 3, 4]])", side="rubric")
    assert parsed.name == "bbox_verify" and parsed.as_dict() == {"target": [[1, 2, 3, 4]]}
    with pytest.raises(BadCallError, match="rubric side"):
        parse_call("bbox_verify(target=[[1, 2, 3, 4]])", side="scoring")


SENTINEL_CODE = [
    "text_verify(predict=__import__('os').system('touch {path}'))",
    "text_verify(predict=open('{path}', 'w').write('x'))",
    "text_verify(predict=exec(\"open('{path}', 'w')\"))",
    "text_verify(predict=(lambda: open('{path}', 'w'))())",
    "text_verify(predict=[open('{path}', 'w') for _ in 'a'])",
    "text_verify(predict=f\"{{open('{path}', 'w')}}\")",
    "text_verify(predict=(p := open('{path}', 'w')))",
    "__import__('os').system('touch {path}')",
    "open('{path}', 'w')",
    "text_verify(predict='a').__class__.__init__.__globals__['os'].system('touch {path}')",
    "text_verify(predict=().__class__.__bases__[0].__subclasses__())",
    "text_verify(predict='a') or open('{path}', 'w')",
    "text_verify(predict='a'); open('{path}', 'w')",
    "text_verify(predict='a')\nopen('{path}', 'w')",
    "eval(\"open('{path}', 'w')\")",
    "text_verify(predict={{'a': open('{path}', 'w')}})",
    "text_verify(predict=b'a'.decode() + open('{path}').read())",
]


@pytest.mark.parametrize("template", SENTINEL_CODE)
def test_no_call_string_executes_code(template, tmp_path):
    sentinel = tmp_path / "pwned"
    call = template.format(path=sentinel)
    for reference, prediction in ((call, "text_verify(predict='a')"), ("text_verify(target='a')", call)):
        result = verify_call_result(reference, prediction)
        assert result.status == "bad_call", (call, result)
        with pytest.raises(BadCallError):
            verify_call(reference, prediction)
    assert not sentinel.exists()
