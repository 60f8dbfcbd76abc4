"""The genrm command line, run as a user runs it: a separate process."""

import json
import re
import subprocess
import sys

import pytest


def _genrm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "genrm", *args], capture_output=True, text=True, timeout=60)


def test_verify_prints_score_status_and_reason():
    done = _genrm("verify", "bbox_verify(target=[[0,0,100,100]])", "bbox_verify(predict=[[0,0,100,50]])")
    assert done.returncode == 0, done.stderr
    assert "score: 0.5000" in done.stdout and "status: ok" in done.stdout and "reason: matched" in done.stdout


def test_verify_json_and_failure_exit_code():
    done = _genrm("verify", "text_verify(target='a')", "text_verify(predict=open('x'))", "--json")
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["status"] == "bad_call" and "function call" in payload["reason"]


def test_verify_expression_end_to_end():
    done = _genrm("verify", "expr_verify(target=r'\\frac{\\sqrt{2}}{2}')", "expr_verify(predict='1/sqrt(2)')")
    assert done.returncode == 0, done.stderr
    assert "score: 1.0000" in done.stdout


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_verifiers_lists_all_signatures(flag):
    done = _genrm("verifiers", *flag)
    assert done.returncode == 0
    for name in ("text_verify", "expr_verify", "time_verify", "list_verify", "bbox_verify", "point_verify"):
        assert name in done.stdout
    if flag:
        assert len(json.loads(done.stdout)) == 6


def test_verifiers_rejects_unknown_names():
    done = _genrm("verifiers", "--only", "nope")
    assert done.returncode == 2 and "valid: text_verify" in done.stderr


def test_bad_deadline_is_a_clear_error():
    done = _genrm("verify", "text_verify(target='a')", "text_verify(predict='a')", "--deadline", "-1")
    assert done.returncode == 2 and "deadline_s must be" in done.stderr


