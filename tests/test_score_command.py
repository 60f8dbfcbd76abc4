"""`genrm score` end to end, in a separate process: output lines, error lines, summary table, exit codes."""

import json
import subprocess
import sys
from typing import get_args

from conftest import EXAMPLE_SET

from genrm.methods.rubric.judge_output import FailureClass

GOOD = {
    "id": "good",
    "prompt": "What is 6 times 7?",
    "rubric": {"essential": [{"criterion": "Gives the product.", "reference": "expr_verify(target='42')",
                              "weight": 3}]},
    "responses": ["\\boxed{42}", "\\boxed{41}"],
}  # fmt: skip


def _score(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "genrm", "score", *args]
    return subprocess.run(command, capture_output=True, text=True, input=stdin, timeout=120)


def test_bad_lines_get_error_lines_and_the_rest_is_scored(tmp_path):
    bad_rubric = dict(GOOD, id="bad-rubric", rubric={"essential": [{"criterion": "Box.",
                      "reference": "bbox_verify(target=[[1, 2]])", "weight": 3}]})  # fmt: skip
    bad_weight = dict(GOOD, id="bad-weight", rubric={"essential": [{"criterion": "c", "reference": "r", "weight": 5}]})
    lines = [json.dumps(GOOD), "{not json", "", json.dumps(bad_rubric), json.dumps(bad_weight), "[1, 2]",
             json.dumps(dict(GOOD, id="good-2"))]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    target = tmp_path / "out.jsonl"
    done = _score(str(source), "-o", str(target))
    assert done.returncode == 1, done.stderr
    out = [json.loads(line) for line in target.read_text().splitlines()]
    assert [o["line"] for o in out] == [1, 2, 4, 5, 6, 7]  # the blank line 3 is skipped
    assert out[0]["id"] == "good" and out[0]["rewards"] == [1.0, 0.0] and out[0]["error"] is None
    assert out[0]["records"][0]["criteria"][0]["extracted"] == "expr_verify(predict='42')"
    assert out[1]["rewards"] is None and out[1]["error"].startswith("invalid JSON:")
    assert out[2]["id"] == "bad-rubric" and "invalid rubric: essential[0].reference" in out[2]["error"]
    assert out[3]["id"] == "bad-weight" and "rubric.essential.0.weight" in out[3]["error"]
    assert out[4]["error"] == "invalid instance: expected a JSON object"
    assert out[5]["id"] == "good-2" and out[5]["rewards"] == [1.0, 0.0]
    assert "instances" in done.stderr and "failed                  4" in done.stderr
    assert "line 2: invalid JSON" in done.stderr


def test_stdin_to_stdout_and_exit_code_zero():
    done = _score("-", "--quiet", stdin=json.dumps(GOOD) + "\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rewards"] == [1.0, 0.0]
    assert done.stderr == ""


def test_missing_input_is_a_usage_error(tmp_path):
    done = _score(str(tmp_path / "absent.jsonl"))
    assert done.returncode == 2 and "no such file:" in done.stderr and "absent.jsonl" in done.stderr
    refused = _score("-", "--method-options", '{"tau": 1.5}', stdin="")
    assert refused.returncode == 2 and "the rubric option tau: Input should be less than 1" in refused.stderr


def test_example_set_scores_without_errors(tmp_path):
    target = tmp_path / "rewards.jsonl"
    done = _score(str(EXAMPLE_SET), "-o", str(target))
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(out) == len(EXAMPLE_SET.read_text().splitlines()) and all(o["error"] is None for o in out)
    # the summary names the file and glosses every status it counts
    said = done.stderr.splitlines()
    named = f"wrote {len(out)} lines to {target}, one per instance; genrm records {target} shows them worst first"
    assert named in said
    assert "reward unknown" in done.stderr and "checks by status:" in said
    counted = said[said.index("checks by status:") + 1 :]
    assert {line.split()[0] for line in counted} >= {"ok", "unparseable_pred", "unscored"}
    assert all(len(line.split(None, 2)) == 3 for line in counted), counted  # status, count, what it means


def test_scoring_with_a_local_checkpoint(tmp_path, tiny_judge_dir):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(EXAMPLE_SET.read_text().splitlines()[:3]) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["--backend", "transformers", "--model", str(tiny_judge_dir), "--device", "cpu", "--max-tokens", "512"]
    assert _score(str(source), "-o", str(out), "-q", *args).returncode == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 3 and all(line["error"] is None for line in lines)
    # An untrained judge may loop inside a value until the token budget: that response's reward is unknown, with the
    # judge's failure on record, never a number.
    failures = set(get_args(FailureClass)) - {"unscored"}
    for line in lines:
        for reward, record in zip(line["rewards"], line["records"], strict=True):
            failed = record["judge_failure"] is not None or any(c["status"] in failures for c in record["criteria"])
            assert (reward is None) == failed, record
    assert _score(str(source), "--backend", "transformers").returncode == 2


