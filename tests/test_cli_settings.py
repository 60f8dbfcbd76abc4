"""Command-line options generated from a settings model: one per field, typed from the annotation, only what was
given passed on; `genrm serve` takes every ServerSettings field, in its one spelling."""

import argparse
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, SecretStr

from genrm.cli.settings import add_settings_options, given_settings
from serving.cli import _JUDGE_SPELLINGS, _NOT_OPTIONS
from serving.settings import ServerSettings


class Example(BaseModel):
    port: int = Field(8000, description="TCP port")
    ratio: float = 0.5
    mode: Literal["a", "b"] = "a"
    flag: bool = True
    urls: list[str] = Field(default_factory=list)
    path: Path | None = None
    secret: SecretStr | None = None
    extra: dict[str, int] = Field(default_factory=dict)


def _parse(*argv: str) -> dict:
    parser = argparse.ArgumentParser()
    names = add_settings_options(parser, Example)
    return given_settings(parser.parse_args(list(argv)), names)


def test_options_are_typed_from_the_annotations_and_only_given_ones_pass():
    assert _parse() == {}
    given = _parse("--port", "9", "--ratio", "0.25", "--mode", "b", "--no-flag", "--urls", "u1", "--urls", "u2",
                   "--path", "p", "--secret", "s", "--extra", '{"k": 1}')  # fmt: skip
    assert given == {"port": 9, "ratio": 0.25, "mode": "b", "flag": False, "urls": ["u1", "u2"], "path": "p",
                     "secret": "s", "extra": {"k": 1}}  # fmt: skip
    assert Example(**given).port == 9


@pytest.mark.parametrize("argv", [["--mode", "c"], ["--port", "x"], ["--extra", "[1]"]])
def test_bad_values_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        _parse(*argv)
    assert stopped.value.code == 2


def test_genrm_serve_has_an_option_for_every_setting_and_no_other_spelling():
    from genrm.cli import make_parser

    parser = make_parser()
    serve = parser._subparsers._group_actions[0].choices["serve"]  # argparse keeps subparsers there
    dests = {action.dest for action in serve._actions}
    assert set(ServerSettings.model_fields) - set(_NOT_OPTIONS) <= dests
    assert "judge_api_key" not in dests  # secrets come from the environment or the YAML file
    argv = ["serve", "--judge-urls", "http://a/v1", "--judge-urls", "http://b/v1", "--model-path", "m",
            "--judge-max-tokens", "64", "--group-wait-s", "3", "--launch", "--backend", "sglang"]  # fmt: skip
    args = parser.parse_args(argv)
    assert (args.judge_urls, args.model_path, args.judge_max_tokens, args.group_wait_s, args.launch) == (
        ["http://a/v1", "http://b/v1"],
        "m",
        64,
        3.0,
        True,
    )
    flags = {flag for action in serve._actions for flag in action.option_strings}
    generated = {"--" + name.replace("_", "-") for name in dests} | {f"--no-{n.replace('_', '-')}" for n in dests}
    shared = {flag for spellings in _JUDGE_SPELLINGS.values() for flag in spellings}
    assert flags - generated == {"-h"} | shared == {"-h", "--judge-url", "--model", "--max-tokens"}
    args = parser.parse_args(["serve", "--model", "m", "--max-tokens", "8", "--judge-url", "http://a/v1"])
    assert (args.model_path, args.judge_max_tokens, args.judge_urls) == ("m", 8, ["http://a/v1"])
    for older in ("--sglang-port", "--mem-fraction", "--group-wait", "--special-token"):  # nor a prefix of one
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", older, "x"])


def test_the_judge_setting_takes_the_one_spelling_and_refuses_a_second_one(monkeypatch):
    from genrm.engine import JudgeSpec

    text = "sglang:judge@http://10.0.0.5:30000/v1,http://10.0.0.6:30000/v1"
    settings = ServerSettings(judge=text)
    # parsed once, held as one typed value, never spread into the fields that spell it out
    assert settings.judge == JudgeSpec("sglang", "judge", ("http://10.0.0.5:30000/v1", "http://10.0.0.6:30000/v1"))
    assert (settings.backend, settings.judge_model, settings.judge_urls) == ("rule", None, [])
    assert settings.model_dump()["judge"] == text and ServerSettings(judge=settings.judge).judge == settings.judge
    local = ServerSettings(judge="transformers:runs/judge", max_batch_size=4, batch_wait_ms=20)
    assert (local.judge.backend, local.judge.model) == ("transformers", "runs/judge")
    options = local.engine_options()
    assert (options.max_batch_size, options.batch_wait_s, options.name) == (4, 0.02, "runs/judge")
    assert ServerSettings().judge == JudgeSpec()
    spelled_out = ServerSettings(backend="openai", judge_model="m", judge_urls=["http://h/v1"])
    assert str(spelled_out.judge) == "openai:m@http://h/v1"
    monkeypatch.setenv("GENRM_JUDGE", "openai:m@http://h/v1")  # a spec, not JSON, in the environment too
    assert ServerSettings().judge == spelled_out.judge
    with pytest.raises(ValueError, match="drop backend"):
        ServerSettings(judge="rule", backend="rule")
    with pytest.raises(ValueError, match="a judge is"):
        ServerSettings(judge="judge")
