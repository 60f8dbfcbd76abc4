"""Contract: the chat requests our judge backends send validate against SGLang's own request model.

SGLang needs a GPU and pins its own dependencies, so it lives in a separate environment: point
``GENRM_SGLANG_PYTHON`` at its interpreter (``pip install --no-deps sglang`` plus the protocol module's imports; see
DESIGN.md; with sglang 0.5.23 the chain also imports `triton`). Without it this test is skipped, never counted
as passed.
"""

import json
import os
import subprocess

import pytest

from genrm.prompts import EXPOSURES, build_scoring_prompt, exposed_plans
from genrm.rubric import plan_rubric
from serving.openai_backend import OpenAIBackend, SamplingSettings

SGLANG_PYTHON = os.environ.get("GENRM_SGLANG_PYTHON")

_CHECK = """
import json, sys
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
payloads = json.load(open(sys.argv[1]))
for payload in payloads:
    request = ChatCompletionRequest.model_validate(payload)
    assert request.response_format is not None and request.response_format.type == "json_schema", payload
    assert request.response_format.json_schema.schema_ == payload["response_format"]["json_schema"]["schema"]
    assert request.temperature == payload["temperature"] and request.max_tokens == payload["max_tokens"]
print(len(payloads))
"""


def _payloads(instances) -> list[dict]:
    backend = OpenAIBackend(["http://127.0.0.1:1/v1"], "judge", sampling=SamplingSettings(max_tokens=512, seed=7))
    payloads = []
    for instance in instances:
        for exposure in EXPOSURES:
            plans = exposed_plans(plan_rubric(instance.rubric, instance.task_type), exposure)
            prompt = build_scoring_prompt(instance.prompt, plans, instance.responses[0], exposure,
                                          image="data:image/png;base64,iVBORw0KGgo=")  # fmt: skip
            from genrm.output_schema import response_format

            payloads.append(backend._payload(prompt, response_format(plans)))
    return payloads


@pytest.mark.skipif(SGLANG_PYTHON is None, reason="GENRM_SGLANG_PYTHON (an environment with sglang) is not set")
def test_requests_validate_against_sglang_protocol(example_instances, tmp_path):
    payloads = _payloads(example_instances)
    path = tmp_path / "payloads.json"
    path.write_text(json.dumps(payloads))
    done = subprocess.run([SGLANG_PYTHON, "-c", _CHECK, str(path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) == len(payloads) == len(example_instances) * len(EXPOSURES)
