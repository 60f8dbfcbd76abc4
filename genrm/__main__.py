"""``python -m genrm``: the same command line as ``genrm``."""

from genrm.cli.main import entry

entry()
