"""bbox_verify and point_verify: Hungarian matching of predicted boxes or points against targets on a 0-1000 grid.

Accepted shapes:

- A box is ``[x1, y1, x2, y2]`` and a point ``[x, y]``, with coordinates on the 0-1000 grid (the image's width and
  height each mapped to 0..1000). Coordinates are ints or floats; booleans, strings, NaN and infinities are not.
- A value is a list of shapes. A flat list holding one shape (``[531, 118, 892, 435]``) is read as that one shape.
- Tuples are read like lists.

Policy for predictions (untrusted, copied from the response as written):

- Swapped corners (``x1 > x2`` or ``y1 > y2``) are reordered: the box covers the same region either way.
- A box's coordinates outside 0..1000 are clipped to the grid: the clipped box is the region it covers in the image
  (as detectors clip), and a box entirely outside has zero area and scores 0.
- A point is never clipped: one outside the image is as far from each target as it lies. Clipping would move every
  point of a half-plane onto the edge, so ``[-300, 500]`` would hit a target on the left edge, ``[0, 500]``, exactly.
- A malformed shape (wrong length, non-numeric or non-finite coordinate) is kept as an entry that matches nothing:
  it scores 0 and still counts towards the number of predicted shapes, so garbage never improves a score.
- Coordinates are not rescaled: values given on a 0-1 or a pixel scale are read as 0-1000 grid values.
- More than ``VerifyConfig.max_shapes`` shapes: unparseable, score 0.

Targets (rubric side) must be well formed: inside 0..1000, and a box must have positive area. Anything else is a
rubric error.

Scores:

- bbox: pairwise intersection over union (IoU); a zero-area box has IoU 0 with everything.
- point: pairwise proximity ``max(0, 1 - d / R)``, with ``d`` the Euclidean distance on the grid and ``R`` =
  ``VerifyConfig.point_radius`` (100 by default: a point 50 units away, 5% of the image side, scores 0.5).

Both are matched one-to-one and normalized by the larger count (see ``verifiers.matching``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from verifiers.config import VerifyConfig
from verifiers.matching import matched_score
from verifiers.result import PredictionError, TargetError, VerifyResult

GRID_MAX = 1000.0


def _is_coordinate(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float (a 400-digit coordinate) is no coordinate
        return False


def _is_flat_shape(value: Sequence[Any], arity: int) -> bool:
    return len(value) == arity and all(_is_coordinate(v) for v in value)


def _shapes(value: Any, arity: int, max_shapes: int) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise PredictionError(f"expected a list of shapes, got {type(value).__name__}")
    if _is_flat_shape(value, arity):
        return [value]
    if len(value) > max_shapes:
        raise PredictionError(f"{len(value)} shapes given; at most {max_shapes} are read")
    return list(value)


Shape = tuple[float, ...]
# Below this many pairs, plain Python beats numpy's per-call overhead (one to three boxes is the common case).
_NUMPY_MIN_PAIRS = 64


def _read_prediction(value: Any, arity: int, config: VerifyConfig, clip: bool) -> tuple[list[Shape], int]:
    """Well-formed predicted shapes (clipped to the grid when ``clip``), and the count of malformed ones."""
    shapes, malformed = [], 0
    for shape in _shapes(value, arity, config.max_shapes):
        if isinstance(shape, (list, tuple)) and _is_flat_shape(shape, arity):
            coordinates = (float(v) for v in shape)
            shapes.append(tuple(min(GRID_MAX, max(0.0, v)) for v in coordinates) if clip else tuple(coordinates))
        else:
            malformed += 1
    return shapes, malformed


def _read_target(value: Any, arity: int, config: VerifyConfig, kind: str) -> list[Shape]:
    if not isinstance(value, (list, tuple)):
        plural = "boxes" if kind == "box" else f"{kind}s"
        raise TargetError(f"target must be a list of {plural}, got {type(value).__name__}")
    shapes = [value] if _is_flat_shape(value, arity) else list(value)
    if len(shapes) > config.max_shapes:
        raise TargetError(f"{len(shapes)} target shapes; at most {config.max_shapes} are allowed")
    rows = []
    for shape in shapes:
        if not (isinstance(shape, (list, tuple)) and _is_flat_shape(shape, arity)):
            raise TargetError(f"target {kind} {shape!r:.80} is not a list of {arity} finite numbers")
        if any(not 0 <= v <= GRID_MAX for v in shape):
            raise TargetError(f"target {kind} {list(shape)} is outside the 0-1000 grid")
        rows.append(tuple(float(v) for v in shape))
    return rows


def _ordered(box: Shape) -> Shape:
    x1, y1, x2, y2 = box
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def iou(a: Shape, b: Shape) -> float:
    """Intersection over union of two ordered [x1, y1, x2, y2] boxes; 0 when the union is empty."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    inter = iw * ih if iw > 0 and ih > 0 else 0.0
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def proximity(a: Shape, b: Shape, radius: float) -> float:
    """``max(0, 1 - distance / radius)`` of two [x, y] points."""
    return max(0.0, 1.0 - math.hypot(a[0] - b[0], a[1] - b[1]) / radius)


