"""One answer text from training to serving: the answers a judge is trained on are exactly what its grammar admits
(in process and as sent to vLLM), and what the grammar never admits is not read."""

import asyncio
import json

import httpx
import pytest

xgrammar = pytest.importorskip("xgrammar")
from xgrammar.testing import _get_matcher_from_grammar, _is_grammar_accept_string  # noqa: E402

from genrm.choices import SCORING_FORMATS  # noqa: E402
from genrm.engine import ChatPrompt, ChatRequest, JudgeSpec, make_engine  # noqa: E402
from genrm.engine.answer_grammar import GRAMMAR_OPTIONS, answer_ebnf, answer_text  # noqa: E402
from genrm.engine.endpoint import ChatEndpoint  # noqa: E402
from genrm.engine.http import HttpEngine  # noqa: E402
from genrm.methods.answer_json import extract_json_object  # noqa: E402
from genrm.methods.rubric.answer_schema import scoring_json_schema  # noqa: E402
from genrm.methods.rubric.judge_data import sft_record  # noqa: E402
from genrm.methods.rubric.synthetic import generate_examples  # noqa: E402


@pytest.fixture(scope="module")
def examples():
    return generate_examples(12, seed=5)


@pytest.mark.parametrize("answer_format", SCORING_FORMATS)
def test_every_training_answer_is_admitted_by_the_grammar_the_judge_decodes_under(examples, answer_format):
    for example in examples:
        for exposure in ("minimal", "no_verifier"):
            answer = sft_record(example, exposure, answer_format)["completion"][0]["content"]
            schema = scoring_json_schema(example.plans(exposure), answer_format=answer_format)
            # the grammar a judge decodes under, served and in process
            grammar = xgrammar.Grammar.from_ebnf(answer_ebnf(schema))
            assert _is_grammar_accept_string(grammar, answer), answer
            assert _is_grammar_accept_string(xgrammar.Grammar.from_ebnf(answer_ebnf(schema, portable=False)), answer)
            value = json.loads(answer)
            compact = json.dumps(value, separators=(",", ":"))  # what vLLM's disable_any_whitespace admits
            assert compact == answer or not _is_grammar_accept_string(grammar, compact)
            assert not _is_grammar_accept_string(grammar, json.dumps(value, indent=1))


def test_no_raw_control_character_is_admitted_or_read():
    # XGrammar's own grammar lets a raw tab into a string with maxLength (a rationale); the answer grammar does not,
    # in process and as sent to a served engine, and the readers do not read one
    bounded = {"type": "object", "properties": {"why": {"type": "string", "maxLength": 20}}, "required": ["why"]}
    assert _is_grammar_accept_string(xgrammar.Grammar.from_json_schema(json.dumps(bounded), **GRAMMAR_OPTIONS),
                                     '{"why": "a\tb"}')  # fmt: skip
    free = dict(bounded, properties={"why": {"type": "string"}})
    for schema in (bounded, free):
        grammar = xgrammar.Grammar.from_ebnf(answer_ebnf(schema))
        for control in ("\t", "\x00", "\x1f", "\n", "\r"):
            assert not _is_grammar_accept_string(grammar, '{"why": "a' + control + 'b"}'), repr(control)
        assert _is_grammar_accept_string(grammar, answer_text({"why": "a é~\x7f😀"}))
        # the bytes of a UTF-16 surrogate are not UTF-8 (three U+FFFD when decoded): not a character of a string in
        # process; the portable grammar served engines are sent cannot say so to XGrammar 0.2.7
        in_process = xgrammar.Grammar.from_ebnf(answer_ebnf(schema, portable=False))
        assert _is_grammar_accept_string(in_process, answer_text({"why": "a é~\x7f😀"}))
        for tried, admitted in ((in_process, False), (grammar, True)):
            matcher = _get_matcher_from_grammar(tried)
            assert (matcher.accept_string(b'{"why": "a\xed\xa0\x80"}') and matcher.is_terminated()) is admitted
    assert extract_json_object('{"why": "a\tb"}') is None
    assert extract_json_object('{"why": "a\\tb"}') == {"why": "a\tb"}  # an escaped tab is JSON


def _sent(spec: str) -> dict:
    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": '{"why": "x"}'}}]})

    engine = make_engine(JudgeSpec.parse(spec))
    assert isinstance(engine, HttpEngine)
    engine.endpoint = ChatEndpoint(engine.base_urls, engine.model, transport=httpx.MockTransport(handler))
    schema = {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}
    (reply,) = asyncio.run(engine.complete([ChatRequest(ChatPrompt("s", "u"), schema, "answer")]))
    assert reply.text == '{"why": "x"}'
    return bodies[0]


def test_vllm_is_sent_the_answer_grammar_and_an_openai_endpoint_the_schema():
    vllm = _sent("vllm:judge@http://judge/v1")
    assert "response_format" not in vllm
    assert vllm["structured_outputs"] == {"grammar": answer_ebnf(
        {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]})}  # fmt: skip
    plain = _sent("openai:judge@http://judge/v1")
    assert "structured_outputs" not in plain and plain["response_format"]["type"] == "json_schema"
