"""Shared-prefix ("cascade") attention for the decode loop's steps: the prefix every row starts with is kept once, not
once per row, and each step's queries attend over it in one product for all rows, then over each row's own tokens.

Why: the scoring prompts of a judge all start with the same system message (a thousand tokens and more), and a
decode step on a CPU is bound by reading keys and values: with that prefix copied into every row's cache, each row
read it at every step. Split in two, the shared part is read once per step, and the two parts' softmaxes are merged
exactly (each part's exponentials are taken from the joint maximum, so the result is the softmax over the whole).

How it plugs in: transformers lets a model's attention modules call a registered function
(``AttentionInterface``) in place of SDPA; :func:`use_shared_prefix_attention` registers
:func:`shared_prefix_attention` and switches a model that uses SDPA to it. Outside a block with a shared prefix
(prefill, ``model.generate``, any other use of the model) the function is SDPA itself, so nothing else changes. The
loop (:class:`genrm.engine.decoding.DecodeLoop`) sets the shared prefix's keys and values around its decode steps
(:func:`shared_prefix`). It takes several query tokens per row too (causal over the row's own tokens), but for a
prefill, whose many queries read each key once for all of them anyway, SDPA's kernel was measured the faster.

What it does not cover: attention with a sliding window, soft-capping, sinks or a position bias (refused with an
error, never silently ignored).

Needs torch and transformers; imported only where a local model runs.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

NAME = "genrm_shared_prefix"

#: Per layer, the shared prefix's keys and values, each ``[1, key/value heads, prefix tokens, head dim]``.
_shared: contextvars.ContextVar[Sequence[tuple[torch.Tensor, torch.Tensor]] | None] = contextvars.ContextVar(
    "genrm_shared_prefix", default=None
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
def shared_prefix(layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Iterator[None]:
    """Within the block, a model switched by :func:`use_shared_prefix_attention` attends its queries over ``layers``
    (per layer: keys and values ``[1, key/value heads, tokens, head dim]``) before each row's own cache."""
    token = _shared.set(layers)
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
    shared prefix, then over each row's ``key`` and ``value`` (``[rows, key/value heads, tokens, dim]``), causally,
    ``attention_mask`` hiding padding; SDPA itself when no shared prefix is set. Returns ``[rows, queries, heads,
    dim]`` and no weights."""
    layers = _shared.get()
    if layers is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)  # fmt: skip
    for option in ("sliding_window", "softcap", "s_aux", "sinks", "position_bias"):
        if kwargs.get(option) is not None:
            raise NotImplementedError(f"shared-prefix attention does not support {option}")
    import torch

    prefix_keys, prefix_values = layers[module.layer_idx]
    rows, heads, queries, dim = query.shape
    groups, tokens = key.shape[1], key.shape[2]
    per_group = heads // groups
    scale = dim**-0.5 if scaling is None else scaling
    # heads grouped by the key/value head they share (repeat_kv's order), in float32 for the softmax
    grouped = query.reshape(rows, groups, per_group * queries, dim).float()
    # the shared prefix: one product per key/value head for all rows' queries
    stacked = grouped.transpose(0, 1).reshape(groups, rows * per_group * queries, dim)
    prefix_scores = torch.bmm(stacked, prefix_keys[0].float().transpose(1, 2)) * scale
    prefix_scores = prefix_scores.reshape(groups, rows, per_group * queries, -1).transpose(0, 1)
    own_scores = torch.matmul(grouped, key.float().transpose(2, 3)) * scale  # [rows, groups, per*queries, tokens]
    if attention_mask is None:  # SDPA's mask left out: no padding, causal over the row's own tokens
        attention_mask = torch.ones(queries, tokens, dtype=torch.bool, device=query.device).tril(tokens - queries)
    mask = attention_mask.expand(rows, 1, queries, tokens).reshape(rows, 1, 1, queries, tokens)
    mask = mask.expand(rows, 1, per_group, queries, tokens).reshape(rows, 1, per_group * queries, tokens)
    if mask.dtype == torch.bool:
        own_scores = own_scores.masked_fill(~mask, float("-inf"))
    else:
        own_scores = own_scores + mask.float()
    top = torch.maximum(prefix_scores.amax(-1, keepdim=True), own_scores.amax(-1, keepdim=True))
    prefix_weights, own_weights = (prefix_scores - top).exp(), (own_scores - top).exp()
    total = prefix_weights.sum(-1, keepdim=True) + own_weights.sum(-1, keepdim=True)
    stacked_weights = prefix_weights.transpose(0, 1).reshape(groups, rows * per_group * queries, -1)
    from_prefix = torch.bmm(stacked_weights, prefix_values[0].float())
    from_prefix = from_prefix.reshape(groups, rows, per_group * queries, dim).transpose(0, 1)
    output = (from_prefix + torch.matmul(own_weights, value.float())) / total
    return output.reshape(rows, heads, queries, dim).transpose(1, 2).contiguous().to(query.dtype), None
