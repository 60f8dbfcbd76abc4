"""Every judge sees an image of at most its pixel budget (ClaimDiff-RL's ``max_image_token``): a larger image is
scaled down, aspect ratio kept, before it is sent to a judge behind HTTP or encoded for one run in process; one that
fits is sent byte for byte. The budget reaches the engines from the command line and the server's settings."""

from __future__ import annotations

import base64
import io

import pytest
from fake_judge import FakeJudgeServer
from PIL import Image

from genrm.engine import ChatPrompt, ChatRequest, EngineOptions, make_judge, run_blocking
from genrm.engine.images import DEFAULT_IMAGE_BUDGET, decode_data_uri, fitted_size, load_sent_image


def _encoded(size: tuple[int, int], kind: str) -> bytes:
    buffer = io.BytesIO()
    image = Image.new("RGB", size, (200, 30, 30))
    image.paste((30, 30, 200), (0, 0, size[0] // 2, size[1]))  # a left half that must stay the left half
    image.save(buffer, format=kind)
    return buffer.getvalue()


@pytest.mark.parametrize(("size", "budget"), [((4000, 3000), DEFAULT_IMAGE_BUDGET), ((1001, 7), 1000),
                                              ((3, 5000), 4999), ((640, 480), 640 * 480)])  # fmt: skip
def test_the_fitted_size_keeps_the_aspect_ratio_within_the_budget(size, budget):
    width, height = fitted_size(*size, budget)
    assert width * height <= budget and width >= 1 and height >= 1
    if size[0] * size[1] <= budget:
        assert (width, height) == size
    else:
        ratio = size[0] / size[1]  # each side is at most one pixel short of its exact scaled length
        assert abs(width / height - ratio) <= ratio * (1 / width + 1 / height) + 1e-9
        assert (width + 1) * (height + 1) > budget  # not smaller than it needs to be


def _judge_server():
    server = FakeJudgeServer()
    server.state.responder = lambda body: "seen"
    return server


def _sent(body: dict) -> bytes:
    part = next(p for p in body["messages"][-1]["content"] if p.get("type") == "image_url")
    return decode_data_uri(part["image_url"]["url"])


@pytest.mark.parametrize("kind", ["PNG", "JPEG"])
def test_an_http_judge_is_sent_a_large_image_scaled_down_and_a_small_one_as_it_is(tmp_path, kind):
    large, small = _encoded((1600, 1200), kind), _encoded((64, 48), kind)
    (tmp_path / "large.img").write_bytes(large)
    (tmp_path / "small.img").write_bytes(small)
    uri = f"data:image/{kind.lower()};base64," + base64.b64encode(large).decode()
    budget = 400 * 300
    with _judge_server() as judge:
        engine = make_judge(f"openai:fake@{judge.url}", EngineOptions(image_dir=str(tmp_path),
                                                                     image_budget=budget)).engine  # fmt: skip
        replies = run_blocking(engine.complete([ChatRequest(ChatPrompt("s", "a", "large.img")),
                                                ChatRequest(ChatPrompt("s", "b", "small.img")),
                                                ChatRequest(ChatPrompt("s", "c", uri))]))  # fmt: skip
        sent = {body["messages"][-1]["content"][-1]["text"]: _sent(body) for body in judge.state.requests}
    assert [r.error for r in replies] == [None] * 3
    assert sent["b"] == small  # fits: its own bytes
    for key in ("a", "c"):  # a path and a data URI alike
        with Image.open(io.BytesIO(sent[key])) as shown:
            assert shown.format == kind and shown.size == (400, 300)
            rgb = shown.convert("RGB")
            assert rgb.getpixel((50, 150))[2] > 150 and rgb.getpixel((350, 150))[0] > 150  # left blue, right red


def test_no_budget_sends_every_image_at_its_own_size(tmp_path):
    large = _encoded((1600, 1200), "PNG")
    (tmp_path / "large.png").write_bytes(large)
    with _judge_server() as judge:
        engine = make_judge(f"openai:fake@{judge.url}", EngineOptions(image_dir=str(tmp_path),
                                                                     image_budget=None)).engine  # fmt: skip
        (reply,) = run_blocking(engine.complete([ChatRequest(ChatPrompt("s", "a", "large.png"))]))
        assert reply.error is None and _sent(judge.state.requests[0]) == large


def test_a_judge_in_process_is_shown_the_image_within_its_budget(tmp_path):
    (tmp_path / "large.jpg").write_bytes(_encoded((1600, 1200), "JPEG"))
    assert load_sent_image("large.jpg", tmp_path, budget=1200).size == (40, 30)
    assert load_sent_image("large.jpg", tmp_path).size == (1600, 1200)


def test_the_budget_reaches_the_engine_from_the_command_line_and_the_server_settings(capsys):
    import argparse

    from genrm.cli.judging import judge_backend_options
    from serving.settings import ServerSettings

    parser = argparse.ArgumentParser()
    judge_backend_options(parser)
    assert parser.parse_args([]).judge_image_pixels == DEFAULT_IMAGE_BUDGET == EngineOptions().image_budget
    assert parser.parse_args(["--judge-image-pixels", "5000"]).judge_image_pixels == 5000
    with pytest.raises(SystemExit):
        parser.parse_args(["--judge-image-pixels", "-1"])
    assert "between 0 (no limit)" in capsys.readouterr().err
    assert ServerSettings().engine_options().image_budget == DEFAULT_IMAGE_BUDGET
    assert ServerSettings(judge_image_pixels=0).engine_options().image_budget is None
    assert ServerSettings(judge_image_pixels=5000).engine_options().image_budget == 5000


def test_the_budget_reaches_a_judge_run_from_the_policys_trainers_and_bad_values_are_named():
    from genrm.engine.images import image_budget
    from genrm.methods import make_method
    from policy_rl.grpo import PolicyRLArguments
    from policy_rl.scorers import make_scorer
    from policy_rl.verl_reward import compute_score_batch

    assert image_budget("5000", "x") == 5000 and image_budget(0, "x") is None
    for bad in ("-1", "lots", 2**40):
        with pytest.raises(ValueError, match="^judge_image_pixels must be"):
            image_budget(bad, "judge_image_pixels")
    with FakeJudgeServer() as judge:
        method = make_method("balcap")
        scorer = make_scorer(f"openai:fake@{judge.url}", method, image_budget=5000)
        assert scorer.judge.engine.image_budget == 5000
        assert make_scorer(f"openai:fake@{judge.url}", method).judge.engine.image_budget == DEFAULT_IMAGE_BUDGET
    assert PolicyRLArguments().judge_image_pixels == DEFAULT_IMAGE_BUDGET
    with pytest.raises(ValueError, match="verl's reward kwargs: judge_image_pixels: must be between"):
        compute_score_batch(["x"], ["y"], ["{}"], None, judge_image_pixels=-1)


def test_trls_command_line_reads_the_budget_from_the_environment(monkeypatch):
    from policy_rl import trl_rewards

    monkeypatch.setenv("GENRM_JUDGE_IMAGE_PIXELS", "many")
    monkeypatch.setenv("GENRM_METHOD", "balcap")
    trl_rewards._method_reward.cache_clear()
    try:
        with pytest.raises(ValueError, match="GENRM_JUDGE_IMAGE_PIXELS: must be a whole number"):
            trl_rewards.method_reward(["p"], ["c"], genrm_instance=["{}"])
    finally:
        trl_rewards._method_reward.cache_clear()
