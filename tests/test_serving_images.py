"""The server reads every image a client names itself and sends its judge checked bytes: hostile references are a
4xx naming the field, cost the judge nothing and never another client's group; a request's cost to the judge is
bounded; text UTF-8 cannot carry never reaches the judge. Everything here runs ``genrm serve`` as its own process on
loopback, with an OpenAI-compatible fake judge (the scripted claimdiff and pairwise scene judges) behind it."""

from __future__ import annotations

import base64
import io
import json

import httpx
import pytest
from fake_judge import AppServer, FakeJudgeServer, ServeProcess
from fastapi import FastAPI
from fastapi.responses import RedirectResponse, Response

from genrm.methods.claimdiff.scene_judge import responder
from genrm.methods.scene_images import scene_png

CAPTIONS = ["A red car. Two dogs.", "A red car. Three cats."]
REFERENCE = "A red car. Two dogs. A green bench."


def _group(image: str, captions: list[str] = CAPTIONS, ident: str = "park") -> dict:
    return {"id": ident, "image": image, "reference": REFERENCE, "responses": captions}


def _data_uri(data: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64," + base64.b64encode(data).decode()


def _serve(judge: FakeJudgeServer, *args: str, method: str = "claimdiff") -> ServeProcess:
    return ServeProcess("--method", method, "--judge", f"openai:fake-judge@{judge.url}", "--log-level", "warning",
                        *args)  # fmt: skip


@pytest.fixture(scope="module")
def judge():
    with FakeJudgeServer() as server:
        server.state.responder = responder
        yield server


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    (folder / "park.png").write_bytes(scene_png("park.png"))
    (tmp_path_factory.getbasetemp() / "secret.png").write_bytes(scene_png("park.png"))
    (folder / "escape.png").symlink_to(tmp_path_factory.getbasetemp() / "secret.png")
    return folder


@pytest.fixture(scope="module")
def server(judge, images):
    with _serve(judge, "--image-dir", str(images)) as served:
        yield served


HOSTILE = [
    "/etc/passwd",
    "/proc/self/environ",
    "../../etc/shadow",
    "escape.png",  # a link out of the image folder
    "missing.png",
    "file:///etc/passwd",
    "http://127.0.0.1:9/x.png",
    "https://169.254.169.254/latest/meta-data/",
    "gopher://127.0.0.1:70/_x",
    "data:text/plain,hello",
    "data:image/png;base64,!!!not-base64!!!",
    _data_uri(b"\x89PNG\r\n\x1a\n" + b"junk" * 1000),  # a PNG signature, then nothing an image is made of
    _data_uri(scene_png("park.png")[:60]),  # a truncated image
    "park.png\x00.txt",
]


@pytest.mark.slow
def test_hostile_image_references_are_a_422_naming_the_field_and_never_reach_the_judge(judge, server):
    before = len(judge.state.requests)
    with httpx.Client(base_url=server.url, timeout=60) as http:
        refused = [http.post("/v1/score", json={"groups": [_group("park.png", ident="ok"), _group(image)]})
                   for image in HOSTILE]  # fmt: skip
        by_payload = http.post("/judge", json={
            "data_source": "d", "query": "Describe.", "prompt": "p", "answer": "", "solution": REFERENCE,
            "response": CAPTIONS[0], "reward_verifier": "gemini_caption_diff", "reward_verifier_parm": "{}",
            "image_path": "/etc/passwd"})  # fmt: skip
        after = http.post("/v1/score", json={"groups": [_group("park.png")]})  # the same connection, still served
    assert [r.status_code for r in refused] == [422] * len(HOSTILE), [r.text[:200] for r in refused]
    for response in refused:
        detail = response.json()["detail"][0]
        assert detail["loc"] == ["body", "groups", 1, "image"] and detail["type"] == "image", detail
    messages = [r.json()["detail"][0]["msg"] for r in refused]
    assert "reads no image files" not in " ".join(messages)  # the server has an image folder: paths are confined
    assert "outside the image folder" in messages[0] and "outside the image folder" in messages[3]
    assert "only http and https" in messages[5] and "not fetched from" in messages[6]
    assert "not a readable image" in messages[11] and "not a readable image" in messages[12]
    assert by_payload.status_code == 422 and by_payload.json()["detail"][0]["loc"] == ["body", "image_path"]
    assert after.status_code == 200 and after.json()["groups"][0]["rewards"][0] is not None
    sent = judge.state.requests[before:]
    assert len(sent) == len(CAPTIONS)  # only the last, good request was judged
    shown = {body["messages"][-1]["content"][0]["image_url"]["url"] for body in sent}
    assert shown == {_data_uri(scene_png("park.png"))}


@pytest.mark.slow
def test_without_an_image_folder_a_path_is_refused_and_a_data_uri_is_judged(judge):
    inline = _data_uri(scene_png("park.png"))
    with _serve(judge) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        path = http.post("/v1/score", json={"groups": [_group("park.png")]})
        data = http.post("/v1/score", json={"groups": [_group(inline)]})
    assert path.status_code == 422 and "reads no image files" in path.json()["detail"][0]["msg"]
    assert data.status_code == 200 and None not in data.json()["groups"][0]["rewards"]


def _image_host() -> AppServer:
    app = FastAPI()
    png = scene_png("park.png")

    @app.get("/park.png")
    async def park() -> Response:
        return Response(png, media_type="image/png")

    @app.get("/moved.png")
    async def moved() -> RedirectResponse:
        return RedirectResponse("/park.png")

    @app.get("/huge.png")
    async def huge() -> Response:
        return Response(b"\0" * 200_000, media_type="image/png")

    return AppServer(app)


@pytest.mark.slow
def test_urls_are_fetched_only_from_allowed_hosts_and_public_addresses_unless_allowed(judge):
    with _image_host() as host:
        url = f"{host.root}/park.png"
        with (
            _serve(judge, "--image-url-hosts", "127.0.0.1") as served,
            httpx.Client(base_url=served.url, timeout=60) as http,
        ):
            private = http.post("/v1/score", json={"groups": [_group(url)]})
        allowed = ("--image-url-hosts", "localhost", "--image-private-addresses", "--max-image-bytes",
                   "100000")  # fmt: skip
        with _serve(judge, *allowed) as served, httpx.Client(base_url=served.url, timeout=60) as http:
            other_host = http.post("/v1/score", json={"groups": [_group(url)]})
            local = url.replace("127.0.0.1", "localhost")
            fetched = http.post("/v1/score", json={"groups": [_group(local)]})
            redirected = http.post("/v1/score", json={"groups": [_group(local.replace("park", "moved"))]})
            too_big = http.post("/v1/score", json={"groups": [_group(local.replace("park", "huge"))]})
    assert private.status_code == 422 and "non-public address" in private.json()["detail"][0]["msg"]
    assert other_host.status_code == 422 and "not fetched from '127.0.0.1'" in other_host.json()["detail"][0]["msg"]
    assert fetched.status_code == 200 and None not in fetched.json()["groups"][0]["rewards"]
    assert redirected.status_code == 422 and "redirects are not followed" in redirected.json()["detail"][0]["msg"]
    assert too_big.status_code == 413 and too_big.json()["detail"][0]["loc"] == ["body", "groups", 0, "image"]


def test_a_url_that_drips_its_bytes_is_refused_when_the_whole_fetch_passes_its_time():
    import asyncio
    import time

    from fastapi.responses import StreamingResponse

    from serving.images import ImagePolicy, ImageRefused, _fetch

    app = FastAPI()

    @app.get("/drip.png")
    async def drip() -> StreamingResponse:
        async def bytes_slowly():
            for _ in range(120):  # a byte every 0.1 s: every read is quick, the whole takes 12 s
                yield b"\0"
                await asyncio.sleep(0.1)

        return StreamingResponse(bytes_slowly(), media_type="image/png")

    policy = ImagePolicy(url_hosts=("localhost",), private_addresses=True, fetch_timeout_s=1.0)
    with AppServer(app) as host:
        started = time.monotonic()
        with pytest.raises(ImageRefused, match="did not arrive within 1 s"):
            _fetch(f"{host.root.replace('127.0.0.1', 'localhost')}/drip.png", policy)
        elapsed = time.monotonic() - started
    assert elapsed < 6  # about 1 s; each read took 0.1 s, so the 12 s the drip lasts was never waited for


def test_a_url_whose_head_drips_is_refused_when_the_whole_fetch_passes_its_time():
    import socket
    import threading
    import time

    from serving.images import ImagePolicy, ImageRefused, _fetch

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def head_a_line_at_a_time() -> None:  # a status line, then a header line every 0.2 s for 30 s: no body ever
        connection, _ = listener.accept()
        with connection:
            connection.recv(65_536)
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            for i in range(150):
                if stop.wait(0.2):
                    return
                try:
                    connection.sendall(b"X-Slow-%d: a\r\n" % i)
                except OSError:  # the fetch gave up and closed: what is asserted
                    return

    host = threading.Thread(target=head_a_line_at_a_time, daemon=True)
    host.start()
    policy = ImagePolicy(url_hosts=("localhost",), private_addresses=True, fetch_timeout_s=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(ImageRefused, match="did not arrive within 1 s"):
            _fetch(f"http://localhost:{listener.getsockname()[1]}/head.png", policy)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        host.join(timeout=10)
        listener.close()
    assert elapsed < 6  # about 1 s; each header line came within 0.2 s, so a per-read limit alone would wait 30 s


def _png_of(width: int, height: int) -> bytes:
    # noise from a fixed seed: a PNG of about 3 bytes a pixel, where a flat colour would compress to nothing
    import random

    from PIL import Image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (width, height), random.Random(0).randbytes(3 * width * height)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.mark.slow
def test_images_over_the_limits_and_requests_over_the_judge_budget_are_a_413_before_any_call(judge):
    image = _data_uri(scene_png("park.png"))
    budget = ("--max-image-pixels", "10000", "--max-judge-bytes", "200000", "--max-judge-calls", "40")
    before = len(judge.state.requests)
    with _serve(judge, *budget) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        pixels = http.post("/v1/score", json={"groups": [_group(_data_uri(_png_of(200, 100)))]})
        calls = http.post("/v1/score", json={"groups": [_group(image, CAPTIONS * 8, f"g{k}") for k in range(3)]})
        heavy = _data_uri(_png_of(100, 100))  # within the pixels (about 30 kB); 20 calls that each carry it are not
        size = http.post("/v1/score", json={"groups": [_group(heavy, CAPTIONS * 10)]})
        within = http.post("/v1/score", json={"groups": [_group(image, CAPTIONS * 8)]})
    assert pixels.status_code == 413 and "more than 10000" in pixels.json()["detail"][0]["msg"]
    assert calls.status_code == 413 and "48 calls" in calls.json()["detail"][0]["msg"], calls.text
    assert size.status_code == 413 and "20 calls" in size.json()["detail"][0]["msg"], size.text  # within the calls
    assert within.status_code == 200
    assert len(judge.state.requests) - before == 16  # only the request within the budget was judged


@pytest.mark.slow
def test_the_pairwise_budget_counts_both_orders_of_every_comparison(judge):
    group = {"id": "p", "prompt": "Which is better?", "reference": "B", "responses": ["A"] * 12}
    with _serve(judge, "--max-judge-calls", "20", method="pairwise") as served:
        with httpx.Client(base_url=served.url, timeout=60) as http:
            refused = http.post("/v1/score", json={"groups": [group]})
    assert refused.status_code == 413 and "24 calls" in refused.json()["detail"][0]["msg"], refused.text


@pytest.mark.slow
def test_a_lone_surrogate_reaches_no_judge_and_the_answer_says_it_was_replaced(judge, server):
    body = json.dumps({"groups": [_group("park.png", ["A red car. Two dogs.\ud800", CAPTIONS[1]])]})
    label = json.dumps(_group("park.png", []))
    reward = json.dumps({"query": ["Describe.A red car.\udfff"], "prompts": ["Describe."], "labels": [label]})
    before = len(judge.state.requests)
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=server.url, timeout=60) as http:
        scored = http.post("/v1/score", content=body, headers=headers)
        rewarded = http.post("/get_reward", content=reward, headers=headers)
        after = http.post("/v1/score", json={"groups": [_group("park.png")]})
    assert scored.status_code == 200 and scored.json()["groups"][0]["replaced_text"] == [0], scored.text
    assert None not in scored.json()["groups"][0]["rewards"]
    assert rewarded.status_code == 200 and rewarded.json()["extra_logs"]["text_replaced"] == [1.0], rewarded.text
    assert after.status_code == 200
    users = [body["messages"][-1]["content"][1]["text"] for body in judge.state.requests[before:]]
    assert any("\ufffd" in text for text in users) and not any("\ud800" in text for text in users)


@pytest.mark.parametrize(
    "host, allowed",
    [("images.example.org", True), ("IMAGES.example.org.", True), ("cdn.example.org", False),
     ("a.static.example.com", True), ("static.example.com", False), ("evilstatic.example.com", False),
     ("example.org", False)],
)  # fmt: skip
def test_url_hosts_are_matched_by_name_or_by_subdomain_wildcard(host, allowed):
    from serving.images import ImagePolicy

    policy = ImagePolicy(url_hosts=("images.example.org", "*.static.example.com"))
    assert policy.allows_host(host) is allowed


def test_a_checked_image_keeps_its_bytes_and_only_png_jpeg_webp_and_gif_are_opened():
    from PIL import Image

    from genrm.engine.images import ImageError, ImageTooLarge, checked_image_data_uri, load_image

    png = scene_png("park.png")
    assert checked_image_data_uri(png) == _data_uri(png)
    for kind in ("JPEG", "WEBP", "GIF"):
        buffer = io.BytesIO()
        Image.new("RGB", (5, 3), (9, 8, 7)).save(buffer, format=kind)
        assert checked_image_data_uri(buffer.getvalue()).startswith(f"data:image/{kind.lower()};base64,")
    # Pillow would open these, an EPS through Ghostscript where it is installed: never guessed, whatever the URI says
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 5 3\nshowpage\n"
    for kind, data in (("BMP", None), ("TIFF", None), ("EPS", eps)):
        if data is None:
            buffer = io.BytesIO()
            Image.new("RGB", (5, 3), (9, 8, 7)).save(buffer, format=kind)
            data = buffer.getvalue()
        with pytest.raises(ImageError, match="of the formats read .PNG, JPEG, WEBP, GIF."):
            checked_image_data_uri(data)
        with pytest.raises(ImageError, match="of the formats read"):
            load_image("data:image/png;base64," + base64.b64encode(data).decode())
    with pytest.raises(ImageTooLarge, match="more than 10"):
        checked_image_data_uri(png, max_pixels=10)
    with pytest.raises(ImageError, match="not a readable image"):
        checked_image_data_uri(png[: len(png) // 2])


def test_a_remembered_image_is_read_once_and_the_memory_stays_within_its_bytes(tmp_path, monkeypatch):
    from pathlib import Path

    from serving.images import ImagePolicy, ImageResolver

    (tmp_path / "a.png").write_bytes(scene_png("a"))
    resolver = ImageResolver(ImagePolicy(image_dir=tmp_path), cache_bytes=300)
    first = resolver.resolve("a.png")
    reads = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda path: reads.append(path) or read_bytes(path))
    assert resolver.resolve("a.png") == first and reads == []  # the same file, unchanged: not read again
    (tmp_path / "a.png").write_bytes(scene_png("b", side=5))  # a changed file is read again
    assert resolver.resolve("a.png") != first
    uri = _data_uri(scene_png("c"))
    assert resolver.resolve(uri) == uri and resolver._held <= 300
