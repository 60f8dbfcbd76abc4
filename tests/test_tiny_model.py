"""The tiny judge made here: a byte-level tokenizer trained on judge text, a seeded Qwen3 model, both reloadable."""

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from genrm.methods.rubric.judge_corpus import judge_corpus
from genrm.methods.rubric.prompts import scoring_system_prompt
from genrm.training.tiny_model import IM_END, build_tokenizer


def test_tokenizer_round_trips_any_text(tiny_judge_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_judge_dir)
    for text in ["expr_verify(predict='3/4')", "答案是 42 ✓", "tab\tnew\nline \\frac{1}{2}", "\x00\x7f", "🙂" * 3]:
        ids = tokenizer(text, add_special_tokens=False).input_ids
        assert tokenizer.decode(ids) == text


def test_tokenizer_learned_the_judge_vocabulary(tiny_judge_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_judge_dir)
    system = scoring_system_prompt("minimal")
    # byte-level BPE trained on these prompts compresses them well below one token per character
    assert len(tokenizer(system).input_ids) < len(system) / 2.5
    assert tokenizer.eos_token == IM_END and tokenizer.pad_token_id != tokenizer.eos_token_id


def test_chat_template_reads_text_parts(tiny_judge_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_judge_dir)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "U"}]}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"


def test_tokenizer_training_is_deterministic(example_instances):
    corpus = list(judge_corpus(example_instances[:5]))
    assert build_tokenizer(corpus, 400).get_vocab() == build_tokenizer(corpus, 400).get_vocab()


def test_checkpoint_reloads_with_the_same_weights(tiny_judge_dir):
    first = AutoModelForCausalLM.from_pretrained(tiny_judge_dir).eval()
    second = AutoModelForCausalLM.from_pretrained(tiny_judge_dir).eval()
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.inference_mode():
        assert torch.equal(first(ids).logits, second(ids).logits)
    assert first.config.vocab_size == len(AutoTokenizer.from_pretrained(tiny_judge_dir))
