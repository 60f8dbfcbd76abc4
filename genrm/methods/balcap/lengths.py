"""Counting a caption's tokens for the balcap method's length rule (rho = caption tokens / reference tokens).

Two counters:

- :class:`PreTokenCounter` (the default): words and punctuation marks (``\\w+`` runs and single other non-space
  characters), the split a BPE tokenizer's pre-tokenizer makes before merging. No model is needed, so the server
  and the tests count alike. rho is a ratio of two counts by the same counter over text in one language, so most of
  the difference from a subword count cancels out.
- :class:`TokenizerCounter`: a Hugging Face tokenizer (the policy's, for the source's exact figure): a path or hub
  id in the ``length_tokenizer`` option, or the tokenizer object ``genrm rl`` hands over
  (:meth:`genrm.methods.balcap.method.BalCapMethod.count_tokens_with`). Special tokens are not counted.

Inputs are bounded by the instance model (a caption is a response of at most the server's body size).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

_PRE_TOKENS = re.compile(r"\w+|[^\w\s]")


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    name: str

    def __call__(self, text: str) -> int: ...


class PreTokenCounter:
    """Words and punctuation marks (see the module docstring)."""

    name = "pre-tokens (words and punctuation)"

    def __call__(self, text: str) -> int:
        """The number of words and punctuation marks in ``text``."""
        return sum(1 for _ in _PRE_TOKENS.finditer(text))


class TokenizerCounter:
    """A Hugging Face tokenizer's token count (special tokens left out).

    Args:
        tokenizer: a tokenizer object (``len(tokenizer(text).input_ids)``; a processor's ``tokenizer`` is taken), or
            a path or hub id loaded with ``transformers.AutoTokenizer`` (imported only here).
    """

    def __init__(self, tokenizer: Any) -> None:
        if isinstance(tokenizer, str):
            from transformers import AutoTokenizer

            self.name = tokenizer
            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        else:
            self.name = getattr(tokenizer, "name_or_path", type(tokenizer).__name__)
        self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor holds its tokenizer

    def __call__(self, text: str) -> int:
        """The number of tokens of ``text``."""
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def make_counter(tokenizer: Any = None) -> TokenCounter:
    """The counter for a ``length_tokenizer`` setting: None for :class:`PreTokenCounter`, else a tokenizer."""
    return PreTokenCounter() if tokenizer is None else TokenizerCounter(tokenizer)