def test_importing_verifiers_stays_light():
    heavy = "('torch', 'sympy', 'scipy', 'transformers')"
    code = f"import sys, verifiers, genrm.cli; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_examples_run_one_call_pair_per_verifier():
    done = _genrm("verify", "--examples", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [row["status"] for row in rows] == ["ok"] * 6
    scores = {row["reference"].split("(")[0]: row["score"] for row in rows}
    assert scores["list_verify"] == pytest.approx(2 / 3) and scores["expr_verify"] == 1.0


def test_verify_needs_both_calls_or_examples():
    assert _genrm("verify").returncode == 2
    assert _genrm("verify", "--examples", "text_verify(target='a')").returncode == 2


@pytest.mark.parametrize(
    "spec, words",
    [
        ("transformers:./runs/missing", "checkpoint folder './runs/missing' does not exist"),
        ("transformers:datasets/missing", "checkpoint folder 'datasets/missing' does not exist"),
        ("transformers:README.md", "is a file; give the folder it was saved to"),
    ],
)
def test_a_missing_checkpoint_path_is_named_and_never_sent_to_the_hub(spec, words):
    done = _genrm("score", "datasets/examples/reward_core.jsonl", "-o", "/dev/null", "--judge", spec, "-q")
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def test_eval_names_a_missing_checkpoint_and_refuses_a_model_without_a_backend():
    missing = _genrm("eval", "datasets/judge_synth/test.jsonl", "--backend", "transformers",
                     "--model", "datasets/no-such-run")  # fmt: skip
    assert missing.returncode == 2 and "'datasets/no-such-run' does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    bare = _genrm("eval", "datasets/judge_synth/test.jsonl", "--model", "datasets/no-such-run")
    assert bare.returncode == 2 and "add --backend" in bare.stderr


def test_checkpoint_paths_and_hub_ids():
    from genrm.engine.checkpoints import checkpoint_path

    assert checkpoint_path("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"  # a hub id is left to the hub
    with pytest.raises(FileNotFoundError, match="holds no saved model"):
        checkpoint_path("datasets")  # a folder that exists, but holds no model
    for path in ("/no/such/model", "./model", "~/no-such-model", "a/b/c", "datasets/no-such-run", "no-such-folder/"):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            checkpoint_path(path)
    with pytest.raises(ValueError, match="neither a checkpoint folder nor a model hub id"):
        checkpoint_path("not a name!")


@pytest.mark.parametrize(
    "args, words",
    [
        (["audit", "run", "datasets/audit/synth_test.jsonl", "-o", "README.md"], "is a file, not a folder"),
        (["eval", "datasets/judge_synth/test.jsonl", "--json", "README.md/x.json"], "is a file, so nothing"),
        (["score", "datasets/examples/reward_core.jsonl", "-o", "datasets"], "is a folder; give a file name"),
        (["data", "sft", "datasets/judge_synth/test.jsonl", "-o", "README.md/sft.jsonl"], "is a file, so nothing"),
        (["tiny-model", "README.md"], "is a file, not a folder"),
    ],
)
def test_outputs_are_checked_before_any_work(args, words):
    done = _genrm(*args)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert "judging" not in done.stderr  # refused when the command line was read


@pytest.mark.parametrize(
    "args",
    [
        ["data", "sft", "no-such.jsonl", "-o", "out.jsonl"],
        ["eval", "no-such.jsonl"],
        ["policy-data", "no-such.jsonl", "-o", "out"],
        ["audit", "run", "no-such.jsonl", "-o", "out"],
        ["score", "no-such.jsonl"],
        ["pairs", "eval", "no-such.jsonl"],
        ["captions", "arena", "no-such.jsonl", "datasets"],
    ],
)
def test_a_missing_input_is_one_line_naming_it(args):
    done = _genrm(*args)
    assert done.returncode == 2 and "no such file: 'no-such.jsonl'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        (["score", "datasets/examples/reward_core.jsonl", "--ouput", "r.jsonl"],
         "genrm score: error: unrecognized arguments: --ouput r.jsonl (--ouput: did you mean --output?)"),
        (["data", "synthetic", "-o", "out", "--inptus", "3"], "genrm data synthetic: error: unrecognized arguments: "
                                                               "--inptus 3 (--inptus: did you mean --inputs?)"),
        (["verify", "--exmples"], "genrm verify: error: unrecognized arguments: --exmples (--exmples: did you mean "
                                  "--examples?)"),
        (["score", "datasets/examples/reward_core.jsonl", "--zzz"],
         "genrm score: error: unrecognized arguments: --zzz"),
    ],
)  # fmt: skip
def test_an_unknown_option_is_refused_by_its_subcommand_with_the_closest_one(args, said):
    done = _genrm(*args)
    (line,) = done.stderr.strip().splitlines()  # one line: no usage block before it
    assert done.returncode == 2 and line.startswith(said) and line.endswith("--help lists the options)"), done.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        ([], "genrm: error: missing COMMAND (one of: verify, verifiers, methods, score,"),
        (["train"], "genrm train: error: missing JOB (one of: sft, rlvr) (genrm train --help lists the options)"),
        (["score"], "genrm score: error: missing INPUT.jsonl (genrm score --help lists the options)"),
        (["serve", "--prot", "5"],
         "genrm serve: error: unrecognized arguments: --prot 5 (--prot: did you mean --port?)"),
    ],
)  # fmt: skip
def test_a_missing_argument_is_one_line_naming_what_is_missing(args, said):
    done = _genrm(*args)
    (line,) = done.stderr.strip().splitlines()
    assert done.returncode == 2 and line.startswith(said), done.stderr


@pytest.mark.parametrize("value", ["0", "1.5", "-0.1", "high"])
@pytest.mark.parametrize("command", [["eval"], ["audit", "run"]])
def test_an_argument_threshold_outside_0_to_1_is_a_usage_error_naming_it(command, value):
    """A threshold of 0 would count every extracted value right; one above 1 none: both are mistakes, refused before
    any judge is loaded."""
    done = _genrm(*command, "datasets/examples/reward_core.jsonl", "--argument-threshold", value)
    assert (
        done.returncode == 2
        and "argument --argument-threshold: expected a verifier score above 0 and at most 1" in done.stderr
    ), done.stderr
    assert "Traceback" not in done.stderr


