"""The images clients send, read by the server itself: a judge is only ever sent checked image bytes.

A judge's own image loader (SGLang's, vLLM's) opens local paths and fetches URLs, so a reference passed on as given
would let any client make the judge's host read its files or call its internal network. The server reads every
instance's image first, under the operator's policy (:class:`ImagePolicy`, from the server settings):

- a ``data:image/<type>;base64,...`` URI: always;
- a path: only with ``image_dir`` set, relative to it, and only if it stays inside it (no ``..``, no absolute path,
  no link out of it);
- an ``http``/``https`` URL: only when its host is in ``image_url_hosts`` (``images.example.org``, or
  ``*.example.org`` for its subdomains), only if every address the host resolves to is public (private, loopback,
  link-local and reserved addresses need ``image_private_addresses``), with no redirects, within
  ``image_fetch_timeout_s`` and ``max_image_bytes``;
- anything else (``file:``, ``gopher:``, a ``data:`` URI of another type): refused.

Then the bytes are decoded whole (at most ``max_image_bytes`` bytes and ``max_image_pixels`` pixels, and a JPEG of at
most 100 scans, checked from the header before decoding; in the server, in a worker process with a deadline and a
memory cap, :mod:`serving.defences.image_workers`), and the judge is sent them as a data URI as they came, or scaled
down to ``judge_image_pixels``: only PNG, JPEG, WebP and GIF are opened, never a format Pillow would guess
(:func:`genrm.engine.images.checked_image_data_uri`). A refused image is
:class:`ImageRefused`, which the server answers 413 (over a limit) or 422 naming the field; nothing of that request is
judged. Each distinct image of a request is read once, and recently read data URIs and files are remembered
(:class:`ImageResolver`), so the G requests of a gathered group do not decode one image G times.

A host's addresses are checked when the URL is read and the fetch connects by name: the allow-list, which the
operator controls, is what keeps a client's URL from reaching elsewhere.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from genrm.engine.images import (
    ImageError,
    ImageTooLarge,
    checked_image_data_uri,
    decode_data_uri,
    inside_folder,
    is_data_uri,
    is_url,
)

#: Bytes of checked data URIs a resolver remembers, all together.
CACHE_BYTES = 256 * 2**20


class ImageRefused(ValueError):
    """An image reference the server will not send a judge; ``status`` is its HTTP status (413 over a limit, else
    422)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ImagePolicy:
    """What image references the server reads, and its limits (see the module docstring).

    Attributes:
        image_dir: the folder image paths are read from (relative to it); None reads no paths.
        url_hosts: hosts whose ``http``/``https`` URLs are fetched: a name, or ``*.name`` for its subdomains.
        private_addresses: fetch from an allowed host that resolves to a private, loopback, link-local or reserved
            address.
        max_bytes: largest encoded image, bytes (> 0).
        max_pixels: largest image, width x height pixels (> 0).
        fetch_timeout_s: time limit of one URL fetch as a whole, s (> 0).
        judge_pixels: most pixels of an image the judge is shown: a larger one is scaled down to it as it is read
            (None: every image at its own size).
    """

    image_dir: Path | None = None
    url_hosts: tuple[str, ...] = ()
    private_addresses: bool = False
    max_bytes: int = 10_000_000
    max_pixels: int = 4096 * 4096
    fetch_timeout_s: float = 10.0
    judge_pixels: int | None = None

    def allows_host(self, host: str) -> bool:
        """Whether URLs of ``host`` may be fetched (case-insensitive; ``*.name`` matches ``name``'s subdomains)."""
        host = host.lower().rstrip(".")
        for allowed in self.url_hosts:
            allowed = allowed.lower().rstrip(".")
            if allowed.startswith("*.") and host.endswith(allowed[1:]) and len(host) > len(allowed) - 1:
                return True
            if host == allowed:
                return True
        return False


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _checked_host(host: str, port: int, policy: ImagePolicy) -> None:
    if not policy.allows_host(host):
        raise ImageRefused(f"images are not fetched from {host[:100]!r}: the server fetches URLs only from the hosts "
                           "its operator allows (image_url_hosts); send the image as a data URI")  # fmt: skip
    if policy.private_addresses:
        return
    try:
        found = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise ImageRefused(f"image host {host[:100]!r} cannot be resolved: {exc}") from None
    for *_, sockaddr in found:
        if not _public(str(sockaddr[0])):
            raise ImageRefused(
                f"image host {host[:100]!r} resolves to a non-public address; the server fetches "
                "from private, loopback and link-local ones only with image_private_addresses"
            )


