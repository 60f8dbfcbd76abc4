"""Per-call configuration of the verifiers: the deadline, the scales and the input-size bounds.

The size bounds are what keeps the in-process verifiers (text, list, bbox, point, time) fast by construction: with
them, the worst case of each stays far below the deadline (``benchmarks/verifiers.py`` measures it). The expression
verifier, whose symbolic work cannot be bounded that way, runs in a worker process that is killed at the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class VerifyConfig:
    """Options shared by every verifier. Frozen and hashable, so derived values can be cached per config."""

    deadline_s: float = 2.0
    """Wall-clock limit of one verification in seconds, counted from when it starts (expression checks are killed
    after it; an expression check has it once for reading the target and once for the prediction)."""
    worker_wait_s: float = 30.0
    """How long an expression check may wait for a free worker before it is reported ``busy`` (never a score)."""
    point_radius: float = 100.0
    """Distance on the 0-1000 grid at which a point's proximity score falls to 0 (linear in between)."""
    float_rounding: int = 6
    """Decimal places at which two numbers are compared when either is written as a decimal."""
    max_call_chars: int = 200_000
    """Longest call string accepted, in characters."""
    max_text_chars: int = 20_000
    """Longest text (target, candidate or prediction) for text_verify, in characters."""
    max_list_items: int = 200
    """Most items in one list (prediction, target or candidate list) for list_verify."""
    max_list_item_chars: int = 500
    """Longest item of a list for list_verify, in characters."""
    max_shapes: int = 1_000
    """Most boxes or points on either side of bbox_verify and point_verify."""
    max_expr_chars: int = 2_000
    """Longest expression (target or prediction) for expr_verify, in characters."""
    max_response_chars: int = 200_000
    """Longest whole response expr_verify reads as a prediction, in characters: one longer than ``max_expr_chars`` is
    cut to its final answer first (``verifiers.expr.final_answer``)."""
    max_time_chars: int = 256
    """Longest date/time string or format for time_verify, in characters."""
    max_candidates: int = 100
    """Most candidates in a ``candidates`` list."""

    def __post_init__(self) -> None:
        if not 0 < self.deadline_s <= 600:
            raise ValueError(f"deadline_s must be in (0, 600] seconds, got {self.deadline_s}")
        if not 0 <= self.worker_wait_s <= 3600:
            raise ValueError(f"worker_wait_s must be in [0, 3600] seconds, got {self.worker_wait_s}")
        if not self.point_radius > 0:
            raise ValueError(f"point_radius must be positive, got {self.point_radius}")
        if not 0 <= self.float_rounding <= 15:
            raise ValueError(f"float_rounding must be in [0, 15], got {self.float_rounding}")
        for f in fields(self):
            if f.name.startswith("max_") and getattr(self, f.name) < 1:
                raise ValueError(f"{f.name} must be at least 1, got {getattr(self, f.name)}")


DEFAULT_CONFIG = VerifyConfig()