def test_train_help_helps_and_a_missing_recipe_is_one_line():
    helped = _genrm("train", "--help")
    assert helped.returncode == 0 and "usage: genrm train" in helped.stdout and "sft" in helped.stdout
    missing = _genrm("train", "sft", "--config", "nope.yaml")
    assert missing.returncode == 2 and "--config: no such file: 'nope.yaml'" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize(
    ("command", "example"),
    [(["train", "sft"], "genrm train sft --config recipes/sft_tiny_cpu.yaml"),
     (["rl"], "genrm rl --config recipes/rl_tiny_cpu.yaml"),
     (["pairs", "train"], "genrm pairs train --config recipes/pairs_grpo_tiny_cpu.yaml")],
)  # fmt: skip
def test_a_recipe_command_says_what_to_type_and_its_help_names_the_recipe_option(command, example):
    bare = _genrm(*command)
    assert bare.returncode == 2 and f"give a recipe: {example}" in bare.stderr and "Traceback" not in bare.stderr
    helped = _genrm(*command, "--help")
    assert helped.returncode == 0 and "A recipe is --config FILE.yaml" in helped.stdout
    # short: the command's own fields and the common ones; --help-all lists every field (TRL's hundreds, where the
    # command takes TRL's config: pairs train declares its own 22)
    assert "--config RECIPE.yaml" in helped.stdout and "--output_dir" in helped.stdout
    assert "--help-all lists every field" in helped.stdout and "--fsdp_config" not in helped.stdout
    every = _genrm(*command, "--help-all")
    fields = set(re.findall(r"--[a-z][a-z0-9_]*", helped.stdout)) - {"--config", "--help", "--field"}
    assert every.returncode == 0 and fields and all(option in every.stdout for option in fields)
    if command != ["pairs", "train"]:
        assert "--fsdp_config" in every.stdout and len(every.stdout) > 3 * len(helped.stdout)


def test_a_setting_trl_refuses_is_one_line_with_the_fix():
    import torch

    if torch.cuda.is_available():  # a machine with a GPU takes bf16: nothing to refuse
        pytest.skip("bf16 is supported here")
    refused = _genrm("train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--use_cpu", "false", "--bf16", "true")
    assert refused.returncode == 2 and "--use_cpu true --bf16 false" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) <= 3


def test_ctrl_c_is_one_line_and_exit_code_130(monkeypatch, capsys):
    import importlib

    cli = importlib.import_module("genrm.cli.main")

    def interrupted(_):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_verifiers", interrupted)
    assert cli.main(["verifiers"]) == 130
    assert capsys.readouterr().err == "genrm verifiers: interrupted\n"


def test_serve_on_a_port_in_use_says_so_before_starting():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _genrm("serve", "--port", str(port))
    assert done.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "startup complete" not in done.stderr


def test_one_convention_and_one_spelling(tmp_path):
    """Inputs positional, outputs -o; the older spellings (eval --data, policy-data --out) are gone, refused as any
    unknown option is."""
    positional = _genrm("eval", "datasets/judge_synth/test.jsonl", "--limit", "3", "-q", "--json", str(tmp_path / "a"))
    assert positional.returncode == 0, positional.stderr
    assert json.loads((tmp_path / "a").read_text())
    older = _genrm("eval", "--data", "datasets/judge_synth/test.jsonl")
    neither = _genrm("eval")
    for done in (older, neither):
        assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    made = _genrm("policy-data", "datasets/examples/reward_core.jsonl", "-o", str(tmp_path / "data"))
    assert made.returncode == 0 and (tmp_path / "data" / "train.jsonl").is_file(), made.stderr
    refused = _genrm("policy-data", "datasets/examples/reward_core.jsonl", "--out", str(tmp_path / "out"))
    assert refused.returncode == 2 and not (tmp_path / "out").exists()

    pairs = "datasets/examples/pairs/pairs.jsonl"
    spaced = _genrm("pairs", "eval", pairs, "--judge", "scripted", "--conditions", "real", "blank")
    commas = _genrm("pairs", "eval", pairs, "--judge", "scripted", "--conditions", "real,blank")
    assert spaced.returncode == commas.returncode == 0 and spaced.stdout == commas.stdout
    assert "| blank |" in spaced.stdout and "| real |" in spaced.stdout
    wrong = _genrm("pairs", "eval", pairs, "--judge", "scripted", "--conditions", "real,dark")
    assert wrong.returncode == 2 and "invalid choice: 'dark'" in wrong.stderr

    listed = [_genrm("verifiers", "--only", *names, "--json") for names in (["expr_verify", "time_verify"],
                                                                          ["expr_verify,time_verify"])]  # fmt: skip
    assert listed[0].returncode == 0 and listed[0].stdout == listed[1].stdout
    assert len(json.loads(listed[0].stdout)) == 2


