"""Figures without a display: matplotlib on its file backend, and a figure saved and closed in one step.

matplotlib is imported only when a figure is drawn (extras ``train`` and ``captions``); a caller that can do without
the figure catches the ImportError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only: no display is needed or opened). Raises ImportError
    when matplotlib is not installed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure: Any, path: str | Path, dpi: int = 120) -> Path:
    """Lay ``figure`` out, write it to ``path`` (PNG, ``dpi`` dots per inch) and free it; returns the path."""
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=dpi)
    pyplot().close(figure)
    return path
