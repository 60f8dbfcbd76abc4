"""Continuous batching in process: one decode loop whose rows leave as soon as their answer ends and whose free places
are taken by prompts that arrive meanwhile, each row constrained by its own grammar.

Why not ``model.generate`` for concurrent requests: it runs a batch until its longest row ends, finished rows
included, and it takes no new rows. A judge's answers vary a lot in length (a weak or untrained judge may run to the
token budget), and on a CPU a decode step costs about the same per row whatever the batch, because each row attends
over its own prompt and answer; so a batch of two groups cost more than the two groups one after the other. Here a
row costs only its own steps, and prompts that arrive while others decode join at the next step.

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

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

#: ``token ids of the new rows -> model inputs`` (``input_ids``, ``attention_mask`` and optionally the
#: ``past_key_values`` of a prefix they share), as :meth:`genrm.engine.generation.LocalGenerator._batch_inputs` builds.
PrefillInputs = Callable[[list[list[int]]], dict[str, Any]]


def supports_model(model: PreTrainedModel) -> bool:
    """Whether the loop can decode for ``model``: every layer of its cache is a full-attention ``DynamicLayer``."""
    from transformers import DynamicCache, DynamicLayer

    try:
        cache = DynamicCache(config=model.config)
    except Exception:  # noqa: BLE001 - a config the cache cannot read is one the loop does not take
        return False
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


@dataclass
class _Row:
    key: Any
    prompt_tokens: int
    matcher: Any
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
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        # the logits of the last position only: a prompt's full logits would take rows x tokens x vocabulary floats
        keeps = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._last_only = {"logits_to_keep": 1} if keeps else {}
        self._rows: list[_Row] = []
        self._cache: Any = None
        self._mask: torch.Tensor | None = None
        self._logits: torch.Tensor | None = None

    @property
    def active(self) -> int:
        """Rows decoding now."""
        return len(self._rows)

    def admit(self, rows: Sequence[tuple[Any, list[int], Any]]) -> None:
        """Add rows: ``(key, prompt token ids, compiled XGrammar grammar or None)``. Their prompts are run through
        the model now (the prefix they share once), and they decode from the next :meth:`step` on."""
        if not rows:
            return
        import torch
        from transformers import DynamicCache

        inputs = self._prefill([list(ids) for _, ids, _ in rows])
        mask = inputs["attention_mask"]
        cache = inputs.get("past_key_values")
        shared = cache.get_seq_length() if cache is not None else 0
        if cache is None:
            cache = DynamicCache(config=self.model.config)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            output = self.model(input_ids=inputs["input_ids"][:, shared:], attention_mask=mask,
                                position_ids=positions[:, shared:], past_key_values=cache, use_cache=True,
                                **self._last_only)  # fmt: skip
        logits = output.logits[:, -1, :].float()
        new = [_Row(key, len(ids), _matcher(grammar)) for key, ids, grammar in rows]
        self._join(cache, mask, logits, new)

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
            self._cache = self._mask = self._logits = None
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

    def _advance(self, tokens: torch.Tensor) -> None:
        import torch

        assert self._mask is not None
        mask = torch.cat([self._mask, self._mask.new_ones((self._mask.shape[0], 1))], 1)
        positions = mask.sum(-1, keepdim=True) - 1
        with torch.inference_mode():
            output = self.model(input_ids=tokens, attention_mask=mask, position_ids=positions,
                                past_key_values=self._cache, use_cache=True, **self._last_only)  # fmt: skip
        self._mask, self._logits = mask, output.logits[:, -1, :].float()


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
    xgrammar.apply_token_bitmask_inplace(logits, bitmask.to(logits.device))
