"""Images of the scripted scene judges' synthetic scenes, for tests, benchmarks and demonstrations.

A scene judge (``genrm.methods.<method>.scene_judge``) knows a scene by the name of its image (``park.png``). A reward
server never passes a client's image reference on: it reads the image and sends the judge its bytes
(``serving.images``). So a scene image is a small real PNG that carries its scene's name in a text chunk
(:func:`scene_png`), and a scene judge reads the name back from whatever it is sent (:func:`scene_name`): a data URI of
such a PNG, or the name itself.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

_KEY = "scene"


def scene_png(name: str, side: int = 4, noise: bool = False) -> bytes:
    """A ``side`` x ``side`` PNG that names its scene ``name`` in a ``scene`` text chunk: grey, or with ``noise``
    random pixels from a fixed seed (about 3 bytes a pixel: an image as heavy as a photograph of its size)."""
    import random

    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text(_KEY, name)
    if noise:
        image = Image.frombytes("RGB", (side, side), random.Random(side).randbytes(3 * side * side))
    else:
        image = Image.new("RGB", (side, side), (128, 128, 128))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def write_scene_images(folder: Path, names: Iterable[str]) -> Path:
    """Write :func:`scene_png` of each name to ``folder / name``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(scene_png(name))
    return folder


def scene_name(image: str) -> str:
    """The scene an image shows: the name in the text chunk of a data URI's PNG, else ``image`` itself (an image
    given by name, to a scripted judge run in process)."""
    if not image.startswith("data:"):
        return image
    from PIL import Image

    from genrm.engine.images import ImageError, decode_data_uri

    try:
        with Image.open(io.BytesIO(decode_data_uri(image))) as picture:
            return str(getattr(picture, "text", {}).get(_KEY, image))
    except (ImageError, OSError):
        return image