def test_a_folder_without_a_saved_model_names_its_last_checkpoint(tmp_path):
    from genrm.engine.checkpoints import checkpoint_path
    from genrm.training.common import resume_point

    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no saved model .*train it to the end first"):
        checkpoint_path(run)
    with pytest.raises(ValueError, match="holds no checkpoint-N folder"):
        resume_point("last", str(run))
    for step in (5, 20, 100):
        (run / f"checkpoint-{step}").mkdir()
        (run / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (run / "checkpoint-x").mkdir()
    with pytest.raises(FileNotFoundError, match="its last checkpoint is .*checkpoint-100"):
        checkpoint_path(run)
    assert resume_point("last", str(run)) == resume_point("true", str(run)) == str(run / "checkpoint-100")
    assert resume_point(str(run / "checkpoint-20"), str(run)) == str(run / "checkpoint-20")
    assert resume_point(None, str(run)) is None and resume_point("false", str(run)) is None
    with pytest.raises(ValueError, match="not a checkpoint folder"):
        resume_point(str(run / "checkpoint-x"), str(run))
    (run / "config.json").write_text("{}")
    assert checkpoint_path(run) == str(run)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    assert checkpoint_path(adapter) == str(adapter)


def test_an_output_file_in_a_folder_not_made_yet_is_written(tmp_path):
    out = tmp_path / "runs" / "new" / "sft.jsonl"
    done = _genrm("data", "sft", "datasets/judge_synth/train.jsonl", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().count("\n") == len(open("datasets/judge_synth/train.jsonl").readlines())


def test_tiny_model_vision_makes_a_judge_the_caption_methods_run_in_process(tmp_path):
    made = _genrm("tiny-model", str(tmp_path / "vlm"), "--vision")
    assert made.returncode == 0 and "vision-language" in made.stdout, made.stderr
    out = tmp_path / "rewards.jsonl"
    done = _genrm("score", "datasets/examples/captions/captions.jsonl", "-o", str(out), "--method", "balcap",
                  "--judge", f"transformers:{tmp_path / 'vlm'}", "--max-tokens", "16", "-q")  # fmt: skip
    # an untrained judge's answers do not read: every reward unknown, each with its reason, and the run says so
    assert done.returncode == 1 and "got a reward" in done.stderr and "Traceback" not in done.stderr
    records = [r for line in out.read_text().splitlines() for r in json.loads(line)["records"]]
    assert len(records) == 8 and all(r["reward"] is None and r["failure"] for r in records)


def test_a_closed_pipe_ends_the_command_quietly():
    # genrm score ... -o - | head -1: the reader has what it wanted; no traceback, the shell's code for SIGPIPE
    from pathlib import Path

    # the records of the 50 instances are ~110 KB, more than a pipe holds (64 KB): the writer is still writing then
    command = [sys.executable, "-m", "genrm", "score", "datasets/examples/reward_core.jsonl", "-o", "-", "-q"]
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root)
    first = process.stdout.readline()
    process.stdout.close()  # as head -1 does after its line
    _, errors = process.communicate(timeout=120)
    assert first.startswith(b'{"id":')
    assert process.returncode == 141 and b"Traceback" not in errors and b"BrokenPipe" not in errors, errors


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--judge", "transformers:no-such-runs/nope", "--port", "0"],
        ["score", "datasets/examples/reward_core.jsonl", "--judge", "transformers:no-such-runs/nope"],
        ["eval", "datasets/judge_synth/test.jsonl", "--judge", "transformers:no-such-runs/nope"],
    ],
)
def test_a_judge_checkpoint_found_neither_here_nor_on_the_hub_is_one_line_before_anything_loads(args):
    # a name of hub-id form with no such folder here: the local cache is looked in, the hub is not asked (offline)
    import os
    import time

    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "genrm", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    took = time.monotonic() - start
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "no folder 'no-such-runs/nope' here" in line and "HF_HUB_OFFLINE" in line
    assert took < 30  # about a second on 2 cores; loading a judge first took 20 s


