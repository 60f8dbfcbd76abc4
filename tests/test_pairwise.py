"""The pairwise judge (MJ1): golden tests of the prompt and the reader, the swap (twice is the identity), the training
rewards and group advantages by hand, and the evaluation that tells a judge that reads the image from one that always
picks the first position, with tiny images whose colour carries the answer (real, shuffled, blank), in process and
through ``genrm pairs eval`` over a real endpoint on loopback."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer
from hypothesis import given
from hypothesis import strategies as st

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.pairwise.evaluation import derangement, evaluate_pairs, images_for
from genrm.methods.pairwise.models import PairExample
from genrm.methods.pairwise.prompts import CRITERIA, TAGS, pair_request
from genrm.methods.pairwise.reading import read_judgement
from genrm.methods.pairwise.rewards import (
    consistency,
    correctness,
    format_reward,
    group_advantages,
    total_reward,
)
from genrm.methods.pairwise.scene_judge import colour_judge, position_judge, responder, tagged_answer
from genrm.methods.pairwise.swap import reasoning_prefix, swap_references, swapped_prefix

PAIRS_FILE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs" / "pairs.jsonl"
PAIRS = [PairExample.model_validate_json(line) for line in PAIRS_FILE.read_text().splitlines()]
FULL = tagged_answer("red", "It is red.", "It is blue.", (8, 3))


def test_the_prompt_carries_the_chain_the_family_criteria_the_image_and_both_responses():
    request = pair_request(PAIRS[0])
    system, user = request.prompt.system, request.prompt.user
    assert all(f"<{tag}>" in system and f"</{tag}>" in system for tag, _ in TAGS)
    assert "\\boxed{score of response A, score of response B}" in system and request.schema is None
    assert all(criterion.split(":")[0] in system for criterion in CRITERIA["reasoning"])
    assert "text_rendering" not in system  # another family's criterion
    assert user == ("PROMPT:\nWhat colour fills this image?\n\nRESPONSE A:\nThe image is filled with red.\n\n"
                    "RESPONSE B:\nThe image is filled with green.")  # fmt: skip
    assert request.prompt.image == "red.png"
    assert pair_request(PAIRS[0], ["blank.png"]).prompt.image == "blank.png"


def test_the_reader_on_a_full_answer():
    judgement = read_judgement(FULL)
    assert all(judgement.tags.values()) and len(judgement.tags) == 11
    assert judgement.scores == (8, 3) and judgement.preference == "A" and judgement.failure is None
    assert judgement.sections["response_b_claims"] == "Response B says: It is blue."
    assert format_reward(judgement) == pytest.approx(0.2)


@pytest.mark.parametrize(
    "answer, failure",
    [
        ("A is better.", "unreadable"),
        ("<scores>\\boxed{7, 7}</scores>", "tie"),
        ("<scores>\\boxed{11, 3}</scores>", "schema"),
        ("<scores>\\boxed{0, 3}</scores>", "schema"),
        ("<scores>\\boxed{7.5, 3}</scores>", "unreadable"),
    ],
)
def test_ties_and_unreadable_scores_are_failures_not_verdicts(answer, failure):
    judgement = read_judgement(answer)
    assert judgement.scores is None and judgement.preference is None and judgement.failure == failure


def test_malformed_tags_cost_format_credit_one_each():
    nested_outside = FULL.replace("<response_claims>\n", "").replace("</response_claims>\n", "")
    judgement = read_judgement(nested_outside)
    # the parent is missing, so it and its two children are not well formed
    assert sum(judgement.tags.values()) == 8 and format_reward(judgement) == pytest.approx(0.2 / 11 * 8)
    doubled = FULL.replace("</scores>", "</scores><scores></scores>")
    assert read_judgement(doubled).tags["scores"] is False


def test_the_rewards_of_eq_2_by_hand():
    right, wrong = read_judgement(FULL), read_judgement(FULL.replace("{8, 3}", "{3, 8}"))
    broken = read_judgement(FULL.replace("\\boxed{8, 3}", "eight"))
    assert (correctness(right, "A"), correctness(wrong, "A"), correctness(broken, "A")) == (1.0, 0.0, 0.0)
    # consistency: the swapped judgement prefers the same response in its new place, and it is the labelled one
    assert consistency(right, wrong, "A") == 1.0
    assert consistency(right, right, "A") == 0.0  # position A both times: not inverted
    assert consistency(wrong, right, "A") == 0.0  # consistently wrong earns nothing
    assert total_reward(right, wrong, "A") == pytest.approx(2.2)
    assert total_reward(wrong, right, "A") == pytest.approx(0.2)
    assert total_reward(broken, wrong, "A") == 0.0  # no scores: no reward for the format
    assert format_reward(broken) == pytest.approx(0.2)


def test_group_advantages_pool_the_continuations_filter_small_ones_and_skip_all_wrong_groups():
    group = group_advantages([2.2, 0.2, 1.2], [2.2, 0.2, 1.205], [True, False, True])
    mean = (2.2 + 0.2 + 1.2 + 2.2 + 0.2 + 1.205) / 6
    assert group.advantages == pytest.approx([r - mean for r in (2.2, 0.2, 1.2, 2.2, 0.2, 1.205)])
    assert group.train == [abs(a) > 0.01 for a in group.advantages] and not group.skipped
    assert group.train.count(False) >= 1  # 1.2 and 1.205 sit within 0.01 of the mean
    hopeless = group_advantages([0.2, 0.0], [0.2, 0.0], [False, False])
    assert hopeless.skipped and hopeless.train == [False] * 4


def test_the_swap_exchanges_tags_and_references_and_cuts_before_the_evaluation():
    prefix = swapped_prefix(FULL)
    assert "<evaluate_criteria>" not in prefix and "<scores>" not in prefix
    assert prefix == swap_references(reasoning_prefix(FULL))
    assert "<response_b_claims>Response B says: It is red.</response_b_claims>" in prefix
    assert "<response_a_claims>Response A says: It is blue.</response_a_claims>" in prefix
    assert swap_references("response A's view and RESPONSE B") == "response B's view and RESPONSE A"
    assert swap_references("A dog.") == "A dog."  # a bare letter is left alone
    assert swapped_prefix("no evaluation here") == "no evaluation here"


@given(st.lists(st.sampled_from(["response", "Response", " ", "A", "B", "_a_", "_b_", "x", "<", ">", "'"]),
                max_size=30).map("".join))  # fmt: skip
def test_swapping_twice_is_the_identity(text):
    assert swap_references(swap_references(text)) == text


def test_a_swapped_pair_carries_its_label_along():
    swapped = PAIRS[0].swapped()
    assert (swapped.response_a, swapped.response_b, swapped.label) == (PAIRS[0].response_b, PAIRS[0].response_a,
                                                                       "B")  # fmt: skip
    assert swapped.swapped() == PAIRS[0]


def test_the_evaluation_tells_a_judge_that_reads_the_image_from_one_that_picks_position_a():
    reads = Judge(ScriptedEngine(functools.partial(colour_judge, base_dir=PAIRS_FILE.parent)))
    biased = Judge(ScriptedEngine(position_judge))
    conditions = ("real", "shuffled", "blank")
    real, shuffled, blank = evaluate_pairs(PAIRS, reads, conditions).conditions
    assert (real.accuracy, real.a_rate, real.swap_agreement, real.r_cons, real.failed) == (1.0, 0.5, 1.0, 1.0, 0)
    assert shuffled.accuracy < real.accuracy and shuffled.swap_agreement < 1.0
    # a judge that reads a shuffled image agrees with itself across the swap, but on the wrong colour: R_cons is what
    # tells that agreement from being right in both orders
    # (seed 0): 6 of 8 pairs agree across the swap, 2 of them on the response the shown colour names but the label
    # does not, so 4 are right in both orders
    assert (shuffled.swap_agreement, shuffled.r_cons, shuffled.accuracy) == (0.75, 0.5, 0.625)
    assert (blank.accuracy, blank.a_rate, blank.swap_agreement, blank.r_cons) == (0.5, 1.0, 0.0, 0.0)  # position A
    for figures in evaluate_pairs(PAIRS, biased, conditions).conditions:
        assert (figures.accuracy, figures.a_rate, figures.swap_agreement, figures.r_cons) == (0.5, 1.0, 0.0, 0.0)


def test_image_conditions():
    shown = images_for(PAIRS, "shuffled", seed=3)
    order = derangement(len(PAIRS), 3)
    assert shown == [[PAIRS[j].image] for j in order] and all(i != j for i, j in enumerate(order))
    blank = images_for(PAIRS, "blank")
    assert len({image for images in blank for image in images}) == 1 and blank[0][0].startswith("data:image/png;")
    assert images_for(PAIRS, "real") == [None] * len(PAIRS)  # each pair's own
    with pytest.raises(ValueError, match="at least two pairs with an image"):
        images_for(PAIRS[:1], "shuffled")
    with pytest.raises(ValueError, match="unknown image condition 'dark'"):
        evaluate_pairs(PAIRS, Judge(ScriptedEngine(position_judge)), ["dark"])
    with pytest.raises(ValueError, match="these pairs have images, and .* cannot see them"):
        evaluate_pairs(PAIRS, Judge(ScriptedEngine(position_judge, sees_images=False)))


def test_failed_judgements_are_counted_apart():
    (figures,) = evaluate_pairs(PAIRS[:2], Judge(ScriptedEngine(lambda r: "<scores>\\boxed{5, 5}</scores>"),
                                                 parse_retries=0)).conditions  # fmt: skip
    assert (figures.judgements, figures.failed, figures.accuracy, figures.swap_agreement, figures.r_cons) == (
        4,
        4,
        None,
        None,
        None,
    )


def test_genrm_pairs_eval_over_http(tmp_path):
    with FakeJudgeServer() as server:
        server.state.responder = responder(colour_judge, PAIRS_FILE.parent)
        code = main(["pairs", "eval", str(PAIRS_FILE), "--judge", f"openai:judge@{server.url}", "--conditions",
                     "real,blank", "-o", str(tmp_path)])  # fmt: skip
        sent = server.state.requests[:]
    assert code == 0
    rows = json.loads((tmp_path / "pairs_eval.json").read_text())["conditions"]
    assert [(r["condition"], r["accuracy"], r["swap_agreement"], r["r_cons"]) for r in rows] == [
        ("real", 1.0, 1.0, 1.0), ("blank", 0.5, 0.0, 0.0)]  # fmt: skip
    urls = {body["messages"][-1]["content"][0]["image_url"]["url"] for body in sent}
    # the four colours and the blank square, each sent as its bytes (never the file's name for the judge to open)
    assert len(urls) == 5 and all(url.startswith("data:image/png;base64,") for url in urls)
    assert not any("response_format" in body for body in sent)


def test_genrm_pairs_eval_with_nothing_judged_exits_1_and_keeps_the_reasons(tmp_path, capsys):
    with FakeJudgeServer() as server:
        server.state.responder = lambda body: "I like both."
        code = main(["pairs", "eval", str(PAIRS_FILE), "--judge", f"openai:judge@{server.url}", "-o", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert "genrm pairs eval: nothing could be judged" in err and "the most frequent reason" in err
    rows = json.loads((tmp_path / "pairs_eval.json").read_text())["conditions"]
    assert rows[0]["failed"] == rows[0]["judgements"] > 0 and sum(rows[0]["failures"].values()) == rows[0]["failed"]
    assert "Why judgements failed" in (tmp_path / "pairs_eval.md").read_text()


def test_the_reasoning_prompt_is_the_golden_one():
    # A trained judge reads this format: a change to it is a new format version, made on purpose (update the file).
    golden = (Path(__file__).with_name("golden") / "pairwise_system_reasoning.txt").read_text(encoding="utf-8")
    assert pair_request(PAIRS[0]).prompt.system == golden


def _reward_instance(responses):
    from genrm.methods.pairwise.method import PairwiseInstance

    return PairwiseInstance(id="red", prompt="What colour fills this image?", image="red.png",
                            reference="The image is filled with green.", responses=responses)  # fmt: skip


ROLLOUTS = ["It is red.", "It is blue.", "It is green."]


def test_as_a_reward_each_response_is_compared_with_the_reference_in_both_orders():
    from genrm.methods import make_method, score_instance

    engine = ScriptedEngine(functools.partial(colour_judge, base_dir=PAIRS_FILE.parent))
    result = score_instance(make_method("pairwise"), _reward_instance(ROLLOUTS), Judge(engine))
    # red beats the (wrong) green reference in both orders; blue and green name no better colour than it: the colour
    # judge falls back on position A, so each wins once in two orders
    assert result.rewards == [1.0, 0.5, 0.5] and len(engine.requests) == 6
    assert [r.consistent for r in result.records] == [True, False, False]
    assert result.records[0].scores == [(8, 3), (8, 3)]  # (response, reference) in both orders


def test_the_swap_check_cancels_a_position_bias_that_fools_a_single_order():
    from genrm.methods import make_method, score_instance

    biased = Judge(ScriptedEngine(position_judge))
    swapped = score_instance(make_method("pairwise"), _reward_instance(ROLLOUTS), biased)
    single = score_instance(make_method("pairwise", options={"swap": False}), _reward_instance(ROLLOUTS), biased)
    assert swapped.rewards == [0.5] * 3 and single.rewards == [1.0] * 3
    with pytest.raises(ValueError, match="the pairwise option swap: Input should be a valid boolean"):
        make_method("pairwise", options={"swap": "yes"})
    from genrm.methods import MethodConfig

    with pytest.raises(ValueError, match="both responses; the no_verifier exposure means nothing"):
        make_method("pairwise", MethodConfig(exposure="no_verifier"))
    failed = score_instance(
        make_method("pairwise"),
        _reward_instance(ROLLOUTS[:1]),
        Judge(ScriptedEngine(lambda r: "<scores>\\boxed{4, 4}</scores>"), parse_retries=0),
    )
    assert failed.rewards == [None] and failed.records[0].failure == "tie"


def test_the_pairwise_reward_through_genrm_score_the_server_and_verl_over_http(tmp_path):
    import httpx
    from fake_judge import AppServer

    from policy_rl.verl_reward import compute_score_batch
    from serving.app import create_app
    from serving.settings import ServerSettings

    source = tmp_path / "in.jsonl"
    source.write_text(_reward_instance(ROLLOUTS).model_dump_json() + "\n")
    (tmp_path / "red.png").write_bytes((PAIRS_FILE.parent / "red.png").read_bytes())  # beside it: genrm score reads it
    column = [_reward_instance([]).model_dump_json()] * 3
    with FakeJudgeServer() as judge:
        judge.state.responder = responder(colour_judge, PAIRS_FILE.parent)
        spec = f"openai:judge@{judge.url}"
        code = main(["score", str(source), "-o", str(tmp_path / "out.jsonl"), "--method", "pairwise", "--judge",
                     spec, "-q"])  # fmt: skip
        settings = ServerSettings(method="pairwise", judge=spec, image_dir=PAIRS_FILE.parent)
        with AppServer(create_app(settings)) as server:
            body = {"groups": [_reward_instance(ROLLOUTS).model_dump()]}
            scored = httpx.post(f"{server.root}/v1/score", json=body).json()
        verl = compute_score_batch(["red"] * 3, ROLLOUTS, column, None, judge=spec, method="pairwise",
                                   image_dir=str(PAIRS_FILE.parent))  # fmt: skip
    assert code == 0 and json.loads((tmp_path / "out.jsonl").read_text())["rewards"] == [1.0, 0.5, 0.5]
    assert scored["groups"][0]["rewards"] == [1.0, 0.5, 0.5]
    assert [r["score"] for r in verl] == [1.0, 0.5, 0.5] and verl[0]["swap_consistent"] == 1.0


def test_the_open_ended_baseline_asks_the_same_criteria_and_scores_without_the_chain(tmp_path):
    from genrm.methods import make_method, score_instance
    from genrm.methods.pairwise.method import PairwiseInstance

    grounded, open_ended = (pair_request(PAIRS[0], mode=mode).prompt.system for mode in ("grounded", "open"))
    for criterion in CRITERIA[PAIRS[0].family]:
        assert criterion in grounded and criterion in open_ended
    assert "<scores>\\boxed{score of response A, score of response B}</scores>" in open_ended
    assert all(f"<{tag}>" in grounded and f"<{tag}>" not in open_ended for tag, _ in TAGS if tag != "scores")
    # the evaluation and the policy reward ask open-ended when told to, and read the scores the same way
    engine = ScriptedEngine(functools.partial(colour_judge, base_dir=PAIRS_FILE.parent))
    (real,) = evaluate_pairs(PAIRS, Judge(engine), prompt="open").conditions
    assert real.accuracy == 1.0 and all("<response_claims>" not in r.prompt.system for r in engine.requests)
    method = make_method("pairwise", options={"prompt": "open"})
    instance = PairwiseInstance(id="x", prompt="What colour is the image?", reference="It is red.",
                                responses=["It is blue."], family="reasoning")  # fmt: skip
    asked = ScriptedEngine(position_judge)
    score_instance(method, instance, Judge(asked))
    assert len(asked.requests) == 2 and all("<response_claims>" not in r.prompt.system for r in asked.requests)
    with pytest.raises(ValueError, match="the pairwise option prompt: Input should be 'grounded' or 'open'"):
        make_method("pairwise", options={"prompt": "chain"})
    with pytest.raises(ValueError, match="prompt must be one of grounded, open"):
        evaluate_pairs(PAIRS, Judge(engine), prompt="chain")
