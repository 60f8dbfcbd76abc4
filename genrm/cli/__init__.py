"""The ``genrm`` command: one entry point with subcommands (:mod:`genrm.cli.main`).

- :mod:`genrm.cli.main`: the parser, ``score``, ``verify``, ``tiny-model`` and the plug-in subcommands;
- :mod:`genrm.cli.data`: ``data ...`` and ``eval``, and the options that name a judge;
- :mod:`genrm.cli.train`: ``train sft|rlvr``;
- :mod:`genrm.cli.audit`: ``audit build|run``;
- :mod:`genrm.cli.settings`: command-line options generated from a settings model.
"""

from genrm.cli.main import main, make_parser

__all__ = ["main", "make_parser"]
