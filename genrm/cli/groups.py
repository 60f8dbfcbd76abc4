"""The command groups every method adds its own subcommands to: ``genrm data`` (judge-training data) and ``genrm
audit`` (false positives of a judge). The stack registers the subcommands any method shares; a method's commands
(a ``genrm.commands`` plug-in) add theirs with :func:`subcommands`, whichever registers first."""

from __future__ import annotations

import argparse
from typing import Any

#: Each shared group: its help and the name its subcommand is shown under.
GROUPS = {
    "data": (
        "judge-training data: synthetic sets, teachers' rubrics and labels, SFT and RLVR records",
        "DATA_COMMAND",
    ),
    "audit": ("false positives of a judge on abnormal responses (build a set, run it)", "AUDIT_COMMAND"),
}


def subcommands(sub: Any, name: str) -> argparse._SubParsersAction:
    """The subcommands of the shared group ``name`` (a key of :data:`GROUPS`) of the command whose subparsers are
    ``sub``, the group added on first use; the chosen subcommand is ``args.<name>_command``."""
    parser = sub.choices.get(name)
    if parser is None:
        help_text, metavar = GROUPS[name]
        parser = sub.add_parser(name, help=help_text)
        return parser.add_subparsers(dest=f"{name}_command", required=True, metavar=metavar)
    return parser._subparsers._group_actions[0]  # argparse keeps a parser's subcommands there
