"""Continuous batching in process: one decode loop whose rows leave as soon as their answer ends and whose free places
are taken by prompts that arrive meanwhile, each row constrained by its own grammar.

Why not ``model.generate`` for concurrent requests: it runs a batch until its longest row ends, finished rows
included, and it takes no new rows. A judge's answers vary a lot in length (a weak or untrained judge may run to the
token budget), and on a CPU much of a decode step's cost is per row, because each row attends over its own prompt and
answer. Here a row costs only its own steps, prompts that arrive while others decode join at the next step, each
group's prompts are prefilled together (:func:`_runs_by_prefix`), the prefix all rows share and the one each group's
rows share after it are kept once (:mod:`genrm.engine.cascade`), and a step writes its token into room kept in the
cache (:func:`_grow_with_room`) instead of copying every row's cache to add it.

Why not transformers' own continuous batching (``generate_batch``, ``ContinuousBatchingManager``): its logits
processors come from the generation config and apply to every request alike, so a row cannot be held to its own
rubric's grammar, which is what a judge needs; its paged cache also replaces the prefix cache the scoring prompts are
laid out for (:mod:`genrm.engine.generation`).

What it covers: text prompts, models whose cache layers are all full-attention :class:`transformers.DynamicLayer`
(Qwen, Llama, Mistral without a sliding window ...), greedy decoding or sampling with a temperature and top-p, one
temperature per loop. What it does not: images (their pixels go through ``model.generate``), sliding-window or other
cache layers (:func:`supports_model` says so, and the generator keeps ``model.generate``), beams.

Needs torch and transformers; imported only where a local model runs.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from genrm.engine.cascade import GroupPrefixes, shared_prefix, use_shared_prefix_attention

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

#: ``token ids of the new rows -> model inputs`` (``input_ids``, ``attention_mask`` and optionally the KV cache of a
#: prefix they share, under :func:`cache_keyword`), as :meth:`genrm.engine.generation.LocalGenerator._batch_inputs`
#: builds.
PrefillInputs = Callable[[list[list[int]]], dict[str, Any]]


@functools.lru_cache(maxsize=32)
def _cache_keyword_of(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def cache_keyword(model: Any) -> str:
    """The keyword ``model``'s forward and ``generate`` take a KV cache by: ``cache`` where the installed
    transformers has it (``past_key_values``, its older name, is deprecated there and goes in 5.40), else
    ``past_key_values``."""
    return _cache_keyword_of(type(model))


#: A common prefix shorter than this is not worth a forward pass of its own (its cache computed once, then shared).
MIN_SHARED_TOKENS = 32
#: What one more prefill run costs (its prefix looked up, a forward pass, its rows joined into the loop's cache), in
#: tokens of prefill: each of those took 15 to 30 ms on one CPU core for the tiny judge, about 0.2 ms a token.
RUN_COST_TOKENS = 128


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Tokens every row starts with, leaving each row at least one token of its own (generation needs one). Rows are
    sequences of one kind (all lists or all tuples)."""
    limit = min(len(row) for row in rows) - 1
    # the common prefix of all is that of the lexicographically first and last (os.path.commonprefix compares them)
    return max(0, min(limit, len(os.path.commonprefix(list(rows)))))


def supports_model(model: PreTrainedModel) -> bool:
    """Whether the loop can decode for ``model``: every layer of its cache is a full-attention ``DynamicLayer``."""
    from transformers import DynamicCache, DynamicLayer

    try:
        cache = DynamicCache(config=model.config)
    except Exception:  # noqa: BLE001 - a config the cache cannot read is one the loop does not take
        return False
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


@dataclass(eq=False)
class _Segment:
    """A prefix the rows of one group share after the loop's shared prefix: per layer, keys and values ``[1, key/value
    heads, length, head dim]``."""

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    length: int


@dataclass
class _Row:
    key: Any
    prompt_tokens: int
    matcher: Any
    segment: _Segment | None = None
    tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Finished:
    """A row that left the loop: the caller's key, the prompt's length, and the answer's tokens (the end-of-sequence
    token last when it ended before the token budget)."""

    key: Any
    prompt_tokens: int
    tokens: list[int]


