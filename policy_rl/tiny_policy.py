"""A tiny policy made here (no download): a word-level tokenizer over a prompt set's words and a small Qwen3.

Random at first, it answers with words of the prompts; with a reward that favours one word it learns in a few dozen
GRPO steps on CPU, which is what the tests and the CPU recipe need to see a reward rise. Real runs pass a
checkpoint (a Qwen3, say) by path or hub id.

    genrm rl --config recipes/rl_tiny_cpu.yaml    # builds it when ``build_tiny_policy`` is set

Needs torch, transformers and tokenizers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from genrm.training.tiny_model import (
    IM_END,
    IM_START,
    PAD,
    TinyModelConfig,
    build_tiny_model,
    chatml_template,
    save_checkpoint,
)

#: Words always in the vocabulary: the chat template's role names and the unknown-word token.
UNKNOWN = "[UNK]"
_ROLES = ("system", "user", "assistant")


def words_of(texts: Iterable[str]) -> list[str]:
    """The distinct words and punctuation runs of ``texts``, sorted (the tokenizer's vocabulary)."""
    return sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]+", text)} | set(_ROLES))


def save_tiny_policy(out_dir: str | Path, texts: Iterable[str], config: TinyModelConfig | None = None) -> Path:
    """Build a word-level tokenizer over ``texts`` (lower- and upper-case forms as written) and a random tiny Qwen3
    for it, and save both to ``out_dir``.

    Args:
        out_dir: where to save (``from_pretrained`` reloads it).
        texts: the prompts (and any words the policy should be able to say).
        config: model sizes (default: 64 wide, 2 layers).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate([PAD, IM_START, IM_END, UNKNOWN, *words_of(texts)])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNKNOWN))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=IM_END, pad_token=PAD, unk_token=UNKNOWN, bos_token=None,
        model_max_length=2048, additional_special_tokens=[IM_START],
    )  # fmt: skip
    tokenizer.chat_template = chatml_template()
    config = config or TinyModelConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, max_position_embeddings=2048)  # fmt: skip
    return save_checkpoint(out_dir, tokenizer, build_tiny_model(tokenizer, config))
