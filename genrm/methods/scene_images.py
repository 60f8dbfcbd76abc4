"""The synthetic scenes of the scripted caption judges, and the images that carry them.

A scripted caption judge (``genrm.methods.<method>.scene_judge``) knows what an image shows as a *scene*: a set of
atomic facts (``"a red car"``, ``"it points up"``). It finds an image's scene in the image itself, since a reward
server never passes a client's image reference on (it reads the image and sends the judge its bytes,
``serving.images``):

- a PNG with a ``facts`` text chunk (one fact a line) shows those facts: the shipped example images
  (``datasets/examples/captions``) are real pictures that carry their facts this way, so one example set serves a
  vision-language judge and the scripted one alike (:func:`with_facts`);
- a PNG with a ``scene`` text chunk names one of :data:`SCENES` (:func:`scene_png`, for tests and benchmarks);
- an image given by name only (to a judge run in process) is looked up in :data:`SCENES`.

:func:`scene_of` reads the scene of an image given as a data URI, a path (relative ones against a folder) or a name;
:class:`UnknownScene` says that it has none.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from pathlib import Path

_NAME_KEY = "scene"
_FACTS_KEY = "facts"

#: The scenes tests and benchmarks name, by image name.
SCENES: dict[str, frozenset[str]] = {
    "park.png": frozenset({"a red car", "two dogs", "a green bench", "a man in a hat"}),
    "kitchen.png": frozenset({"a white fridge", "three apples", "a wooden table"}),
}


class UnknownScene(ValueError):
    """An image whose scene a scripted judge cannot know: it carries no facts and names no scene it knows."""


def _png(image: object, info: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)  # type: ignore[attr-defined]
    return buffer.getvalue()


def scene_png(name: str, side: int = 4, noise: bool = False) -> bytes:
    """A ``side`` x ``side`` PNG that names its scene ``name`` in a ``scene`` text chunk: grey, or with ``noise``
    random pixels from a fixed seed (about 3 bytes a pixel: an image as heavy as a photograph of its size)."""
    import random

    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text(_NAME_KEY, name)
    if noise:
        image = Image.frombytes("RGB", (side, side), random.Random(side).randbytes(3 * side * side))
    else:
        image = Image.new("RGB", (side, side), (128, 128, 128))
    return _png(image, info)


def with_facts(png: bytes, facts: Iterable[str]) -> bytes:
    """``png`` (any image Pillow reads) saved as a PNG whose ``facts`` text chunk lists ``facts``, one a line (each
    lower case, as a scripted judge compares them with a caption's sentences)."""
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    lines = [fact.strip().lower() for fact in facts]
    if not lines or any(not line or "\n" in line for line in lines):
        raise ValueError("facts must be one or more non-empty lines")
    info = PngInfo()
    info.add_text(_FACTS_KEY, "\n".join(lines))
    with Image.open(io.BytesIO(png)) as image:
        return _png(image.convert("RGB"), info)


def write_scene_images(folder: Path, names: Iterable[str]) -> Path:
    """Write :func:`scene_png` of each name to ``folder / name``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(scene_png(name))
    return folder


def _chunks(image: str, base_dir: Path | None) -> dict[str, str] | None:
    """The text chunks of the PNG ``image`` names (a data URI, or a file), or None when it names no readable file."""
    from PIL import Image

    from genrm.engine.images import ImageError, decode_data_uri, is_data_uri

    try:
        if is_data_uri(image):
            data = decode_data_uri(image)
        else:
            path = Path(image) if base_dir is None else base_dir / image
            if not path.is_file():
                return None
            data = path.read_bytes()
        with Image.open(io.BytesIO(data)) as picture:
            return {str(key): str(value) for key, value in getattr(picture, "text", {}).items()}
    except (ImageError, OSError, ValueError):
        return None


def scene_of(image: str | None, scenes: Mapping[str, frozenset[str]] = SCENES,
             base_dir: Path | None = None) -> frozenset[str]:  # fmt: skip
    """The facts ``image`` shows (module docstring): from its ``facts`` chunk, else the scene of ``scenes`` its
    ``scene`` chunk or its name names. Relative paths are read against ``base_dir``.

    Raises :class:`UnknownScene` for an image that has neither.
    """
    if not image:
        raise UnknownScene("the scripted judge was shown no image")
    chunks = _chunks(image, base_dir) or {}
    if _FACTS_KEY in chunks:
        return frozenset(line for line in chunks[_FACTS_KEY].splitlines() if line)
    name = chunks.get(_NAME_KEY, image)
    if name in scenes:
        return scenes[name]
    shown = "an inline image" if image.startswith("data:") else repr(image[:120])
    raise UnknownScene(
        f"the scripted judge knows only images that list their facts (as the shipped examples in "
        f"datasets/examples/captions do) or name a scene it knows; {shown} does neither"
    )