class DecodeLoop:
    """The rows decoding together (see the module docstring). Not thread-safe: one thread admits and steps."""

    def __init__(
        self,
        model: PreTrainedModel,
        prefill: PrefillInputs,
        eos_token_id: int,
        max_new_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
    ) -> None:
        """Make an empty loop.

        Args:
            model: a causal LM in eval mode (:func:`supports_model`).
            prefill: builds the model inputs of newly admitted rows (left-padded; a shared prefix's cache).
            eos_token_id: the token that ends an answer.
            max_new_tokens: the token budget of an answer (>= 1).
            temperature: 0 for greedy decoding, else the sampling temperature (> 0).
            top_p: nucleus sampling's probability mass in (0, 1] (with a temperature).
        """
        if max_new_tokens < 1 or temperature < 0 or not 0.0 < top_p <= 1.0:
            raise ValueError("max_new_tokens must be >= 1, temperature >= 0 and top_p in (0, 1]")
        self.model, self._prefill, self.eos = model, prefill, int(eos_token_id)
        self._cache_key = cache_keyword(model)
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        # the logits of the last position only: a prompt's full logits would take rows x tokens x vocabulary floats
        keeps = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._last_only = {"logits_to_keep": 1} if keeps else {}
        self._rows: list[_Row] = []
        self._cache: Any = None
        self._mask: torch.Tensor | None = None
        self._logits: torch.Tensor | None = None
        # the prefix every row starts with, kept once (genrm.engine.cascade): its tokens and per-layer keys and values;
        # the rows' cache and mask start after it
        self._cascade = use_shared_prefix_attention(model)
        self._shared_ids: list[int] = []
        self._shared: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        # after it, the prefix each group's rows share, kept once per group (a row's cache starts after its group's)
        self._groups: GroupPrefixes | None = None
        self._group_lengths: torch.Tensor | None = None
        self._padded: tuple[tuple[Any, ...], list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor] | None = None

    @property
    def active(self) -> int:
        """Rows decoding now."""
        return len(self._rows)

    def admit(self, rows: Sequence[tuple[Any, list[int], Any]]) -> None:
        """Add rows: ``(key, prompt token ids, compiled XGrammar grammar or None)``. Their prompts are run through
        the model now, in runs that share a prefix (:func:`_runs_by_prefix`: each run's prefix once), and they decode
        from the next :meth:`step` on. The prefix all rows share, old and new, is kept once (the module docstring)."""
        if not rows:
            return
        target = 0
        if self._cascade:
            prompts = [list(ids) for _, ids, _ in rows]
            if self._rows:  # what the new rows share with the loop's shared prefix (-1: no token, so all of it)
                prompts.append([*self._shared_ids, -1])
            target = common_prefix_length(prompts)
        for run in _runs_by_prefix(rows):
            self._admit_run(run, target)
        self._index_groups()

    def _admit_run(self, rows: Sequence[tuple[Any, list[int], Any]], target: int) -> None:
        import torch
        from transformers import DynamicCache

        inputs = self._prefill([list(ids) for _, ids, _ in rows])
        mask = inputs["attention_mask"]
        cache = inputs.get(self._cache_key)
        shared = cache.get_seq_length() if cache is not None else 0
        if cache is None:
            cache = DynamicCache(config=self.model.config)
        _grow_with_room(cache)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        # prefilled over the whole cache with SDPA: its queries are many, so each token of the prefix is read once
        # for all of them anyway, and SDPA's kernel is the faster there
        with torch.inference_mode():
            output = self.model(input_ids=inputs["input_ids"][:, shared:], attention_mask=mask,
                                position_ids=positions[:, shared:], use_cache=True,
                                **{self._cache_key: cache}, **self._last_only)  # fmt: skip
        # the run's cache starts with its prefix (its first `shared` positions alike in every row): the part of it
        # that all rows share is kept once, the rest of it once for the run's rows, and both are cut from the run
        keep = min(target, shared)
        keep = keep if keep >= MIN_SHARED_TOKENS else 0
        if self._rows:
            self._shrink_shared(min(keep, len(self._shared_ids)))
        else:
            self._shared_ids = list(rows[0][1][:keep])
            self._shared = [(layer.keys[:1, :, :keep].clone(), layer.values[:1, :, :keep].clone())
                            for layer in cache.layers] if keep else None  # fmt: skip
        offset = cut = len(self._shared_ids)
        segment = None
        if self._cascade and len(rows) > 1 and shared - offset >= MIN_SHARED_TOKENS:
            segment = _Segment([(layer.keys[:1, :, offset:shared].clone(), layer.values[:1, :, offset:shared].clone())
                                for layer in cache.layers], shared - offset)  # fmt: skip
            cut = shared
        if cut:
            for layer in cache.layers:
                layer.keys, layer.values = layer.keys[..., cut:, :], layer.values[..., cut:, :]
            mask = mask[:, cut:]
        new = [_Row(key, len(ids), _matcher(grammar), segment) for key, ids, grammar in rows]
        self._join(cache, mask, output.logits[:, -1, :].float(), new)

    def _attending(self) -> contextlib.AbstractContextManager[None]:
        if self._shared or self._groups is not None:
            return shared_prefix(self._shared, self._groups)
        return contextlib.nullcontext()

    def _index_groups(self) -> None:
        """Lay out the group prefixes of the rows now in the loop (:class:`GroupPrefixes`): padded to the longest,
        rebuilt only when the set of groups changed, and each row's group and place in it."""
        import torch

        segments = list({id(row.segment): row.segment for row in self._rows if row.segment is not None}.values())
        if not segments:
            self._groups = self._group_lengths = self._padded = None
            return
        ungrouped = any(row.segment is None for row in self._rows)
        names = (*segments, ungrouped)  # segments compare by identity
        if self._padded is None or self._padded[0] != names:
            longest = max(segment.length for segment in segments)

            def padded(tensors: list[torch.Tensor]) -> torch.Tensor:
                parts = [torch.nn.functional.pad(t, (0, 0, 0, longest - t.shape[-2])) for t in tensors]
                if ungrouped:  # the group of rows that have none: all padding
                    parts.append(torch.zeros_like(parts[0]))
                return torch.cat(parts)

            layers = [(padded([s.layers[i][0] for s in segments]), padded([s.layers[i][1] for s in segments]))
                      for i in range(len(segments[0].layers))]  # fmt: skip
            valid = (
                torch.arange(longest, device=layers[0][0].device)[None, :]
                < torch.tensor([s.length for s in segments] + [0] * ungrouped, device=layers[0][0].device)[:, None]
            )
            self._padded = (names, layers, valid)
        _, layers, valid = self._padded
        index = {id(segment): i for i, segment in enumerate(segments)}
        group, slot, seen = [], [], [0] * (len(segments) + 1)
        for row in self._rows:
            g = index[id(row.segment)] if row.segment is not None else len(segments)
            group.append(g)
            slot.append(seen[g])
            seen[g] += 1
        device = valid.device
        self._groups = GroupPrefixes(layers, valid, torch.tensor(group, device=device),
                                     torch.tensor(slot, device=device), max(seen))  # fmt: skip
        lengths = [row.segment.length if row.segment is not None else 0 for row in self._rows]
        self._group_lengths = torch.tensor(lengths, device=device)[:, None]

    def _shrink_shared(self, keep: int) -> None:
        """Keep only the first ``keep`` tokens of the shared prefix: the rest goes back into every row's cache."""
        import torch

        tail = len(self._shared_ids) - keep
        if tail <= 0 or self._shared is None or self._mask is None:
            return
        rows = len(self._rows)
        for layer, (keys, values) in zip(self._cache.layers, self._shared, strict=True):
            layer.keys = torch.cat([keys[..., keep:, :].expand(rows, -1, -1, -1), layer.keys], -2)
            layer.values = torch.cat([values[..., keep:, :].expand(rows, -1, -1, -1), layer.values], -2)
        self._mask = torch.cat([self._mask.new_ones((rows, tail)), self._mask], 1)
        kept = [(keys[..., :keep, :], values[..., :keep, :]) for keys, values in self._shared]
        self._shared = kept if keep else None
        self._shared_ids = self._shared_ids[:keep]

    def _join(self, cache: Any, mask: torch.Tensor, logits: torch.Tensor, rows: list[_Row]) -> None:
        import torch

        if self._cache is None or self._mask is None or self._logits is None:
            self._cache, self._mask, self._logits, self._rows = cache, mask, logits, rows
            return
        width = max(self._mask.shape[1], mask.shape[1])
        for mine, theirs in zip(self._cache.layers, cache.layers, strict=True):
            mine.keys = torch.cat([_left_pad(mine.keys, width), _left_pad(theirs.keys, width)])
            mine.values = torch.cat([_left_pad(mine.values, width), _left_pad(theirs.values, width)])
        self._mask = torch.cat([_left_pad(self._mask, width), _left_pad(mask, width)])
        self._logits = torch.cat([self._logits, logits])
        self._rows += rows

    def step(self) -> list[Finished]:
        """Decode one token for every row; the rows whose answer ended (or ran out of budget) leave and are returned.
        After an exception the loop is in no known state: the caller fails its rows and drops it."""
        if not self._rows or self._mask is None or self._logits is None:
            return []
        import torch

        logits = self._logits.clone()
        _constrain(logits, [row.matcher for row in self._rows])
        tokens = self._choose(logits).tolist()
        done, keep = [], []
        for index, (row, token) in enumerate(zip(self._rows, tokens, strict=True)):
            row.tokens.append(int(token))
            if row.matcher is not None and not row.matcher.is_terminated():
                row.matcher.accept_token(int(token))
            if token == self.eos or len(row.tokens) >= self.max_new_tokens:
                done.append(Finished(row.key, row.prompt_tokens, row.tokens))
            else:
                keep.append(index)
        if len(keep) < len(self._rows):
            self._retire(keep)
        if keep:
            self._advance(torch.tensor([[tokens[i]] for i in keep], device=self._mask.device))
        return done

    def _choose(self, logits: torch.Tensor) -> torch.Tensor:
        import torch

        if self.temperature <= 0:
            return logits.argmax(-1)
        scores = logits / self.temperature
        if self.top_p < 1.0:
            ordered, order = scores.sort(-1, descending=True)
            probabilities = ordered.softmax(-1)
            # drop the tokens outside the smallest set whose mass reaches top_p (the most likely always stays)
            outside = probabilities.cumsum(-1) - probabilities > self.top_p
            ordered = ordered.masked_fill(outside, float("-inf"))
            scores = torch.full_like(scores, float("-inf")).scatter(-1, order, ordered)
        return torch.multinomial(scores.softmax(-1), 1).squeeze(-1)

    def _retire(self, keep: list[int]) -> None:
        import torch

        assert self._mask is not None and self._logits is not None
        self._rows = [self._rows[i] for i in keep]
        if not keep:
            self._cache = self._mask = self._logits = self._shared = None
            self._shared_ids = []
            self._index_groups()
            return
        index = torch.tensor(keep, device=self._mask.device)
        self._cache.batch_select_indices(index)
        self._mask, self._logits = self._mask[index], self._logits[index]
        # columns that are padding for every remaining row (the longest prompt left) are dropped
        first = int(self._mask.any(0).nonzero()[0])
        if first:
            self._mask = self._mask[:, first:]
            for layer in self._cache.layers:
                layer.keys, layer.values = layer.keys[..., first:, :], layer.values[..., first:, :]
        self._index_groups()

    def _advance(self, tokens: torch.Tensor) -> None:
        import torch

        assert self._mask is not None
        mask = torch.cat([self._mask, self._mask.new_ones((self._mask.shape[0], 1))], 1)
        positions = len(self._shared_ids) + mask.sum(-1, keepdim=True) - 1
        if self._group_lengths is not None:
            positions = positions + self._group_lengths
        with torch.inference_mode(), self._attending():
            output = self.model(input_ids=tokens, attention_mask=mask, position_ids=positions, use_cache=True,
                                **{self._cache_key: self._cache}, **self._last_only)  # fmt: skip
        self._mask, self._logits = mask, output.logits[:, -1, :].float()


