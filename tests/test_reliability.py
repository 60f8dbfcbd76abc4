"""The reliability table: each measure counted on the right unit, failures of form counted against finer ones."""

import json

from genrm.cli import main
from genrm.engine.scripted import ScriptedEngine
from genrm.methods.rubric.evaluation.reliability import check_answer, evaluate, reliability_report
from genrm.methods.rubric.judge_data import labelled_answer
from genrm.methods.rubric.judge_output import parse_judge_output
from genrm.methods.rubric.readers import EngineReader, RuleReader
from genrm.methods.rubric.synthetic import generate_examples

EXAMPLES = generate_examples(14, seed=2)


def Replaying(texts):
    """A judge whose engine answers with given texts (keyed by prompt and response), read like a model's output."""

    def answer(request):
        user = request.prompt.user
        (text,) = [text for (prompt, response), text in texts.items() if prompt in user and f"{response}\n" in user]
        return text

    return EngineReader(ScriptedEngine(answer), parse_retries=0)


def test_labelled_answers_are_right_on_every_measure():
    report, _ = evaluate(
        Replaying({(e.prompt, e.response): json.dumps(labelled_answer(e)) for e in EXAMPLES}), EXAMPLES
    )
    assert all(row.percent == 100.0 for row in report.rows)
    assert report.row("Arguments").total == sum(1 for e in EXAMPLES for label in e.labels if label.call)
    assert report.row("Credit").total == sum(1 for e in EXAMPLES for label in e.labels if label.call is None)
    assert report.row("Sample-level").total == len(EXAMPLES)


def test_each_failure_lands_on_its_measure():
    expr = next(e for e in EXAMPLES if e.plans()[0].verifier == "expr_verify" and len(e.labels) == 2)
    plans = expr.plans()

    def check(answer):
        return check_answer(parse_judge_output(answer if isinstance(answer, str) else json.dumps(answer), plans), expr)

    good = labelled_answer(expr)
    broken = check("{")
    assert not broken.schema and not broken.criterion_slots and broken.execution == (False, False)
    renamed = dict(good, essential=[dict(good["essential"][0], criterion="Something else entirely.")])
    assert check(renamed).schema and not check(renamed).criterion_slots
    wrong_verifier = dict(good, essential=[dict(good["essential"][0], credit="text_verify(predict='1')")])
    result = check(wrong_verifier)
    assert result.execution == (False, True) and result.arguments == (False, None) and not result.sample_right
    wrong_credit = dict(good, additional=[dict(good["additional"][0], credit=0.5)])
    result = check(wrong_credit)
    assert result.execution == (True, True) and result.credit == (None, False)
    assert result.criteria_right == (True, False)


def test_the_rule_judge_executes_no_fuzzy_criterion():
    report, checks = evaluate(RuleReader(), EXAMPLES)
    assert report.row("Credit").right == 0 and report.row("Credit").total > 0
    assert report.row("Schema").percent == 100.0
    assert report == reliability_report(checks, "rule")
    assert "| Execution | criterion |" in report.markdown()


def test_eval_command_writes_the_table(tmp_path, capsys):
    data = tmp_path / "examples.jsonl"
    data.write_text("".join(e.model_dump_json() + "\n" for e in EXAMPLES))
    out = tmp_path / "table.json"
    assert main(["eval", str(data), "--json", str(out), "-q"]) == 0
    assert "Sample-level" in capsys.readouterr().out
    assert json.loads(out.read_text())["examples"] == len(EXAMPLES)
    assert main(["eval", str(data), "--backend", "transformers", "-q"]) == 2


def test_eval_writes_what_was_right_in_each_answer(tmp_path, capsys):
    data, answers, table = tmp_path / "examples.jsonl", tmp_path / "answers.jsonl", tmp_path / "table.json"
    data.write_text("".join(e.model_dump_json() + "\n" for e in EXAMPLES))
    assert main(["eval", str(data), "--answers", str(answers), "--json", str(table), "-q"]) == 0
    lines = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [line["id"] for line in lines] == [e.id for e in EXAMPLES]
    assert all(len(line["criteria_right"]) == len(e.labels) for line, e in zip(lines, EXAMPLES, strict=True))
    # the lines add up to the table's figures
    rows = {row["measure"]: row for row in json.loads(table.read_text())["rows"]}
    assert sum(line["sample_right"] for line in lines) == rows["Sample-level"]["right"]
    assert sum(sum(line["criteria_right"]) for line in lines) == rows["Criterion-level"]["right"] > 0
    assert not all(line["sample_right"] for line in lines)  # the rule judge pays no fuzzy credit: some answers fail


def _wrong(answers):
    return [line["id"] for line in map(json.loads, answers.read_text().splitlines()) if not line["sample_right"]]


def _answered(tmp_path, *extra):
    data, answers = tmp_path / "examples.jsonl", tmp_path / "answers.jsonl"
    data.write_text("".join(e.model_dump_json() + "\n" for e in EXAMPLES))
    assert main(["eval", str(data), "--answers", str(answers), "-q", *extra]) == 0
    return data, answers


