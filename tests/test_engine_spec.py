"""The one spelling of a judge: every form parses, prints back the same, and a malformed one says what is wrong."""

import pytest

from genrm.engine import JudgeSpec, make_engine
from genrm.engine.backends import backend, backend_names, spec_forms
from genrm.engine.http import HttpEngine


@pytest.mark.parametrize(
    ("text", "backend", "model", "urls"),
    [
        ("rule", "rule", None, ()),
        ("transformers:runs/judge", "transformers", "runs/judge", ()),
        ("transformers:Qwen/Qwen3-8B", "transformers", "Qwen/Qwen3-8B", ()),
        ("sglang:judge@http://10.0.0.5:30000/v1", "sglang", "judge", ("http://10.0.0.5:30000/v1",)),
        ("openai:gpt@https://a/v1,https://b/v1", "openai", "gpt", ("https://a/v1", "https://b/v1")),
        ("Qwen/Qwen3-235B@http://h:1/v1", "openai", "Qwen/Qwen3-235B", ("http://h:1/v1",)),
        ("openai:llama3:8b@http://h:1/v1", "openai", "llama3:8b", ("http://h:1/v1",)),
        ("  rule  ", "rule", None, ()),
    ],
)
def test_every_form_parses_and_prints_back(text, backend, model, urls):
    spec = JudgeSpec.parse(text)
    assert (spec.backend, spec.model, spec.urls) == (backend, model, urls)
    assert JudgeSpec.parse(str(spec)) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a judge is"),
        ("judge", "a judge is"),
        ("http://127.0.0.1:8000", "a judge is"),
        ("sglang:judge@", "a judge is"),
        ("sglang:@http://h/v1", "a judge is"),
        ("judge@ftp://h/v1", "must start with http"),
        ("transformers:", "needs a checkpoint path"),
        ("tgi:judge@http://127.0.0.1:8000/v1", "unknown judge backend 'tgi'.*openai:MODEL@URL.*vllm:MODEL@URL"),
        ("llama3:8b@http://h:1/v1", "unknown judge backend 'llama3'.*openai:NAME:TAG@URL"),
    ],
)
def test_malformed_specs_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        JudgeSpec.parse(text)


def test_fields_are_checked_when_built_directly():
    with pytest.raises(ValueError, match="no model"):
        JudgeSpec("rule", "m")
    with pytest.raises(ValueError, match="at least one base URL"):
        JudgeSpec("sglang", "m")
    with pytest.raises(ValueError, match="unknown judge backend"):
        JudgeSpec("tgi", "m", ("http://h/v1",))


def test_the_factory_builds_http_engines_and_refuses_rule():
    engine = make_engine(JudgeSpec.parse("sglang:m@http://127.0.0.1:9/v1"))
    assert isinstance(engine, HttpEngine) and engine.name == "sglang" and engine.model == "m"
    assert backend("sglang").health_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/health"
    plain = make_engine(JudgeSpec.parse("m@http://127.0.0.1:9/v1"))
    assert plain.name == "openai" and backend("openai").health_url("http://h:9/v1") == "http://h:9/v1/models"
    with pytest.raises(ValueError, match="no engine"):
        make_engine(JudgeSpec())
    with pytest.raises(ValueError, match="method_judge"):
        make_engine(JudgeSpec("scripted"))


@pytest.mark.parametrize("name", backend_names())
def test_every_backend_is_written_as_its_row_says_and_reads_back(name):
    row = backend(name)
    example = {"none": name, "checkpoint": f"{name}:some/dir", "served": f"{name}:m@http://h/v1,http://g/v1"}
    spec = JudgeSpec.parse(example[row.model])
    assert spec.backend == name and JudgeSpec.parse(str(spec)) == spec
    assert row.form in spec_forms()
    assert spec.takes_model == (row.model != "none") and spec.served == (row.model == "served")


def _toy_engine(spec, options):
    return ("toy engine", spec.model, tuple(spec.urls), options.timeout_s)


def test_a_new_backend_is_one_row_parsed_built_and_named_everywhere(monkeypatch):
    import argparse

    from genrm.cli.judging import judge_backend_options, judge_spec_from_args
    from genrm.engine.backends import BACKENDS, Backend
    from genrm.engine.spec import EngineOptions
    from serving.settings import ServerSettings

    row = Backend("toy", "served", "a toy engine", engine=f"{__name__}:_toy_engine", health="/ready")
    monkeypatch.setitem(BACKENDS, "toy", row)
    spec = JudgeSpec.parse("toy:m@http://h:1/v1")
    assert make_engine(spec, EngineOptions(timeout_s=7.0)) == ("toy engine", "m", ("http://h:1/v1",), 7.0)
    assert row.health_url("http://h:1/v1") == "http://h:1/ready" and "toy:MODEL@URL" in spec_forms()
    assert ServerSettings(judge="toy:m@http://h:1/v1").judge == spec
    assert ServerSettings(backend="toy", judge_model="m", judge_urls=["http://h:1/v1"]).judge == spec
    parser = argparse.ArgumentParser()
    judge_backend_options(parser)
    args = parser.parse_args(["--backend", "toy", "--model", "m", "--url", "http://h:1/v1"])
    assert judge_spec_from_args(args) == spec


def test_the_engine_decides_whether_a_schema_constrains_decoding():
    import asyncio
    import json

    import httpx

    from genrm.engine import ChatPrompt, ChatRequest
    from genrm.engine.endpoint import ChatEndpoint

    bodies = []

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "{}"}, "finish_reason": "length"}]})

    request = ChatRequest(ChatPrompt("s", "u"), {"type": "object"}, "answer_schema")

    async def ask(constrained):
        endpoint = ChatEndpoint(["http://judge/v1"], "m", transport=httpx.MockTransport(handler))
        engine = HttpEngine(endpoint, constrained=constrained)
        try:
            return await engine.complete([request])
        finally:
            await engine.aclose()

    (constrained,) = asyncio.run(ask(True))
    (free,) = asyncio.run(ask(False))
    assert bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer_schema", "schema": {"type": "object"}},
    }
    assert "response_format" not in bodies[1]
    assert constrained.finished is False and free.text == "{}"  # cut by the token budget, as the endpoint said


def test_a_judge_given_in_parts_is_checked_once_in_the_callers_names():
    assert JudgeSpec.spelled_out("vllm", "judge", ["http://h/v1"]) == JudgeSpec("vllm", "judge", ("http://h/v1",))
    assert JudgeSpec.spelled_out("transformers", "runs/j") == JudgeSpec("transformers", "runs/j")
    assert JudgeSpec.spelled_out("rule", None) == JudgeSpec("rule")
    for parts, said in [(("vllm", None, ["http://h/v1"]), "the vllm backend needs MODEL"),
                        (("vllm", "judge", []), "the vllm backend needs URLS"),
                        (("transformers", "runs/j", ["http://h/v1"]), "runs in process and takes no URLS"),
                        (("rule", "runs/j", []), "MODEL and URLS name a model judge: add BACKEND")]:  # fmt: skip
        with pytest.raises(ValueError, match=said):
            JudgeSpec.spelled_out(*parts, model_field="MODEL", urls_field="URLS", backend_field="BACKEND")
    with pytest.raises(ValueError, match="unknown judge backend 'nope'"):
        JudgeSpec.spelled_out("nope", "m")
