"""``python -m genrm``: the same command line as ``genrm``."""

from genrm.cli import main

raise SystemExit(main())
