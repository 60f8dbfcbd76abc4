"""A tiny judge checkpoint made here, from a config and a tokenizer trained on our own prompts: no download.

It is what the test suite, the CPU recipes and the quick start use where a real judge (a Qwen3 checkpoint, say)
would be passed by path or hub id. The tokenizer is a byte-level BPE (any text encodes) trained on the scoring
prompts and judge answers of the shipped example set and of the synthetic judge-training split, with a ChatML chat
template; the model is a Qwen3 decoder of under a million parameters, randomly initialised from a seed. Its answers
mean nothing until it is trained, but every part of the real path runs: chat template, batched generation,
constrained decoding, saving and reloading. The default size is the smallest we found that learns the answer format
on CPU in minutes (``recipes/sft_tiny_cpu.yaml``): with 64 wide, 2 layers and a 1,024-token vocabulary the loss fell
as far but no free-running answer parsed.

    genrm tiny-model runs/tiny-judge            # then: genrm serve --backend transformers --model runs/tiny-judge

Needs the ``train`` extra (transformers, tokenizers) and torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from genrm.judge import GroupRequest, RuleJudge
from genrm.prompts import Exposure, build_group_prompts, build_scoring_prompt, exposed_plans, scoring_system_prompt
from genrm.rubric import plan_rubric
from genrm.schemas import Instance

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

#: Special tokens of the ChatML format; ``<|im_end|>`` ends a turn and is the end-of-sequence token.
PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"

#: ChatML, reading OpenAI-style content parts too (text parts only: the tiny model has no vision tower).
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'text' %}{{- part['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


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


def _answer_json(request: GroupRequest) -> Iterator[str]:
    # Judge answers in the output format, so that the tokenizer has pieces for its keys and the verifier calls.
    for judgement in RuleJudge().judge_group(request):
        sections: dict[str, list[dict[str, object]]] = {"essential": [], "additional": []}
        for item in judgement.criteria:
            credit: object = item.call if item.call is not None else 0.5
            entry = {"criterion": item.plan.criterion.criterion, "rationale": item.rationale[:120], "credit": credit}
            sections[item.plan.section].append(entry)
        yield json.dumps({"thought": judgement.thought[:200], **sections}, ensure_ascii=False)


def judge_corpus(instances: Sequence[Instance], synthetic_inputs: int = 240) -> Iterator[str]:
    """What a judge reads and writes: each exposure's system prompt, scoring prompts and answers for ``instances``,
    then the user messages and labelled answers of the synthetic training split (``synthetic_inputs`` inputs,
    generated here as ``genrm data synthetic`` does; 0 for none)."""
    for exposure in get_args(Exposure):
        yield scoring_system_prompt(exposure)
    for instance in instances:
        plans = exposed_plans(plan_rubric(instance.rubric), "minimal")
        responses = list(instance.responses)
        for prompt in build_group_prompts(instance.prompt, plans, responses, "minimal", None):
            yield prompt.user
        request = GroupRequest(instance.prompt, plans, responses)
        yield from _answer_json(request)
    if synthetic_inputs:
        from genrm.judge_data import labelled_answer
        from genrm.synthetic import synthetic_splits

        train, _ = synthetic_splits(synthetic_inputs)
        for example in train:
            yield build_scoring_prompt(example.prompt, example.plans(), example.response).user
            yield json.dumps(labelled_answer(example), ensure_ascii=False)


def example_instances() -> list[Instance]:
    """The shipped example set (``datasets/examples/reward_core.jsonl``), the default tokenizer corpus."""
    path = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reward_core.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"the example set is not at {path}; pass a corpus of instances instead")
    return [Instance.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``corpus`` (deterministic), with ChatML specials and template.

    Args:
        corpus: training texts.
        vocab_size: size of the vocabulary, specials included (at least 300: 256 bytes + specials + merges).
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
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(list(corpus), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=IM_END, pad_token=PAD, bos_token=None, model_max_length=8192
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_tiny_model(tokenizer: PreTrainedTokenizerFast, config: TinyModelConfig | None = None) -> PreTrainedModel:
    """A randomly initialised Qwen3 causal LM sized by ``config`` for ``tokenizer`` (seeded: same weights each run)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = config or TinyModelConfig()
    model_config = Qwen3Config(
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
    torch.manual_seed(config.seed)
    model = Qwen3ForCausalLM(model_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


def save_tiny_judge(
    out_dir: str | Path, config: TinyModelConfig | None = None, instances: Sequence[Instance] | None = None
) -> Path:
    """Build the tokenizer and the tiny model and save both to ``out_dir`` (``from_pretrained`` reloads them)."""
    config = config or TinyModelConfig()
    tokenizer = build_tokenizer(judge_corpus(instances or example_instances()), config.vocab_size)
    model = build_tiny_model(tokenizer, config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out