def iou_matrix(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Pairwise IoU of (n, 4) and (m, 4) arrays of ordered [x1, y1, x2, y2] boxes; 0 where the union is empty."""
    ix1 = np.maximum(pred[:, None, 0], target[None, :, 0])
    iy1 = np.maximum(pred[:, None, 1], target[None, :, 1])
    ix2 = np.minimum(pred[:, None, 2], target[None, :, 2])
    iy2 = np.minimum(pred[:, None, 3], target[None, :, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area_p = (pred[:, 2] - pred[:, 0]) * (pred[:, 3] - pred[:, 1])
    area_t = (target[:, 2] - target[:, 0]) * (target[:, 3] - target[:, 1])
    union = area_p[:, None] + area_t[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def proximity_matrix(pred: np.ndarray, target: np.ndarray, radius: float) -> np.ndarray:
    """Pairwise proximity ``max(0, 1 - distance / radius)`` of (n, 2) and (m, 2) point arrays."""
    # hypot, not a sum of squares: an unclipped coordinate near the float limit must not overflow to a warning.
    difference = pred[:, None, :] - target[None, :, :]
    dist = np.hypot(difference[..., 0], difference[..., 1])
    return np.clip(1.0 - dist / radius, 0.0, 1.0)


def _scores(
    pred: list[Shape],
    target: list[Shape],
    malformed: int,
    pair: Callable[[Shape, Shape], float],
    matrix: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """The (n_pred + malformed) x n_target score matrix; each malformed prediction is a row of zeros."""
    if len(pred) * len(target) < _NUMPY_MIN_PAIRS:
        rows = [[pair(p, t) for t in target] for p in pred]
        scores = np.array(rows, dtype=np.float64).reshape(len(pred), len(target))
    else:
        scores = matrix(np.asarray(pred, dtype=np.float64), np.asarray(target, dtype=np.float64))
    if malformed:
        scores = np.vstack([scores, np.zeros((malformed, len(target)))])
    return scores


def _result(name: str, score: float, n_pred: int, malformed: int, n_target: int, what: str) -> VerifyResult:
    note = f" ({malformed} malformed)" if malformed else ""
    return VerifyResult(
        score, "ok", f"matched {n_pred}{note} predicted {what} to {n_target} target {what}: score {score:.4f}", name
    )


def check_bbox(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """Score predicted boxes against target boxes by Hungarian-matched IoU (see the module docstring)."""
    target = _read_target(rubric["target"], 4, config, "box")
    if any(x2 <= x1 or y2 <= y1 for x1, y1, x2, y2 in target):
        raise TargetError("every target box must have x1 < x2 and y1 < y2 (positive area)")
    pred, malformed = _read_prediction(scoring["predict"], 4, config, clip=True)
    ordered = [_ordered(box) for box in pred]
    score = matched_score(_scores(ordered, target, malformed, iou, iou_matrix))
    return _result("bbox_verify", score, len(pred) + malformed, malformed, len(target), "boxes")


def check_point(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """Score predicted points against target points by Hungarian-matched proximity (see the module docstring)."""
    target = _read_target(rubric["target"], 2, config, "point")
    pred, malformed = _read_prediction(scoring["predict"], 2, config, clip=False)
    radius = config.point_radius
    score = matched_score(
        _scores(pred, target, malformed, lambda a, b: proximity(a, b, radius),
                lambda a, b: proximity_matrix(a, b, radius))
    )  # fmt: skip
    return _result("point_verify", score, len(pred) + malformed, malformed, len(target), "points")