def _runs_by_prefix(rows: Sequence[tuple[Any, list[int], Any]]) -> list[list[tuple[Any, list[int], Any]]]:
    """``rows`` in runs to prefill together, each run's prefix computed once (from the generator's kept prefix) and
    then only each row's own tokens.

    Prompts that arrive together are often several groups: their common prefix is the system message alone, and one
    prefill of them all would run every row's rubric and question once per row. The rows are sorted by their tokens
    and cut where neighbours share least, level by level (groups whose questions begin alike are still told apart at
    the next level); a part becomes a run of its own when that computes fewer tokens than leaving its rows with the
    others, counting :data:`RUN_COST_TOKENS` for each run.
    """
    ordered = sorted(rows, key=lambda row: row[1])
    lengths = [len(row[1]) for row in ordered]
    # the common prefix of sorted rows i..j is the least of their neighbours' (each leaves a token per row)
    common = [common_prefix_length([a[1], b[1]]) for a, b in zip(ordered, ordered[1:], strict=False)]
    _, runs = _plan(lengths, common, 0, len(ordered), 0)
    return [[ordered[i] for i in run] for run in runs]


def _plan(lengths: list[int], common: list[int], start: int, end: int, base: int) -> tuple[int, list[list[int]]]:
    """The runs of sorted rows ``start..end-1`` (already sharing ``base`` tokens) that compute the fewest tokens past
    ``base``, with that count (:data:`RUN_COST_TOKENS` more per run)."""
    rows = range(start, end)
    prefix = min(common[start : end - 1]) if end - start > 1 else lengths[start] - 1
    flat = prefix - base + sum(lengths[i] - prefix for i in rows) + RUN_COST_TOKENS
    if end - start < 2 or prefix == base:  # one row, or rows that share nothing more: one run
        return flat, [list(rows)]
    cuts = [i + 1 for i in range(start, end - 1) if common[i] == prefix]
    split, own, rest = prefix - base, [], []
    for first, last in zip([start, *cuts], [*cuts, end], strict=True):
        left_in = sum(lengths[i] - prefix for i in range(first, last))
        cost, runs = _plan(lengths, common, first, last, prefix) if last - first > 1 else (left_in, [])
        if cost < left_in:
            split, own = split + cost, own + runs
        else:
            rest.extend(range(first, last))
    if rest:
        split += sum(lengths[i] - prefix for i in rest) + RUN_COST_TOKENS
    return (split, own + ([rest] if rest else [])) if split < flat else (flat, [list(rows)])