class _Deadline:
    """One time limit for everything a fetch does on the network: each connect, read and write is given only the time
    left, and past the limit none starts. A per-read time limit alone lets a host that sends its head a line a
    second hold a 2 s fetch for 30 s."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.until = seconds, time.monotonic() + seconds

    def left(self, timeout: float | None) -> float:
        import httpcore

        left = self.until - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout(f"the whole fetch passed its {self.seconds:g} s")
        return left if timeout is None else min(timeout, left)


def _deadline_backend(deadline: _Deadline) -> object:
    """httpcore's own network backend with every socket operation bounded by ``deadline``."""
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: httpcore.NetworkStream) -> None:
            self.inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.inner.read(max_bytes, deadline.left(timeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.inner.write(buffer, deadline.left(timeout))

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None):  # type: ignore[no-untyped-def]
            return Stream(self.inner.start_tls(ssl_context, server_hostname, deadline.left(timeout)))

        def get_extra_info(self, info: str) -> object:
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self.inner = httpcore.SyncBackend()

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # type: ignore
            return Stream(self.inner.connect_tcp(host, port, deadline.left(timeout), local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):  # type: ignore[no-untyped-def]
            raise httpcore.UnsupportedProtocol("image URLs are fetched over TCP only")

        def sleep(self, seconds: float) -> None:
            time.sleep(min(seconds, deadline.left(None)))

    return Backend()


def _fetch(url: str, policy: ImagePolicy) -> bytes:
    import httpcore
    import httpx

    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ImageRefused(f"image URLs of scheme {parts.scheme[:20]!r} are not read; only http and https, from "
                           "allowed hosts")  # fmt: skip
    if not parts.hostname:
        raise ImageRefused("image URL has no host")
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError as exc:
        raise ImageRefused(f"image URL has a bad port: {exc}") from None
    _checked_host(parts.hostname, port, policy)
    # one deadline for the whole fetch, from the connect to the last byte (the head included), given to every socket
    # operation as the time it has left
    deadline = _Deadline(policy.fetch_timeout_s)
    late = ImageRefused(f"image at the URL did not arrive within {policy.fetch_timeout_s:g} s (image_fetch_timeout_s, "
                        "from the connect to the last byte)")  # fmt: skip
    pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), network_backend=_deadline_backend(deadline),
                                   max_connections=1, retries=0)  # fmt: skip
    timeouts = {name: policy.fetch_timeout_s for name in ("connect", "read", "write", "pool")}
    try:
        with pool, pool.stream("GET", url, extensions={"timeout": timeouts}) as response:
            if 300 <= response.status < 400:
                raise ImageRefused(f"image URL answered a redirect ({response.status}); redirects are not "
                                   "followed: give the final URL")  # fmt: skip
            if response.status != 200:
                raise ImageRefused(f"image URL answered HTTP {response.status}")
            chunks, size = [], 0
            for chunk in response.iter_stream():
                size += len(chunk)
                if size > policy.max_bytes:
                    raise ImageRefused(f"image at the URL is larger than {policy.max_bytes} bytes", 413)
                chunks.append(chunk)
            return b"".join(chunks)
    except httpcore.TimeoutException:
        raise late from None
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol, httpcore.ProxyError) as exc:
        raise ImageRefused(f"image URL could not be read: {type(exc).__name__}: {str(exc)[:200]}") from None


def _refused(exc: ImageError) -> ImageRefused:
    """``exc`` as the server's refusal: 413 over a limit, else 422."""
    return ImageRefused(str(exc), 413 if isinstance(exc, ImageTooLarge) else 422)


def _file(reference: str, policy: ImagePolicy) -> tuple[Path, tuple[object, ...]]:
    """The file ``reference`` names in the image folder and what it is remembered by (path, mtime, size)."""
    if policy.image_dir is None:
        raise ImageRefused("this server reads no image files: send the image as a data URI "
                           "(data:image/png;base64,...), or start the server with an image_dir")  # fmt: skip
    try:
        path = inside_folder(reference, policy.image_dir)
        stat = path.stat()
    except ImageError as exc:
        raise _refused(exc) from None
    except OSError:
        raise ImageRefused(f"image file {reference[:200]!r} does not exist in the image folder") from None
    if not path.is_file():
        raise ImageRefused(f"image {reference[:200]!r} is not a file")
    if stat.st_size > policy.max_bytes:
        raise ImageRefused(f"image file {reference[:200]!r} is larger than {policy.max_bytes} bytes", 413)
    return path, (str(path), stat.st_mtime_ns, stat.st_size)


def _read(reference: str, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ImageRefused(f"image file {reference[:200]!r} cannot be read: {exc.strerror}") from None


#: Checks image bytes: (data, max_pixels, budget) -> data URI, raising ImageError (``checked_image_data_uri``'s shape).
Decode = Callable[[bytes, int, "int | None"], str]


class ImageResolver:
    """Reads image references under an :class:`ImagePolicy` into checked data URIs, remembering recent ones (safe
    from any thread). ``decode`` checks the bytes: in this process by default; the server passes its worker
    processes' (:class:`serving.defences.image_workers.ImageDecoders`), which bound each decode's time and memory."""

    def __init__(self, policy: ImagePolicy, cache_bytes: int = CACHE_BYTES, decode: Decode | None = None) -> None:
        self.policy, self.cache_bytes = policy, cache_bytes
        self._decode: Decode = decode or checked_image_data_uri
        self._cache: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def _remembered(self, key: tuple[object, ...]) -> str | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
            return found

    def _remember(self, key: tuple[object, ...], uri: str) -> None:
        with self._lock:
            if key in self._cache or len(uri) > self.cache_bytes:
                return
            self._cache[key] = uri
            self._held += len(uri)
            while self._held > self.cache_bytes:
                _, dropped = self._cache.popitem(last=False)
                self._held -= len(dropped)

    def _checked(self, data: bytes) -> str:
        try:
            return self._decode(data, self.policy.max_pixels, self.policy.judge_pixels)
        except ImageError as exc:
            raise _refused(exc) from None

    def resolve(self, reference: str) -> str:
        """The checked data URI of the image ``reference`` names (blocking: it may read a file or fetch a URL).

        Raises:
            ImageRefused: a reference the policy does not allow, or what it names is not a readable image within the
                limits.
        """
        policy, path = self.policy, None
        if is_data_uri(reference):
            key: tuple[object, ...] = ("data", hashlib.sha256(reference.encode("utf-8", "surrogatepass")).digest())
        elif is_url(reference):
            return self._checked(_fetch(reference, policy))
        else:
            path, key = _file(reference, policy)
        found = self._remembered(key)  # before any byte of a file is read or a data URI decoded
        if found is not None:
            return found
        if path is not None:
            data = _read(reference, path)
        else:
            try:
                data = decode_data_uri(reference, policy.max_bytes)
            except ImageError as exc:
                raise _refused(exc) from None
        uri = self._checked(data)
        self._remember(key, uri)
        return uri
