"""The transformers backend: a tiny judge checkpoint served in process, over real HTTP on loopback."""

from typing import get_args

import anyio
import pytest
from fake_judge import AppServer, ServeProcess
from pydantic import ValidationError

from genrm.engine import Judge, SamplingSettings
from genrm.engine.generation import LocalGenerator
from genrm.engine.local import LocalEngine
from genrm.methods.rubric.judge_output import FailureClass
from genrm.methods.rubric.planning import plan_rubric
from serving.app import create_app, make_server_judge
from serving.client import AsyncRewardClient, RewardClient, RewardServerError
from serving.settings import ServerSettings

JUDGE_FAILURES = set(get_args(FailureClass)) - {"unscored"}


def _failed(record) -> bool:
    """Whether the judge failed on this response (whole answer or a criterion), so that its reward is unknown."""
    return record.judge_failure is not None or any(c.status in JUDGE_FAILURES for c in record.criteria)


def _rewards_known_unless_the_judge_failed(results) -> None:
    for result in results:
        for reward, record in zip(result.rewards, result.records, strict=True):
            assert (reward is None) == _failed(record), record
            assert reward is None or 0.0 <= reward <= 1.0


def test_genrm_serve_with_a_local_checkpoint(tiny_judge_dir, example_instances):
    # fuzzy and verifiable criteria alike, under constrained decoding. The untrained model's answers are well formed
    # where they end, but it may loop inside a value until the token budget: that response's reward is then unknown,
    # with the judge's failure on record, and never a number.
    fuzzy = [i for i in example_instances if any(p.verifier is None for p in plan_rubric(i.rubric))]
    picked = example_instances[:8] + fuzzy[:4]
    args = ("--backend", "transformers", "--model", str(tiny_judge_dir), "--device", "cpu", "--max-tokens", "768")
    with ServeProcess(*args, "--log-level", "warning") as served, RewardClient(served.url, timeout_s=300) as client:
        health = client.health()
        results = client.score(picked)
        metrics = client._http.get("/metrics").text
    assert health.backend == "transformers" and health.backend_reachable and "xgrammar" in health.detail
    assert [r.id for r in results] == [i.id for i in picked]
    records = [record for result in results for record in result.records]
    assert len(records) == sum(len(i.responses) for i in picked)
    _rewards_known_unless_the_judge_failed(results)
    assert all(any("token budget" in c.reason for c in r.criteria) for r in records if r.judge_failure)
    judged = [c for r in records if not _failed(r) for c in r.criteria if c.verifier is None]
    assert all(c.score in (0.0, 0.5, 1.0) for c in judged)
    prompt_tokens = next(line for line in metrics.splitlines() if line.startswith('genrm_judge_tokens_total{kind="p'))
    assert float(prompt_tokens.split()[-1]) > 1000


def test_concurrent_requests_share_batches(tiny_judge_dir, example_instances):
    generator = LocalGenerator.from_pretrained(str(tiny_judge_dir), device="cpu", sampling=SamplingSettings(768))
    engine = LocalEngine(generator, max_batch_size=32, max_wait_s=0.05)
    picked = example_instances[:8]

    async def score_all(url):
        async with AsyncRewardClient(url, timeout_s=300) as client:
            results = [None] * len(picked)

            async def one(i):
                results[i] = (await client.score([picked[i]]))[0]

            async with anyio.create_task_group() as group:
                for i in range(len(picked)):
                    group.start_soon(one, i)
            return results

    with AppServer(create_app(ServerSettings(), judge=Judge(engine))) as server:
        results = anyio.run(score_all, server.root)
    assert [r.id for r in results] == [i.id for i in picked]
    _rewards_known_unless_the_judge_failed(results)
    # 8 groups arriving together are answered in fewer batches than groups
    assert 0 < engine.batches < len(picked)


def test_settings_of_the_transformers_backend(tmp_path):
    with pytest.raises(ValidationError, match="needs a model_path"):
        ServerSettings(backend="transformers")
    settings = ServerSettings(backend="transformers", model_path=str(tmp_path), max_batch_size=4, device="cpu")
    assert settings.judge.model == str(tmp_path) and settings.batch_wait_ms == 5.0


def test_a_missing_checkpoint_stops_the_server_with_a_message(tmp_path):
    with pytest.raises(RuntimeError, match="server did not start") as failure:
        with ServeProcess("--backend", "transformers", "--model", str(tmp_path / "absent"), startup_timeout_s=60):
            pass
    assert "absent" in str(failure.value)


def test_a_served_vision_language_judge_reads_data_uris_and_its_image_folder(tmp_path, tiny_vlm_judge_dir):
    import base64
    from pathlib import Path

    from genrm.methods.rubric.judge_data import read_examples
    from genrm.methods.rubric.models import Instance

    synth = Path(__file__).resolve().parents[1] / "datasets" / "judge_synth" / "test.jsonl"
    example = next(e for e in read_examples(synth.read_text().splitlines()) if e.image)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "sign.png").write_bytes(base64.b64decode(example.image.split(",", 1)[1]))
    (tmp_path / "private.png").write_bytes(base64.b64decode(example.image.split(",", 1)[1]))
    inline = Instance(id="inline", prompt=example.prompt, image=example.image, task_type=example.task_type,
                      rubric=example.rubric, responses=[example.response, "No idea."])  # fmt: skip
    by_path = inline.model_copy(update={"id": "by-path", "image": "sign.png"})
    escaping = inline.model_copy(update={"id": "escaping", "image": "../private.png"})
    judge = tiny_vlm_judge_dir
    args = ("--backend", "transformers", "--model", str(judge), "--device", "cpu", "--max-tokens", "512",
            "--exposure", "vlm", "--image-dir", str(tmp_path / "images"), "--log-level", "warning")  # fmt: skip
    with ServeProcess(*args) as served, RewardClient(served.url, timeout_s=300) as client:
        results = {r.id: r for r in client.score([inline, by_path])}
        with pytest.raises(RewardServerError) as refused:
            client.score([inline, escaping])
    for name in ("inline", "by-path"):
        assert all(record.judge_failure is None for record in results[name].records)
        assert all(reward is not None for reward in results[name].rewards)
    # the same image read from the folder as from the data URI: the same greedy judgements
    assert [r.criteria for r in results["inline"].records] == [r.criteria for r in results["by-path"].records]
    # a path out of the folder is the request's 422, naming the field; nothing of that request was judged
    assert refused.value.status == 422
    assert refused.value.detail[0]["loc"] == ["body", "groups", 1, "image"]
    assert "outside the image folder" in refused.value.detail[0]["msg"]


def test_a_text_only_judge_is_refused_for_the_vlm_exposure_at_start(tiny_judge_dir):
    settings = ServerSettings(backend="transformers", model_path=str(tiny_judge_dir), device="cpu", exposure="vlm")
    with pytest.raises(ValueError, match="text-only judge"):
        make_server_judge(settings)
