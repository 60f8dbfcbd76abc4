"""Numbers given on the command line, checked as they are read (argparse ``type=`` functions: a bad value is the
usual one-line usage error naming the option)."""

from __future__ import annotations

import argparse


def share(text: str) -> float:
    """A share in [0, 1] given on the command line; raises ArgumentTypeError otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 given on the command line; raises ArgumentTypeError otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text}")
    return value


def score_threshold(text: str) -> float:
    """A verifier score in (0, 1] given on the command line, at or above which a value counts as right (0 would count
    every value right); raises ArgumentTypeError otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a verifier score above 0 and at most 1, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a verifier score above 0 and at most 1, got {text}")
    return value
