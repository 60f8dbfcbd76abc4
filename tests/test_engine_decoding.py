"""The decode loop's parts that need no model: appending to a cache layer in place, and cutting the rows that join
into runs that share a prefix (the loop itself runs on the tiny judge in test_engine_generation)."""

import pytest

torch = pytest.importorskip("torch")

from genrm.engine.decoding import _ROOM, MIN_SHARED_TOKENS, RUN_COST_TOKENS, _append, _runs_by_prefix  # noqa: E402


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


def test_groups_whose_questions_begin_alike_still_get_a_run_each():
    # Every question of a pass starts with the same words: the groups share more than the system message, and the
    # cut between two of them is not where all rows share least.
    system, tag = list(range(200)), [500] * 6
    question = [0] * (RUN_COST_TOKENS // 2)  # a run of its own saves its tokens for every row but one
    questions = {"a": tag + [901] * 3 + [910] + question, "b": tag + [901] * 3 + [920] + question,
                 "c": tag + [930] + question}  # fmt: skip
    rows = [_row(f"{name}{i}", system + question + [i] * 4) for name, question in questions.items() for i in range(4)]
    runs = _runs_by_prefix(rows)
    assert sorted(sorted(key for key, _, _ in run) for run in runs) == [[f"{name}{i}" for i in range(4)]
                                                                       for name in "abc"]  # fmt: skip


def test_rows_that_share_much_more_than_the_others_get_a_run_and_the_rest_stay_together():
    group = list(range(300))
    rows = [_row(f"r{i}", group + [1000 + i] * 3) for i in range(5)]  # distinct responses
    said_twice = [_row(f"same{i}", group + [2000] * (RUN_COST_TOKENS + 10) + [i]) for i in range(2)]
    runs = sorted(sorted(key for key, _, _ in run) for run in _runs_by_prefix(rows + said_twice))
    assert runs == [[f"r{i}" for i in range(5)], ["same0", "same1"]]
    # a run of its own for what saves less than a run costs: all stay together
    said_twice = [_row(f"same{i}", group + [2000] * (RUN_COST_TOKENS - 10) + [i]) for i in range(2)]
    assert len(_runs_by_prefix(rows + said_twice)) == 1


def test_rows_that_share_little_more_than_all_do_stay_in_one_run():
    system = list(range(200))
    few = MIN_SHARED_TOKENS - 1
    rows = [_row(i, system + [1000 + i] * few + [i]) for i in range(3)] + [_row(9, system + [7])]
    assert len(_runs_by_prefix(rows)) == 1
    assert [len(run) for run in _runs_by_prefix(rows[:1])] == [1]


def _attention_inputs(rows=3, heads=4, groups=2, queries=1, own=7, prefix=11, dim=8, seed=0):
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=generator)

    return (rand(rows, heads, queries, dim), rand(rows, groups, own, dim), rand(rows, groups, own, dim),
            rand(1, groups, prefix, dim), rand(1, groups, prefix, dim))  # fmt: skip


class _Layer(torch.nn.Module):
    layer_idx, num_key_value_groups, is_causal = 0, 2, True


