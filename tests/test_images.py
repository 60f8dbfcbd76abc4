"""Reading instance images for training: data URIs and paths, bounded, never a URL."""

import base64

import pytest
from PIL import Image

from genrm.engine import images
from genrm.engine.images import ImageError, load_image, png_data_uri


def _picture(size=(8, 6), colour=(200, 10, 10)):
    return Image.new("RGB", size, colour)


def test_a_data_uri_round_trips():
    loaded = load_image(png_data_uri(_picture()))
    assert loaded.size == (8, 6) and loaded.mode == "RGB" and loaded.getpixel((3, 3)) == (200, 10, 10)


def test_a_relative_path_is_read_against_the_base_folder(tmp_path):
    _picture(colour=(0, 0, 255)).convert("L").save(tmp_path / "grey.png")
    loaded = load_image("grey.png", base_dir=tmp_path)
    assert loaded.mode == "RGB" and loaded.size == (8, 6)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("https://example.com/cat.png", "is a URL: download it"),
        ("data:text/plain;base64,aGk=", "must look like data:image"),
        ("data:image/png;base64,@@@", "not valid base64"),
        ("data:image/png;base64," + base64.b64encode(b"not an image").decode(), "not a readable image"),
        ("no/such/file.png", "does not exist"),
    ],
)
def test_bad_references_say_what_is_wrong(reference, message):
    with pytest.raises(ImageError, match=message):
        load_image(reference)


def test_oversized_images_are_refused_before_decoding(monkeypatch, tmp_path):
    monkeypatch.setattr(images, "MAX_IMAGE_PIXELS", 40)
    with pytest.raises(ImageError, match="8x6 pixels, more than 40"):
        load_image(png_data_uri(_picture()))
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 10)
    _picture().save(tmp_path / "big.png")
    with pytest.raises(ImageError, match="larger than 10 bytes"):
        load_image(str(tmp_path / "big.png"))
    with pytest.raises(ImageError, match="larger than 10 bytes"):
        load_image(png_data_uri(_picture()))
