"""Reading and writing JSONL files: lines written as one line of JSON text each (:func:`json_line`), read split on
``\\n`` alone, and pydantic models with one wording for a refused line wherever
a command reads one.

A JSONL record ends at ``\\n`` and nowhere else: JSON keeps U+2028, U+2029, U+0085 and other characters that
``str.splitlines`` treats as line ends raw inside its strings (and our writers write text as it is, not escaped), so a
reader that splits on them cuts a record in two. Every JSONL text the project reads is split by :func:`jsonl_lines`
(or read from an open file, whose iteration splits on ``\\n`` and ``\\r``, which JSON never holds raw).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def jsonl_lines(text: str) -> list[str]:
    """The records of a JSONL ``text``: split on ``\\n`` alone (a ``\\r`` before it is dropped), blank ones kept so
    that line numbers stay the file's."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_jsonl_lines(path: str | Path) -> list[str]:
    """The records of the JSONL file at ``path`` (UTF-8), as :func:`jsonl_lines` splits them."""
    return jsonl_lines(Path(path).read_text(encoding="utf-8"))


def bounded_lines(source: IO[str], limit: int) -> Iterator[str]:
    """The lines of the open text file ``source`` (their ``\\n`` kept), each read with at most ``limit + 1``
    characters in memory: a longer line is given as its first ``limit + 1`` characters, the rest read and dropped, so
    a caller that refuses lines over ``limit`` still counts it as one line."""
    chunk = max(limit, 1) + 1
    while True:
        line = source.readline(chunk)
        if not line:
            return
        if len(line) == chunk and not line.endswith("\n"):
            while (rest := source.readline(chunk)) and not rest.endswith("\n"):
                pass
        yield line


class WriteFailed(OSError):
    """A line could not be written whole to a file; the file was cut back to its last whole line where it can be."""


class WholeLines:
    """A text sink for one file that always ends on a whole line: each :meth:`write` (whole lines, ``\\n``
    ended) goes to the file at once, unbuffered; one that fails part way (a full disk, a file size limit) is cut
    back to the end of the last whole line and raised as :class:`WriteFailed`, naming the file and the errno.

    The file is opened (made, or emptied with mode ``w``) at the first write, so that a run that stops before its
    first line (a judge out of reach, Ctrl-C) leaves no empty file and an earlier one as it was; that it can be
    written is checked at once (PermissionError, IsADirectoryError, as ``open`` raises them)."""

    def __init__(self, path: str | Path, mode: str = "w") -> None:
        self.path = str(path)
        self._mode = {"w": "wb", "a": "ab"}[mode]
        self.raw: io.FileIO | None = None
        self.good = 0
        self.lines = 0  # whole lines this sink wrote
        if os.path.isdir(self.path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
        if os.path.exists(self.path) and not os.access(self.path, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), self.path)

    def _opened(self) -> io.FileIO:
        if self.raw is None:
            try:
                self.raw = open(self.path, self._mode, buffering=0)  # noqa: SIM115 - closed by close()
            except OSError as exc:
                name = errno.errorcode.get(exc.errno or 0, "?")
                raise WriteFailed(exc.errno, f"cannot write {self.path}: {exc.strerror} ({name})") from None
            self.good = self.raw.seek(0, os.SEEK_END)
        return self.raw

    def write(self, text: str) -> int:
        """Write ``text`` (whole lines); returns its characters."""
        raw = self._opened()
        data = text.encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                view = view[raw.write(view) or 0 :]
        except OSError as exc:
            try:
                os.ftruncate(raw.fileno(), self.good)
            except OSError:  # a device (/dev/full) cannot be cut back
                pass
            name = errno.errorcode.get(exc.errno or 0, "?")
            raise WriteFailed(exc.errno, f"cannot write {self.path}: {exc.strerror} ({name})") from None
        except BaseException:  # Ctrl-C part way: the file still ends on its last whole line
            with contextlib.suppress(OSError):
                os.ftruncate(raw.fileno(), self.good)
            raise
        self.good += len(data)
        self.lines += text.count("\n")
        return len(text)

    def close(self) -> None:
        """Close the file (when it was opened)."""
        if self.raw is not None:
            self.raw.close()

    def __enter__(self) -> WholeLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def json_problem(text: str, exc: json.JSONDecodeError) -> str:
    """What is wrong with the JSON ``text`` that ``json.loads`` refused with ``exc``, with where it is and the usual
    cause: a lone backslash (LaTeX written into JSON), a raw tab or line break inside a string, a record cut off or
    spread over several lines."""
    near = text[max(0, exc.pos - 20) : exc.pos + 20]
    where = f"column {exc.colno}, near {near!r}"
    if exc.msg.startswith("Invalid \\escape"):
        return f"a lone backslash (write it twice in JSON: \\\\sqrt for \\sqrt) at {where}"
    if exc.msg.startswith("Invalid control character"):
        return f"a raw tab or line break in a string (write \\t or \\n: one record per line) at {where}"
    if exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string"):
        return f"the line ends before its JSON does (cut off, or a record spread over lines?) at {where}"
    return f"{exc.msg} at {where}"


def read_models(lines: Iterable[str], model: type[M], source: str = "") -> list[M]:
    """Every non-blank line of ``lines`` (a JSONL file's lines, or an open file) as ``model``.

    Raises ValueError for the first line refused, on one line: ``SOURCE line N: FIELD: why`` (``FIELD`` is the
    dotted path of the first field at fault, ``line`` for a line that is not a JSON object of the model at all).
    """
    items = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate_json(line))
        except ValidationError as exc:
            prefix = f"{source} line" if source else "line"
            problem = first_error(exc)
            if exc.errors(include_url=False)[0]["type"] == "json_invalid":
                try:
                    json.loads(line)
                except json.JSONDecodeError as decoding:
                    problem = f"invalid JSON: {json_problem(line, decoding)}"
            raise ValueError(f"{prefix} {number}: {problem}") from None
    return items


def first_error(exc: ValidationError, whole: str = "line") -> str:
    """``FIELD: why`` for the first error of ``exc`` (``whole`` for the FIELD of an error about the whole item)."""
    first = exc.errors(include_url=False)[0]
    # a validator's own ValueError already says what is wrong; pydantic's prefix only says it was a ValueError
    return f"{'.'.join(map(str, first['loc'])) or whole}: {first['msg'].removeprefix('Value error, ')}"


def json_line(value: Any) -> str:
    """``value`` (plain JSON data) as one line of JSON text that encodes to UTF-8, non-ASCII kept where it can be."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped
        text = json.dumps(value, ensure_ascii=True, allow_nan=False)
    return text


def write_jsonl(records: Iterable[BaseModel | dict[str, Any]], path: str | Path) -> int:
    """Write records (pydantic models or plain JSON data) as JSONL to ``path``; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as sink:
        for record in records:
            sink.write((record.model_dump_json() if isinstance(record, BaseModel) else json_line(record)) + "\n")
            count += 1
    return count