def test_data_hard_keeps_the_examples_the_judge_got_wrong(tmp_path, capsys):
    data, answers = _answered(tmp_path)
    wrong = _wrong(answers)
    assert 0 < len(wrong) < len(EXAMPLES)
    hard = tmp_path / "hard.jsonl"
    capsys.readouterr()
    assert main(["data", "hard", str(data), "--answers", str(answers), "-o", str(hard)]) == 0
    assert [json.loads(line)["id"] for line in hard.read_text().splitlines()] == wrong
    assert f"wrote {len(wrong)} examples the judge got wrong (of {len(EXAMPLES)} answered)" in capsys.readouterr().out
    # the kept lines are the examples themselves, ready for genrm train rlvr
    by_id = {e.id: e.model_dump_json() for e in EXAMPLES}
    assert hard.read_text().splitlines() == [by_id[i] for i in wrong]


def test_data_hard_of_answers_to_part_of_the_file_says_what_was_left(tmp_path, capsys):
    data, answers = _answered(tmp_path, "--limit", "6")
    assert _wrong(answers)  # the rule judge pays no fuzzy credit: some of the six are wrong
    assert main(["data", "hard", str(data), "--answers", str(answers), "-o", str(tmp_path / "hard.jsonl")]) == 0
    assert f"{len(EXAMPLES) - 6} examples of {data} have no answer line" in capsys.readouterr().out


def test_data_hard_refuses_to_write_an_empty_file(tmp_path, capsys):
    data, answers = _answered(tmp_path)
    right = [line for line in answers.read_text().splitlines() if json.loads(line)["sample_right"]]
    assert right
    answers.write_text("\n".join(right) + "\n")
    hard = tmp_path / "hard.jsonl"
    assert main(["data", "hard", str(data), "--answers", str(answers), "-o", str(hard)]) == 1
    assert f"the judge got all {len(right)} answered examples right" in capsys.readouterr().err
    assert not hard.exists()


def test_data_hard_refuses_answers_written_for_other_examples(tmp_path, capsys):
    data, answers = _answered(tmp_path)
    lines = answers.read_text().splitlines()
    other = json.loads(lines[0]) | {"id": "not-an-example"}
    moved = json.loads(lines[0]) | {"input_id": "another-input"}
    shorter = json.loads(lines[0]) | {key: json.loads(lines[0])[key][:-1] for key in
                                      ("criteria_right", "execution", "arguments", "credit")}  # fmt: skip
    shorter["sample_right"] = shorter["schema"] and shorter["criterion_slots"] and all(shorter["criteria_right"])
    flipped = json.loads(lines[0]) | {"sample_right": not json.loads(lines[0])["sample_right"]}
    cases = {
        "twice": ([lines[0], lines[0]], f"line 2: id {moved['id']!r} is answered twice"),
        "other": ([json.dumps(other)], "line 1: id 'not-an-example' is no example of the examples file"),
        "moved": ([json.dumps(moved)], f"line 1: the answer to {moved['id']!r} is for another example (input 'an"),
        "shorter": ([json.dumps(shorter)], f"{len(EXAMPLES[0].labels) - 1} criteria; the example's"),
        "flipped": ([json.dumps(flipped)], "line 1: line: sample_right must be true exactly when"),
        "not an answer": (["{}"], "line 1: id: Field required"),
    }
    for name, (bad, expected) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(bad) + "\n")
        out = tmp_path / f"{name}-hard.jsonl"
        assert main(["data", "hard", str(data), "--answers", str(path), "-o", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith(f"genrm data hard: error: {path} ") and expected in err, (name, err)
        assert len(err.strip().splitlines()) == 1 and not out.exists(), name


def test_data_hard_refuses_examples_that_share_an_id(tmp_path, capsys):
    data, answers = _answered(tmp_path)
    lines = data.read_text().splitlines()
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([*lines, lines[0]]) + "\n")
    out = tmp_path / "hard.jsonl"
    assert main(["data", "hard", str(twice), "--answers", str(answers), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"genrm data hard: error: {twice} line {len(lines) + 1}: id {json.loads(lines[0])['id']!r} is "
                   "also line 1's: answers are matched to examples by id, so each needs its own")  # fmt: skip
    assert not out.exists()


def test_eval_of_a_local_checkpoint(tiny_judge_dir, tmp_path, capsys):
    # the untrained tiny judge under constrained decoding: its answers are well formed where they end, but it may
    # loop inside a value until the token budget; every answer and every criterion is counted either way
    data = tmp_path / "examples.jsonl"
    data.write_text("".join(e.model_dump_json() + "\n" for e in EXAMPLES[:8]))
    out = tmp_path / "table.json"
    args = ["eval", str(data), "--backend", "transformers", "--model", str(tiny_judge_dir),
            "--device", "cpu", "--max-tokens", "512", "--json", str(out), "-q"]  # fmt: skip
    assert main(args) == 0
    table = {row["measure"]: row for row in json.loads(out.read_text())["rows"]}
    criteria = sum(len(e.labels) for e in EXAMPLES[:8])
    assert table["Schema"]["total"] == table["Criterion"]["total"] == table["Sample-level"]["total"] == 8
    assert table["Execution"]["total"] == table["Criterion-level"]["total"] == criteria
    assert table["Execution"]["right"] <= criteria and table["Sample-level"]["right"] <= table["Schema"]["right"]
    assert "Reliability of transformers" in capsys.readouterr().out
    # a text-only model cannot be shown the images the vlm exposure is about: refused before any judging
    assert main([*args, "--exposure", "vlm"]) == 2
    assert f"{tiny_judge_dir} is a text-only model" in capsys.readouterr().err
