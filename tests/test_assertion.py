"""What a response asserts (verifiers.assertion), as the rule reader, the verifiers and grounded extraction read it.

The tables hold hostile answers (each one a reward a policy could learn to collect without answering) and real ones
that must keep their rewards; the property test builds an answer the rule judge pays and checks that the same answer
negated, disowned, quoted, fenced or put in reasoning never is.
"""

from __future__ import annotations

import json

import pytest

from genrm.methods.rubric.answer_extraction import final_answer_span, read_prediction, states_emptiness
from genrm.methods.rubric.execution import execute
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import RubricError, plan_rubric
from verifiers import expr_verify, format_call, verify_call_result
from verifiers.assertion import asserted_view, is_refusal, states_absence
from verifiers.provenance import find_evidence, find_prediction

VIEWS = [
    ("I don't think the answer is 12.", "I do"),
    ("The answer is 12, not 8.", "The answer is 12,"),
    ("Since 5 is not a factor, the answer is 12.", ", the answer is 12."),
    ("x is not negative so \\boxed{12}", "so \\boxed{12}"),
    ("Final answer: 12 is wrong", ""),
    ("Some would say the answer is 12. I get 8.", ". I get 8."),
    ("Is the answer 12? It is 8.", "It is 8."),
    ("<think>12</think>8", "8"),
    ("8\n<think>12", "8"),
    ("12</think>8", "8"),
    ('You wrote "Answer: 12".', "."),
    ('He said "the answer is 12" and left. It is 8.', ". It is 8."),
    ('The answer is "Paris".', 'The answer is "Paris".'),
    ("It is not in the image.", "It is not in the image."),
    ("Final answer: it is not in the image", "Final answer: it is not in the image"),
]


@pytest.mark.parametrize(("text", "kept"), VIEWS)
def test_what_a_response_asserts(text, kept):
    view = asserted_view(text)
    assert len(view) == len(text) and view.count("\n") == text.count("\n")
    assert " ".join(view.split()) == " ".join(kept.split()) or kept in " ".join(view.split())


def test_the_word_prefilter_never_skips_a_text_the_clause_patterns_would_blank(monkeypatch):
    # _may_scope repeats the words the clause patterns look for, to skip them on most texts in one pass: every text of
    # these tables is read the same with the prefilter as without it
    from verifiers import assertion

    texts = [text for text, _ in VIEWS] + [response for _, _, response in NOT_FOUND + FOUND]
    texts += [wrap.format(a=form.format(v=value)) for value in VALUES for form in FORMS for wrap in HOSTILE]
    with_prefilter = [assertion.asserted_view(text) for text in texts]
    assertion.asserted_view.cache_clear()
    monkeypatch.setattr(assertion, "_may_scope", lambda text: True)
    assert [assertion.asserted_view(text) for text in texts] == with_prefilter
    assertion.asserted_view.cache_clear()


def test_a_refusal_is_no_statement_of_absence():
    for refusal in ("no idea", "No comment", "It is not possible to determine", "I can't tell", "no clue"):
        assert is_refusal(refusal) and not states_absence(refusal) and not states_emptiness(refusal), refusal
    for absence in ("none", "[]", "no such object", "It is not in the image", "There isn't one", "nothing"):
        assert states_absence(absence) and states_emptiness(absence), absence
    assert not states_absence("It is not [[100, 100, 300, 300]]")  # a value is no absence


def test_the_asserted_view_is_linear_in_the_length_of_hostile_text():
    import time

    for piece in ("not ", "<think>", "</think>", '"answer" ', "? ", "`x` ", "actually no, ", "```\n"):
        started = time.perf_counter()
        asserted_view(piece * 40_000 + "Final answer: 12")
        # one pass of bounded patterns: ~0.2 s on two cores; a quadratic pass over 40,000 pieces takes minutes
        assert time.perf_counter() - started < 20, piece


@pytest.mark.parametrize(
    ("predict", "score"),
    [
        ("I don't think the answer is 12.", 0.0),
        ("12 is wrong", 0.0),
        ("(B) is incorrect", 0.0),
        ("x =/= 12", 0.0),
        ("The answer is 12.", 1.0),
        ("12^{\\mathrm{th}}", 1.0),
        ("12^{th}", 1.0),
    ],
)
def test_expr_verify_reads_a_prediction_as_it_is_asserted(predict, score):
    target = "B" if "(B)" in predict else "12"
    assert expr_verify(target=target, predict=predict) == score


