"""A tiny judge checkpoint made here, from a config and a tokenizer trained on our own prompts: no download.

It is what the test suite, the CPU recipes and the quick start use where a real judge (a Qwen3 checkpoint, say)
would be passed by path or hub id. The tokenizer is a byte-level BPE (any text encodes) trained on what the judge
reads and writes (its method's judge corpus, ``JudgeTraining.corpus``: for the rubric method, the scoring prompts
and judge answers of the shipped example set and of the synthetic judge-training split), with a ChatML chat
template; the model is a Qwen3 decoder of under a million parameters, randomly initialised from a seed. Its answers
mean nothing until it is trained, but every part of the real path runs: chat template, batched generation,
constrained decoding, saving and reloading. The default size is the smallest we found that learns the answer format
on CPU in minutes (``recipes/sft_tiny_cpu.yaml``): with 64 wide, 2 layers and a 1,024-token vocabulary the loss fell
as far but no free-running answer parsed.

    genrm tiny-model runs/tiny-judge            # then: genrm serve --backend transformers --model runs/tiny-judge

Needs the ``train`` extra (transformers, tokenizers) and torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genrm.methods.registry import DEFAULT_METHOD

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

#: Special tokens of the ChatML format; ``<|im_end|>`` ends a turn and is the end-of-sequence token.
PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"

#: The image placeholder of the tiny vision judge; its processor expands it to one token per image patch.
IMAGE_TOKEN = "<image>"


def chatml_template(image_token: str | None = None) -> str:
    """ChatML, reading OpenAI-style content parts too; image parts become ``image_token`` (dropped when None)."""
    image = f"{{%- elif part['type'] in ('image', 'image_url') %}}{{{{- '{image_token}' }}}}" if image_token else ""
    return (
        "{%- for message in messages %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' }}"
        "{%- if message['content'] is string %}{{- message['content'] }}"
        "{%- else %}{%- for part in message['content'] %}"
        "{%- if part['type'] == 'text' %}{{- part['text'] }}" + image + "{%- endif %}"
        "{%- endfor %}{%- endif %}"
        "{{- '<|im_end|>\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )


#: ChatML for the text-only tiny judge (image parts are not rendered: it has no vision tower).
CHATML_TEMPLATE = chatml_template()


@dataclass(frozen=True)
class TinyModelConfig:
    """Sizes of the tiny judge. ``vocab_size`` is the BPE target (specials included); the rest are Qwen3's fields."""

    vocab_size: int = 2048
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 8192
    seed: int = 0


@dataclass(frozen=True)
class TinyVisionConfig:
    """Sizes of the tiny judge's vision tower (a CLIP encoder): square images of ``image_size`` pixels cut into
    ``patch_size`` patches, one image token per patch."""

    image_size: int = 32
    patch_size: int = 8
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 2


def method_corpus(method: str = DEFAULT_METHOD) -> Iterator[str]:
    """The tokenizer corpus of ``method``'s judge (``JudgeTraining.corpus``: what it reads and writes), or the default
    method's (:data:`genrm.methods.registry.DEFAULT_METHOD`) when ``method`` names none. ValueError for an unknown
    method."""
    from genrm.methods import make_method
    from genrm.methods.base import TrainsItsJudge

    made = make_method(method)
    corpus = made.judge_training().corpus if isinstance(made, TrainsItsJudge) else None
    if corpus is not None:
        yield from corpus()
    elif method != DEFAULT_METHOD:
        yield from method_corpus(DEFAULT_METHOD)
    else:
        raise ValueError(f"the {DEFAULT_METHOD} method names no judge corpus")


