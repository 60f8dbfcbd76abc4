"""The decode loop's parts that need no model: appending to a cache layer in place, and cutting the rows that join
into runs that share a prefix (the loop itself runs on the tiny judge in test_engine_generation)."""

import pytest

torch = pytest.importorskip("torch")

from genrm.engine.decoding import _ROOM, MIN_SHARED_TOKENS, _append, _runs_by_prefix  # noqa: E402


def _tokens(count: int, start: int = 0):
    return torch.arange(start, start + 2 * 2 * count * 3, dtype=torch.float32).reshape(2, 2, count, 3)


def test_a_layer_appends_into_its_room_and_starts_a_new_one_when_it_is_replaced_or_full():
    filled = _tokens(5)
    first, room = _append(filled, None, _tokens(1, 100))
    assert torch.equal(first, torch.cat([filled, _tokens(1, 100)], -2))
    assert room.shape[-2] == 6 + _ROOM and first.data_ptr() == room.data_ptr()
    second, same = _append(first, room, _tokens(1, 200))
    assert same is room  # written in place: no copy of what was there
    assert torch.equal(second, torch.cat([filled, _tokens(1, 100), _tokens(1, 200)], -2))
    # rows chosen from outside (a row left): a new tensor, so new room, the same contents
    kept = second[[1]]
    third, other = _append(kept, room, _tokens(1, 300)[[1]])
    assert other is not room and torch.equal(third, torch.cat([kept, _tokens(1, 300)[[1]]], -2))
    # filling the room to the last place in place, then one more: copied once into a larger one
    expected, current, full = third, third, other
    for step in range(_ROOM + 1):
        new = _tokens(1, 400 + step)[[0]]
        current, other = _append(current, other, new)
        expected = torch.cat([expected, new], -2)
        assert (other is full) == (step < _ROOM)
    assert torch.equal(current, expected) and other.shape[-2] == expected.shape[-2] + _ROOM


def _row(key, tokens):
    return (key, tokens, None)


def test_rows_of_several_groups_join_in_one_run_per_group_and_a_groups_rows_stay_together():
    system = list(range(200))
    first, second = system + [900] * 60, system + [950] * 60
    rows = [_row(f"a{i}", first + [i % 2] * 5) for i in range(4)]  # two pairs of identical prompts
    rows += [_row(f"b{i}", second + [i] * 3) for i in range(3)]
    rows.reverse()
    runs = _runs_by_prefix(rows)
    assert sorted(sorted(key for key, _, _ in run) for run in runs) == [["a0", "a1", "a2", "a3"], ["b0", "b1", "b2"]]


def test_rows_that_share_little_more_than_all_do_stay_in_one_run():
    system = list(range(200))
    few = MIN_SHARED_TOKENS - 1
    rows = [_row(i, system + [1000 + i] * few + [i]) for i in range(3)] + [_row(9, system + [7])]
    assert len(_runs_by_prefix(rows)) == 1
    assert [len(run) for run in _runs_by_prefix(rows[:1])] == [1]
