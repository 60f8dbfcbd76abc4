"""Input and output paths checked when the command line is read, before any work: a missing input is one line naming
it (not a traceback), and a run that judges for an hour must not end on a path it cannot write (``-o README.md`` for
a folder, ``--json nodir/x.json`` under a file).

Used as argparse ``type=`` functions, so that a bad path is the usual one-line usage error naming the option. A
missing output folder is fine when it can be made (an output file's folder is made here, an output folder by its
command): the nearest existing folder above it must be writable.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def _writable_from(path: Path) -> str | None:
    # The nearest existing ancestor must be a folder this process can write in; the rest is made by the command.
    for ancestor in (path, *path.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                return f"{str(ancestor)!r} is a file, so nothing can be written under it"
            if not os.access(ancestor, os.W_OK | os.X_OK):
                return f"folder {str(ancestor)!r} is not writable"
            return None
    return None


def output_dir(text: str) -> str:
    """``text`` when it is a folder that exists or can be made; raises ArgumentTypeError saying why not."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder to write the results in")
    problem = _writable_from(path)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def output_file(text: str) -> str:
    """``text`` when a file can be written there (``-`` is standard output), its folder made when missing (every
    command's writer then opens it as it is); raises ArgumentTypeError saying why not."""
    if text == "-":
        return text
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file name")
    problem = _writable_from(path.parent)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot make folder {str(path.parent)!r}: {exc.strerror}") from None
    return text


def input_file(text: str) -> str:
    """``text`` when it is a file this process can read (``-`` is standard input); raises ArgumentTypeError saying
    why not."""
    if text == "-":
        return text
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} cannot be read (permission denied)")
    return text