# value | response: not grounded, since the response does not assert that value there
NOT_FOUND = [
    ("expression", "12", "x = -12"),
    ("expression", "12", "It is 1/12 of the whole."),
    ("expression", "12", "12^2 = 144"),
    ("expression", "12", "x ≠ 12"),
    ("expression", "12", "x != 12"),
    ("expression", "12", "12! is large"),
    ("expression", "102", "10² = 100"),
    ("expression", "1", "x1 + x2"),
    ("expression", "x", "2x + 1"),
    ("expression", "12", "I don't think it is 12."),
    ("expression", "12", "It is not 12."),
    ("expression", "12", "<think>12</think>It is 8."),
    ("expression", "12", "```\n12\n```\nIt is 8."),
    ("expression", "B", "Let a and b be the roots."),
    ("expression", "B", "a b c d"),
    ("expression", "C", "The answer is B. Vitamin C helps."),
    ("text", "Paris", "not Paris"),
    ("text", "Paris", "I don't think the answer is Paris."),
    ("boxes", [[100, 100, 300, 300]], "not [[100, 100, 300, 300]]"),
    ("points", [[500, 500]], "anywhere except (500, 500)"),
]
FOUND = [
    ("expression", "12", "The answer is 12."),
    ("expression", "12", "the 12th term"),
    ("expression", "-12", "x = -12"),
    ("expression", "12^2", "12² = 144"),
    ("expression", "100", "10² = 100"),
    ("expression", "B", "The answer is (b)."),
    ("expression", "B", "**B**"),
    ("expression", "B", "B. Paris"),
    ("expression", "B", "I choose B"),
    ("expression", "B", "B"),
    ("text", "Do not enter", "The sign says: Do not enter."),
    ("text", "Fresh Bakery", "The sign says: **Fresh Bakery**."),
    ("text", "B-52X", "Part numbers: B-23X, M-52X, B-52X."),
    ("boxes", [[100, 100, 300, 300]], "It is at [100, 100, 300, 300], not at [0, 0, 5, 5]."),
]


@pytest.mark.parametrize(("kind", "value", "response"), NOT_FOUND)
def test_a_value_the_response_does_not_assert_is_not_grounded(kind, value, response):
    assert find_prediction(kind, value, response, {}) is not None


@pytest.mark.parametrize(("kind", "value", "response"), FOUND)
def test_a_value_the_response_asserts_is_grounded(kind, value, response):
    assert find_prediction(kind, value, response, {}) is None


@pytest.mark.parametrize("quote", ["1", "of", "and", "it", "don", "is not", "don't", "It's", "x", "Answer:"])
def test_a_quote_without_a_content_word_is_no_evidence(quote):
    response = "Let x be 1. It's clear: the sum of 2 and 3 is not 6, and I don't doubt it. Answer: 5"
    assert "no content word" in find_evidence(quote, response)


RUBRIC = Rubric.model_validate(
    {
        "essential": [
            {"criterion": "States the total.", "reference": "expr_verify(target='12')", "weight": 3},
            {"criterion": "Picks the option.", "reference": "expr_verify(target='B')", "weight": 2},
            {"criterion": "Boxes the cup.", "reference": "bbox_verify(target=[])", "weight": 1},
        ],
        "additional": [{"criterion": "Explains the sum.", "reference": "It adds the parts.", "weight": 1}],
    }
)  # fmt: skip
PLANS = plan_rubric(RUBRIC)


def _judged(calls, credit, response, quote="", fmt="compact"):
    items = [{"rationale": "", "credit": call} for call in calls]
    fuzzy = {"rationale": "", "credit": credit, **({"quote": quote} if fmt == "evidence" else {})}
    parsed = parse_judge_output(json.dumps({"thought": "", "essential": items, "additional": [fuzzy]}), PLANS)
    return execute(parsed, PLANS, response=response, evidence=fmt == "evidence")


