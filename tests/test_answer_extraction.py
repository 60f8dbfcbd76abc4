"""The rule backend's reader: which span is the final answer, and what each verifier reads from it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genrm.methods.rubric.answer_extraction import (
    SHORT_RESPONSE_CHARS,
    criterion_part,
    extract_coords,
    extract_expr,
    extract_list,
    extract_prediction,
    extract_time,
    final_answer_span,
)
from verifiers import verify_call_result
from verifiers.registry import REGISTRY

LONG = "We look at the figure and compare its parts with what the question asks for. " * 4


@pytest.mark.parametrize(
    "response, text, source",
    [
        ("so x = \\boxed{42}.", "42", "boxed"),
        ("first \\boxed{1}, then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}", "boxed"),
        ("\\boxed{\\{1, 2\\} \\cup \\{3\\}}", "\\{1, 2\\} \\cup \\{3\\}", "boxed"),
        ("Final answer: 12\n\\boxed{7}", "7", "boxed"),  # boxed wins over an answer line
        (LONG + "\nAnswer: 3\nFinal answer: 4", "4", "final_answer"),  # final answer wins over answer
        (LONG + "\nThe final answer is B.", "B.", "final_answer"),
        (LONG + "\nSo the answer is 12 apples.", "12 apples.", "answer"),
        (LONG + "\nAnswer: 1\n" + LONG + "\nAnswer: 2", "2", "answer"),  # the last one
        (LONG + "\nFinal answer:\n- red\n- blue\n\nThanks", "- red\n- blue", "final_answer"),
        ("<think>Answer: 5</think>The result is 6.", "The result is 6.", "short_response"),
        ("Tokyo", "Tokyo", "short_response"),
        # the question-and-answer format (GSM8K's model solutions): the last line, when it begins with "A:"
        (LONG + "\nSo he runs 9*60=<<9*60=540>>540 meters per week\nA: 540", "540", "qa_answer"),
        (LONG + "\n**A:** 540\n\n", "540", "qa_answer"),
        (LONG + "\nAnswer: 12\nA: 540", "12", "answer"),  # an answer line wins
    ],
)
def test_span_precedence(response, text, source):
    span = final_answer_span(response)
    assert span is not None and (span.text, span.source) == (text, source)


@pytest.mark.parametrize(
    "response",
    [
        "",
        "   ",
        LONG,
        "<think>Answer: 5</think>" + LONG,
        "\\boxed{}",
        LONG + "\nFinal answer:\n\n",
        "x" * 201,
        LONG + "\nA: Paris\nB: London\nC: Rome",  # a list of options states none
        LONG + "\nD: Rome\nA: Paris",
        LONG + "\nA: 540\n" + LONG,  # "A:" not on the last line
        LONG + "\n> A: 540",
    ],  # nor quoted
)
def test_no_final_answer(response):
    assert final_answer_span(response) is None


def test_short_response_limit():
    assert final_answer_span("y" * SHORT_RESPONSE_CHARS) is not None
    assert final_answer_span("y" * (SHORT_RESPONSE_CHARS + 1)) is None


def test_unbalanced_boxed_falls_back():
    assert final_answer_span("\\boxed{12 and then nothing\nAnswer: 3").text == "3"


@pytest.mark.parametrize(
    "span, value",
    [
        ("42", "42"), ("$\\frac{3}{4}$", "\\frac{3}{4}"), ("x = 6", "6"),
        # words stay, for the verifier to read: it alone knows which change the value (at least 5, 3/4 of them)
        ("12 apples.", "12 apples"), ("about 3.5 km", "about 3.5 km"), ("at least 5", "at least 5"),
        ("(B) Mercury", "(B) Mercury"), ("B.", "B"), ("C. Carbon dioxide", "C. Carbon dioxide"),
        ("**9\\pi**", "9\\pi"), ("\\sqrt{2}", "\\sqrt{2}"), ("1,234 people", "1,234 people"), ("no idea", "no idea"),
        # an = inside a subscript or a set is part of the expression, not an equation that states it
        ("\\sum_{n=1}^{10} n", "\\sum_{n=1}^{10} n"), ("S = \\sum_{k=1}^{n} k", "\\sum_{k=1}^{n} k"),
        ("\\{x : x = 1\\}", "\\{x : x = 1\\}"), ("a = b = 7", "7"),
    ],
)  # fmt: skip
def test_expr_values(span, value):
    assert extract_expr(span) == value


@pytest.mark.parametrize(
    "response, target, score",
    [
        ("Answer: 42 apples", "42", 1.0), ("Answer: about 3.5 km", "3.5", 1.0), ("Answer: 1,234 people", "1234", 1.0),
        ("Answer: There are 5 apples in the basket", "5", 1.0), ("The final answer is 5 percent.", "0.05", 1.0),
        # the reader once kept only the last number of a span of words: each of these was paid
        ("The answer is more than 5.", "5", 0.0), ("The answer is at least 5", "5", 0.0),
        ("The answer is not 5", "5", 0.0), ("Answer: less than 5 apples", "5", 0.0),
        ("Answer: between 3 and 5", "5", 0.0), ("Answer: 3/4 of the students", "4", 0.0),
        ("Answer: 1/4 cup", "4", 0.0), ("Answer: 5 thousand people", "5", 0.0), ("Answer: minus 5 degrees", "5", 0.0),
        ("Answer: 12 apples and 2 oranges", "2", 0.0), ("Answer: about 3.5 km", "3.5 m", 0.0),
    ],
)  # fmt: skip
def test_expr_reading_and_verdict_end_to_end(response, target, score):
    prediction = extract_prediction("expr_verify", final_answer_span(response))
    result = verify_call_result(f"expr_verify(target={target!r})", f"expr_verify(predict={prediction['predict']!r})")
    assert result.score == score, result.reason


@pytest.mark.parametrize(
    "span, value",
    [
        ("2:35 PM", "2:35 PM"), ("It was 14:35 sharp", "14:35"), ("15 March 2024", "15 March 2024"),
        ("March 15, 2024", "March 15, 2024"), ("2024-03-15", "2024-03-15"), ("03/11/2025", "03/11/2025"),
        ("June 2019", "June 2019"), ("6 pm", "6 pm"), ("tomorrow", "tomorrow"),
        # a UTC offset belongs to the time it follows
        ("Final answer: 18:15 +05:00", "18:15 +05:00"), ("18:15 UTC+2.", "18:15 UTC+2"),
        ("2024-03-01T18:15:00Z", "2024-03-01T18:15:00Z"), ("at 18:15 GMT", "18:15 GMT"),
    ],
)  # fmt: skip
def test_time_values(span, value):
    assert extract_time(span) == value


@pytest.mark.parametrize(
    "response, target, tformat, score",
    [
        ("Answer: It is 6:15 PM.", "18:15", "%H:%M", 1.0), ("Answer: It was 18:15 sharp", "18:15", "%H:%M", 1.0),
        ("Answer: Tuesday, March 5, 2024 at 18:15", "2024-03-05", "%Y-%m-%d", 1.0),
        # the reader once kept the first time of the span whatever else it said: each of these was paid
        ("Answer: not 18:15 but 18:30", "18:15", "%H:%M", 0.0), ("Answer: after 18:15", "18:15", "%H:%M", 0.0),
        ("Answer: between 18:15 and 19:00", "18:15", "%H:%M", 0.0), ("Answer: 18:15 or 19:00", "18:15", "%H:%M", 0.0),
        ("Answer: 18:15 tomorrow", "18:15", "%H:%M", 0.0), ("Answer: not 2024-03-05", "2024-03-05", "%Y-%m-%d", 0.0),
        ("Answer: the day after 2024-03-05", "2024-03-05", "%Y-%m-%d", 0.0),
        ("Answer: 2024-03-05 plus 3 days", "2024-03-05", "%Y-%m-%d", 0.0),
    ],
)  # fmt: skip
def test_time_reading_and_verdict_end_to_end(response, target, tformat, score):
    prediction = extract_prediction("time_verify", final_answer_span(response))
    result = verify_call_result(
        f"time_verify(target={target!r}, tformat={tformat!r})", f"time_verify(predict={prediction['predict']!r})"
    )
    assert result.score == score, result.reason


@pytest.mark.parametrize(
    "span, items",
    [
        ("Bergen, Voss, Flam", ["Bergen", "Voss", "Flam"]),
        ("red, white and blue", ["red", "white", "blue"]),
        ("red and white", ["red", "white"]),
        ("strawberries; sugar, cane; pectin", ["strawberries", "sugar, cane", "pectin"]),
        ("- Strawberries\n- Sugar\n1. Pectin", ["Strawberries", "Sugar", "Pectin"]),
        ('["Maria", "Okafor"]', ["Maria", "Okafor"]),
        ('"Tokyo".', ["Tokyo"]),
    ],
)
def test_list_values(span, items):
    assert extract_list(span) == items


def test_coordinates():
    assert extract_coords("[1, 2, 3, 4] and (5.5, 6, 7, 8)", 4) == [[1, 2, 3, 4], [5.5, 6, 7, 8]]
    assert extract_coords("[[201, 602], [449, 618]]", 2) == [[201, 602], [449, 618]]
    # a box given for a point is kept as written, for the verifier to count as the miss it is (never dropped)
    assert extract_coords("[1, 2, 3, 4]", 2) == [[1, 2, 3, 4]]
    assert extract_coords("[1, 2]", 4) == [[1, 2]]
    assert extract_coords("(3) and [7]", 4) == []  # a lone number in brackets is numbering, not a box


def test_no_span_gives_no_prediction_never_the_empty_value():
    for name in REGISTRY:  # '' or [] would meet an empty target
        assert extract_prediction(name, None)["predict"] is None
    with pytest.raises(ValueError, match="unknown verifier .color_verify"):
        extract_prediction("color_verify", None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.builds("{}\\boxed{{{}}}{}".format, st.text(max_size=50), st.text(max_size=20),
                                        st.text(max_size=20)))  # fmt: skip
def test_any_text_yields_a_span_or_none_and_predictions_of_the_right_type(text):
    span = final_answer_span(text)
    assert span is None or (span.text.strip() and len(span.text) <= 5_000)
    for name in REGISTRY:
        value = extract_prediction(name, span)["predict"]
        kind = str if name in ("text_verify", "expr_verify", "time_verify") else list
        assert value is None or isinstance(value, kind)


def _old_boxes(text: str):  # the quadratic scan this module had, for comparison on ordinary text
    import re

    found = []
    for start in [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]:
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            found.append(text[start : i - 1])
    return found


_PIECES = st.sampled_from(
    [
        "\\boxed{",
        "\\fbox {",
        "{",
        "}",
        "x",
        "12",
        " ",
        "<think>",
        "</think>",
        "<THINK>",
        "\n",
        "```",
        "`",
        "json",
        "JSON",
        "{}",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_one_pass_scans_read_as_the_patterns_they_replace(text):
    import re

    from genrm.methods.answer_json import fenced_blocks, without_thinking
    from genrm.methods.rubric.answer_extraction import _PLACEHOLDER, _all_boxed

    # every box that holds an answer (a placeholder box holds none), in order of where it opens
    assert [box for *_, box in _all_boxed(text)] == [
        box for box in _old_boxes(text) if not _PLACEHOLDER.fullmatch(box)
    ]
    assert without_thinking(text) == re.sub(r"<think>.*?</think>", " ", text, flags=re.DOTALL | re.IGNORECASE)
    fences = re.findall(r"```(?:json)?\s*\n?(.*?)```", text, re.DOTALL | re.IGNORECASE)
    assert [block.lstrip() for block in fenced_blocks(text)] == [block.lstrip() for block in fences]


def test_hostile_spans_are_read_in_time_linear_in_their_length():
    import time

    for text in ("\\boxed{" * 60_000, "<think>" * 60_000, "\\boxed{1}" * 60_000 + "Final answer: 2\n" * 1000):
        started = time.perf_counter()
        span = final_answer_span(text)
        extract_prediction("expr_verify", span)
        # the quadratic scans took 16.9 s over 28,000 boxes and 1.4 s over 40,000 think tags; these take ~0.3 s
        assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    "criterion, part",
    [("(b) Gives the return speed.", "b"), ("Part (a): gives the distance.", "a"), ("part 2: the sum", "2"),
     ("**(ii)** the root", "ii"), ("b) the speed", "b"), ("Gives the speed (b).", None), ("Bold claim.", None)],
)  # fmt: skip
def test_a_criterion_names_the_part_it_opens_with(criterion, part):
    assert criterion_part(criterion) == part


PARTS = [("(a) Gives the distance.", "expr_verify(target='180')"),
         ("(b) Gives the speed.", "expr_verify(target='45')")]  # fmt: skip


@pytest.mark.parametrize(
    "response, rewards",
    [
        ("(a) The car travels 3 hours, so the distance is \\boxed{180}.\n\n(b) Back: \\boxed{45} km/h.", [1.0, 1.0]),
        ("**Part a:** distance \\boxed{180}\n**Part b:** speed \\boxed{45}", [1.0, 1.0]),
        ("Final answer: (a) 180 km, (b) 45 km/h", [1.0, 1.0]),
        ("(a) The distance is 180 km.\n(b) The speed is 45 km/h.", [1.0, 1.0]),
        # an answer under another part never counts: (b) states none here, and (a)'s 45 is (a)'s
        ("(a) The distance is \\boxed{45} km.\n(b) I could not find it.", [0.0, 0.0]),
        ("(a) \\boxed{180}\n(c) \\boxed{45}", [1.0, 0.0]),  # no part (b)
        ("Final answer: (a) 45, (c) 180", [0.0, 0.0]),
        ("The distance is \\boxed{180} and the speed \\boxed{45}.", [0.0, 0.0]),  # not in parts: several answers
        ("> (b) \\boxed{45}\n(a) \\boxed{180}\n(c) \\boxed{2}", [1.0, 0.0]),  # a quoted part is not the response's
    ],
)
def test_a_criterion_on_one_part_reads_that_parts_answer(response, rewards):
    from genrm.methods.rubric.method import score_instance
    from genrm.methods.rubric.models import Instance

    instance = Instance(id="parts", prompt="Answer both parts.", task_type="general",
                        rubric={"essential": [{"criterion": c, "reference": r, "weight": 1} for c, r in PARTS]},
                        responses=[response])  # fmt: skip
    assert [c.score for c in score_instance(instance).records[0].criteria] == rewards
