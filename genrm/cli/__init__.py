"""The ``genrm`` command: one entry point with subcommands (:mod:`genrm.cli.main`).

- :mod:`genrm.cli.main`: the parser, ``score``, ``verify``, ``tiny-model`` and the plug-in subcommands;
- :mod:`genrm.cli.data`: ``data ...`` and ``eval``, and the options that name a judge;
- :mod:`genrm.cli.train`: ``train sft|rlvr``;
- :mod:`genrm.cli.audit`: ``audit build|run``;
- :mod:`genrm.cli.settings`: command-line options generated from a settings model.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``genrm`` command line (:func:`genrm.cli.main.main`); Ctrl-C while it is still starting (importing
    what the command needs) is one line and exit 130, as later."""
    try:
        from genrm.cli.main import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("genrm: interrupted", file=sys.stderr)
        return 130


def make_parser() -> Any:
    """The ``genrm`` argument parser (:func:`genrm.cli.main.make_parser`)."""
    from genrm.cli.main import make_parser as make

    return make()


__all__ = ["main", "make_parser"]
