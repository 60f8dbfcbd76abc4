"""Images of instances: read from a local path or a data URI (bounded), written as PNG data URIs.

An instance's ``image`` is a path, a URL or a data URI (``genrm.methods.rubric.models.Instance``). A judge behind
HTTP (SGLang, an OpenAI-compatible endpoint) is only ever sent image bytes, as a data URI (:func:`sendable_image`):
never a path or a URL for its host to open. Training and a judge run in process (the transformers backend) read the
pixels here. A URL is not fetched: training must not depend on the network, so
the message says to download it first. Every image is checked before it is decoded: at most :data:`MAX_IMAGE_BYTES`
of file and :data:`MAX_IMAGE_PIXELS` pixels (a decompression bomb fails with a message, not an out-of-memory), and
only the formats of :data:`IMAGE_FORMATS` are opened (PNG, JPEG, WebP, GIF): Pillow never guesses another.

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
#: The formats an image is opened as, each with its media type: every judge's image loader reads them, and Pillow is
#: never asked to guess another (an EPS sent as ``data:image/png`` would reach its EPS plugin, which runs Ghostscript
#: where it is installed, and rarer decoders have their own costs).
IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}

#: Most scans a JPEG may have. A progressive JPEG is decoded once per scan, so a 1 MB file of 10,000 scans took 52 s;
#: encoders write about 10 (libjpeg's progressive script) to 20 (mozjpeg's), and libjpeg-turbo's own tools stop at
#: 500 when asked to bound them.
MAX_JPEG_SCANS = 100

_NOT_A_FORMAT = f"not a readable image of the formats read ({', '.join(IMAGE_FORMATS)})"
_DATA_URI = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,", re.ASCII)
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://", re.ASCII)


class ImageError(ValueError):
    """An image reference that cannot be read: what was wrong, in words."""


class ImageTooLarge(ImageError):
    """An image over a limit on bytes or pixels."""


def is_data_uri(reference: str) -> bool:
    """Whether ``reference`` is meant as a data URI (it starts with ``data:``)."""
    return reference.startswith("data:")


def is_url(reference: str) -> bool:
    """Whether ``reference`` starts with a URL scheme (``http://``, ``file://``, ...)."""
    return _URL.match(reference) is not None


def decode_data_uri(reference: str, max_bytes: int | None = None) -> bytes:
    """The bytes of a ``data:image/<type>;base64,<data>`` URI (not yet checked to be an image).

    Raises:
        ImageError: another kind of data URI, or bad base64; :class:`ImageTooLarge` over ``max_bytes`` bytes
            (default :data:`MAX_IMAGE_BYTES`).
    """
    max_bytes = MAX_IMAGE_BYTES if max_bytes is None else max_bytes
    if not _DATA_URI.match(reference):
        raise ImageError("a data URI image must look like data:image/<type>;base64,<data>")
    payload = reference.split(",", 1)[1]
    if len(payload) > max_bytes * 4 // 3 + 4:
        raise ImageTooLarge(f"data URI image is larger than {max_bytes} bytes")
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ImageError(f"data URI image is not valid base64: {exc}") from None


def _encoded_bytes(reference: str, base_dir: Path | None) -> bytes:
    if is_data_uri(reference):
        return decode_data_uri(reference)
    if is_url(reference):
        raise ImageError(f"image {reference[:80]!r} is a URL: download it and give its path (training reads no URLs)")
    path = Path(reference)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    try:
        if not path.is_file():
            raise ImageError(f"image file {str(path)[:200]!r} does not exist")
        if path.stat().st_size > MAX_IMAGE_BYTES:
            raise ImageTooLarge(f"image file {str(path)[:200]!r} is larger than {MAX_IMAGE_BYTES} bytes")
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
        with PILImage.open(io.BytesIO(data), formats=list(IMAGE_FORMATS)) as image:
            check_header(image, data, MAX_IMAGE_PIXELS)
            return image.convert("RGB")
    except UnidentifiedImageError:
        raise ImageError(_NOT_A_FORMAT) from None
    except (OSError, PILImage.DecompressionBombError) as exc:
        raise ImageError(f"not a readable image: {exc}") from None


#: The image budget of a judge by default, in pixels: 1280 visual tokens of 28 x 28 pixels, the budget Qwen2-VL's
#: and Qwen2.5-VL's processors document as a common setting (about 980 of Qwen3-VL's 32 x 32). A larger image is
#: scaled down to it, aspect ratio kept, before any judge sees it: a 12-megapixel photo would otherwise cost some
#: 15,000 prompt tokens per request, and a group's requests each send it.
DEFAULT_IMAGE_BUDGET = 1280 * 28 * 28


def image_budget(value: object, name: str = "") -> int | None:
    """The image budget a setting ``name`` gives: a whole number of pixels, 0 for none (None). Raises ValueError
    for anything else (a negative number, text, more than :data:`MAX_IMAGE_PIXELS`), naming the setting when
    ``name`` is given (a caller that names it its own way, a pydantic field or an argparse option, gives none)."""
    named = f"{name} " if name else ""
    try:
        pixels = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{named}must be a whole number of pixels (0: no limit), got {str(value)[:40]!r}") from None
    if not 0 <= pixels <= MAX_IMAGE_PIXELS:
        raise ValueError(f"{named}must be between 0 (no limit) and {MAX_IMAGE_PIXELS} pixels, got {pixels}")
    return pixels or None


def fitted_size(width: int, height: int, budget: int) -> tuple[int, int]:
    """The largest size of the same aspect ratio with at most ``budget`` pixels (the size itself when it fits);
    each side at least 1."""
    if width * height <= budget:
        return width, height
    scale = (budget / (width * height)) ** 0.5
    fitted = max(1, int(width * scale)), max(1, int(height * scale))
    while fitted[0] * fitted[1] > budget:  # rounding can leave one row too many
        fitted = (max(1, fitted[0] - 1), fitted[1]) if fitted[0] >= fitted[1] else (fitted[0], max(1, fitted[1] - 1))
    return fitted


def within_budget(image: Image, budget: int | None) -> Image:
    """``image`` scaled down (Lanczos) to at most ``budget`` pixels, or itself when it fits or ``budget`` is None."""
    if budget is None:
        return image
    size = fitted_size(*image.size, budget)
    if size == image.size:
        return image
    from PIL import Image as PILImage

    return image.resize(size, PILImage.Resampling.LANCZOS)


def _resized_data_uri(image: Image, budget: int) -> str:
    # A JPEG stays a JPEG (a photo as PNG would be several times larger); anything else becomes a PNG.
    photo = image.format == "JPEG"
    smaller = within_budget(image.convert("RGB" if photo or "A" not in image.getbands() else "RGBA"), budget)
    if not photo:
        return png_data_uri(smaller)
    buffer = io.BytesIO()
    smaller.save(buffer, format="JPEG", quality=95)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def check_header(image: Image, data: bytes, max_pixels: int) -> None:
    """Refuse, before any pixel is decoded, what the header of ``image`` (opened from ``data``) says would cost too
    much: more than ``max_pixels`` pixels, or a JPEG of more than :data:`MAX_JPEG_SCANS` scans (each scan of a
    progressive JPEG decodes the whole image again).

    Raises:
        ImageTooLarge: over either bound.
    """
    width, height = image.size
    if width * height > max_pixels:
        raise ImageTooLarge(f"image is {width}x{height} pixels, more than {max_pixels}")
    # a start-of-scan marker cannot occur inside a scan's data (an 0xFF there is always followed by 0x00 or a restart
    # marker), so counting the bytes counts the scans, or more when a metadata segment happens to hold them
    if image.format == "JPEG" and data.count(b"\xff\xda") > MAX_JPEG_SCANS:
        raise ImageTooLarge(f"JPEG of more than {MAX_JPEG_SCANS} scans (a progressive JPEG is decoded once per scan; "
                            "encoders write about 10)")  # fmt: skip


def checked_image_data_uri(data: bytes, max_pixels: int | None = None, budget: int | None = None) -> str:
    """``data`` as a data URI that any judge can read, after decoding it whole: its own bytes (one of
    :data:`IMAGE_FORMATS`); an image of more than ``budget`` pixels (None: no budget) is scaled down to it first
    (:func:`within_budget`) and re-encoded (a JPEG as a JPEG, anything else as a PNG). An animation (GIF, WebP or
    PNG of several frames) is sent as its first frame, as a PNG: that is all a judge's image loader reads of it, and
    the other frames are never decoded.

    Raises:
        ImageError: not an image of :data:`IMAGE_FORMATS`, a truncated or corrupt one, or over a bound of
            :func:`check_header` (``max_pixels``, default :data:`MAX_IMAGE_PIXELS`), checked before the pixels are
            decoded.
    """
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    max_pixels = MAX_IMAGE_PIXELS if max_pixels is None else max_pixels
    try:
        with PILImage.open(io.BytesIO(data), formats=list(IMAGE_FORMATS)) as image:
            check_header(image, data, max_pixels)
            width, height = image.size
            image.load()  # decodes every pixel (of the first frame): junk after a valid header fails here
            if getattr(image, "is_animated", False):
                return _resized_data_uri(image, min(budget or width * height, width * height))
            if budget is not None and width * height > budget:
                return _resized_data_uri(image, budget)
            kind = IMAGE_FORMATS[str(image.format)]
    except UnidentifiedImageError:
        raise ImageError(_NOT_A_FORMAT) from None
    except (OSError, SyntaxError, ValueError, PILImage.DecompressionBombError) as exc:
        if isinstance(exc, ImageError):
            raise
        raise ImageError(f"not a readable image: {exc}") from None
    return f"data:{kind};base64," + base64.b64encode(data).decode("ascii")


def png_data_uri(image: Image) -> str:
    """``image`` encoded as a PNG data URI (``data:image/png;base64,...``)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def load_sent_image(reference: str, image_dir: Path | None = None, budget: int | None = None) -> Image:
    """An image a judge was sent with a request: a data URI, or a file inside ``image_dir``; scaled down to at most
    ``budget`` pixels (None: as it is).

    A judge behind a server must not read whatever file a request names, so a path is read only when ``image_dir``
    is given, relative to it, and only if it resolves inside it (no ``..`` or absolute path out of it).

    Raises:
        ImageError: a URL, a path without ``image_dir`` or outside it, or what :func:`load_image` refuses.
    """
    if is_data_uri(reference) or is_url(reference):
        return within_budget(load_image(reference), budget)
    if image_dir is None:
        raise ImageError("this judge reads no image files: send the image as a data URI (data:image/png;base64,...)")
    return within_budget(load_image(str(inside_folder(reference, image_dir))), budget)


def inside_folder(reference: str, folder: Path) -> Path:
    """The file ``reference`` names relative to ``folder``, links resolved; it must stay inside ``folder`` (no ``..``,
    no absolute path, no link out of it). Whether it exists is not checked.

    Raises:
        ImageError: a path that leaves ``folder`` or cannot be resolved (a NUL, a loop of links).
    """
    root = folder.resolve()
    try:
        path = (root / reference).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: a loop of symbolic links (Python < 3.13)
        raise ImageError(f"image path {reference[:200]!r} cannot be resolved: {exc}") from None
    if not path.is_relative_to(root):
        raise ImageError(f"image path {reference[:200]!r} is outside the image folder")
    return path


def sendable_image(reference: str, image_dir: Path | None = None, budget: int | None = None) -> str:
    """What a judge behind HTTP is sent for ``reference``: a data URI, never a path or a URL its host would open.

    A data URI goes as it is when it fits ``budget`` (the reward server checked it when it read the client's image;
    a command line's own input is the user's; only its header is read to know its size), else it is decoded whole and
    scaled down. A path is read here, relative to ``image_dir`` and only inside it (the data file's folder), checked
    whole and sent as its bytes, scaled down to ``budget`` pixels when larger (:func:`checked_image_data_uri`). A URL
    is refused: download it first. ``budget`` None sends every image at its own size.

    Raises:
        ImageError: a URL, a path without ``image_dir`` or outside it, or a file :func:`load_image` would refuse.
    """
    if is_data_uri(reference):
        if budget is None:
            return reference
        data = decode_data_uri(reference)
        return reference if _fits(data, budget) else checked_image_data_uri(data, budget=budget)
    if is_url(reference):
        raise ImageError(f"image {reference[:80]!r} is a URL: a judge is sent image bytes, never a URL to fetch; "
                         "download it and give its path")  # fmt: skip
    if image_dir is None:
        raise ImageError(f"image {reference[:80]!r} is a path, and this judge has no image folder to read it from "
                         "(paths are read relative to the data file's folder): give it as a data URI")  # fmt: skip
    return checked_image_data_uri(_encoded_bytes(str(inside_folder(reference, image_dir)), None), budget=budget)


def _fits(data: bytes, budget: int) -> bool:
    # From the header alone: whether the image has at most ``budget`` pixels (an unreadable one is left to the
    # full check, which says what is wrong with it).
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(data), formats=list(IMAGE_FORMATS)) as image:
            width, height = image.size
    except Exception:  # noqa: BLE001 - any failure to read the header means: check it whole
        return False
    return width * height <= budget
