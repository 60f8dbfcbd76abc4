"""A durable log of scored groups: JSONL, one line per group, flushed and fsynced after every batch.

Each line holds the instance as scored (prompt, rubric, responses) and its result (rewards and records with every
extracted call and credit), so the log can later serve as judge training data. A batch is written by one
``write`` call under a lock, and the server answers only after it is durable: a process killed with SIGKILL loses at
most the batch being written, which no client was told was scored. That batch may leave a torn last line: on opening,
the log moves any torn tail to ``<path>.torn`` (appended, with a warning) and cuts the file after its last complete
line, so that the next batch starts on a line of its own; :func:`read_records` skips a torn line all the same.
Lines are UTF-8; text that UTF-8 cannot carry (lone surrogates) is written escaped.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from genrm.methods.base import GroupInstance as Instance
from genrm.methods.base import GroupResult as InstanceResult
from serving.payloads import json_line

logger = logging.getLogger(__name__)


class RecordLog:
    """Append-only JSONL log of scored groups at ``path`` (its folder is created)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        fence_torn_tail(self.path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, request_id: str, instances: Sequence[Instance], results: Sequence[InstanceResult]) -> None:
        """Append one line per group and make it durable (fsync) before returning: whole lines or nothing. A write
        that fails part way (a full disk) is cut back to where the batch began and the error raised, so the next
        batch never starts glued to a torn line."""
        now = time.time()
        lines = "".join(
            json_line({"time": now, "request_id": request_id, "instance": instance.model_dump(mode="json"),
                       "result": result.model_dump(mode="json")}) + "\n"
            for instance, result in zip(instances, results, strict=True)
        ).encode("utf-8")  # fmt: skip
        with self._lock:
            if self._fd is None:
                raise ValueError(f"the record log {self.path} is closed")
            start = os.fstat(self._fd).st_size
            try:
                view = memoryview(lines)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except OSError:
                os.ftruncate(self._fd, start)  # nothing of the batch stays: whole lines or nothing
                raise

    def close(self) -> None:
        """Close the file (later writes raise)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def fence_torn_tail(path: Path) -> int:
    """Cut ``path`` after its last newline, appending what followed (a line torn by a kill) to ``<path>.torn``.

    Returns the number of bytes moved (0 when the file is missing, empty or ends with a newline).
    """
    if not path.is_file():
        return 0
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        end, step = size, 1 << 16
        while end > 0:  # find the last newline, reading backwards in blocks
            start = max(0, end - step)
            handle.seek(start)
            block = handle.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            end = start
        else:
            keep = 0
        handle.seek(keep)
        tail = handle.read()
        with open(f"{path}.torn", "ab") as torn:
            torn.write(tail + b"\n")
            torn.flush()
            os.fsync(torn.fileno())
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    logger.warning("record log %s ended in a torn line (%d bytes, from a crash mid-write): moved to %s.torn",
                   path, len(tail), path)  # fmt: skip
    return len(tail)


def read_records(path: str | Path) -> Iterator[dict]:
    """The logged groups of ``path`` in order; a torn or corrupt line (from a kill mid-write) is skipped."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except ValueError:
                continue