def test_a_hub_id_is_looked_for_in_the_cache_and_then_asked_of_the_hub_with_a_timeout(monkeypatch, tmp_path):
    import httpx
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError

    from genrm.engine.checkpoints import reachable_checkpoint

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda repo, name: None)
    asked = []

    def not_held(repo, timeout):
        asked.append(timeout)
        request = httpx.Request("GET", f"https://huggingface.co/api/models/{repo}")
        raise RepositoryNotFoundError("404", response=httpx.Response(404, request=request))

    monkeypatch.setattr(huggingface_hub, "model_info", not_held)
    with pytest.raises(FileNotFoundError, match="the hub holds no model 'org/nope'"):
        reachable_checkpoint("org/nope", hub_timeout_s=1.5)
    assert asked == [1.5]

    def unreachable(repo, timeout):
        raise OSError("network is unreachable")

    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    with pytest.raises(FileNotFoundError, match="could not be asked for a model 'org/nope' within 3 s"):
        reachable_checkpoint("org/nope")
    monkeypatch.setattr(huggingface_hub, "model_info", lambda repo, timeout: object())
    assert reachable_checkpoint("org/held") == "org/held"
    cached = tmp_path / "config.json"
    cached.write_text("{}")
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda repo, name: str(cached))
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    assert reachable_checkpoint("org/cached") == "org/cached"  # offline, but a copy is cached


@pytest.mark.parametrize(
    "judge, code, said",
    [
        ("http://127.0.0.1:{port}", 1, "genrm rl: stopped: no reward server answered at http://127.0.0.1:{port}"),
        ("sglang:judge@http://127.0.0.1:{port}/v1", 1,
         "genrm rl: stopped: no judge endpoint answered at http://127.0.0.1:{port}/v1 "
         "(http://127.0.0.1:{port}/health: ConnectError); start the judge's server, or give another judge"),
        ("transformers:{tmp}/no-judge", 2, "genrm rl: error: checkpoint folder '{tmp}/no-judge' does not exist"),
    ],
)  # fmt: skip
def test_rl_against_a_judge_that_is_not_there_stops_before_training(tmp_path, judge, code, said):
    import time

    port = _free_port()
    judge, said = (text.format(port=port, tmp=tmp_path) for text in (judge, said))
    start = time.monotonic()
    done = _genrm("rl", "--config", "recipes/rl_tiny_cpu.yaml", "--judge", judge, "--output_dir",
                  str(tmp_path / "policy"), "--model_name_or_path", str(tmp_path / "tiny-policy"))  # fmt: skip
    took = time.monotonic() - start
    assert done.returncode == code and "Traceback" not in done.stderr
    assert said in done.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "tiny-policy").exists() and took < 50  # nothing built, no step trained (55 s before)


@pytest.mark.parametrize("after_s", [0.2, 0.6, 1.0, 1.5, 2.5])
def test_ctrl_c_at_any_moment_of_score_is_one_line_exit_130_and_whole_lines(tmp_path, after_s):
    # as a terminal sends it: to the whole process group, the expression workers' too, while the command imports,
    # starts its workers, or scores
    import os
    import signal
    import time

    output = tmp_path / "rewards.jsonl"
    command = [sys.executable, "-m", "genrm", "score", "datasets/examples/reward_core.jsonl", "-o", str(output), "-q"]
    started = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(after_s)
    os.killpg(started.pid, signal.SIGINT)
    _, err = started.communicate(timeout=60)
    if started.returncode == 0:  # it had finished: nothing to interrupt
        return
    # 130, or ended by the signal itself (a shell's $? says 130 for both): CPython ends so at exit, after the line,
    # when the Ctrl-C met code a library ran through the C API's PyRun functions, or before any of genrm's code ran
    assert started.returncode in (130, -signal.SIGINT) and "Traceback" not in err and "zygote" not in err, err
    written = output.read_text().splitlines() if output.exists() else []
    if not err.strip():  # ended by the signal before any of genrm's code ran: nothing to say, nothing written
        assert started.returncode == -signal.SIGINT and not written
        return
    (line,) = err.strip().splitlines()
    assert line in ("genrm: interrupted", f"genrm score: interrupted: {len(written)} whole lines written to {output}")
    assert all(json.loads(text)["id"] for text in written)  # every line whole


