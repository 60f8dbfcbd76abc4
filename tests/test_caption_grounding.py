"""Grounded claims of the caption judges: a claim the judge attributes to a caption that the caption does not make is
not counted (claimdiff's differences, balcap's atomic assertions), the records say which and why, and a caption with
no content word is not judged and earns nothing; in process, and through /v1/score and /metrics with a judge on
loopback that invents claims."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer
from hypothesis import given
from hypothesis import strategies as st

from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods import make_method, score_instance
from genrm.methods.balcap.models import BalCapInstance
from genrm.methods.captions import chat_body_parts
from genrm.methods.claimdiff.models import ClaimDiffInstance
from genrm.methods.claimdiff.rewards import REWARD_MODES
from serving.app import create_app
from serving.settings import ServerSettings
from verifiers.provenance import OPENER_WORDS, find_claim, holds_content

REFERENCE = "A red car. Two dogs. A green bench."
CAPTION = "A red car. Two dogs."


@pytest.mark.parametrize(
    ("claim", "found"),
    [
        ("the car is red", True),  # reordered, function words aside
        ("dogs run in the park", False),  # 1 of 3 content words (dog; not run, park)
        ("two dogs", True),
        ("2 dogs", True),  # number words are digits
        ("3 dogs", False),  # a number the caption does not hold
        ("a red frisbee", False),  # half is not enough
        ("a dog catching a red frisbee", False),
        ("Red cars", True),  # case and plural by the stem
    ],
)  # fmt: skip
def test_a_claim_is_found_by_its_content_words(claim, found):
    assert (find_claim(claim, CAPTION) is None) is found


def test_a_claim_or_caption_without_content_words():
    assert "holds no content word" in find_claim("not mentioned", CAPTION)
    assert not any(holds_content(text) for text in (":", "  ", "Solution", "Let's solve this problem step by step."))
    assert holds_content("A dog.") and holds_content("两只狗") and holds_content("狗") and holds_content("17")
    # a lone digit, a function word or a contraction's piece is in almost every text: none is content
    assert not any(holds_content(text) for text in ("7", "1", "of", "and", "it", "don't", "is not", "It's"))
    assert holds_content("2 x 4 = 8")  # three numbers: a formula, a passage of its own
    # a lone letter is in nearly every caption: a caption of letters alone describes nothing, but a claim "X" is
    # still a claim to look for in its caption
    assert not any(holds_content(text) for text in ("X.", "b", "Solution: X", "x, y"))
    assert holds_content("X", lone_letters=True) and find_claim("X", CAPTION) is not None


_EMPTY_PIECES = st.sampled_from(
    sorted(OPENER_WORDS) + [":", ".", ",", "!", "?", " ", "\n", "-", "*", "(", ")", "X", "b", "é"]
)


@given(st.lists(_EMPTY_PIECES, max_size=12).map(" ".join), st.sampled_from(["a red car", "two dogs", "the bench"]))
def test_punctuation_and_openers_hold_no_claim(text, claim):
    assert not holds_content(text) and find_claim(claim, text) is not None


def _diff(a_claim, b_claim, judgment, a_error="none", b_error="none"):
    return {"aspect": "object", "caption_a_claim": a_claim, "caption_b_claim": b_claim, "judgment": judgment,
            "caption_a_error": {"error_type": a_error, "error_detail": ""},
            "caption_b_error": {"error_type": b_error, "error_detail": ""}}  # fmt: skip


# The caption leaves out the bench (a real difference), and the judge credits it with a frisbee it never names.
INVENTED = json.dumps({"differences": [
    _diff("a red frisbee", "", "A", b_error="detail_omission"),
    _diff("Caption A does not mention the bench", "a green bench", "B", a_error="detail_omission"),
], "overall_winner": "A"})  # fmt: skip


def _claimdiff(options=None, captions=(CAPTION,), answer=INVENTED):
    engine = ScriptedEngine(lambda request: answer)
    instance = ClaimDiffInstance(id="park", image="park.png", reference=REFERENCE, responses=list(captions))
    return score_instance(make_method("claimdiff", options=options or {}), instance, Judge(engine)), engine


def test_a_difference_with_an_invented_claim_is_not_counted():
    (result, _), (source, _) = _claimdiff(), _claimdiff({"grounded_claims": False})
    record = result.records[0]
    # counted: the bench alone (A errs, B does not): d = 1, reward 0; the source's reading counts the frisbee too
    assert (record.differences, record.caption_a_errors, record.caption_b_errors) == (1, 1, 0)
    assert result.rewards == [0.0] and source.rewards == [0.5]
    (left_out,) = record.ungrounded
    assert (left_out.item, left_out.caption) == (1, "caption") and "frisbee" in left_out.reason
    assert len(record.answer.differences) == 2 and source.records[0].ungrounded == []


def test_a_claim_of_a_lone_letter_is_looked_for_like_any_other():
    answer = json.dumps({"differences": [_diff("X", "a green bench", "A")], "overall_winner": "A"})
    (left_out,) = _claimdiff(answer=answer)[0].records[0].ungrounded
    assert (left_out.item, left_out.caption) == (1, "caption") and "'X'" in left_out.reason


def test_an_invented_claim_of_the_reference_is_not_counted_and_silence_is_not_looked_for():
    answer = json.dumps({"differences": [
        _diff("Caption A says nothing of a cat", "a grey cat", "A", b_error="object_hallucination"),
        _diff("", "a green bench", "B", a_error="detail_omission"),
    ], "overall_winner": "A"})  # fmt: skip
    (result, _) = _claimdiff(answer=answer)
    (left_out,) = result.records[0].ungrounded
    assert (left_out.item, left_out.caption) == (1, "reference") and result.rewards == [0.0]


def test_hall_vs_miss_counts_only_contents_found_in_their_caption():
    answer = json.dumps({"differences": [
        {"type": "extra_info", "content": "a red frisbee", "category": "natural", "verification": "verified",
         "reason": "", "is_hallucination": False},
        {"type": "missing_fact", "content": "a green bench", "category": "natural", "verification": "missing",
         "reason": "", "is_hallucination": False},
    ]})  # fmt: skip
    (grounded, _), (source, _) = (
        _claimdiff({"mode": "hall_vs_miss"}, answer=answer),
        _claimdiff({"mode": "hall_vs_miss", "grounded_claims": False}, answer=answer),
    )
    assert grounded.rewards == [0.0] and source.rewards == [0.5]  # 1 - 1/1 against 1 - 1/2
    assert [(u.item, u.caption) for u in grounded.records[0].ungrounded] == [(1, "caption")]


@pytest.mark.parametrize("mode", REWARD_MODES)
def test_a_caption_without_content_is_not_judged_and_gets_the_floor(mode):
    agrees = json.dumps({"differences": [], "overall_winner": "tie"} if mode != "hall_vs_miss" else
                        {"differences": []})  # fmt: skip
    keys = [":", "Solution", "Let's solve this problem step by step.", "<answer>.</answer>", "X."]
    (result, engine) = _claimdiff({"mode": mode, "min_reward": -1.0}, captions=[*keys, CAPTION], answer=agrees)
    assert result.rewards[:5] == [-1.0] * 5 and all(r.no_content for r in result.records[:5])
    assert len(engine.requests) == 1 and result.rewards[5] > -1.0  # only the caption with content is judged
    (source, _) = _claimdiff({"mode": mode, "grounded_claims": False}, captions=keys, answer=agrees)
    assert min(source.rewards) >= 0.5  # a judge that finds no difference pays the keys when nothing checks


def _balcap_answer(caption_assertions, reference_assertions):
    return json.dumps({
        "synthetic_features": {"atomic_assertions": [{"text": t, "is_verified": v} for t, v in caption_assertions],
                               "clarity_score": 10, "fluency_score": 10, "coherency_score": 10,
                               "linguistic_scores_explanation": ""},
        "gt_features": {"atomic_assertions": [{"text": t, "is_covered": c} for t, c in reference_assertions]},
    })  # fmt: skip


def _balcap(answer, options=None, captions=("A red car. A blue boat.",)):
    instance = BalCapInstance(id="park", image="park.png", reference=REFERENCE, responses=list(captions))
    engine = ScriptedEngine(lambda request: answer)
    return score_instance(make_method("balcap", options=options or {}), instance, Judge(engine))


def test_balcap_counts_only_assertions_found_in_their_caption():
    answer = _balcap_answer(
        [("a red car", True), ("a blue boat", False), ("two dogs", True)],
        [("a red car", True), ("two dogs", True), ("a green bench", False), ("a kite", True)],
    )
    grounded, source = _balcap(answer), _balcap(answer, {"grounded_claims": False})
    record = grounded.records[0]
    assert grounded.precision == [0.5] and source.precision == [pytest.approx(2 / 3)]  # the dogs are not counted
    assert grounded.recall == [pytest.approx(2 / 3)] and source.recall == [0.75]  # nor the kite
    assert [(u.item, u.caption) for u in record.ungrounded] == [(3, "caption"), (4, "reference")]
    assert (record.assertions, record.verified, record.reference_assertions, record.covered) == (2, 1, 3, 2)
    assert len(record.answer.synthetic_features.atomic_assertions) == 3  # the answer as the judge gave it


def test_balcap_fails_a_judgement_whose_reference_assertions_are_all_invented_and_skips_empty_captions():
    invented = _balcap(_balcap_answer([("a red car", True)], [("a kite", True)]))
    assert invented.rewards == [None] and invented.records[0].failure == "ungrounded"
    empty = _balcap(_balcap_answer([("a red car", True)], [("a red car", True)]), captions=["Solution", "..."])
    assert empty.rewards == [0.0, 0.0] and all(r.no_content for r in empty.records)


def test_v1_score_and_metrics_report_the_claims_left_out(scene_dir):
    def inventing(body):
        assert "own words" in body["messages"][0]["content"]  # the judge is asked to quote each caption
        return INVENTED if "Caption A (under evaluation)" in chat_body_parts(body)[1] else None

    group = {"id": "park", "image": "park.png", "reference": REFERENCE, "responses": [CAPTION, ":"]}
    with FakeJudgeServer() as judge:
        judge.state.responder = inventing
        settings = ServerSettings(method="claimdiff", judge=f"openai:fake-judge@{judge.url}", image_dir=scene_dir)
        with AppServer(create_app(settings)) as server:
            scored = httpx.post(f"{server.root}/v1/score", json={"groups": [group]}).json()["groups"][0]
            metrics = httpx.get(f"{server.root}/metrics").text
        calls = len(judge.state.requests)
    assert scored["rewards"] == [0.0, 0.0] and calls == 1  # ":" is not sent
    assert scored["records"][0]["ungrounded"][0]["caption"] == "caption" and scored["records"][1]["no_content"]
    assert "genrm_values_ungrounded_total 1.0" in metrics


@pytest.mark.parametrize(
    ("claim", "looked_for"),
    [("does not mention the cat", False), ("omits the cat", False), ("no mention of a cat", False),
     ("says nothing about a cat", False), ("not mentioned", False), ("", False), ("a grey cat", True),
     ("the cat is not grey", True)],
)  # fmt: skip
def test_claims_of_silence_are_not_looked_for(claim, looked_for):
    answer = json.dumps({"differences": [_diff(claim, "a red car", "both_supported")], "overall_winner": "tie"})
    (result, _) = _claimdiff(answer=answer)
    assert bool(result.records[0].ungrounded) is looked_for


def test_the_caption_audit_counts_the_claims_grounding_left_out():
    from genrm.evaluation.response_audit import run_response_audit

    instance = ClaimDiffInstance(id="park", image="park.png", reference=REFERENCE, responses=[CAPTION])
    report = run_response_audit([instance], Judge(ScriptedEngine(lambda request: INVENTED)), method="claimdiff")
    rates = report.rates()
    hedged = rates["normalized_diff"]["hedged"]
    assert hedged["pairs"] == 1 and hedged["ungrounded"] == 1  # the frisbee, attributed to the hedged caption
    assert rates["no_grounding"]["hedged"]["ungrounded"] == 0
    assert rates["normalized_diff"]["master_key:colon"]["ungrounded"] == 2  # around the wrong caption; alone: unjudged
    assert "1 claim not counted" in report.markdown() and "2 claims not counted" in report.markdown()
