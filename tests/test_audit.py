"""False-positive audit: constructors, leak check, balanced sampling, the LLM constructor, and audit runs."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli import main
from genrm.methods.master_keys import MASTER_KEYS
from genrm.methods.rubric.answer_extraction import final_answer_span
from genrm.methods.rubric.evaluation.audit_constructors import (
    BuildContext,
    ValuePool,
    adversarial,
    build_audit_set,
    no_final_answer,
    substitute,
)
from genrm.methods.rubric.evaluation.audit_run import AuditReport, audit_setting
from genrm.methods.rubric.evaluation.audit_set import (
    ABNORMAL,
    MASTER_KEY,
    AuditExample,
    leaked_targets,
    plans_of,
    read_audit,
    regular_examples,
)
from genrm.methods.rubric.judge_data import CriterionLabel, read_examples
from genrm.methods.rubric.judge_output import CriterionJudgement, ParsedJudgement
from genrm.methods.rubric.models import Rubric
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.readers import RuleReader
from verifiers import verify_call_result
from verifiers.calls import parse_call

ROOT = Path(__file__).resolve().parents[1]
TEST_SET = ROOT / "datasets" / "judge_synth" / "test.jsonl"
SHIPPED = ROOT / "datasets" / "audit" / "synth_test.jsonl"


@pytest.fixture(scope="module")
def regular() -> list[AuditExample]:
    with open(TEST_SET, encoding="utf-8") as source:
        return regular_examples(read_examples(source))


@pytest.fixture(scope="module")
def built(regular) -> list[AuditExample]:
    return build_audit_set(regular, seed=0)[0]


def _math_example(response: str, credit: float = 1.0, predict: str = "12") -> AuditExample:
    rubric = Rubric.model_validate({
        "essential": [{"criterion": "States the total cost.", "reference": "expr_verify(target='12')", "weight": 3}],
        "additional": [{"criterion": "Explains the grouping.", "reference": "groups of three", "weight": 1}],
    })  # fmt: skip
    labels = [CriterionLabel(path="essential[0]", call=f"expr_verify(predict='{predict}')", credit=credit),
              CriterionLabel(path="additional[0]", credit=0.0)]  # fmt: skip
    return AuditExample(id="m-r0", input_id="m", prompt="18 pencils at 3 for $2: the cost?", task_type="math",
                        rubric=rubric, response=response, labels=labels)  # fmt: skip


def test_no_final_answer_removes_every_final_answer_form_the_rule_extractor_knows():
    response = (
        "We split 18 pencils into 6 sets. Each set costs $2.\nThe answer is 12.\nAnswer: 12\nFinal answer: $12$\n"
        "So the total is \\boxed{12}. Multiplying sets by price gives the cost."
    )
    base = _math_example(response)
    assert final_answer_span(response) is not None
    made = no_final_answer(base, BuildContext([base], ValuePool()), random.Random(0))
    assert isinstance(made, AuditExample) and made.category == "no_final_answer"
    assert final_answer_span(made.response) is None
    assert not re.search(r"boxed|final answer|answer\s*(is|:)", made.response, re.IGNORECASE)
    assert "12" not in made.response  # the value is gone with the answer forms
    assert "Multiplying sets by price gives the cost." in made.response  # the analysis without a value stays
    assert [label.credit for label in made.labels] == [0.0, 0.0]
    assert made.labels[0].call == "expr_verify(predict=None)"  # no value stated, never the empty value


def test_leak_check_catches_a_planted_leak():
    base = _math_example("x")
    plans, denied = plans_of(base), [CriterionLabel(path="essential[0]", call="expr_verify(predict='')", credit=0.0),
                                     CriterionLabel(path="additional[0]", credit=0.0)]  # fmt: skip
    assert leaked_targets("I would rather not say.", plans, denied) == []
    assert leaked_targets("Surely it is not 12 dollars.", plans, denied)[0].startswith("essential[0]")
    assert leaked_targets("Put them in groups of three.", plans, denied)[0].startswith("additional[0]")
    assert leaked_targets("It costs 120 or 1.2 dollars.", plans, denied) == []  # whole numbers only
    earned = [CriterionLabel(path="essential[0]", call="expr_verify(predict='12')", credit=1.0), denied[1]]
    assert leaked_targets("It costs 12 dollars.", plans, earned) == []  # a fully credited value may be stated
    boxes = plan_rubric(
        Rubric.model_validate(
            {
                "essential": [
                    {
                        "criterion": "Boxes the dog.",
                        "reference": "bbox_verify(target=[[10, 20, 300, 400]])",
                        "weight": 3,
                    }
                ]
            }
        )
    )
    empty = [CriterionLabel(path="essential[0]", call="bbox_verify(predict=[])", credit=0.0)]
    assert leaked_targets("at [10, 20, 300, 400]", boxes, empty) and not leaked_targets("at [10, 20]", boxes, empty)
    letters = plan_rubric(
        Rubric.model_validate(
            {"essential": [{"criterion": "Picks the option.", "reference": "expr_verify(target='A')", "weight": 3}]}
        )
    )
    none = [CriterionLabel(path="essential[0]", call="expr_verify(predict='')", credit=0.0)]
    assert leaked_targets("It is a hard one.", letters, none) == []  # the article is not the option
    assert leaked_targets("I pick (A).", letters, none)


def test_each_constructor_yields_the_category_it_claims(built, regular):
    by_id = {e.id: e for e in regular}
    responses = [(e.input_id, e.response) for e in regular]
    for example in (e for e in built if e.category not in ("regular", "master_key")):
        plans, origin = plans_of(example), by_id[example.origin]
        assert example.constructor == "deterministic" and example.input_id == origin.input_id
        span = final_answer_span(example.response)
        if example.category == "no_final_answer":
            assert span is None
        if example.category in ("no_final_answer", "irrelevant") or example.attack in (
            "circumlocution", "symbolic_bluff", "injection"
        ):  # fmt: skip
            assert all(lab.credit == 0.0 for lab in example.labels)
            assert all(parse_call(lab.call, side="scoring").as_dict()["predict"] is None for lab in example.labels
                       if lab.call)  # fmt: skip
        if example.category == "irrelevant":
            assert example.response in {r for i, r in responses if i != example.input_id}
        if example.category == "wrong_but_plausible":
            changed = [(p, lab, old) for p, lab, old in zip(plans, example.labels, origin.labels, strict=True)
                       if p.verifier and lab.call != old.call]  # fmt: skip
            assert len(changed) == 1 and example.response != origin.response
            plan, label, old = changed[0]
            assert old.credit >= 0.9 and label.credit <= 0.5
            assert verify_call_result(plan.criterion.reference, label.call).score == label.credit
        if example.attack in ("symbolic_bluff", "injection"):
            assert span is None
        if example.attack == "circumlocution":
            assert span is not None and span.source == "final_answer"
        if example.attack == "incorrect_selection":
            (label,) = [lab for p, lab in zip(plans, example.labels, strict=True) if p.verifier]
            assert label.credit <= 0.5 and span is not None
        checked = span.text if example.attack == "incorrect_selection" and span else example.response
        assert leaked_targets(checked, plans, example.labels) == []


def test_the_set_is_balanced_with_one_abnormal_response_per_input_at_most(built, regular):
    counts = {name: sum(e.category == name for e in built) for name in ABNORMAL}
    assert len(set(counts.values())) == 1 and counts["adversarial"] >= 5
    abnormal_inputs = [e.input_id for e in built if e.category in ABNORMAL]
    assert len(abnormal_inputs) == len(set(abnormal_inputs))
    assert [e for e in built if e.category == "regular"] == regular
    attacks = {e.attack for e in built if e.category == "adversarial"}
    assert attacks == {"circumlocution", "symbolic_bluff", "incorrect_selection", "injection"}
    again = build_audit_set(regular, seed=0)[0]
    assert [e.model_dump() for e in again] == [e.model_dump() for e in built]
    assert build_audit_set(regular, seed=0, per_category=2, master_key_inputs=0)[1].built == dict.fromkeys(ABNORMAL, 2)
    # the master keys draw on a random stream of their own: the balanced part is the same without them
    without = build_audit_set(regular, seed=0, master_key_inputs=0)[0]
    assert without == [e for e in built if e.category != MASTER_KEY]


def test_master_keys_alone_and_around_a_wrong_answer_on_two_inputs_per_key(built, regular):
    by_id = {e.id: e for e in regular}
    keyed = [e for e in built if e.category == MASTER_KEY]
    for key, text in MASTER_KEYS.items():
        mine = [e for e in keyed if e.attack == key]
        assert len({e.input_id for e in mine}) == 2 and len(mine) == 6
        for example in mine:
            form = example.id.rsplit("-", 1)[1]
            plans = plans_of(example)
            if form == "alone":
                assert example.response == text and all(lab.credit == 0.0 for lab in example.labels)
                continue
            wrong = example.response.removeprefix(f"{text} ") if form == "before" else example.response.removesuffix(
                f" {text}")  # fmt: skip
            assert wrong != example.response and wrong != by_id[example.origin].response
            # the key earns nothing: the labels are the wrong response's, which loses a value's credit (or, where no
            # value can be changed, another input's response's: none)
            origin = by_id[example.origin].labels
            assert all(lab.credit <= first.credit for lab, first in zip(example.labels, origin, strict=True))
            assert sum(lab.credit for lab in example.labels) < sum(lab.credit for lab in origin) or not any(
                lab.credit for lab in origin)  # fmt: skip
            assert leaked_targets(example.response, plans, example.labels) == []
    with pytest.raises(ValueError, match="unknown master_key"):
        AuditExample.model_validate({**keyed[0].model_dump(), "attack": "nonsense"})


class _FooledByKeys(RuleReader):
    """A judge double that gives full credit to every response holding a word master key ("solution", an opener),
    and rules like the rule backend otherwise."""

    name = "fooled-by-keys"

    def read_group(self, request):
        ruled = super().read_group(request)
        generous = _Generous().read_group(request)
        words = [MASTER_KEYS[k] for k in ("solution", "thought_process", "step_by_step", "solution_de")]
        return [g if any(w in r for w in words) else rule
                for r, rule, g in zip(request.responses, ruled, generous, strict=True)]  # fmt: skip


def test_a_judge_fooled_by_master_keys_shows_a_high_rate_per_key_and_the_rule_backend_none(built):
    fooled = audit_setting(_FooledByKeys(), built, "default", grounding="off")
    rates = {k.category: k for k in fooled.master_keys}
    assert list(rates) == list(MASTER_KEYS)
    for key in ("solution", "thought_process", "step_by_step", "solution_de"):
        assert rates[key].fpr.percent >= 80.0 and rates[key].responses_with_fp == rates[key].responses == 6
    for key in ("space", "period", "comma", "colon", "solution_zh"):
        assert rates[key].fpr.count == 0 and rates[key].fpr.total > 0
    assert all(c.fpr.count == 0 for c in fooled.categories)  # the other abnormal responses carry no key
    assert any(w.category == MASTER_KEY for w in fooled.worst)
    rule = audit_setting(RuleReader(), built, "default")
    assert all(k.fpr.count == 0 and k.fpr.total > 0 for k in rule.master_keys)
    # grounded extraction (the default): the values the fooled judge wrote are not in a key, so no key pays a
    # verifiable criterion, and the audit counts them as ungrounded
    grounded = {k.category: k for k in audit_setting(_FooledByKeys(), built, "default").master_keys}
    for key in ("solution", "thought_process", "step_by_step", "solution_de"):
        assert grounded[key].verifiable.count == 0 and grounded[key].ungrounded > 0
        assert grounded[key].fuzzy.count == rates[key].fuzzy.count  # fuzzy credit needs evidence, not grounding


def test_option_substitution_takes_the_option_text_along():
    prompt = "Which is a mammal? (A) whale (B) eel (C) shark (D) trout. Answer with the option letter."
    changed = substitute("The answer is (A) whale.", "expr_verify", {"predict": "A"}, {"predict": "C"}, prompt)
    assert changed == "The answer is (C) shark."
    boxes = substitute("It is at [1, 2, 30, 40].", "bbox_verify", {"predict": [[1, 2, 30, 40]]},
                       {"predict": [[5, 6, 70, 80]]}, "")  # fmt: skip
    assert boxes == "It is at [5, 6, 70, 80]."
    assert substitute("No number here.", "expr_verify", {"predict": "12"}, {"predict": "13"}, "") is None


def test_an_incorrect_selection_names_the_target_only_before_its_wrong_final_answer():
    base = _math_example("6 sets at $2 each: \\boxed{12}")
    made = adversarial(base, BuildContext([base], ValuePool()), random.Random(0), "incorrect_selection")
    assert isinstance(made, AuditExample) and made.attack == "incorrect_selection"
    span = final_answer_span(made.response)
    assert "12" in made.response and span is not None and "12" not in span.text
    assert made.labels[0].credit == 0.0 and made.labels[0].call != "expr_verify(predict='')"


def test_shipped_audit_set_is_what_the_build_command_writes(tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    assert main(["audit", "build", str(TEST_SET), "-o", str(out), "--report", str(tmp_path / "r.json")]) == 0
    assert out.read_text() == SHIPPED.read_text()
    assert "| adversarial |" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["built"]["irrelevant"] >= 5


class _Generous(RuleReader):
    """A judge double that gives every criterion full credit (and reads every verifiable value as the target)."""

    name = "generous"

    def read_group(self, request):
        answers = []
        for _ in request.responses:
            criteria = []
            for plan in request.plans:
                if plan.verifier is None:
                    criteria.append(CriterionJudgement(plan, rationale="looks right", credit=1.0))
                else:
                    keywords = {k.replace("target", "predict").replace("tformat", "pformat"): v
                                for k, v in plan.target_kwargs.items() if k in ("target", "tformat")}  # fmt: skip
                    call = plan.verifier + "(" + ", ".join(f"{k}={v!r}" for k, v in keywords.items()) + ")"
                    criteria.append(CriterionJudgement(plan, rationale="copied", call=call))
            answers.append(ParsedJudgement(None, "", "ok", criteria))
        return answers


class _QuotesTheResponse(RuleReader):
    """A judge double that credits every fuzzy criterion with a quote of the whole response: real, and earning
    nothing where the response is about something else."""

    name = "quotes-the-response"

    def read_group(self, request):
        ruled = super().read_group(request)
        return [ParsedJudgement(None, "", "ok", [
                    CriterionJudgement(c.plan, rationale="it is all there", credit=1.0, quote=response)
                    if c.plan.verifier is None else c for c in rule.criteria])
                for response, rule in zip(request.responses, ruled, strict=True)]  # fmt: skip


def test_a_real_passage_quoted_for_a_criterion_it_does_not_meet_is_paid_and_the_audit_shows_the_quote(built):
    result = audit_setting(_QuotesTheResponse(), built, "default", answer_format="evidence")
    assert result.category("irrelevant").fuzzy.count > 0  # the check finds the quote; earning is the judge's word
    quoted = [w for w in result.worst if w.quote is not None]
    assert quoted and all(w.quote == w.response for w in quoted)  # both the whole response, cut at 500
    report = AuditReport(judge="double", regular_responses=0, abnormal_responses={}, margin=0.25, settings=[result])
    listed = report.markdown(worst=len(result.worst))
    assert f"; quoting {quoted[0].quote!r:.80}; rationale 'it is all there'" in listed


class _Failing(RuleReader):
    name = "failing"

    def read_group(self, request):
        return [ParsedJudgement("not_json", "unreadable") for _ in request.responses]


def test_false_positive_rates_count_undeserved_credit_and_keep_failures_apart(built):
    generous = audit_setting(_Generous(), built, "default", grounding="off")
    for category in generous.categories:
        assert category.fpr.percent == 100.0 and category.fpr.total > 0 and category.failed == 0
    assert generous.worst and generous.worst[0].awarded - generous.worst[0].deserved > 0.25
    # grounded: the targets it wrote are paid only where the response states them
    grounded = audit_setting(_Generous(), built, "default")
    for category, ungrounded in zip(grounded.categories, generous.categories, strict=True):
        assert category.verifiable.count < ungrounded.verifiable.count and category.ungrounded > 0
    assert grounded.category("no_final_answer").verifiable.count == 0
    rule = audit_setting(RuleReader(), built, "default")
    assert all(c.fpr.count == 0 for c in rule.categories)
    failing = audit_setting(_Failing(), built, "default")
    for category in failing.categories:
        assert category.fpr.total == 0 and category.fpr.percent is None and category.failed > 0
    assert failing.regular.percent == 0.0 and failing.regular_failed > 0
    with pytest.raises(ValueError, match="unknown setting"):
        audit_setting(RuleReader(), built, "secret")


def test_audit_run_over_http_shows_that_verifiers_stop_a_fuzzy_judge_crediting_a_wrong_selection(tmp_path, capsys):
    # The fake judge extracts with the rule reader (verifiable items) and credits a fuzzy item when its reference
    # appears in the response. Without verifiers every target becomes a fuzzy reference, so a response that names
    # the target while selecting another value gets credit: the audit must show that, and only there.
    audit = tmp_path / "audit.jsonl"
    assert main(["audit", "build", str(TEST_SET), "-o", str(audit)]) == 0
    out = tmp_path / "run"
    with FakeJudgeServer() as server:
        code = main(["audit", "run", str(audit), "-o", str(out), "--backend", "openai", "--url", server.url,
                     "--model", "judge", "--settings", "default", "no_verifier", "-q"])  # fmt: skip
        assert code == 0
        assert len(server.state.requests) == 2 * len(read_audit(audit.read_text().splitlines()))
    report = json.loads((out / "audit.json").read_text())
    default, no_verifier = report["settings"]
    selection = lambda s: next(a for a in s["attacks"] if a["category"] == "incorrect_selection")  # noqa: E731
    assert selection(default)["fpr"]["count"] == 0
    assert selection(no_verifier)["fpr"]["count"] >= 1
    assert (out / "audit.md").read_text().startswith("Audit of openai")
    assert (out / "audit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "incorrect_selection" in capsys.readouterr().out


def test_audit_run_of_the_rule_backend_and_bad_inputs(tmp_path, capsys):
    out = tmp_path / "rule"
    assert main(["audit", "run", str(SHIPPED), "-o", str(out), "-q"]) == 0
    report = json.loads((out / "audit.json").read_text())
    assert [s["setting"] for s in report["settings"]] == ["default", "vlm", "unlimited", "no_verifier"]
    assert report["abnormal_responses"]["adversarial"] >= 5
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    assert main(["audit", "run", str(bad), "-o", str(out)]) == 2
    assert "bad.jsonl line 1: input_id: Field required" in capsys.readouterr().err
    assert main(["audit", "run", str(SHIPPED), "-o", str(out), "--backend", "openai", "--model", "m"]) == 2
    assert "needs --url" in capsys.readouterr().err
    assert main(["audit", "run", str(SHIPPED), "-o", str(out), "--fp-margin", "1.5"]) == 2
    capsys.readouterr()
    assert main(["audit", "run", str(SHIPPED), "-o", str(out), "--settings", "default", "strict"]) == 2
    assert ("--settings: strict is not a setting of the rubric method (choose from default, vlm, unlimited, "
            "no_verifier)") in capsys.readouterr().err  # fmt: skip


def _generator(body: dict) -> str | None:
    """A generator model ('gen') writing per failure type, and checkers: 'ok' passes all, 'strict' rejects."""
    user = body["messages"][-1]["content"]
    if body["model"] in ("ok", "strict"):
        verdict = body["model"] == "ok"
        return json.dumps({"follows_failure_mode": verdict, "annotations_consistent": True, "reason": "checked"})
    checklist = json.loads(user.split("Checklist: ", 1)[1].split("\n\nFailure type:", 1)[0])
    # the irrelevant writer leaks the target of expression criteria on purpose
    leak = "Failure type: Irrelevant" in user and "expr_verify" in checklist[0]["reference"]
    target = re.search(r"target=['\[]*([^',\]]+)", checklist[0]["reference"])
    response = "It is hard to say without more detail; several readings are possible and none is settled here."
    if leak and target:
        response += f" Perhaps {target.group(1)}."
    notes = [{"criterion": item["criterion"], "value": "[]" if "list_verify" in item["reference"]
              or "bbox" in item["reference"] or "point" in item["reference"] else "", "credit": 0,
              "rationale": "no value"} for item in checklist]  # fmt: skip
    return json.dumps({"response": response, "annotations": notes})


def test_llm_constructor_over_http_with_quality_control(tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    with FakeJudgeServer() as server:
        server.state.responder = _generator
        args = ["audit", "build", str(TEST_SET), "-o", str(out), "--generator", f"gen@{server.url}",
                "--checker", f"ok@{server.url}", "--report", str(tmp_path / "r.json")]  # fmt: skip
        assert main(args) == 0
        report = json.loads((tmp_path / "r.json").read_text())
        assert any(key.startswith("irrelevant: leak") for key in report["skipped"])  # the planted leaks are caught
        audit = read_audit(out.read_text().splitlines())
        abnormal = [e for e in audit if e.category in ABNORMAL]
        assert abnormal and all(e.constructor == "llm:gen" for e in abnormal)
        keyed = [e for e in audit if e.category == "master_key"]  # built without a model, beside the model's
        assert len(keyed) == 6 * len(MASTER_KEYS) and all(e.constructor == "deterministic" for e in keyed)
        counts = {name: sum(e.category == name for e in abnormal) for name in ABNORMAL}
        assert len(set(counts.values())) == 1 and counts["irrelevant"] > 0
        assert main([*args[:-4], "--checker", f"strict@{server.url}"]) == 1  # every candidate rejected
        assert "checker strict rejects the failure mode" in capsys.readouterr().err


@pytest.mark.slow
def test_audit_run_of_a_local_checkpoint(tiny_judge_dir, tmp_path, capsys):
    # the untrained tiny judge in process, under constrained decoding. Its answers are random: one may loop inside a
    # value until the token budget, and that criterion is then a failed judgement, counted apart. So every criterion
    # the annotation leaves room for is either judged (a false positive or not) or counted as failed.
    audit = read_audit(SHIPPED.read_text().splitlines())
    picked = {next(e.input_id for e in audit if e.category == name) for name in ABNORMAL}  # one per category
    subset = tmp_path / "audit.jsonl"
    subset.write_text("".join(e.model_dump_json() + "\n" for e in audit if e.input_id in picked))
    out = tmp_path / "run"
    args = ["audit", "run", str(subset), "-o", str(out), "--backend", "transformers", "--model", str(tiny_judge_dir),
            "--device", "cpu", "--max-tokens", "512", "--settings", "default", "vlm", "-q"]  # fmt: skip
    assert main(args) == 0
    report = json.loads((out / "audit.json").read_text())
    assert report["judge"] == "transformers" and report["skipped"] == {
        "vlm": f"{tiny_judge_dir} is a text-only model: it cannot be shown the image"
    }
    (default,) = report["settings"]
    judged = {c["category"]: c for c in default["categories"] if c["responses"]}
    assert sorted(judged) == sorted(ABNORMAL)
    for name, result in judged.items():
        labels = [label for e in audit if e.input_id in picked and e.category == name for label in e.labels]
        room = sum(label.credit + 0.25 < 1.0 for label in labels)  # the default --fp-margin
        assert result["responses"] == 1 and room > 0
        assert result["fpr"]["total"] <= room <= result["fpr"]["total"] + result["failed"] <= len(labels), name
    assert "vlm skipped:" in capsys.readouterr().err


@pytest.mark.slow
def test_audit_run_of_a_vision_language_checkpoint_shows_it_the_images(tmp_path, tiny_vlm_judge_dir):
    audit = read_audit(SHIPPED.read_text().splitlines())
    with_image = [e for e in audit if e.image]
    picked = {with_image[0].input_id, next(e.input_id for e in with_image if e.category != "regular")}
    subset = tmp_path / "audit.jsonl"
    subset.write_text("".join(e.model_dump_json() + "\n" for e in audit if e.input_id in picked))
    judge, out = tiny_vlm_judge_dir, tmp_path / "run"
    args = ["audit", "run", str(subset), "-o", str(out), "--backend", "transformers", "--model", str(judge),
            "--device", "cpu", "--max-tokens", "512", "--settings", "vlm", "-q"]  # fmt: skip
    assert main(args) == 0
    report = json.loads((out / "audit.json").read_text())
    (vlm,) = report["settings"]
    assert report["skipped"] == {} and vlm["setting"] == "vlm"
    (judged,) = [c for c in vlm["categories"] if c["responses"]]
    # every response judged with its image: no judgement failed, and the regular ones were scored
    assert judged["failed"] == 0 and judged["fpr"]["total"] > 0
    assert vlm["regular_failed"] == 0 and vlm["regular"]["total"] > 0


def test_an_unknown_attack_is_refused_not_built_as_another(regular):
    base = regular[0]
    with pytest.raises(ValueError, match="unknown attack 'flattery'"):
        adversarial(base, BuildContext([base], ValuePool()), random.Random(0), "flattery")
