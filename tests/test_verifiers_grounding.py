"""bbox_verify and point_verify: IoU and proximity by hand, unequal counts, the malformed-shape policy, matching."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifiers import VerifyConfig, bbox_verify, point_verify, run_verifier
from verifiers.matching import matched_score
from verifiers.result import TargetError

BOX = [0, 0, 100, 100]


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        ([BOX], [BOX], 1.0),
        # half covered: intersection 5000, union 10000
        ([BOX], [[0, 0, 100, 50]], 0.5),
        # shifted by half on both axes: intersection 2500, union 17500
        ([BOX], [[50, 50, 150, 150]], 2500 / 17500),
        # disjoint
        ([BOX], [[200, 200, 300, 300]], 0.0),
        # unequal counts: one of two targets found; one target, three predictions
        ([BOX, [200, 200, 300, 300]], [BOX], 0.5),
        ([BOX], [BOX, [200, 200, 300, 300], [400, 400, 500, 500]], 1 / 3),
        # swapped corners are reordered
        ([BOX], [[100, 100, 0, 0]], 1.0),
        # out-of-grid coordinates are clipped
        ([BOX], [[-100, -50, 100, 100]], 1.0),
        ([BOX], [[1100, 1100, 1200, 1200]], 0.0),
        # a flat box is read as one box
        ([BOX], BOX, 1.0),
        # malformed boxes count without matching: wrong arity, a string, NaN, infinity, a boolean
        ([BOX], [[0, 0, 100], BOX], 0.5),
        ([BOX], [["0", 0, 100, 100]], 0.0),
        ([BOX], [[float("nan"), 0, 100, 100], BOX], 0.5),
        ([BOX], [[0, 0, float("inf"), 100]], 0.0),
        ([BOX], [[True, 0, 100, 100]], 0.0),
        # zero-area predictions score 0, without dividing by zero
        ([BOX], [[10, 10, 10, 50]], 0.0),
        # empty sides
        ([], [], 1.0),
        ([BOX], [], 0.0),
        ([], [BOX], 0.0),
    ],
)
def test_bbox_table(target, predict, expected):
    assert bbox_verify(target=target, predict=predict) == pytest.approx(expected)


def test_seed_example_iou_by_hand():
    # prediction [529,119,890,433] lies inside target [531,118,892,435] except 2 units on the left:
    # intersection x 531..890 (359) by y 119..433 (314); union = 361*317 + 361*314 - 359*314
    inter = 359 * 314
    union = 361 * 317 + 361 * 314 - inter
    assert bbox_verify(target=[[531, 118, 892, 435]], predict=[[529, 119, 890, 433]]) == pytest.approx(inter / union)


@pytest.mark.parametrize(
    "target",
    [[[0, 0, 100]], [[0, 0, 1001, 100]], [[-1, 0, 100, 100]], [[100, 0, 0, 100]], [[10, 10, 10, 20]], "box", [["a"]]],
)
def test_bad_target_boxes_raise(target):
    with pytest.raises(TargetError):
        bbox_verify(target=target, predict=[BOX])


def test_too_many_shapes_is_unparseable():
    config = VerifyConfig(max_shapes=5)
    result = run_verifier("bbox_verify", {"target": [BOX]}, {"predict": [BOX] * 6}, config)
    assert (result.score, result.status) == (0.0, "unparseable_pred")


def test_string_prediction_holding_a_list_is_read():
    assert run_verifier("bbox_verify", {"target": [BOX]}, {"predict": "[[0, 0, 100, 100]]"}).score == 1.0
    result = run_verifier("bbox_verify", {"target": [BOX]}, {"predict": "no box here"})
    assert result.status == "unparseable_pred"


@pytest.mark.parametrize(
    "target, predict, expected",
    [
        # the seed's example: distance sqrt(8) with the default radius 100
        ([[591, 234]], [[589, 236]], 1 - math.sqrt(8) / 100),
        ([[500, 500]], [[550, 500]], 0.5),
        ([[500, 500]], [[600, 500]], 0.0),
        ([[500, 500]], [[900, 900]], 0.0),
        ([[0, 0], [100, 0]], [[100, 0], [0, 0]], 1.0),
        ([[0, 0], [100, 0]], [[0, 0]], 0.5),
        ([[500, 500]], [500, 500], 1.0),
        ([[500, 500]], [[500]], 0.0),
        # greedy would pair (110,0) with (100,0) for 0.9 and leave 0.1; the best assignment gives 0.5 + 0.7
        ([[100, 0], [160, 0]], [[110, 0], [70, 0]], (0.5 + 0.7) / 2),
        # a point outside the image is not clipped onto its edge: it is as far from a target as it lies
        ([[0, 500]], [[-300, 500]], 0.0),
        ([[0, 500]], [[-50, 500]], 0.5),
        ([[1000, 1000]], [[1e9, 1e9]], 0.0),
        ([[1000, 1000]], [[1e308, -1e308]], 0.0),
        ([[1000, 0]], [[1001, 0]], 0.99),
    ],
)
def test_point_table(target, predict, expected):
    assert point_verify(target=target, predict=predict) == pytest.approx(expected)


def test_far_points_use_the_matrix_path_without_overflow():
    # 64 pairs or more take the numpy path; points near the float limit must score 0 there too, with no warning
    target = [[1000, 1000]] * 8
    predict = [[1.7e308, 1.7e308]] * 4 + [[-1.7e308, 0]] * 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert point_verify(target=target, predict=predict) == 0.0


def test_point_radius_is_configurable():
    assert point_verify(target=[[500, 500]], predict=[[550, 500]], config=VerifyConfig(point_radius=200)) == 0.75


def _brute_force(scores: np.ndarray) -> float:
    n, m = scores.shape
    if n == 0 or m == 0:
        return 1.0 if n == m else 0.0
    if n <= m:
        best = max(sum(scores[i, c] for i, c in enumerate(cols)) for cols in itertools.permutations(range(m), n))
    else:
        best = max(sum(scores[r, j] for j, r in enumerate(rows)) for rows in itertools.permutations(range(n), m))
    return best / max(n, m)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 5).flatmap(
        lambda n: st.integers(0, 5).flatmap(
            lambda m: st.lists(st.floats(0, 1), min_size=n * m, max_size=n * m).map(
                lambda values: np.asarray(values, dtype=float).reshape(n, m)
            )
        )
    )
)
def test_matching_equals_brute_force(scores):
    assert matched_score(scores) == pytest.approx(_brute_force(scores))


coordinate = st.integers(0, 1000)
box = (
    st.tuples(coordinate, coordinate, coordinate, coordinate)
    .map(lambda b: [min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]) + 1, max(b[1], b[3]) + 1])
    .filter(lambda b: b[2] <= 1000 and b[3] <= 1000)
)


@settings(max_examples=100, deadline=None)
@given(st.lists(box, min_size=1, max_size=6), st.lists(box, max_size=6), st.randoms())
def test_bbox_properties(target, predict, rng):
    score = bbox_verify(target=target, predict=predict)
    assert 0.0 <= score <= 1.0
    assert bbox_verify(target=target, predict=target) == pytest.approx(1.0)
    shuffled = list(predict)
    rng.shuffle(shuffled)
    assert bbox_verify(target=target, predict=shuffled) == pytest.approx(score)


def test_a_coordinate_too_large_for_a_float_is_a_malformed_box():
    huge = 10**400
    result = run_verifier(
        "bbox_verify", {"target": [[0, 0, 10, 10]]}, {"predict": [[huge, 0, 10, 10], [0, 0, 10, 10]]}
    )
    assert result.status == "ok" and result.score == 0.5  # one malformed box of two
    with pytest.raises(TargetError):
        bbox_verify(target=[[huge, 0, 10, 10]], predict=[[0, 0, 10, 10]])
