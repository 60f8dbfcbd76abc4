"""Images of instances: read from a local path or a data URI (bounded), written as PNG data URIs.

An instance's ``image`` is a path, a URL or a data URI (``genrm.methods.rubric.models.Instance``). Servers that show
it to a judge (SGLang, an OpenAI-compatible endpoint) receive the reference as is; training and a judge run in process
(the transformers backend) read the pixels here. A URL is not fetched: training must not depend on the network, so
the message says to download it first. Every image is checked before it is decoded: at most :data:`MAX_IMAGE_BYTES`
of file and :data:`MAX_IMAGE_PIXELS` pixels (a decompression bomb fails with a message, not an out-of-memory).

Needs Pillow.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

#: Largest encoded image read, in bytes.
MAX_IMAGE_BYTES = 20_000_000
#: Largest image decoded, in pixels (width x height): 8192 x 8192.
MAX_IMAGE_PIXELS = 8192 * 8192

_DATA_URI = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,", re.ASCII)
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://", re.ASCII)


class ImageError(ValueError):
    """An image reference that cannot be read: what was wrong, in words."""


def _encoded_bytes(reference: str, base_dir: Path | None) -> bytes:
    if _DATA_URI.match(reference):
        payload = reference.split(",", 1)[1]
        if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            raise ImageError(f"data URI image is larger than {MAX_IMAGE_BYTES} bytes")
        try:
            return base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise ImageError(f"data URI image is not valid base64: {exc}") from None
    if reference.startswith("data:"):
        raise ImageError("a data URI image must look like data:image/<type>;base64,<data>")
    if _URL.match(reference):
        raise ImageError(f"image {reference[:80]!r} is a URL: download it and give its path (training reads no URLs)")
    path = Path(reference)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    try:
        if not path.is_file():
            raise ImageError(f"image file {str(path)[:200]!r} does not exist")
        if path.stat().st_size > MAX_IMAGE_BYTES:
            raise ImageError(f"image file {str(path)[:200]!r} is larger than {MAX_IMAGE_BYTES} bytes")
        return path.read_bytes()
    except (OSError, ValueError) as exc:  # a NUL in the name, a name too long, a loop of links, no permission
        if isinstance(exc, ImageError):
            raise
        raise ImageError(f"image file {str(path)[:200]!r} cannot be read: {exc}") from None


def load_image(reference: str, base_dir: Path | None = None) -> Image:
    """The RGB image ``reference`` names: a data URI or a file path (relative ones against ``base_dir``).

    Raises:
        ImageError: a URL, a missing file, bad base64, an unreadable or oversized image (see the module limits).
    """
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    data = _encoded_bytes(reference, base_dir)
    try:
        with PILImage.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise ImageError(f"image is {width}x{height} pixels, more than {MAX_IMAGE_PIXELS}")
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, PILImage.DecompressionBombError) as exc:
        raise ImageError(f"not a readable image: {exc}") from None


def png_data_uri(image: Image) -> str:
    """``image`` encoded as a PNG data URI (``data:image/png;base64,...``)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def load_sent_image(reference: str, image_dir: Path | None = None) -> Image:
    """An image a judge was sent with a request: a data URI, or a file inside ``image_dir``.

    A judge behind a server must not read whatever file a request names, so a path is read only when ``image_dir``
    is given, relative to it, and only if it resolves inside it (no ``..`` or absolute path out of it).

    Raises:
        ImageError: a URL, a path without ``image_dir`` or outside it, or what :func:`load_image` refuses.
    """
    if reference.startswith("data:") or _URL.match(reference):
        return load_image(reference)
    if image_dir is None:
        raise ImageError("this judge reads no image files: send the image as a data URI (data:image/png;base64,...)")
    root = image_dir.resolve()
    try:
        path = (root / reference).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: a loop of symbolic links (Python < 3.13)
        raise ImageError(f"image path {reference[:200]!r} cannot be resolved: {exc}") from None
    if not path.is_relative_to(root):
        raise ImageError(f"image path {reference[:200]!r} is outside the image folder {str(root)[:200]!r}")
    return load_image(str(path))
