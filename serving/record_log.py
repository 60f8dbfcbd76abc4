"""A durable log of scored groups: JSONL, one line per group, flushed and fsynced after every batch.

Each line holds the instance as scored (prompt, rubric, responses) and its result (rewards and records with every
extracted call and credit), so the log can later serve as judge training data. A batch is written by one
``write`` call under a lock; a process killed with SIGKILL loses at most the batch being written, and a torn last
line is skipped by :func:`read_records`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from genrm.schemas import Instance
from genrm.scoring import InstanceResult


class RecordLog:
    """Append-only JSONL log of scored groups at ``path`` (its folder is created)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the server's life

    def write(self, request_id: str, instances: Sequence[Instance], results: Sequence[InstanceResult]) -> None:
        """Append one line per group and make it durable (flush + fsync) before returning."""
        now = time.time()
        lines = "".join(
            json.dumps(
                {"time": now, "request_id": request_id, "instance": instance.model_dump(mode="json"),
                 "result": result.model_dump(mode="json")},
                ensure_ascii=False,
            ) + "\n"
            for instance, result in zip(instances, results, strict=True)
        )  # fmt: skip
        with self._lock:
            self._file.write(lines)
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file (later writes raise)."""
        with self._lock:
            self._file.close()


def read_records(path: str | Path) -> Iterator[dict]:
    """The logged groups of ``path`` in order; a torn or corrupt line (from a kill mid-write) is skipped."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except ValueError:
                continue
