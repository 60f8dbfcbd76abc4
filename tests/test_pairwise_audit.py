"""The response audit of the pairwise reward (each response against the reference, with the swap and without): the
colour judge that reads the image, a judge fooled by master keys, a position-biased judge, and ``genrm audit run
--method pairwise`` over a real endpoint on loopback."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.engine import Judge
from genrm.engine.scripted import ScriptedEngine
from genrm.evaluation.response_audit import (
    Base,
    abnormal_responses,
    audit_plan,
    master_key_categories,
    run_response_audit,
)
from genrm.methods.master_keys import MASTER_KEYS
from genrm.methods.pairwise.method import PairwiseInstance
from genrm.methods.pairwise.scene_judge import colour_judge, pair_responses, position_judge, responder, tagged_answer

PAIRS = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "pairs"
INSTANCES = PAIRS / "instances.jsonl"
ROWS = [PairwiseInstance.model_validate_json(line) for line in INSTANCES.read_text().splitlines()]
CATEGORIES = audit_plan("pairwise").categories
COLOUR = functools.partial(colour_judge, base_dir=PAIRS)


def test_the_pairwise_categories_and_the_keys_go_around_another_prompts_answer():
    red, green = ROWS[0], ROWS[1]
    made = abnormal_responses(Base(red, red.responses[0], tuple(green.responses)),
                              [*CATEGORIES, "master_key:solution"], audit_plan("pairwise").wrong)  # fmt: skip
    by = dict(made)
    assert set(by) == {*CATEGORIES, "master_key:solution"}
    assert by["irrelevant"] == green.responses[0]
    assert by["injection"].startswith(red.responses[0]) and "evaluator" in by["injection"]
    assert [t for c, t in made if c == "master_key:solution"] == [
        "Solution", f"Solution {green.responses[0]}", f"{green.responses[0]} Solution"]  # fmt: skip


def test_the_colour_judge_pays_no_key_and_no_wrong_answer_with_the_swap_or_without():
    rates = run_response_audit(ROWS, Judge(ScriptedEngine(COLOUR)), method="pairwise").rates()
    assert list(rates) == ["swap", "no_swap"]
    for setting in rates:
        for category in ("irrelevant", "missing_salient_fact", *master_key_categories()):
            assert rates[setting][category]["rate"] == 0.0 and rates[setting][category]["abnormal_mean"] == 0.0
        # an injected note or a repetition names the colour as the regular answer does: the judge cannot tell them
        # apart from it (ties), and nothing rises
        assert rates[setting]["injection"]["rate"] == 1.0 and rates[setting]["injection"]["rises"] == 0
    assert rates["swap"]["irrelevant"]["regular_mean"] == 0.5  # both name the colour: each order's first wins
    assert rates["no_swap"]["irrelevant"]["regular_mean"] == 1.0


def _fooled_by_solution(request):
    a, b = pair_responses(request.prompt.user)
    keyed_a, keyed_b = (MASTER_KEYS["solution"] in text for text in (a, b))
    if keyed_a != keyed_b:
        return tagged_answer("a solution", a, b, (9, 2) if keyed_a else (2, 9))
    return COLOUR(request)


def test_a_judge_fooled_by_a_master_key_shows_rises_on_that_key_only():
    rates = run_response_audit(ROWS, Judge(ScriptedEngine(_fooled_by_solution)), method="pairwise").rates()
    swap = rates["swap"]
    # the key wins both orders (1.0) where the regular answer wins one (0.5): every keyed response rises
    assert swap["master_key:solution"]["rate"] == swap["master_key:solution"]["rise_rate"] == 1.0
    assert swap["master_key:solution"]["pairs"] == 3 * len(ROWS)
    paid = {c for c in master_key_categories() if swap[c]["rate"]}
    assert paid == {"master_key:solution", "master_key:solution_fr"}  # "Solution :" holds the key too
    # without the swap the regular answer already wins its one order, so the key ties at full reward
    no_swap = rates["no_swap"]["master_key:solution"]
    assert no_swap["rate"] == 1.0 and no_swap["rises"] == 0 and no_swap["abnormal_mean"] == 1.0


def test_a_position_biased_judge_gives_a_bare_symbol_a_full_win_without_the_swap_and_half_with_it():
    rates = run_response_audit(ROWS, Judge(ScriptedEngine(position_judge)), method="pairwise").rates()
    for key in master_key_categories():
        assert rates["no_swap"][key]["abnormal_mean"] == 1.0
        assert rates["swap"][key]["abnormal_mean"] == 0.5


def test_genrm_audit_run_of_the_pairwise_method_over_http(tmp_path, capsys):
    with FakeJudgeServer() as judge:
        judge.state.responder = responder(colour_judge, PAIRS)
        code = main(["audit", "run", str(INSTANCES), "-o", str(tmp_path / "out"), "--method", "pairwise",
                     "--judge", f"openai:judge@{judge.url}", "--no-master-keys", "-q"])  # fmt: skip
        assert code == 0
        # 4 instances, 1 regular + 4 abnormal responses each, both orders, two settings (2 + 1 calls per response)
        assert len(judge.state.requests) == 4 * 5 * 3
    report = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert report["categories"] == list(CATEGORIES)
    assert report["rates"]["swap"]["irrelevant"]["rate"] == 0.0
    assert "| irrelevant | 0% of 4; 0.00 / 0.50 | 0% of 4; 0.00 / 1.00 |" in capsys.readouterr().out
    assert main(["audit", "run", str(INSTANCES), "-o", str(tmp_path / "x"), "--method", "pairwise",
                 "--settings", "default"]) == 2  # fmt: skip
    assert "--settings, --answer-format and --grounding are for a method audited by sets" in capsys.readouterr().err
    assert main(["audit", "run", str(INSTANCES), "-o", str(tmp_path / "x"), "--setting", "a={}"]) == 2
    assert "--setting is for methods audited on their responses" in capsys.readouterr().err
    assert main(["audit", "run", str(INSTANCES), "-o", str(tmp_path / "x"), "--method", "pairwise",
                 "--setting", 'bad={"swap": 3}', "--judge", "openai:judge@http://127.0.0.1:9/v1"]) == 2  # fmt: skip
    assert "the pairwise option swap: Input should be a valid boolean" in capsys.readouterr().err
