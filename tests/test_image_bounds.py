"""Images are decoded within bounds of time, memory, scans and frames, in worker processes that can be stopped, and
the decoding workers are shared fairly between requests."""

import asyncio
import base64
import io

import numpy as np
import pytest
from PIL import Image

from genrm.engine.images import MAX_JPEG_SCANS, ImageError, ImageTooLarge, checked_image_data_uri
from serving.defences.fair_slots import FairSlots
from serving.defences.image_workers import ImageDecoders


def _encoded(image: Image.Image, kind: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, kind, **options)
    return buffer.getvalue()


def _noise(width: int, height: int) -> Image.Image:
    return Image.fromarray(np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8))


def _many_scans(scans: int) -> bytes:
    """A progressive JPEG whose last scan is repeated until it has ``scans`` scans (libjpeg decodes every one)."""
    data = _encoded(_noise(64, 64), "JPEG", progressive=True, quality=90)
    last, end = data.rindex(b"\xff\xda"), data.rindex(b"\xff\xd9")
    return data[:last] + data[last:end] * (scans - data.count(b"\xff\xda") + 1) + data[end:]


def test_a_jpeg_of_too_many_scans_is_refused_before_decoding_and_an_ordinary_progressive_one_is_read():
    ordinary = _encoded(_noise(64, 64), "JPEG", progressive=True, quality=90)
    assert checked_image_data_uri(ordinary).startswith("data:image/jpeg;base64,")
    assert checked_image_data_uri(_many_scans(MAX_JPEG_SCANS)).startswith("data:image/jpeg;base64,")
    with pytest.raises(ImageTooLarge, match="scans"):
        checked_image_data_uri(_many_scans(MAX_JPEG_SCANS + 1))


def test_an_animation_is_sent_as_its_first_frame():
    frames = [Image.new("RGB", (8, 8), color) for color in ("red", "green", "blue")]
    gif = io.BytesIO()
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    uri = checked_image_data_uri(gif.getvalue())
    assert uri.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as sent:
        assert not getattr(sent, "is_animated", False) and sent.convert("RGB").getpixel((0, 0)) == (255, 0, 0)


def test_a_worker_past_its_deadline_is_stopped_and_the_next_image_is_read_by_a_fresh_one():
    decoders = ImageDecoders(timeout_s=0.001, memory_mb=512)
    try:
        big = _encoded(_noise(1000, 1000), "PNG")  # 3 MB to send and decode: never within a millisecond
        with pytest.raises(ImageTooLarge, match="decode"):
            decoders.check(big, 10**8)
        decoders.timeout_s = 30.0
        small = _encoded(_noise(8, 8), "PNG")
        assert decoders.check(small, 10**8) == checked_image_data_uri(small)
        with pytest.raises(ImageError, match="not a readable image"):  # a refusal keeps its message and its worker
            decoders.check(b"GIF89a" + b"\0" * 20, 10**8)
    finally:
        decoders.close()


def test_an_image_that_needs_more_memory_than_a_worker_has_is_refused_and_the_server_keeps_none_of_it():
    decoders = ImageDecoders(timeout_s=60.0, memory_mb=64)
    try:
        flat = _encoded(Image.new("RGB", (6000, 6000), "white"), "PNG")  # 108 MB of pixels from a small file
        with pytest.raises(ImageTooLarge, match="MiB"):
            decoders.check(flat, 10**8)
        small = _encoded(_noise(8, 8), "PNG")
        assert decoders.check(small, 10**8) == checked_image_data_uri(small)
    finally:
        decoders.close()


@pytest.mark.anyio
async def test_fair_slots_go_round_robin_over_tenants():
    slots, order = FairSlots(1), []
    release = asyncio.Event()

    async def hold(tenant: str, name: str) -> None:
        async with slots.slot(tenant):
            order.append(name)
            await release.wait()

    first = asyncio.create_task(hold("hostile", "h0"))
    await asyncio.sleep(0)
    queued = [asyncio.create_task(hold("hostile", f"h{i}")) for i in range(1, 4)]
    await asyncio.sleep(0)
    victim = asyncio.create_task(hold("victim", "v"))
    await asyncio.sleep(0)
    assert slots.waiting == 4
    release.set()
    await asyncio.gather(first, *queued, victim)
    assert order[:3] == ["h0", "h1", "v"]  # the victim waits for one hostile image, not for all of them


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_server_refuses_an_image_past_its_decode_deadline_naming_the_field_and_reads_the_next():
    from test_serving_app import GROUP, served

    from serving.settings import ServerSettings

    slow = "data:image/png;base64," + base64.b64encode(_encoded(_noise(1000, 1000), "PNG")).decode()
    small = "data:image/png;base64," + base64.b64encode(_encoded(_noise(8, 8), "PNG")).decode()
    async with served(ServerSettings(image_decode_timeout_s=0.001)) as http:
        refused = await http.post("/v1/score", json={"groups": [dict(GROUP, image=slow)]})
    async with served() as http:
        read = await http.post("/v1/score", json={"groups": [dict(GROUP, image=small)]})
    assert refused.status_code == 413, refused.text
    assert refused.json()["detail"][0]["loc"] == ["body", "groups", 0, "image"]
    assert "image_decode_timeout_s" in refused.json()["detail"][0]["msg"]
    assert read.status_code == 200 and read.json()["groups"][0]["rewards"] == [1.0, 0.0, 0.0]


@pytest.mark.anyio
async def test_a_tenant_holds_at_most_its_share_and_a_newcomer_starts_at_once():
    slots, running, release = FairSlots(4, per_tenant=1), [], asyncio.Event()

    async def hold(tenant: str, name: str) -> None:
        async with slots.slot(tenant):
            running.append(name)
            await release.wait()

    heavy = [asyncio.create_task(hold("heavy", f"h{i}")) for i in range(5)]
    other = asyncio.create_task(hold("other", "o"))
    await asyncio.sleep(0)
    assert running == ["h0", "o"] and slots.waiting == 4  # one slot each; two stay free rather than go to "heavy"
    cancelled = heavy[1]
    cancelled.cancel()
    release.set()
    await asyncio.gather(*heavy[2:], other)
    assert running == ["h0", "o", "h2", "h3", "h4"] and slots.waiting == 0
    assert cancelled.cancelled()
