"""List options, spelled alike on every command (light: argparse only)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


class ListValues(argparse.Action):
    """A list option that takes its values space-separated, comma-separated or both (``--names a b`` is
    ``--names a,b``): one spelling of a list on every command. ``choices``, when given, are checked per value."""

    def __init__(self, option_strings: Sequence[str], dest: str, choices: Sequence[str] | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        kwargs.setdefault("nargs", "+")
        self.allowed = list(choices) if choices else None  # argparse would check the unsplit words
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        words = [values] if isinstance(values, str) else list(values)
        items = [part.strip() for word in words for part in word.split(",") if part.strip()]
        if not items:
            parser.error(f"argument {option_string}: expected at least one value")
        bad = [item for item in items if self.allowed is not None and item not in self.allowed]
        if bad:
            parser.error(f"argument {option_string}: invalid choice: {bad[0]!r} (choose from "
                         f"{', '.join(self.allowed or [])})")  # fmt: skip
        setattr(namespace, self.dest, items)