def _reference(query, key, value, prefix_keys, prefix_values, own_mask):
    """SDPA over the prefix copied into every row, then the row's own tokens (own_mask: [rows, queries, own])."""
    rows, heads = query.shape[:2]
    keys = torch.cat([prefix_keys.expand(rows, -1, -1, -1), key], 2).repeat_interleave(heads // key.shape[1], 1)
    values = torch.cat([prefix_values.expand(rows, -1, -1, -1), value], 2).repeat_interleave(heads // key.shape[1], 1)
    prefix_mask = torch.ones(rows, query.shape[2], prefix_keys.shape[2], dtype=torch.bool)
    mask = torch.cat([prefix_mask, own_mask], -1)[:, None]
    return torch.nn.functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask).transpose(1, 2)


def test_shared_prefix_attention_is_attention_over_the_prefix_and_each_rows_tokens():
    from genrm.engine.cascade import shared_prefix, shared_prefix_attention

    query, key, value, prefix_keys, prefix_values = _attention_inputs()
    padding = torch.ones(3, 1, 7, dtype=torch.bool)
    padding[0, :, :3] = False  # a row left-padded by three
    with shared_prefix([(prefix_keys, prefix_values)]):
        out, weights = shared_prefix_attention(_Layer(), query, key, value, padding[:, None], scaling=8**-0.5)
    assert weights is None and out.shape == (3, 1, 4, 8)
    assert torch.allclose(out, _reference(query, key, value, prefix_keys, prefix_values, padding), atol=1e-5)
    # several query tokens per row, no mask: causal over the row's own tokens
    query, key, value, prefix_keys, prefix_values = _attention_inputs(queries=4, seed=1)
    with shared_prefix([(prefix_keys, prefix_values)]):
        out, _ = shared_prefix_attention(_Layer(), query, key, value, None, scaling=8**-0.5)
    causal = torch.ones(4, 7, dtype=torch.bool).tril(3).expand(3, 4, 7)
    assert torch.allclose(out, _reference(query, key, value, prefix_keys, prefix_values, causal), atol=1e-5)


def _group_prefixes(lengths, group, kv_heads=2, dim=8, seed=2):
    """Group prefixes of the given lengths (padded to the longest) for rows in ``group`` (-1: no group), and the
    keys and values each row reads from them."""
    from genrm.engine.cascade import GroupPrefixes

    generator = torch.Generator().manual_seed(seed)
    longest = max(lengths)
    keys = torch.randn(len(lengths) + 1, kv_heads, longest, dim, generator=generator)
    values = torch.randn(len(lengths) + 1, kv_heads, longest, dim, generator=generator)
    valid = torch.zeros(len(lengths) + 1, longest, dtype=torch.bool)
    for index, length in enumerate(lengths):
        valid[index, :length] = True
    keys.masked_fill_(~valid[:, None, :, None], 1e3)  # padding must not be read, whatever it holds
    row_group = torch.tensor([g if g >= 0 else len(lengths) for g in group])
    slots = [sum(1 for other in group[:i] if other == g) for i, g in enumerate(group)]
    prefixes = GroupPrefixes([(keys, values)], valid, row_group, torch.tensor(slots), max(slots) + 1)
    per_row = [(keys[g, :, : (lengths[g] if g >= 0 else 0)], values[g, :, : (lengths[g] if g >= 0 else 0)])
               for g in group]  # fmt: skip
    return prefixes, per_row


def test_group_prefixes_are_attention_over_each_rows_own_groups_prefix():
    from genrm.engine.cascade import shared_prefix, shared_prefix_attention

    rows = 5
    query, key, value, prefix_keys, prefix_values = _attention_inputs(rows=rows, seed=3)
    padding = torch.ones(rows, 1, 7, dtype=torch.bool)
    padding[1, :, :2] = False
    # rows 0, 2 and 4 in group 0 (9 tokens), row 1 in group 1 (4 tokens, padded), row 3 in no group
    groups, per_row = _group_prefixes([9, 4], [0, 1, 0, -1, 0])
    expected = torch.cat([
        _reference(query[[i]], torch.cat([group_keys[None], key[[i]]], 2),
                   torch.cat([group_values[None], value[[i]]], 2), prefix_keys, prefix_values,
                   torch.cat([torch.ones(1, 1, group_keys.shape[1], dtype=torch.bool), padding[[i]]], -1))
        for i, (group_keys, group_values) in enumerate(per_row)
    ])  # fmt: skip
    with shared_prefix([(prefix_keys, prefix_values)], groups):
        out, _ = shared_prefix_attention(_Layer(), query, key, value, padding[:, None], scaling=8**-0.5)
    assert torch.allclose(out, expected, atol=1e-5)
    # group prefixes with no prefix of all rows before them
    expected = torch.cat([
        _reference(query[[i]], torch.cat([group_keys[None], key[[i]]], 2),
                   torch.cat([group_values[None], value[[i]]], 2), prefix_keys[:, :, :0], prefix_values[:, :, :0],
                   torch.cat([torch.ones(1, 1, group_keys.shape[1], dtype=torch.bool), padding[[i]]], -1))
        for i, (group_keys, group_values) in enumerate(per_row)
    ])  # fmt: skip
    with shared_prefix(None, groups):
        out, _ = shared_prefix_attention(_Layer(), query, key, value, padding[:, None], scaling=8**-0.5)
    assert torch.allclose(out, expected, atol=1e-5)


def test_without_a_shared_prefix_it_is_sdpa_and_what_it_cannot_do_it_refuses():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from genrm.engine.cascade import shared_prefix, shared_prefix_attention

    query, key, value, prefix_keys, prefix_values = _attention_inputs()
    mine, _ = shared_prefix_attention(_Layer(), query, key, value, None, scaling=0.3)
    theirs, _ = sdpa_attention_forward(_Layer(), query, key, value, None, scaling=0.3)
    assert torch.equal(mine, theirs)
    with shared_prefix([(prefix_keys, prefix_values)]), pytest.raises(NotImplementedError, match="sliding_window"):
        shared_prefix_attention(_Layer(), query, key, value, None, sliding_window=4)
