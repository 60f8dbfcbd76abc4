"""The record log's line: one scored group, its instance and its result, as ``genrm serve --record-log`` and
``genrm score --record-log`` write it and ``genrm audit mine`` reads it:

    {"time": float, "instance": {...}, "result": {...}, ...context}

(the server adds its ``request_id``). One JSON line that encodes to UTF-8, non-ASCII kept where it can be.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from genrm.jsonl import json_line


def record_line(instance: BaseModel, result: BaseModel, now: float | None = None, **context: Any) -> str:
    """The record log's line for one scored group (no newline); ``now`` defaults to the current time, ``context``
    adds keys (the server's ``request_id``)."""
    entry = {"time": time.time() if now is None else now, **context, "instance": instance.model_dump(mode="json"),
             "result": result.model_dump(mode="json")}  # fmt: skip
    return json_line(entry)
