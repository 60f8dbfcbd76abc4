"""Shared-prefix ("cascade") attention for the decode loop's steps: the prefix every row starts with is kept once, not
once per row, and so is the prefix each group of rows shares after it; each step's queries attend over the first in
one product for all rows, over their group's in one product per group, then over each row's own tokens.

Why: the scoring prompts of a judge all start with the same system message (a thousand tokens and more), the G
prompts of a group then share their rubric and question (a few hundred), and a decode step on a CPU is bound by
reading keys and values: with those prefixes copied into every row's cache, each row read them at every step. Split
in three, each shared part is read once per step, and the parts' softmaxes are merged exactly (each part's
exponentials are taken from the joint maximum, so the result is the softmax over the whole). The order of the parts
does not matter: the positions are in the keys already (rotary embeddings are applied when a key is written).

How it plugs in: transformers lets a model's attention modules call a registered function
(``AttentionInterface``) in place of SDPA; :func:`use_shared_prefix_attention` registers
:func:`shared_prefix_attention` and switches a model that uses SDPA to it. Outside a block with a shared prefix
(prefill, ``model.generate``, any other use of the model) the function is SDPA itself, so nothing else changes. The
loop (:class:`genrm.engine.decoding.DecodeLoop`) sets the prefixes' keys and values around its decode steps
(:func:`shared_prefix`, :class:`GroupPrefixes`). It takes several query tokens per row too (causal over the row's own
tokens), but for a prefill, whose many queries read each key once for all of them anyway, SDPA's kernel was measured
the faster.

What it does not cover: attention with a sliding window, soft-capping, sinks or a position bias (refused with an
error, never silently ignored).

Needs torch and transformers; imported only where a local model runs.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

NAME = "genrm_shared_prefix"


@dataclass(frozen=True)
class GroupPrefixes:
    """The prefixes groups of rows share after the prefix all rows share, each kept once.

    Attributes:
        layers: per layer, the groups' keys and values, each ``[groups, key/value heads, longest, head dim]``, a
            shorter group's padded at the end.
        valid: ``[groups, longest]``, True where a group's prefix has a token (False on its padding).
        group: ``[rows]``, each row's group (a row of no group points at one whose prefix is all padding).
        slot: ``[rows]``, each row's place among its group's rows, below ``width``.
        width: the most rows one group has.
    """

    layers: Sequence[tuple[torch.Tensor, torch.Tensor]]
    valid: torch.Tensor
    group: torch.Tensor
    slot: torch.Tensor
    width: int


#: Per layer, the shared prefix's keys and values, each ``[1, key/value heads, prefix tokens, head dim]`` (or None),
#: and the groups' prefixes after it (or None).
_shared: contextvars.ContextVar[tuple[Sequence[tuple[torch.Tensor, torch.Tensor]] | None, GroupPrefixes | None]] = (
    contextvars.ContextVar("genrm_shared_prefix", default=(None, None))
)


def use_shared_prefix_attention(model: PreTrainedModel) -> bool:
    """Switch ``model`` to :func:`shared_prefix_attention` when it attends with SDPA (the default on a CPU and with
    no flash kernel); True when it uses it (now or already), False when it keeps its own attention."""
    implementation = getattr(model.config, "_attn_implementation", None)
    if implementation == NAME:
        return True
    if implementation != "sdpa":
        return False
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, shared_prefix_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)  # the masks SDPA gets, for the rows' own tokens
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, ImportError):  # a model that does not take a registered function keeps SDPA
        return False
    return getattr(model.config, "_attn_implementation", None) == NAME


@contextlib.contextmanager
def shared_prefix(
    layers: Sequence[tuple[torch.Tensor, torch.Tensor]] | None, groups: GroupPrefixes | None = None
) -> Iterator[None]:
    """Within the block, a model switched by :func:`use_shared_prefix_attention` attends its queries over ``layers``
    (per layer: keys and values ``[1, key/value heads, tokens, head dim]``, the prefix of all rows) and over their
    group's prefix in ``groups``, besides each row's own cache."""
    token = _shared.set((layers, groups))
    try:
        yield
    finally:
        _shared.reset(token)


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of ``query`` (``[rows, heads, queries, dim]``, the last ``queries`` positions of each row) over the
    shared prefix, each row's group prefix, and each row's ``key`` and ``value`` (``[rows, key/value heads, tokens,
    dim]``), causally, ``attention_mask`` hiding padding; SDPA itself when no shared prefix is set. Returns ``[rows,
    queries, heads, dim]`` and no weights."""
    layers, groups = _shared.get()
    if layers is None and groups is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)  # fmt: skip
    for option in ("sliding_window", "softcap", "s_aux", "sinks", "position_bias"):
        if kwargs.get(option) is not None:
            raise NotImplementedError(f"shared-prefix attention does not support {option}")
    import torch

    rows, heads, queries, dim = query.shape
    kv_heads, tokens = key.shape[1], key.shape[2]
    per = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    # heads grouped by the key/value head they share (repeat_kv's order), in float32 for the softmax
    grouped = query.reshape(rows, kv_heads, per * queries, dim).float()
    own_scores = torch.matmul(grouped, key.float().transpose(2, 3)) * scale  # [rows, kv heads, per*queries, tokens]
    if attention_mask is None:  # SDPA's mask left out: no padding, causal over the row's own tokens
        attention_mask = torch.ones(queries, tokens, dtype=torch.bool, device=query.device).tril(tokens - queries)
    mask = attention_mask.expand(rows, 1, queries, tokens).reshape(rows, 1, 1, queries, tokens)
    mask = mask.expand(rows, 1, per, queries, tokens).reshape(rows, 1, per * queries, tokens)
    if mask.dtype == torch.bool:
        own_scores = own_scores.masked_fill(~mask, float("-inf"))
    else:
        own_scores = own_scores + mask.float()
    parts = [_Part(own_scores, lambda weights: torch.matmul(weights, value.float()))]
    if layers is not None:
        parts.append(_prefix_part(grouped, *layers[module.layer_idx], scale))
    if groups is not None:
        parts.append(_group_part(grouped, groups, module.layer_idx, scale))
    top = parts[0].scores.amax(-1, keepdim=True)
    for part in parts[1:]:
        top = torch.maximum(top, part.scores.amax(-1, keepdim=True))
    weights = [(part.scores - top).exp() for part in parts]
    total = sum(w.sum(-1, keepdim=True) for w in weights)
    output = sum(part.read(w) for part, w in zip(parts, weights, strict=True)) / total
    return output.reshape(rows, heads, queries, dim).transpose(1, 2).contiguous().to(query.dtype), None


