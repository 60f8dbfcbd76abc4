"""A durable log of answered groups: JSONL, one line per group, flushed and fsynced after every batch, in files of
bounded size.

Each line holds the instance as the client sent it (prompt, rubric, responses) and its result as answered (rewards
and records with every extracted call and credit), so the log can later serve as judge training data. A batch is
written by one ``write`` call under a lock, whole lines or nothing (a write that fails part way, on a full disk, is
cut back), and the server answers only after it is durable. What a process killed with SIGKILL leaves: every batch
whose answer was sent is whole in the log; the batch being written may be whole, torn or missing, and its client got
no answer (a client that retries has it logged again, under another ``request_id``).

On opening, every line of the current file is checked: a line that is not whole JSON (torn by a kill, glued to the
next by an older version's failed write, damaged on disk) is moved to ``<path>.torn`` (appended, with a warning) and
the file rewritten without it, so every line of the log reads. When the next batch would take the file past
``max_bytes``, it is rotated first: ``<path>`` becomes ``<path>.1``, ``<path>.1`` becomes ``<path>.2`` and so on,
keeping ``keep`` rotated files (the oldest beyond them is deleted). Lines are UTF-8; text that UTF-8 cannot carry
(lone surrogates) is written escaped.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from genrm.methods.base import GroupInstance as Instance
from genrm.methods.base import GroupResult as InstanceResult
from genrm.records import record_line

logger = logging.getLogger(__name__)


class RecordLogFailed(OSError):
    """The record log could not take a batch (a full disk, a file size limit, an I/O error): the requests of that
    batch are not answered as scored. ``full`` when storage ran out (the server answers 507, else 503)."""

    def __init__(self, path: Path, cause: OSError) -> None:
        code = cause.errno or 0
        name = errno.errorcode.get(code, str(code))
        super().__init__(
            code,
            f"the server's record log ({path.name}) could not be written: {name} "
            f"({os.strerror(code) if code else cause}); nothing of this request is answered as scored",
        )
        self.full = code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


class RecordLog:
    """Append-only JSONL log of answered groups at ``path`` (its folder is created), rotated past ``max_bytes``
    (None: never) with ``keep`` (>= 1) rotated files kept."""

    def __init__(self, path: str | Path, max_bytes: int | None = None, keep: int = 10) -> None:
        if keep < 1:
            raise ValueError(f"a record log keeps at least 1 rotated file, got keep={keep}")
        self.path, self.max_bytes, self.keep = Path(path), max_bytes, keep
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        fence_damaged_lines(self.path)
        self._fd: int | None = _open(self.path)

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        try:
            oldest = Path(f"{self.path}.{self.keep}")
            if oldest.exists():
                oldest.unlink()
            for index in range(self.keep - 1, 0, -1):
                older = Path(f"{self.path}.{index}")
                if older.exists():
                    os.replace(older, f"{self.path}.{index + 1}")
            os.replace(self.path, f"{self.path}.1")
        finally:  # a rotation that failed part way leaves the log open where it is, not closed for good
            self._fd = _open(self.path)
        logger.info("record log %s rotated: the lines before are in %s.1", self.path, self.path)

    def write(self, request_id: str, instances: Sequence[Instance], results: Sequence[InstanceResult]) -> None:
        """Append one line per group (:func:`record_lines`) and make it durable (fsync) before returning: whole lines
        or nothing."""
        self.append(record_lines(request_id, instances, results))

    def append(self, lines: bytes) -> None:
        """Append whole lines (UTF-8, each ending in a new line) and make them durable (fsync) before returning. A
        write that fails part way (a full disk) is cut back to where the batch began and :class:`RecordLogFailed`
        raised, so the next batch never starts glued to a torn line."""
        with self._lock:
            if self._fd is None:
                raise ValueError(f"the record log {self.path} is closed")
            start = os.fstat(self._fd).st_size
            if self.max_bytes is not None and start > 0 and start + len(lines) > self.max_bytes:
                self._rotate()
                start = 0
            try:
                view = memoryview(lines)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except OSError as exc:
                # nothing of the batch stays: whole lines or nothing (a device, /dev/full, has nothing to cut back,
                # and its refusal to be cut must not hide why the write failed)
                if stat.S_ISREG(os.fstat(self._fd).st_mode):
                    os.ftruncate(self._fd, start)
                raise RecordLogFailed(self.path, exc) from exc

    def close(self) -> None:
        """Close the file (later writes raise)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def record_lines(request_id: str, instances: Sequence[Instance], results: Sequence[InstanceResult]) -> bytes:
    """The log's lines for one answered batch: a line per group, stamped now and with ``request_id``."""
    now = time.time()
    return "".join(
        record_line(instance, result, now, request_id=request_id) + "\n"
        for instance, result in zip(instances, results, strict=True)
    ).encode("utf-8")


def _whole(line: bytes) -> bool:
    if not line.endswith(b"\n"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # not JSON, or not UTF-8
        return False


def fence_damaged_lines(path: Path) -> int:
    """Move every line of ``path`` that is not whole JSON (a line torn by a kill, two glued together, a damaged one) to
    ``<path>.torn``, one line each, keeping the others in order. Reads the file once; rewrites it only when it found
    such a line (through a temporary file and a rename, so a crash here leaves the old file or the new one).

    Returns the number of bytes moved (0 when the file is missing or every line is whole).
    """
    if not path.is_file():
        return 0
    with open(path, "rb") as handle:
        if all(_whole(line) for line in handle):
            return 0
    kept = path.with_name(path.name + ".repair")
    moved = 0
    with open(path, "rb") as handle, open(kept, "wb") as good, open(f"{path}.torn", "ab") as torn:
        for line in handle:
            if _whole(line):
                good.write(line)
            else:
                torn.write(line.rstrip(b"\n") + b"\n")
                moved += len(line)
        for out in (good, torn):
            out.flush()
            os.fsync(out.fileno())
    os.replace(kept, path)
    logger.warning("record log %s held damaged lines (%d bytes, from a crash or a failed write): moved to %s.torn",
                   path, moved, path)  # fmt: skip
    return moved


def read_records(path: str | Path) -> Iterator[dict]:
    """The logged groups of ``path`` in order; a torn or corrupt line (from a kill mid-write) is skipped."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except ValueError:
                continue
