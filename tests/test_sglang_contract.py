"""Contract: the chat requests the ``sglang`` judge backend sends validate against SGLang's own request model, their
answer grammar (``ebnf``) is kept, and XGrammar (SGLang's grammar backend, at the version SGLang pins) compiles it,
accepts the answers a judge is trained to write and rejects wrong ones.

SGLang needs a GPU and pins its own dependencies, so it lives in a separate environment: point
``GENRM_SGLANG_PYTHON`` at its interpreter. ``.ci/conformance-envs`` builds it (``pip install --no-deps sglang``,
the protocol module's imports, and ``xgrammar==0.2.7``, the version SGLang 0.5.23 pins); CI runs this test with it.
Without it this test is skipped, never counted as passed.
"""

import json
import os
import subprocess

import pytest
from fake_judge import judge_answer

from genrm.choices import DEFAULT_SCORING_FORMAT
from genrm.engine import ChatRequest, SamplingSettings
from genrm.engine.endpoint import ChatEndpoint
from genrm.engine.http import constraint
from genrm.methods.rubric.answer_schema import scoring_json_schema
from genrm.methods.rubric.authoring import build_rubric_prompt
from genrm.methods.rubric.planning import plan_rubric
from genrm.methods.rubric.prompts import EXPOSURES, build_scoring_prompt, exposed_plans
from genrm.methods.rubric.readers import SCORING_SCHEMA_NAME
from genrm.methods.rubric.teacher_rubrics import RUBRIC_SCHEMA

SGLANG_PYTHON = os.environ.get("GENRM_SGLANG_PYTHON")

_CHECK = """
import json, sys
import xgrammar
from xgrammar.testing import _is_grammar_accept_string
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
cases = json.load(open(sys.argv[1]))
for case in cases:
    payload = case["payload"]
    request = ChatCompletionRequest.model_validate(payload)
    assert request.response_format is None and request.ebnf == payload["ebnf"], payload
    assert request.temperature == payload["temperature"]
    assert request.max_completion_tokens == payload["max_completion_tokens"]
    grammar = xgrammar.Grammar.from_ebnf(request.ebnf)
    assert _is_grammar_accept_string(grammar, case["answer"]), case["answer"]
    assert not _is_grammar_accept_string(grammar, case["wrong"]), case["wrong"]
print(len(cases))
"""


def _wrong(answer: str) -> str:
    """The answer with its first credit corrupted: a fuzzy 0.3, or a call with a double-quoted string."""
    value = json.loads(answer)
    item = value["essential"][0]
    item["credit"] = 0.3 if isinstance(item["credit"], (int, float)) else 'expr_verify(predict="1")'
    return json.dumps(value)


def _cases(instances) -> list[dict]:
    # the same transport (and request body) serves the judge backends and the teachers
    endpoint = ChatEndpoint(["http://127.0.0.1:1/v1"], "judge")
    sampling = SamplingSettings(max_tokens=512, seed=7)
    cases = []
    for instance in instances:
        # every exposure in the default answer format, and the minimal one in the rlr3 and evidence formats too
        others = [("minimal", "rlr3"), ("minimal", "evidence")]
        for exposure, answer_format in [(e, DEFAULT_SCORING_FORMAT) for e in EXPOSURES] + others:
            plans = exposed_plans(plan_rubric(instance.rubric, instance.task_type), exposure)
            prompt = build_scoring_prompt(instance.prompt, plans, instance.responses[0], exposure,
                                          image="data:image/png;base64,iVBORw0KGgo=",
                                          answer_format=answer_format)  # fmt: skip
            answer = judge_answer(
                prompt.user, copy_criteria=answer_format == "rlr3", quote=answer_format == "evidence"
            )
            schema = scoring_json_schema(plans, answer_format=answer_format)
            request = ChatRequest(prompt, schema, SCORING_SCHEMA_NAME)
            payload = endpoint.payload(prompt.messages(), sampling, *constraint("sglang", request))
            cases.append({"payload": payload, "answer": answer, "wrong": _wrong(answer)})
        # a teacher writing a rubric: its answer is constrained to the rubric schema
        rubric_prompt = build_rubric_prompt(instance.prompt, instance.reference_answer, instance.task_type)
        rubric_constraint = constraint("sglang", ChatRequest(rubric_prompt, RUBRIC_SCHEMA, "rubric"))
        wrong = instance.rubric.model_dump()
        wrong["essential"][0]["weight"] = 5
        cases.append({"payload": endpoint.payload(rubric_prompt.messages(), sampling, *rubric_constraint),
                      "answer": json.dumps(instance.rubric.model_dump()), "wrong": json.dumps(wrong)})  # fmt: skip
    return cases


@pytest.mark.skipif(SGLANG_PYTHON is None, reason="GENRM_SGLANG_PYTHON (an environment with sglang) is not set")
def test_requests_validate_against_sglang_protocol(example_instances, tmp_path):
    cases = _cases(example_instances)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    done = subprocess.run([SGLANG_PYTHON, "-c", _CHECK, str(path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) == len(cases) == len(example_instances) * (len(EXPOSURES) + 3)


_FLAGS = """
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
args = parser.parse_args(json.loads(sys.argv[1]))
print(json.dumps({"tp": args.tp_size, "dp": args.dp_size, "mem": args.mem_fraction_static, "port": args.port,
                  "name": args.served_model_name, "metrics": args.enable_metrics, "key": args.api_key,
                  "dtype": args.dtype}))
"""


@pytest.mark.skipif(SGLANG_PYTHON is None, reason="GENRM_SGLANG_PYTHON (an environment with sglang) is not set")
def test_launch_flags_parse_with_sglang():
    from serving.launcher import SGLangLaunch

    launch = SGLangLaunch("/models/judge", port=31000, tp_size=2, dp_size=4, mem_fraction_static=0.75, api_key="k",
                          served_model_name="judge", context_length=8192, dtype="bfloat16")  # fmt: skip
    flags = launch.command()[len(launch.program) :]
    done = subprocess.run([SGLANG_PYTHON, "-c", _FLAGS, json.dumps(flags)], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    parsed = json.loads(done.stdout.strip().splitlines()[-1])
    assert parsed == {"tp": 2, "dp": 4, "mem": 0.75, "port": 31000, "name": "judge", "metrics": True, "key": "k",
                      "dtype": "bfloat16"}  # fmt: skip