@dataclass(frozen=True)
class _Part:
    """One part of the keys: every query's scores over it ``[rows, kv heads, per*queries, keys]``, and how to read
    its values with weights of that shape (``[rows, kv heads, per*queries, dim]``)."""

    scores: torch.Tensor
    read: Callable[[torch.Tensor], torch.Tensor]


def _prefix_part(grouped: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float) -> _Part:
    import torch

    # one product per key/value head for all rows' queries
    rows, kv_heads, width, dim = grouped.shape
    stacked = grouped.transpose(0, 1).reshape(kv_heads, rows * width, dim)
    scores = (torch.bmm(stacked, keys[0].float().transpose(1, 2)) * scale).reshape(kv_heads, rows, width, -1)

    def read(weights: torch.Tensor) -> torch.Tensor:
        flat = weights.transpose(0, 1).reshape(kv_heads, rows * width, -1)
        return torch.bmm(flat, values[0].float()).reshape(kv_heads, rows, width, dim).transpose(0, 1)

    return _Part(scores.transpose(0, 1), read)


def _group_part(grouped: torch.Tensor, groups: GroupPrefixes, layer: int, scale: float) -> _Part:
    import torch

    # the queries laid out by group ([groups, kv heads, width * per*queries, dim], empty places zero), one product per
    # group and key/value head, then the scores back in row order; the weights go the same way for the values
    keys, values = groups.layers[layer]
    rows, kv_heads, width, dim = grouped.shape
    count, longest = keys.shape[0], keys.shape[2]

    def by_group(tensor: torch.Tensor) -> torch.Tensor:
        placed = tensor.new_zeros(count, groups.width, *tensor.shape[1:])
        placed[groups.group, groups.slot] = tensor
        return placed.transpose(1, 2).reshape(count, kv_heads, groups.width * width, tensor.shape[-1])

    def by_row(tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.reshape(count, kv_heads, groups.width, width, tensor.shape[-1]).transpose(1, 2)
        return tensor[groups.group, groups.slot]

    scores = by_row(torch.matmul(by_group(grouped), keys.float().transpose(2, 3)) * scale)
    hidden = ~groups.valid[groups.group].reshape(rows, 1, 1, longest)
    scores = scores.masked_fill(hidden, float("-inf"))
    return _Part(scores, lambda weights: by_row(torch.matmul(by_group(weights), values.float())))