def build_tokenizer(
    corpus: Iterable[str], vocab_size: int = 2048, image_token: str | None = None
) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``corpus`` (deterministic), with ChatML specials and template.

    Args:
        corpus: training texts.
        vocab_size: size of the vocabulary, specials included (at least 300: 256 bytes + specials + merges).
        image_token: a special token for images, rendered by the chat template for image parts (vision judges).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 300:
        raise ValueError(f"vocab_size must be at least 300 (256 byte tokens and the specials), got {vocab_size}")
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END] + ([image_token] if image_token else []),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(list(corpus), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=IM_END, pad_token=PAD, bos_token=None, model_max_length=8192
    )
    if image_token:
        tokenizer.add_special_tokens({"additional_special_tokens": [image_token]})
    tokenizer.chat_template = chatml_template(image_token)
    return tokenizer


def build_tiny_model(tokenizer: PreTrainedTokenizerFast, config: TinyModelConfig | None = None) -> PreTrainedModel:
    """A randomly initialised Qwen3 causal LM sized by ``config`` for ``tokenizer`` (seeded: same weights each run)."""
    import torch
    from transformers import Qwen3ForCausalLM

    config = config or TinyModelConfig()
    torch.manual_seed(config.seed)
    model = Qwen3ForCausalLM(_text_config(tokenizer, config))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


def _text_config(tokenizer: PreTrainedTokenizerFast, config: TinyModelConfig) -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads,
        head_dim=config.hidden_size // config.num_attention_heads,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )


def save_tiny_judge(
    out_dir: str | Path, config: TinyModelConfig | None = None, corpus: Iterable[str] | None = None
) -> Path:
    """Build the tokenizer (trained on ``corpus``, by default :func:`method_corpus`) and the tiny model and save both
    to ``out_dir`` (``from_pretrained`` reloads them)."""
    config = config or TinyModelConfig()
    tokenizer = build_tokenizer(method_corpus() if corpus is None else corpus, config.vocab_size)
    return save_checkpoint(out_dir, tokenizer, build_tiny_model(tokenizer, config))


def save_checkpoint(out_dir: str | Path, processing: Any, model: Any) -> Path:
    """Save a model with its tokenizer or processor to ``out_dir`` (created), where ``from_pretrained`` finds both."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    processing.save_pretrained(out)
    model.save_pretrained(out)
    return out


def save_tiny_vlm_judge(
    out_dir: str | Path,
    config: TinyModelConfig | None = None,
    vision: TinyVisionConfig | None = None,
    corpus: Iterable[str] | None = None,
) -> Path:
    """A tiny vision-language judge (LLaVA layout: CLIP encoder, projector, the Qwen3 decoder of ``config``) with
    its processor (the tokenizer trained on ``corpus``, by default :func:`method_corpus`), saved to ``out_dir``;
    ``AutoProcessor`` and ``AutoModelForImageTextToText`` reload them.

    It stands in for a real VLM judge (Qwen3-VL, say) wherever the vision path must run without a download: TRL's
    vision collators, an ``images`` column, a processor instead of a tokenizer. Needs no torchvision.
    """
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    config, vision = config or TinyModelConfig(), vision or TinyVisionConfig()
    tokenizer = build_tokenizer(method_corpus() if corpus is None else corpus, config.vocab_size, IMAGE_TOKEN)
    side = {"height": vision.image_size, "width": vision.image_size}
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": vision.image_size}, crop_size=side),
        tokenizer=tokenizer, patch_size=vision.patch_size, vision_feature_select_strategy="default",
        chat_template=tokenizer.chat_template, image_token=IMAGE_TOKEN, num_additional_image_tokens=1,
    )  # fmt: skip
    vision_config = CLIPVisionConfig(
        hidden_size=vision.hidden_size, intermediate_size=2 * vision.hidden_size, image_size=vision.image_size,
        patch_size=vision.patch_size, num_hidden_layers=vision.num_hidden_layers,
        num_attention_heads=vision.num_attention_heads, projection_dim=vision.hidden_size,
    )  # fmt: skip
    model_config = LlavaConfig(
        vision_config=vision_config, text_config=_text_config(tokenizer, config),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN), vision_feature_select_strategy="default",
        vision_feature_layer=-1, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(config.seed)
    model = LlavaForConditionalGeneration(model_config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return save_checkpoint(out_dir, processor, model)
