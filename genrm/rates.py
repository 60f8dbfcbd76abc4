"""Rates as a person reads them: three significant figures, so a slow run does not print as 0 per second."""

from __future__ import annotations


def per_second(count: float, seconds: float, unit: str) -> str:
    """``count`` per ``seconds`` as text with ``unit`` (``"0.42 responses/s"``, ``"12.3 responses/s"``,
    ``"1,234 responses/s"``); empty when ``seconds`` is not positive."""
    if seconds <= 0:
        return ""
    rate = count / seconds
    if rate >= 100:
        figure = f"{rate:,.0f}"
    elif rate >= 10:
        figure = f"{rate:.1f}"
    elif rate >= 1:
        figure = f"{rate:.2f}"
    else:
        figure = f"{rate:.2g}"
    return f"{figure} {unit}/s"
