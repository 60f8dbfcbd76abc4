"""Images decoded in worker processes that can be stopped: each decode has a deadline and a memory cap.

Pillow's decoders run in C and hold their thread until done; nothing can stop a thread part way. So the server hands
each image to a worker process (:class:`ImageDecoders`): past ``timeout_s`` the worker is killed and the image
refused, and each worker's address space is capped (``RLIMIT_AS``, ``memory_mb`` above what it holds at start), so an
image that needs more memory fails in its worker instead of growing the server. Workers are forked from
multiprocessing's fork server, which imports Pillow once: a killed worker is replaced in tens of milliseconds, and the
server's own threads are never forked.

Which request goes next is not decided here: the server's fair slots (:class:`serving.defences.fair_slots.FairSlots`)
admit one decode per worker, round-robin over requests.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

from genrm.engine.images import ImageError, ImageTooLarge, checked_image_data_uri
from serving.defences.worker_processes import WorkerDied, WorkerProcesses, process_bytes

_PRELOAD = ["genrm.engine.images", "PIL.Image", "PIL.PngImagePlugin", "PIL.JpegImagePlugin", "PIL.WebPImagePlugin",
            "PIL.GifImagePlugin"]  # fmt: skip
# A worker that holds this much more memory than when it started leaves after its image.
_RETIRE_GROWTH = 64 * 2**20


def _forkserver() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _serve(connection: Connection, memory_mb: int) -> None:
    """A worker: decode each image it is sent, answer ``(outcome, retire)``: ``outcome`` is ``("ok", uri)`` or
    ``("refused", too_large, message)``, and ``retire`` says that this worker exits now (it grew: the memory a large
    image took is not given back to the system while the process lives, so idle workers would hold it)."""
    import resource

    limit = process_bytes(0) + memory_mb * 2**20
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    grown = process_bytes(1) + _RETIRE_GROWTH
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
        retire = outcome[0] == "memory" or process_bytes(1) > grown  # out of memory: not trusted with the next image
        connection.send((outcome, retire))
        if retire:
            return


class ImageDecoders:
    """Worker processes that check and encode images (:func:`genrm.engine.images.checked_image_data_uri`) within a
    deadline and a memory cap; safe from any thread. Workers start on first use and are kept between images.

    Args:
        timeout_s: most seconds one image may take to decode (> 0); past it the worker is killed.
        memory_mb: most memory one decode may add to a worker, MiB (> 0).
    """

    def __init__(self, timeout_s: float, memory_mb: int) -> None:
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self._workers = WorkerProcesses(_forkserver, _serve, (memory_mb,))

    def check(self, data: bytes, max_pixels: int, budget: int | None = None) -> str:
        """The checked data URI of the image ``data`` (see :func:`genrm.engine.images.checked_image_data_uri`);
        blocking.

        Raises:
            ImageError: what the check refuses; :class:`ImageTooLarge` also for an image that needs more than
                ``timeout_s`` or ``memory_mb`` to decode.
        """
        try:
            answer = self._workers.call((data, max_pixels, budget), self.timeout_s)
        except TimeoutError:
            raise ImageTooLarge(
                f"image took more than {self.timeout_s:g} s to decode (image_decode_timeout_s)"
            ) from None
        except WorkerDied as exc:
            raise self._out_of_memory() from exc
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "refused":
            raise (ImageTooLarge if answer[1] else ImageError)(answer[2])
        raise self._out_of_memory()

    def _out_of_memory(self) -> ImageTooLarge:
        return ImageTooLarge(f"image could not be decoded within {self.memory_mb} MiB (image_decode_memory_mb)")

    def close(self) -> None:
        """Stop every worker."""
        self._workers.close()
