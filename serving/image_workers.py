"""Images decoded in worker processes that can be stopped: each decode has a deadline and a memory cap.

Pillow's decoders run in C and hold their thread until done; nothing can stop a thread part way. So the server hands
each image to a worker process (:class:`ImageDecoders`): past ``timeout_s`` the worker is killed and the image
refused, and each worker's address space is capped (``RLIMIT_AS``, ``memory_mb`` above what it holds at start), so an
image that needs more memory fails in its worker instead of growing the server. Workers are forked from
multiprocessing's fork server, which imports Pillow once: a killed worker is replaced in tens of milliseconds, and the
server's own threads are never forked.

Which request goes next is not decided here: the server's fair slots (:class:`serving.fair_slots.FairSlots`) admit
one decode per worker, round-robin over requests.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from typing import Any

from genrm.engine.images import ImageError, ImageTooLarge, checked_image_data_uri

_PRELOAD = ["genrm.engine.images", "PIL.Image", "PIL.PngImagePlugin", "PIL.JpegImagePlugin", "PIL.WebPImagePlugin",
            "PIL.GifImagePlugin"]  # fmt: skip
_START_TIMEOUT_S = 30.0
# A worker that holds this much more memory than when it started leaves after its image.
_RETIRE_GROWTH = 64 * 2**20


def _statm(field: int) -> int:
    """Bytes of this process from ``/proc/self/statm``: field 0 is its virtual size, 1 what it holds in memory (0
    where /proc is missing)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _serve(connection: Connection, memory_mb: int) -> None:
    """A worker: decode each image it is sent, answer ``(outcome, retire)``: ``outcome`` is ``("ok", uri)`` or
    ``("refused", too_large, message)``, and ``retire`` says that this worker exits now (it grew: the memory a large
    image took is not given back to the system while the process lives, so idle workers would hold it)."""
    import resource

    limit = _statm(0) + memory_mb * 2**20
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    grown = _statm(1) + _RETIRE_GROWTH
    connection.send(("ready",))
    while True:
        try:
            data, max_pixels, budget = connection.recv()
        except (EOFError, OSError):
            return
        try:
            outcome: tuple = ("ok", checked_image_data_uri(data, max_pixels, budget))
        except ImageError as exc:
            outcome = ("refused", isinstance(exc, ImageTooLarge), str(exc))
        except MemoryError:
            outcome = ("memory",)
        retire = outcome[0] == "memory" or _statm(1) > grown  # out of memory: not trusted with the next image
        connection.send((outcome, retire))
        if retire:
            return


class _Worker:
    def __init__(self, context: Any, memory_mb: int) -> None:
        ours, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, memory_mb), daemon=True)
        self.process.start()
        theirs.close()
        self.connection: Connection = ours
        if not ours.poll(_START_TIMEOUT_S) or ours.recv() != ("ready",):
            self.kill()
            raise RuntimeError(f"an image worker did not start within {_START_TIMEOUT_S:g} s")

    def kill(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()
        with contextlib.suppress(OSError):
            self.connection.close()
        self.process.join(timeout=5)


class ImageDecoders:
    """Worker processes that check and encode images (:func:`genrm.engine.images.checked_image_data_uri`) within a
    deadline and a memory cap; safe from any thread. Workers start on first use and are kept between images.

    Args:
        timeout_s: most seconds one image may take to decode (> 0); past it the worker is killed.
        memory_mb: most memory one decode may add to a worker, MiB (> 0).
    """

    def __init__(self, timeout_s: float, memory_mb: int) -> None:
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._context: Any = None
        self._closed = False

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the image workers are closed")
            if self._idle:
                return self._idle.pop()
            if self._context is None:
                self._context = multiprocessing.get_context("forkserver")
                self._context.set_forkserver_preload(_PRELOAD)
        return _Worker(self._context, self.memory_mb)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                return
        worker.kill()

    def check(self, data: bytes, max_pixels: int, budget: int | None = None) -> str:
        """The checked data URI of the image ``data`` (see :func:`genrm.engine.images.checked_image_data_uri`);
        blocking.

        Raises:
            ImageError: what the check refuses; :class:`ImageTooLarge` also for an image that needs more than
                ``timeout_s`` or ``memory_mb`` to decode.
        """
        worker = self._take()
        try:
            worker.connection.send((data, max_pixels, budget))
            if not worker.connection.poll(self.timeout_s):
                raise ImageTooLarge(f"image took more than {self.timeout_s:g} s to decode (image_decode_timeout_s)")
            answer, retire = worker.connection.recv()
        except (EOFError, OSError) as exc:
            worker.kill()
            raise self._out_of_memory() from exc
        except BaseException:
            worker.kill()
            raise
        if retire:
            worker.kill()
        else:
            self._give_back(worker)
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "refused":
            raise (ImageTooLarge if answer[1] else ImageError)(answer[2])
        raise self._out_of_memory()

    def _out_of_memory(self) -> ImageTooLarge:
        return ImageTooLarge(f"image could not be decoded within {self.memory_mb} MiB (image_decode_memory_mb)")

    def close(self) -> None:
        """Stop every idle worker; a worker busy now is stopped when its image is done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()
