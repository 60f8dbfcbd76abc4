"""Teacher pipeline: rubrics proposed, merged and dual-checked; labels by median credit; over real HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import jsonschema
import pytest
from fake_judge import FakeJudgeServer, asks_for_quotes, judge_answer

from genrm.cli import main
from genrm.engine import Engine
from genrm.engine.endpoint import ChatEndpoint
from genrm.engine.http import HttpEngine
from genrm.engine.teachers import TEACHER_SAMPLING, teacher_engine
from genrm.methods.rubric.execution import CriterionScore
from genrm.methods.rubric.judge_data import read_examples, sft_record
from genrm.methods.rubric.models import Criterion, Instance, Rubric
from genrm.methods.rubric.planning import RubricError, plan_rubric
from genrm.methods.rubric.teacher_labels import label_instances, median_label
from genrm.methods.rubric.teacher_rubrics import RUBRIC_SCHEMA, RubricTask, build_rubrics, parse_rubric
from genrm.methods.rubric.teachers import teacher_reader


def _rubric(target: str, extra: str | None = "Shows the multiplication.") -> dict:
    additional = [{"criterion": extra, "reference": "8 x 2 = 16", "weight": 1}] if extra else []
    return {
        "essential": [{"criterion": "States the total.", "reference": f"expr_verify(target='{target}')", "weight": 3}],
        "additional": additional,
    }


QUESTIONS = {
    "majority": ("How many books are on 6 shelves of 16?", "96"),
    "repairable": ("How many apples are in 3 bags of 4?", "\\boxed{13}"),
    "garbage": ("What is 2 + 2?", "4"),
    "hopeless": ("How many legs do 3 cats have?", "12"),
}


def _user(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


def _merge_by_majority(user: str) -> dict:
    # What a careful aggregator does: keep the items that most candidates share.
    candidates = [json.loads(block) for block in re.findall(r"## Candidate \d+\n(\{.*\})", user)]
    merged: dict[str, list] = {"essential": [], "additional": []}
    for section in merged:
        counts = Counter(json.dumps(item, sort_keys=True) for c in candidates for item in c[section])
        merged[section] = [json.loads(item) for item, n in counts.items() if n * 2 > len(candidates)]
    return merged


def teacher_responder(body: dict) -> str | None:
    """Three rubric writers (t1, t2 agree; t3 differs), an aggregator, and judges t1/t2 (honest), t3 (lenient)."""
    model, user = body["model"], _user(body)
    if "# Checklist\n" in user:  # a scoring prompt
        answer = json.loads(judge_answer(user, quote=asks_for_quotes(str(body["messages"][0]["content"]))))
        if model == "t3":  # a lenient judge: full credit on every fuzzy item, and it reads 'C' everywhere
            for section in ("essential", "additional"):
                for item in answer[section]:
                    credit = item["credit"]
                    item["credit"] = credit.split("(")[0] + "(predict='C')" if isinstance(credit, str) else 1
        return json.dumps(answer) if model != "broken" else "I would rather not."
    question = next(key for key, (q, _) in QUESTIONS.items() if q in user)
    if "# Dual check failures" in user:
        return json.dumps(_rubric("13") if question == "repairable" else _rubric("99"))
    if "# Candidate checklists" in user:
        return json.dumps(_merge_by_majority(user))
    if question == "garbage" or model == "broken":
        return "Here is a checklist: be correct."
    if question == "majority":
        return json.dumps(_rubric("95" if model == "t3" else "96", "Shows the multiplication."))
    if question == "repairable":
        return json.dumps(_rubric("12"))
    return json.dumps(_rubric("11"))


@pytest.fixture()
def teachers_server():
    with FakeJudgeServer() as server:
        server.state.responder = teacher_responder
        yield server


def _teacher(server: FakeJudgeServer, model: str) -> Engine:
    return HttpEngine(ChatEndpoint([server.url], model, retries=0), TEACHER_SAMPLING)


def _tasks() -> list[RubricTask]:
    return [RubricTask(id=k, prompt=q, reference_answer=ref, task_type="math") for k, (q, ref) in QUESTIONS.items()]


def test_rubric_schema_accepts_shipped_rubrics_and_rejects_malformed_ones(example_instances):
    for instance in example_instances:
        jsonschema.validate(instance.rubric.model_dump(), RUBRIC_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"essential": [], "additional": []}, RUBRIC_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"essential": [{"criterion": "x", "reference": "y", "weight": 5}], "additional": []},
                            RUBRIC_SCHEMA)  # fmt: skip


def test_parse_rubric_checks_everything_plan_rubric_checks():
    assert parse_rubric(json.dumps(_rubric("96")), "math").essential[0].weight == 3
    with pytest.raises(ValueError, match="no JSON object"):
        parse_rubric("a checklist: be right")
    leaked = _rubric("96")
    leaked["essential"][0]["criterion"] = "States the total, 96."
    with pytest.raises(RubricError, match="gives away the target"):
        parse_rubric(json.dumps(leaked), "math")
    with pytest.raises(RubricError, match="not allowed for task type"):
        parse_rubric(json.dumps({"essential": [{"criterion": "Box.", "reference": "bbox_verify(target=[[1,2,3,4]])",
                                                "weight": 3}], "additional": []}), "math")  # fmt: skip


def test_rubrics_are_merged_by_majority_dual_checked_repaired_or_dropped(teachers_server):
    teachers = [_teacher(teachers_server, name) for name in ("t1", "t2", "t3")]
    aggregator = _teacher(teachers_server, "agg")
    report = asyncio.run(build_rubrics(_tasks(), teachers, aggregator))
    outcomes = {o.task_id: o for o in report.outcomes}

    majority = outcomes["majority"]
    assert majority.merged and majority.dual_check == "passed"
    assert majority.rubric is not None and majority.rubric.essential[0].reference == "expr_verify(target='96')"
    assert outcomes["repairable"].dual_check == "repaired"
    assert outcomes["repairable"].rubric.essential[0].reference == "expr_verify(target='13')"
    assert any("scores 0.00" in f for f in outcomes["repairable"].failures)
    assert outcomes["garbage"].rubric is None and outcomes["garbage"].dropped == "no teacher wrote a valid rubric"
    assert set(outcomes["garbage"].proposals.values()) == {"not a rubric: the answer holds no JSON object"}
    assert outcomes["hopeless"].rubric is None and outcomes["hopeless"].dual_check == "failed"

    counts = report.counts()
    assert counts["kept"] == 2 and counts["dropped"] == 2 and counts["tasks"] == 4
    assert counts["dual_check"] == {"passed": 1, "repaired": 1, "failed": 1, "skipped": 1}
    assert "dual check: passed 1, repaired 1, failed 1" in report.markdown()

    requests = teachers_server.state.requests
    proposals = [r for r in requests if "# Candidate" not in _user(r) and "# Dual check" not in _user(r)]
    assert all(r["response_format"]["json_schema"]["schema"] == RUBRIC_SCHEMA for r in proposals)
    merge = next(r for r in requests if "# Candidate checklists" in _user(r) and QUESTIONS["majority"][0] in _user(r))
    assert "expr_verify(target='95')" in _user(merge)  # the dissenting proposal was shown to the aggregator


def test_a_task_without_a_reference_skips_the_dual_check(teachers_server):
    task = RubricTask(id="majority", prompt=QUESTIONS["majority"][0], task_type="math")
    report = asyncio.run(build_rubrics([task], [_teacher(teachers_server, "t1")], _teacher(teachers_server, "t1")))
    (outcome,) = report.outcomes
    assert outcome.dual_check == "skipped" and not outcome.merged and outcome.rubric is not None


def _score(plan, score: float | None, extracted=None) -> CriterionScore:
    return CriterionScore(plan, score, "ok" if score is not None else "not_json", "", extracted)


def test_median_label_takes_the_lower_median_and_a_matching_teachers_value():
    rubric = Rubric(essential=[Criterion(criterion="States it.", reference="expr_verify(target='5')", weight=3)])
    (plan,) = plan_rubric(rubric)
    calls = {"5": 1.0, "4": 0.0, "5.0": 1.0, "6": 0.0}
    scores = [_score(plan, score, f"expr_verify(predict='{value}')") for value, score in calls.items()]
    label, teacher, _ = median_label(scores, ["a", "b", "c", "d"], 2)
    assert label.credit == 0.0 and teacher == 1 and label.call == "expr_verify(predict='4')" and label.rationale == "b"
    label, teacher, _ = median_label(scores[:3], ["a", "b", "c"], 2)
    assert label.credit == 1.0 and teacher == 0
    label, teacher, reason = median_label([scores[0], None, _score(plan, None)], ["a", "", ""], 2)
    assert label is None and teacher is None and "fewer than 2 teachers" in reason


def _synthetic_instances() -> list[Instance]:
    with open("datasets/judge_synth/test.jsonl", encoding="utf-8") as source:
        examples = read_examples(source)
    groups: dict[str, list] = {}
    for example in examples:
        groups.setdefault(example.input_id, []).append(example)
    return [Instance(id=key, prompt=g[0].prompt, task_type=g[0].task_type, rubric=g[0].rubric,
                     responses=[e.response for e in g]) for key, g in list(groups.items())[:6]]  # fmt: skip


def test_labels_follow_the_honest_majority_over_http(teachers_server):
    instances = _synthetic_instances()
    judges = [teacher_reader(_teacher(teachers_server, name)) for name in ("t1", "t2", "t3")]
    examples, report = asyncio.run(label_instances(instances, judges))
    honest, _ = asyncio.run(label_instances(instances, [teacher_reader(_teacher(teachers_server, "t1"))]))
    assert report.labelled == report.responses == sum(len(i.responses) for i in instances) == len(examples)
    assert [e.labels for e in examples] == [e.labels for e in honest]  # the lenient third teacher is outvoted
    assert all(e.source == "teachers" for e in examples)
    assert 0 < report.counts()["unanimous_share"] < 1
    sft_record(examples[0])  # the labels make a valid training record
    # the teachers were asked to quote the response for fuzzy credit, and the labels keep a quote found in it
    assert all('"quote" before "credit"' in body["messages"][0]["content"]
               for body in teachers_server.state.requests if "# Checklist" in str(body["messages"]))  # fmt: skip
    credited = [(e, label) for e in examples for label in e.labels if label.call is None and label.credit > 0]
    assert credited and all(label.quote and label.quote.lower() in e.response.lower() for e, label in credited)


def test_labels_drop_responses_without_enough_usable_teachers(teachers_server):
    instances = _synthetic_instances()[:2]

    def judges() -> list:  # one connection pool per event loop
        return [teacher_reader(_teacher(teachers_server, name)) for name in ("t1", "broken")]

    examples, report = asyncio.run(label_instances(instances, judges(), min_teachers=1))
    assert report.labelled == report.responses and report.teacher_failures["broken"]["not_json"] == report.responses
    examples, report = asyncio.run(label_instances(instances, judges()))  # a majority of two is two
    assert examples == [] and report.labelled == 0
    assert list(report.drop_reasons) == ["fewer than 2 teachers gave a usable answer on a criterion (essential)"]


def test_teacher_specs():
    teacher = teacher_engine("Qwen/Qwen3-8B@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1")
    assert isinstance(teacher, HttpEngine) and teacher.model == "Qwen/Qwen3-8B"
    assert teacher.base_urls[1] == "http://127.0.0.1:2/v1" and teacher.sampling.max_tokens == 4096
    assert teacher_reader(teacher).name == "Qwen/Qwen3-8B"  # reports tell teachers apart by model
    for bad in ("Qwen3-8B", "@http://x/v1", "model@ftp://x", "transformers:", "rule"):
        with pytest.raises(ValueError):
            teacher_engine(bad)
    with pytest.raises(ValueError, match="NO_SUCH_KEY"):
        teacher_engine("m@http://127.0.0.1:1/v1", api_key_env="NO_SUCH_KEY")


def test_data_rubrics_then_labels_then_eval_commands(teachers_server, tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    responses = ["6 shelves of 16 make 6 x 16 = 96. \\boxed{96}", "\\boxed{95}", "I think 96", "no idea"]
    tasks.write_text(json.dumps({"id": "books", "prompt": QUESTIONS["majority"][0], "reference_answer": "96",
                                 "task_type": "math", "responses": responses}) + "\n")  # fmt: skip
    url = teachers_server.url
    spec = [arg for name in ("t1", "t2", "t3") for arg in ("--teacher", f"{name}@{url}")]
    assert main(["data", "rubrics", str(tasks), "-o", str(tmp_path / "inst.jsonl"), *spec, "--aggregator",
                 f"agg@{url}", "--report", str(tmp_path / "report.json"), "-q"]) == 0  # fmt: skip
    (instance,) = [Instance.model_validate_json(line) for line in (tmp_path / "inst.jsonl").read_text().splitlines()]
    assert instance.responses == responses and instance.rubric.essential[0].reference == "expr_verify(target='96')"
    assert json.loads((tmp_path / "report.json").read_text())["counts"]["merged"] == 1

    # two more inputs, so that a split by input has something on both sides
    more = [instance.model_copy(update={"id": f"books-{n}"}) for n in range(3)]
    (tmp_path / "inst.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in [instance, *more]))
    out = tmp_path / "labels"
    assert main(["data", "labels", str(tmp_path / "inst.jsonl"), "-o", str(out), *spec, "--no-balance", "-q",
                 "--test-fraction", "0.25"]) == 0  # fmt: skip
    train, test = (read_examples((out / f"{n}.jsonl").read_text().splitlines()) for n in ("train", "test"))
    assert len(train) == 12 and len(test) == 4 and not {e.input_id for e in train} & {e.input_id for e in test}
    assert json.loads((out / "labels_report.json").read_text())["labelled"] == 16
    boxed_right = next(e for e in test if e.response.endswith("\\boxed{96}"))
    assert boxed_right.labels[0].credit == 1.0 and boxed_right.labels[0].call == "expr_verify(predict='96')"

    capsys.readouterr()
    assert main(["eval", str(out / "test.jsonl"), "--backend", "openai", "--url", url, "--model", "t1",
                 "-q"]) == 0  # fmt: skip
    table = capsys.readouterr().out
    assert table.startswith("Reliability of openai on 4 answers")
    assert "| Schema | answer | 4 | 4 | 100.0 |" in table and "| Sample-level | answer | 4 | 4 | 100.0 |" in table
    assert main(["eval", str(out / "test.jsonl"), "--backend", "openai", "--model", "t1"]) == 2


def test_data_rubrics_that_keeps_no_rubric_says_so_and_fails(teachers_server, tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "g", "prompt": QUESTIONS["garbage"][0], "reference_answer": "4"}) + "\n")
    spec = [arg for name in ("t1", "t2") for arg in ("--teacher", f"{name}@{teachers_server.url}")]
    assert main(["data", "rubrics", str(tasks), "-o", str(tmp_path / "o.jsonl"), *spec, "-q"]) == 1
    assert "no task got a rubric (1 tried" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_data_commands_name_a_bad_line_and_an_unreachable_teacher(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "What is 2 + 2?"}\n{"id": "b", "promt": "typo"}\n')
    assert main(["data", "rubrics", str(tasks), "-o", str(tmp_path / "o.jsonl"), "--teacher", "m@http://x/v1"]) == 2
    assert "line 2: prompt: Field required" in capsys.readouterr().err
    tasks.write_text('{"id": "a", "prompt": "What is 2 + 2?", "reference_answer": "4"}\n')
    nobody = "m@http://127.0.0.1:9/v1"  # the discard port: nothing answers
    assert main(["data", "rubrics", str(tasks), "-o", str(tmp_path / "o.jsonl"), "--teacher", nobody, "-q"]) == 1
    assert "a teacher cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(i.model_dump_json() + "\n" for i in _synthetic_instances()[:2]))
    assert main(["data", "labels", str(instances), "-o", str(tmp_path / "labels"), "--teacher", nobody, "-q"]) == 1
    assert "a teacher cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "labels").exists()
