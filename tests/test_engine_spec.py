"""The one spelling of a judge: every form parses, prints back the same, and a malformed one says what is wrong."""

import pytest

from genrm.engine import JudgeSpec, make_engine
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
        ("vllm:judge@http://127.0.0.1:8000/v1", "unknown judge backend 'vllm'.*openai:MODEL@URL"),
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
        JudgeSpec("vllm", "m", ("http://h/v1",))  # type: ignore[arg-type]


def test_the_factory_builds_http_engines_and_refuses_rule():
    engine = make_engine(JudgeSpec.parse("sglang:m@http://127.0.0.1:9/v1"))
    assert isinstance(engine, HttpEngine) and engine.name == "sglang" and engine.model == "m"
    assert engine._health_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/health"
    plain = make_engine(JudgeSpec.parse("m@http://127.0.0.1:9/v1"))
    assert plain.name == "openai" and plain._health_url("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1/models"
    with pytest.raises(ValueError, match="no engine"):
        make_engine(JudgeSpec())


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
