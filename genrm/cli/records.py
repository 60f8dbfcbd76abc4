"""``genrm records``: a scored file (``genrm score``'s output, or a record log) as a table, worst first."""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from genrm.cli.numbers import positive_int
from genrm.cli.paths import input_file


def _cmd_records(args: argparse.Namespace) -> int:
    from genrm.methods.record_table import table_of
    from genrm.methods.registry import make_method

    try:
        method = make_method(args.method)
    except ValueError as exc:
        print(f"genrm records: {exc}", file=sys.stderr)
        return 2
    width = 10**6 if args.wide else shutil.get_terminal_size((120, 24)).columns
    try:
        print(table_of(args.input, method, None if args.all else args.top, width))
    except ValueError as exc:
        print(f"genrm records: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"genrm records: cannot read {args.input}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    return 0


def register(sub: Any) -> None:
    """Add ``records`` to the ``genrm`` command."""
    from genrm.methods.registry import DEFAULT_METHOD

    records = sub.add_parser(
        "records",
        help="show a scored file (genrm score's output or a record log) as a table, worst first",
        description="One row per response: its reward and, in a line, why (the criteria it did not meet and the "
        "rules that decided; for an unknown reward, what has no score). Failed instances come first, then unknown "
        "rewards, then the lowest rewards. The fields behind each row are in docs/rubric.md (Records).",
    )
    records.add_argument("input", metavar="REWARDS.jsonl", type=input_file,
                         help="what genrm score -o wrote, or a --record-log file")  # fmt: skip
    records.add_argument("--method", default=DEFAULT_METHOD,
                         help="the method that scored the file (default: %(default)s)")  # fmt: skip
    shown = records.add_mutually_exclusive_group()
    shown.add_argument("--top", type=positive_int, default=20, metavar="N", help="rows shown (default: %(default)s)")
    shown.add_argument("--all", action="store_true", help="every row")
    records.add_argument("--wide", action="store_true", help="do not cut rows to the terminal's width")
    records.set_defaults(handler=_cmd_records)