#: Token positions a cache layer keeps free after its last token, so that a decode step writes its token in place.
_ROOM = 64


def _grow_with_room(cache: Any) -> None:
    """Make each layer of ``cache`` (plain ``DynamicLayer`` s, :func:`supports_model`) append new tokens in place.

    ``DynamicLayer`` concatenates on every step, copying the whole cache of every row to add one token: with tens of
    rows over a prompt of a thousand tokens, that copy was most of a step's time on a CPU, growing with rows x length.
    These layers write into room kept after the last token (:data:`_ROOM` positions; a full layer is copied once into
    a larger one), and hand out views of the filled part; a layer whose tensors were replaced from outside (rows
    joining, leaving, padding dropped) gets room again at its next step.
    """
    growing = _growing_layer()
    for layer in cache.layers:
        layer.__class__ = growing  # a plain DynamicLayer becomes its subclass that adds no state of its own


@functools.cache
def _growing_layer() -> type:
    from transformers import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` that appends in place (see :func:`_grow_with_room`); ``room`` holds the two tensors that
        ``keys`` and ``values`` are views of the start of (views made under inference mode do not know their base)."""

        room: tuple[torch.Tensor, torch.Tensor] | None = None

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if not self.is_initialized or self.keys.numel() == 0:
                return super().update(key_states, value_states, *args, **kwargs)
            keys_room, values_room = self.room or (None, None)
            self.keys, keys_room = _append(self.keys, keys_room, key_states)
            self.values, values_room = _append(self.values, values_room, value_states)
            self.room = (keys_room, values_room)
            return self.keys, self.values

    return GrowingLayer


def _append(filled: torch.Tensor, room: torch.Tensor | None, new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``filled`` with ``new`` after it along the sequence dimension, and the tensor it is now a view of: written into
    ``room`` when ``filled`` is a view of its start with space left, else into a new tensor with :data:`_ROOM` to
    spare."""
    length, added = filled.shape[-2], new.shape[-2]
    fits = (room is not None and room.shape[:-2] == filled.shape[:-2] and room.shape[-2] >= length + added
            and room.stride() == filled.stride() and room.data_ptr() == filled.data_ptr())  # fmt: skip
    if not fits:
        room = filled.new_empty((*filled.shape[:-2], length + added + _ROOM, filled.shape[-1]))
        room[..., :length, :] = filled
    assert room is not None
    room[..., length : length + added, :] = new
    return room[..., : length + added, :], room


def _left_pad(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """``tensor`` with zeros before its sequence dimension (the last for a mask, the one before for keys/values)."""
    import torch

    dim = -1 if tensor.dim() == 2 else -2
    missing = width - tensor.shape[dim]
    if missing <= 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim)


def _matcher(grammar: Any) -> Any:
    if grammar is None:
        return None
    import xgrammar

    return xgrammar.GrammarMatcher(grammar)


def _constrain(logits: torch.Tensor, matchers: Sequence[Any]) -> None:
    """Mask, in place, the tokens each row's grammar does not allow next (rows without a grammar are free)."""
    if all(m is None for m in matchers):
        return
    import xgrammar

    bitmask = xgrammar.allocate_token_bitmask(len(matchers), logits.shape[-1])
    for index, matcher in enumerate(matchers):
        if matcher is not None and not matcher.is_terminated():
            matcher.fill_next_token_bitmask(bitmask, index)
    # XGrammar fills the mask on the CPU; on CUDA it is copied over (a few KB a row) and applied by its GPU kernel
    xgrammar.apply_token_bitmask_inplace(logits, bitmask.to(logits.device))
