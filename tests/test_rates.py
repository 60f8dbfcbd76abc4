"""Rates print with three significant figures: a slow run is not 0 per second."""

import pytest

from genrm.rates import per_second


@pytest.mark.parametrize(
    ("count", "seconds", "text"),
    [(3, 7.0, "0.43 responses/s"), (1, 400.0, "0.0025 responses/s"), (25, 10.0, "2.50 responses/s"),
     (123, 10.0, "12.3 responses/s"), (123_456, 10.0, "12,346 responses/s"), (5, 0.0, "")],
)  # fmt: skip
def test_a_rate_keeps_its_figures(count, seconds, text):
    assert per_second(count, seconds, "responses") == text
