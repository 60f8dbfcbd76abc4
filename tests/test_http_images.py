"""A judge behind HTTP is sent image bytes, never a path or a URL for its host to open: the engine reads a path
itself, inside the data file's folder, and sends a checked data URI; a path out of the folder, a URL or a path with no
folder fails that request and reaches no judge. Through ``genrm score`` on the shipped captions too."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from fake_judge import FakeJudgeServer

from genrm.cli.main import main
from genrm.engine import ChatPrompt, ChatRequest, EngineOptions, make_judge, run_blocking
from genrm.methods.scene_images import scene_png

CAPTIONS = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "captions"


def _shown(body: dict) -> str | None:
    for part in body["messages"][-1]["content"] if isinstance(body["messages"][-1]["content"], list) else []:
        if part.get("type") == "image_url":
            return part["image_url"]["url"]
    return None


@pytest.fixture
def judge():
    with FakeJudgeServer() as server:
        server.state.responder = lambda body: "seen"
        yield server


def _engine(judge, image_dir):
    return make_judge(f"openai:fake@{judge.url}", EngineOptions(image_dir=image_dir)).engine


def test_a_path_inside_the_folder_is_sent_as_its_bytes_read_once_for_the_group(judge, tmp_path, monkeypatch):
    import genrm.engine.http as http

    png = scene_png("park.png")
    (tmp_path / "park.png").write_bytes(png)
    reads = []
    monkeypatch.setattr(http, "sendable_image", lambda ref, folder, budget: reads.append(ref) or _real(ref, folder))
    engine = _engine(judge, str(tmp_path))
    requests = [ChatRequest(ChatPrompt("s", f"u{i}", "park.png")) for i in range(4)]
    replies = run_blocking(engine.complete(requests))
    assert [r.error for r in replies] == [None] * 4 and reads == ["park.png"]
    shown = {_shown(body) for body in judge.state.requests}
    assert shown == {"data:image/png;base64," + base64.b64encode(png).decode()}


def _real(reference, folder):
    from genrm.engine.images import sendable_image

    return sendable_image(reference, folder)


@pytest.mark.parametrize(
    ("image", "folder", "words"),
    [
        ("../secret.png", "images", "outside the image folder"),
        ("https://example.com/a.png", "images", "is a URL"),
        ("file:///etc/passwd", "images", "is a URL"),
        ("park.png", None, "no image folder"),
        ("missing.png", "images", "does not exist"),
        ("junk.png", "images", "not a readable image"),
    ],
)
def test_what_cannot_be_sent_fails_its_request_and_reaches_no_judge(judge, tmp_path, image, folder, words):
    (tmp_path / "images").mkdir()
    (tmp_path / "secret.png").write_bytes(scene_png("park.png"))
    (tmp_path / "images" / "park.png").write_bytes(scene_png("park.png"))
    (tmp_path / "images" / "junk.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    engine = _engine(judge, str(tmp_path / folder) if folder else None)
    bad, good = run_blocking(engine.complete([ChatRequest(ChatPrompt("s", "u", image)),
                                              ChatRequest(ChatPrompt("s", "v", None))]))  # fmt: skip
    assert bad.error is not None and words in bad.error and good.error is None
    assert len(judge.state.requests) == 1 and _shown(judge.state.requests[0]) is None  # only the text-only one


def test_genrm_score_sends_the_shipped_images_as_bytes(judge, tmp_path):
    from genrm.methods.claimdiff.scene_judge import responder

    judge.state.responder = responder
    out = tmp_path / "rewards.jsonl"
    code = main(["score", str(CAPTIONS / "captions.jsonl"), "-o", str(out), "--method", "claimdiff", "--judge",
                 f"openai:fake@{judge.url}", "-q"])  # fmt: skip
    assert code == 0
    shown = {_shown(body) for body in judge.state.requests}
    assert len(shown) == 4 and all(uri.startswith("data:image/png;base64,") for uri in shown)
    sent = {base64.b64decode(uri.split(",", 1)[1]) for uri in shown}
    assert sent == {path.read_bytes() for path in CAPTIONS.glob("*.png")}
    # the scripted judge behind HTTP read the facts from the bytes: the same rewards as in process
    assert main(["score", str(CAPTIONS / "captions.jsonl"), "-o", str(tmp_path / "local.jsonl"), "--method",
                 "claimdiff", "--judge", "scripted", "-q"]) == 0  # fmt: skip
    rewards = [json.loads(line)["rewards"] for line in out.read_text().splitlines()]
    assert rewards == [json.loads(line)["rewards"] for line in (tmp_path / "local.jsonl").read_text().splitlines()]


def test_an_audit_whose_every_judgement_failed_says_so_and_exits_1(judge, tmp_path, capsys):
    source = tmp_path / "captions.jsonl"  # its image is not beside it: no judgement can be made
    source.write_text(json.dumps({"id": "p", "image": "nowhere.png", "reference": "A red car.",
                                  "responses": ["A red car."]}) + "\n")  # fmt: skip
    code = main(["audit", "captions", str(source), "--method", "balcap", "--judge", f"openai:fake@{judge.url}",
                 "-o", str(tmp_path / "out"), "-q"])  # fmt: skip
    assert code == 1 and "nothing could be judged" in capsys.readouterr().err
    assert judge.state.requests == []  # nothing of it reached the judge