#: response | a model judge's calls for 12, B and the empty box list: none of them may be paid
MODEL_JUDGE_HOSTILE = [
    "The answer is -12, and let a and b be the roots.",
    "It is 1/12; a b c d.",
    "12^2 is what you get, with a and b as the roots.",
    "I don't think it is 12, nor B.",
    "no idea",
]


@pytest.mark.parametrize("response", MODEL_JUDGE_HOSTILE)
def test_a_model_judge_is_not_paid_for_values_the_response_does_not_assert(response):
    calls = ["expr_verify(predict='12')", "expr_verify(predict='B')", "bbox_verify(predict=[])"]
    scores = _judged(calls, 0, response)
    assert [s.score for s in scores[:3]] == [0.0, 0.0, 0.0], [s.reason for s in scores]


def test_a_model_judge_is_paid_for_what_the_response_asserts():
    calls = ["expr_verify(predict='12')", "expr_verify(predict='B')", "bbox_verify(predict=[])"]
    scores = _judged(calls, 1, "The total is 12, so the answer is (B).")
    assert [s.score for s in scores[:2]] == [1.0, 1.0], [s.reason for s in scores]
    # the empty value counts where the final answer says the thing is absent
    assert _judged(calls, 1, "There is no cup in the image.")[2].score == 1.0


@pytest.mark.parametrize("quote", ["1", "of", "and", "it", "don", "is not"])
def test_a_fuzzy_credit_with_a_quote_of_no_content_is_not_paid(quote):
    response = "It is 1 of 2 parts and it is not hard; I don't doubt it. The total is 12."
    scores = _judged(["expr_verify(predict='12')", "expr_verify(predict=None)", "bbox_verify(predict=None)"], 1,
                     response, quote=quote, fmt="evidence")  # fmt: skip
    assert (scores[3].score, scores[3].status) == (0.0, "ungrounded")


def test_a_target_that_normalizes_to_nothing_is_refused_when_the_rubric_is_read():
    rubric = Rubric.model_validate(
        {"essential": [{"criterion": "Copies the mark.", "reference": "text_verify(target='!!', ignore_punc=True)",
                        "weight": 1}], "additional": []}
    )  # fmt: skip
    with pytest.raises(RubricError, match=r"essential\[0\]\.reference: the target text '!!' normalizes to nothing"):
        plan_rubric(rubric)


# -- the property: an answer the rule judge pays is never paid once negated, disowned, quoted, fenced or in reasoning,
# checked over every combination of the values, answer forms and wrappings below (exhaustive, so never by chance)

VALUES = ["12", "7", "3/4", "\\frac{2}{3}", "-5", "2.5", "x + 1", "B"]
FORMS = ["Final answer: {v}", "The answer is {v}.", "\\boxed{{{v}}}", "Answer: {v}", "{v}", "**Final Answer:** {v}"]
HOSTILE = [
    "I don't think {a}",
    "It is not true that {a}",
    "Some would say {a}",
    'You wrote "{a}" earlier.',
    "{a} is wrong",
    "{a} (wrong)",
    "{a} is incorrect.",
    "{a}. Actually no.",
    "{a} This is wrong.",
    "> {a}",
    "```\n{a}\n```",
    "`{a}`",
    "<think>{a}</think>",
    "<think>{a}",
    "<!-- {a} -->",
    "If {a}, then we are done.",
    "Is it true that {a}?",
    "{a}\n\nScratch that, I am not sure.",
]


def _rule_score(target: str, response: str) -> float:
    span = final_answer_span(response)
    read, _ = read_prediction("expr_verify", span)
    result = verify_call_result(format_call("expr_verify", {"target": target}), format_call("expr_verify", read))
    return result.score if result.is_verdict else 0.0


@pytest.mark.parametrize("value", VALUES)
def test_an_answer_the_rule_judge_pays_is_never_paid_negated_disowned_quoted_fenced_or_in_reasoning(value):
    for form in FORMS:
        answer = form.format(v=value)
        assert _rule_score(value, answer) == 1.0, answer  # the plain answer is paid
        paid = [wrap.format(a=answer) for wrap in HOSTILE if _rule_score(value, wrap.format(a=answer)) != 0.0]
        assert paid == [], paid
