"""The answer of ``POST /v1/score``, bounded by the request it answers.

A group's records say how each reward came about, one per response and criterion, so their size grows with responses
times criteria while the request grows with responses plus criteria: 64 one-word responses to a rubric of 128
criteria ask for 8,192 records. The answer is therefore bounded: at most ``max_answer_ratio`` times the request's
bytes, or :data:`ANSWER_FLOOR_BYTES`, whichever is more, and never more than ``max_answer_bytes``. Groups are
serialised one at a time, and as soon as the records would pass the bound they are left out of every group: the
answer then holds each group's rewards (and error) with empty ``records``, and ``records_omitted`` says why. A
reward is never left out. The record log gets what the client got.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from genrm.methods.base import GroupResult
from serving.payloads import json_text

#: An answer may always be this large, whatever the request (a small request's records fit in it), bytes.
ANSWER_FLOOR_BYTES = 256 * 2**10


def answer_limit(request_bytes: int, ratio: float, most: int | None = None) -> int:
    """The most bytes an answer to a request of ``request_bytes`` (>= 0) may take: ``ratio`` (> 0) times it, at least
    :data:`ANSWER_FLOOR_BYTES`, and at most ``most`` (None: no such bound; at least the floor)."""
    limit = max(ANSWER_FLOOR_BYTES, int(ratio * request_bytes))
    return limit if most is None else min(limit, max(most, ANSWER_FLOOR_BYTES))


def _document(parts: Sequence[str], omitted: str | None) -> bytes:
    return ('{"groups":[' + ",".join(parts) + '],"records_omitted":' + json.dumps(omitted) + "}").encode("utf-8")


def bounded_answer(results: Sequence[GroupResult], limit: int) -> tuple[bytes, list[GroupResult]]:
    """The JSON body answering ``results`` (``{"groups": [...], "records_omitted": ...}``) within about ``limit``
    bytes, and the results as answered (records emptied when they did not fit). Blocking: run it off the event loop.
    """
    parts: list[str] = []
    size = 0
    for result in results:
        text = json_text(result)
        size += len(text.encode("utf-8"))
        if size > limit:
            break
        parts.append(text)
    else:
        return _document(parts, None), list(results)
    bare = [result.model_copy(update={"records": []}) for result in results]
    why = (f"the records would make this answer more than {limit} bytes (max_answer_ratio times the request, at "
           f"least {ANSWER_FLOOR_BYTES}, at most max_answer_bytes): every group's rewards are here, without records; "
           "send fewer responses or criteria per request to get them")  # fmt: skip
    return _document([json_text(result) for result in bare], why), bare