def test_score_refuses_an_empty_file_and_a_file_of_judge_examples_in_one_line(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    blank = _genrm("score", str(empty))
    said = (
        f"genrm score: {empty} holds no instance (the file is empty or blank); "
        "give a JSONL file of one instance a line"
    )
    assert blank.returncode == 2 and blank.stderr.strip() == said
    examples = _genrm("score", "datasets/judge_synth/test.jsonl")
    (line,) = examples.stderr.strip().splitlines()
    assert examples.returncode == 2 and "holds judge examples" in line and "genrm eval reads" in line


@pytest.mark.parametrize("command", [["train", "sft"], ["train", "rlvr"], ["rl"], ["pairs", "train"]])
def test_a_recipe_mistake_is_one_line_and_the_cheap_ones_come_before_trl_is_imported(command, tmp_path):
    import time

    start = time.monotonic()
    bare, missing = _genrm(*command), _genrm(*command, "--config", str(tmp_path / "nope.yaml"))
    cheap_s = (time.monotonic() - start) / 2
    for done in (bare, missing):
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert cheap_s < 4.0  # about 0.5 s on 2 cores: no torch, no TRL (16-23 s when they came first)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_step: 20\nlearning_rat: 0.1\n")
    start = time.monotonic()
    typo = _genrm(*command, "--config", str(recipe))
    if command != ["pairs", "train"]:  # its parser imports no TRL config: quick either way
        assert time.monotonic() - start < 4.0  # about 0.7 s: the stored fields, not TRL's parser (6 s)
    (line,) = typo.stderr.strip().splitlines()
    assert typo.returncode == 2 and f"recipe {recipe} has keys that genrm {' '.join(command)} does not take" in line
    assert "'max_step' (did you mean 'max_steps'?)" in line
    assert "'learning_rat' (did you mean 'learning_rate'?)" in line
    recipe.write_text("- a list\n")
    listed = _genrm(*command, "--config", str(recipe))
    assert listed.returncode == 2 and "is not a mapping of fields" in listed.stderr


# each recipe command, its recipe and its flag that makes a tiny model where the model's folder is missing
_RECIPES = {("train", "sft"): ("recipes/sft_tiny_cpu.yaml", "--build_tiny_model"),
            ("train", "rlvr"): ("recipes/rlvr_tiny_cpu.yaml", "--build_tiny_model"),
            ("rl",): ("recipes/rl_tiny_cpu.yaml", "--build_tiny_policy")}  # fmt: skip


@pytest.mark.parametrize("command", list(_RECIPES))
@pytest.mark.parametrize(
    ("given", "said"),
    [(["--max_stepz", "3"], "takes no option '--max_stepz' (did you mean '--max_steps'?)"),
     (["--train_file", "{tmp}/nope.jsonl"], "train_file: no such file: '{tmp}/nope.jsonl'"),
     (["--model_name_or_path", "{tmp}/no-model", "{tiny}", "false"],
      "model_name_or_path: checkpoint folder '{tmp}/no-model' does not exist"),
     (["--resume_from_checkpoint", "last", "--output_dir", "{tmp}/fresh"],
      "resume_from_checkpoint: {tmp}/fresh holds no checkpoint-N folder to resume from")],
)  # fmt: skip
def test_a_recipe_settings_mistake_is_one_line_exit_2_in_about_a_second(command, given, said, tmp_path):
    import time

    recipe, tiny = _RECIPES[command]
    given = [arg.format(tmp=tmp_path, tiny=tiny) for arg in given]
    start = time.monotonic()
    done = _genrm(*command, "--config", recipe, *given)
    took = time.monotonic() - start
    (line,) = done.stderr.strip().splitlines()
    assert done.returncode == 2 and line.startswith(f"genrm {' '.join(command)}: error: ")
    assert said.format(tmp=tmp_path) in line, line
    assert took < 4.0  # 0.6-0.9 s on 2 cores: checked before TRL is imported (6-50 s when it came first)
    assert not (tmp_path / "no-model").exists()


def test_a_reward_server_url_given_to_score_says_what_score_takes():
    done = _genrm("score", "datasets/examples/reward_core.jsonl", "--judge", "http://127.0.0.1:8000")
    (line,) = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "is a bare URL: this command runs the judge itself" in line
    assert "sglang:MODEL@URL/v1" in line and "genrm rl" in line
