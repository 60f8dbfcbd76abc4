"""One-to-one matching of predicted items to target items, shared by list_verify, bbox_verify and point_verify.

Given a score matrix ``S[i, j]`` in [0, 1] between predicted item ``i`` and target item ``j``, the Hungarian algorithm
(``scipy.optimize.linear_sum_assignment``) picks the one-to-one assignment with the largest total score. The result
is that total divided by the larger of the two counts, so both missing items and extra items cost: predicting three
boxes for one target caps the score at 1/3.
"""

from __future__ import annotations

import numpy as np


def matched_score(scores: np.ndarray) -> float:
    """Hungarian-matched total of ``scores`` (n_pred x n_target, values in [0, 1]) over ``max(n_pred, n_target)``.

    Returns 1.0 when both sides are empty and 0.0 when exactly one is.
    """
    n_pred, n_target = scores.shape
    if n_pred == 0 or n_target == 0:
        return 1.0 if n_pred == n_target else 0.0
    if n_pred == 1 or n_target == 1:
        # With one item on a side, the best assignment is the best single pair: no need for scipy.
        total = float(scores.max())
    else:
        from scipy.optimize import linear_sum_assignment  # imported on first use: it takes ~0.4 s

        rows, cols = linear_sum_assignment(scores, maximize=True)
        total = float(scores[rows, cols].sum())
    return min(1.0, max(0.0, total / max(n_pred, n_target)))