def test_scoring_with_a_judge_served_over_http(tmp_path):
    # the same --backend/--url/--model options as genrm eval; the fake judge scores fuzzy criteria too
    from fake_judge import FakeJudgeServer

    fuzzy = dict(GOOD, id="fuzzy", rubric={"essential": [{"criterion": "Names the product.", "reference": "42",
                                                          "weight": 3}]})  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n" + json.dumps(fuzzy) + "\n")
    with FakeJudgeServer() as server:
        done = _score(str(source), "-q", "--backend", "openai", "--url", f"{server.root}/v1", "--model", "judge")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert out[0]["rewards"] == [1.0, 0.0]
    assert out[1]["error"] is None and None not in out[1]["rewards"]  # the rule backend would leave these unknown
    unserved = _score(str(source), "-q", "--backend", "openai", "--model", "judge")
    assert unserved.returncode == 2 and "needs --url" in unserved.stderr


def test_the_judge_in_one_spelling_names_the_same_judge(tmp_path):
    from fake_judge import FakeJudgeServer

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    with FakeJudgeServer() as server:
        spelled = _score(str(source), "-q", "--judge", f"openai:judge@{server.root}/v1")
        short = _score(str(source), "-q", "--judge", f"judge@{server.root}/v1")
    assert spelled.returncode == short.returncode == 0, spelled.stderr + short.stderr
    assert json.loads(spelled.stdout)["rewards"] == json.loads(short.stdout)["rewards"] == [1.0, 0.0]
    assert json.loads(_score(str(source), "-q", "--judge", "rule").stdout)["rewards"] == [1.0, 0.0]
    both = _score(str(source), "-q", "--judge", "rule", "--backend", "rule")
    assert both.returncode == 2 and "names the judge already" in both.stderr
    malformed = _score(str(source), "-q", "--judge", "judge@ftp://host/v1")
    assert malformed.returncode == 2 and "http://" in malformed.stderr


def test_the_progress_bar_of_a_file_has_a_total(tmp_path, capsys):
    from genrm.engine import Judge
    from genrm.methods import make_method
    from genrm.methods.score_file import score_file

    source = tmp_path / "in.jsonl"
    source.write_text("".join(EXAMPLE_SET.read_text(encoding="utf-8").splitlines(keepends=True)[:3]) + "\n")
    with source.open(encoding="utf-8") as lines, (tmp_path / "out.jsonl").open("w", encoding="utf-8") as sink:
        summary = score_file(lines, sink, make_method("rubric"), Judge(), progress=True)
    assert summary.lines == 3 and len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
    assert "0/3" in capsys.readouterr().err  # a total from the start, so tqdm shows how far and an ETA


def test_an_unreachable_judge_stops_the_run_in_one_line_naming_its_url(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    output = tmp_path / "out.jsonl"
    done = _score(str(EXAMPLE_SET), "-o", str(output), "--judge", f"sglang:judge@{url}", "-q")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"genrm score: the judge cannot be reached, stopping: no endpoint of "
                                                f"'judge' reachable at {url} (ConnectError: All connection attempts "
                                                f"failed); 0 whole lines written to {output}"]  # fmt: skip
    assert not output.exists()  # no empty file: nothing was scored
    output.write_text('{"an earlier": "run"}\n')
    assert _score(str(EXAMPLE_SET), "-o", str(output), "--judge", f"sglang:judge@{url}", "-q").returncode == 1
    assert output.read_text() == '{"an earlier": "run"}\n'  # left as it was


def test_a_line_too_long_is_refused_without_reading_it_whole_and_output_is_cut_at_a_whole_line(tmp_path):
    from genrm.methods.score_file import MAX_LINE_CHARS

    source = tmp_path / "in.jsonl"
    good = EXAMPLE_SET.read_text(encoding="utf-8").splitlines()[0]
    source.write_text(good + "\n" + '{"id": "' + "x" * (MAX_LINE_CHARS + 10) + '"}\n' + good + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = _score(str(source), "-o", str(out), "-q")
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["error"] is None for r in results] == [True, False, True]
    assert f"line longer than {MAX_LINE_CHARS:,} characters" in results[1]["error"] and done.returncode == 1
    full = _score(str(source), "-o", "/dev/full", "-q")
    assert full.returncode == 1 and full.stderr.strip().splitlines() == [
        "genrm score: cannot write /dev/full: No space left on device (ENOSPC); the lines before it are whole"
    ]
