"""The code users run on a GPU, run on one: shared-prefix attention in half precision, the decode loop against
``model.generate``, XGrammar's masks on device tensors, SFT and RLVR steps with LoRA, and the vision judges.

Every test here is marked ``gpu``: skipped without CUDA, and run on the CPU instead when ``GENRM_GPU_TESTS_ON=cpu``
(the dry run of ``studies/gpu/run.sh --cpu``, which checks the same code paths without a GPU's kernels). Models are
randomly initialised from configs built in code, with real architectures' layouts (Qwen3, Qwen3-VL, LLaVA); nothing
is downloaded.
"""

from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

DEVICE = "cpu" if os.environ.get("GENRM_GPU_TESTS_ON") == "cpu" else "cuda"

#: Largest error of shared-prefix attention against fp32 attention allowed in each half precision, for inputs of
#: unit scale: bf16 keeps 8 bits of mantissa (a relative step of 2^-8, ~0.004; the sums of a few thousand keys
#: gather several), fp16 keeps 11 (2^-11, ~0.0005). SDPA in the same precision is held to the same bound, and ours
#: may be no worse than twice SDPA's own error where that is larger.
TOLERANCE = {torch.bfloat16: 3e-2, torch.float16: 4e-3}

#: (rows, query heads, key-value heads, head dim, shared prefix, each row's own tokens): Qwen3-0.6B's attention
#: (16 query heads over 8 key-value heads of 128) at the loop's sizes: one row, a group of 8, 64 rows in flight.
SHAPES = [(1, 16, 8, 128, 600, 1), (8, 16, 8, 128, 900, 40), (64, 16, 8, 128, 1200, 300)]


class _Layer(torch.nn.Module):
    layer_idx, is_causal = 0, True

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.num_key_value_groups = groups


def _attention_case(rows, heads, kv_heads, dim, prefix, own, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=generator).to(DEVICE, dtype)

    query, key, value = rand(rows, heads, 1, dim), rand(rows, kv_heads, own, dim), rand(rows, kv_heads, own, dim)
    prefix_keys, prefix_values = rand(1, kv_heads, prefix, dim), rand(1, kv_heads, prefix, dim)
    mask = torch.ones(rows, 1, 1, own, dtype=torch.bool, device=DEVICE)
    for row in range(rows):  # rows left-padded by different amounts, as rows of different lengths are
        mask[row, ..., : min(row % 7, own - 1)] = False
    return query, key, value, prefix_keys, prefix_values, mask


def _sdpa(query, key, value, prefix_keys, prefix_values, mask, dtype):
    rows, heads = query.shape[:2]
    repeat = heads // key.shape[1]
    keys = torch.cat([prefix_keys.expand(rows, -1, -1, -1), key], 2).repeat_interleave(repeat, 1).to(dtype)
    values = torch.cat([prefix_values.expand(rows, -1, -1, -1), value], 2).repeat_interleave(repeat, 1).to(dtype)
    full = torch.cat([torch.ones(*mask.shape[:-1], prefix_keys.shape[2], dtype=torch.bool, device=DEVICE), mask], -1)
    out = torch.nn.functional.scaled_dot_product_attention(query.to(dtype), keys, values, attn_mask=full)
    return out.transpose(1, 2).float()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{s[0]}rows-{s[4]}prefix-{s[5]}own" for s in SHAPES])
def test_shared_prefix_attention_is_sdpa_in_half_precision(shape, dtype):
    from genrm.engine.cascade import shared_prefix, shared_prefix_attention

    rows, heads, kv_heads, dim, prefix, own = shape
    case = _attention_case(rows, heads, kv_heads, dim, prefix, own, dtype)
    query, key, value, prefix_keys, prefix_values, mask = case
    with shared_prefix([(prefix_keys, prefix_values)]):
        ours, _ = shared_prefix_attention(_Layer(heads // kv_heads), query, key, value, mask, scaling=dim**-0.5)
    truth = _sdpa(*case, torch.float32)
    theirs = _sdpa(*case, dtype)
    assert ours.dtype == dtype and ours.shape == truth.shape
    error, sdpa_error = (ours.float() - truth).abs().max().item(), (theirs - truth).abs().max().item()
    assert sdpa_error <= TOLERANCE[dtype]  # the bound is one SDPA itself meets
    assert error <= max(TOLERANCE[dtype], 2 * sdpa_error), (error, sdpa_error)


@pytest.fixture(scope="module")
def exact_generator(tiny_judge_dir):
    from genrm.engine import SamplingSettings
    from genrm.engine.generation import LocalGenerator

    # fp32 with TF32 off: greedy choices compared token for token must not hang on rounding (in bf16 two batch shapes
    # round differently and a near tie can go either way, in model.generate itself as much as in the loop)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return LocalGenerator.from_pretrained(str(tiny_judge_dir), device=DEVICE, dtype="float32",
                                          sampling=SamplingSettings(max_tokens=256))  # fmt: skip


def _requests(instances, short: bool):
    from genrm.engine import ChatRequest
    from genrm.methods.rubric.answer_schema import scoring_json_schema
    from genrm.methods.rubric.planning import plan_rubric
    from genrm.methods.rubric.prompts import build_group_prompts

    requests = []
    for instance in instances:
        plans = plan_rubric(instance.rubric)
        schema = scoring_json_schema(plans)
        for prompt in build_group_prompts(instance.prompt, plans, list(instance.responses)):
            if short:  # answers that end after a few characters, a different number per row: rows leave at odd steps
                n = 2 + 7 * (len(requests) % 5)
                schema = {"type": "object", "properties": {"note": {"type": "string", "minLength": n, "maxLength": n}},
                          "required": ["note"], "additionalProperties": False}  # fmt: skip
            requests.append(ChatRequest(prompt, schema))
    return requests


def test_the_decode_loop_answers_as_generate_does_while_groups_join_and_leave(exact_generator, example_instances):
    generator = exact_generator
    assert next(generator.model.parameters()).device.type == DEVICE
    items = _requests(example_instances[:3], short=True)
    expected = generator.generate(items)
    assert generator.continuous and all(a.finished for a in expected)
    assert len({a.completion_tokens for a in expected}) > 2
    loop, answers, joined_at = generator.open_loop(0.0), {}, None
    assert loop.join(list(enumerate(items[:5]))) == ([], [])
    while loop.active:
        answers.update(loop.step())
        if answers and joined_at is None:  # the first rows left: the other groups join a loop that is running
            joined_at = len(answers)
            assert loop.join(list(enumerate(items))[5:]) == ([], [])
    assert 0 < joined_at < 5
    assert [answers[i] for i in range(len(items))] == expected


def test_constrained_answers_hold_to_their_schema_in_bf16(tiny_judge_dir, example_instances):
    import jsonschema
    import xgrammar

    from genrm.engine import SamplingSettings
    from genrm.engine.generation import LocalGenerator

    generator = LocalGenerator.from_pretrained(str(tiny_judge_dir), device=DEVICE, dtype="bfloat16",
                                               sampling=SamplingSettings(max_tokens=384))  # fmt: skip
    assert next(generator.model.parameters()).dtype == torch.bfloat16
    items = _requests([example_instances[i] for i in (0, 7, 19, 33)], short=False)
    answers = generator.generate(items)
    budget = generator.sampling.max_tokens
    for item, answer in zip(items, answers, strict=True):
        assert answer.error is None
        if answer.finished:
            jsonschema.validate(json.loads(answer.text), item.schema)
        else:  # the untrained model may write inside a value until the budget: what it wrote is its grammar's
            assert answer.completion_tokens == budget
        assert xgrammar.GrammarMatcher(generator.grammars.compile(item.schema)).accept_string(answer.text)


def _device_flags() -> list[str]:
    if DEVICE == "cpu":
        return ["--use_cpu", "true", "--bf16", "false"]
    return ["--use_cpu", "false", "--bf16", "true", "--dtype", "bfloat16"]


LORA = ["--use_peft", "--lora_r", "4", "--lora_alpha", "8", "--lora_target_modules", "q_proj", "v_proj"]


def test_one_sft_step_and_one_rlvr_step_with_lora(tmp_path, tiny_judge_dir):
    from genrm.cli import main

    sft = tmp_path / "sft"
    assert main(["train", "sft", "--config", "recipes/sft_tiny_cpu.yaml", "--model_name_or_path", str(tiny_judge_dir),
                 "--output_dir", str(sft), "--max_steps", "1", "--max_examples", "8", "--plot", "false",
                 *LORA, *_device_flags()]) == 0  # fmt: skip
    assert (sft / "adapter" / "adapter_config.json").is_file() and (sft / "config.json").is_file()
    rlvr = tmp_path / "rlvr"
    assert main(["train", "rlvr", "--config", "recipes/rlvr_tiny_cpu.yaml", "--model_name_or_path", str(sft),
                 "--output_dir", str(rlvr), "--max_steps", "1", "--max_examples", "2", "--num_generations", "2",
                 "--per_device_train_batch_size", "4", "--max_completion_length", "32", "--plot", "false",
                 *LORA, *_device_flags()]) == 0  # fmt: skip
    logged = [e for e in json.loads((rlvr / "log_history.json").read_text()) if "loss" in e or "train_loss" in e]
    assert logged and all(v == v for e in logged for v in e.values() if isinstance(v, float))  # no NaN


def test_the_vision_judge_answers_an_image_on_the_device(tiny_vlm_judge_dir, example_instances):
    from genrm.engine import ChatPrompt, ChatRequest, SamplingSettings
    from genrm.engine.generation import LocalGenerator
    from genrm.methods.scene_images import scene_png

    generator = LocalGenerator.from_pretrained(str(tiny_vlm_judge_dir), device=DEVICE, dtype="bfloat16",
                                               sampling=SamplingSettings(max_tokens=16))  # fmt: skip
    import base64

    image = "data:image/png;base64," + base64.b64encode(scene_png("park.png", side=32)).decode()
    replies = generator.generate([ChatRequest(ChatPrompt("You judge.", "What is shown?", image), None),
                                  ChatRequest(ChatPrompt("You judge.", "And here?", None), None)])  # fmt: skip
    assert all(reply.error is None for reply in replies)
    assert replies[0].prompt_tokens > replies[1].prompt_tokens  # the image's tokens were part of the first prompt


def _qwen3_vl(dtype):
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    # Qwen3-VL's layout at a size that runs in seconds: M-RoPE sections, deep-stack visual features, 2x2 merge
    config = Qwen3VLConfig(
        text_config={"vocab_size": 2048, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                     "rope_scaling": {"rope_type": "default", "mrope_section": [4, 6, 6], "mrope_interleaved": True}},
        vision_config={"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2,
                       "out_hidden_size": 128, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                       "deepstack_visual_indexes": [0, 1]},
        image_token_id=2000, video_token_id=2001, vision_start_token_id=2002, vision_end_token_id=2003,
    )  # fmt: skip
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(config).eval().to(DEVICE, dtype)


def test_a_qwen3_vl_shaped_judge_runs_forward_on_the_device_as_in_fp32():
    grid = torch.tensor([[1, 8, 8]])  # one image of 8x8 patches of 16 pixels, merged 2x2 into 16 tokens
    pixels = torch.randn(64, 3 * 2 * 16 * 16, generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[5, 6, 2002, *[2000] * 16, 2003, 7, 8, 9]])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": pixels,
              "image_grid_thw": grid, "mm_token_type_ids": (ids == 2000).long()}  # fmt: skip
    with torch.no_grad():
        reference = _qwen3_vl(torch.float32).to("cpu")(**inputs).logits.float()
        on_device = _qwen3_vl(torch.bfloat16)
        moved = {k: v.to(DEVICE) if k != "pixel_values" else v.to(DEVICE, torch.bfloat16) for k, v in inputs.items()}
        logits = on_device(**moved).logits.float().cpu()
    assert logits.shape == reference.shape and torch.isfinite(logits).all()
    similarity = torch.nn.functional.cosine_similarity(logits.flatten(1), reference.flatten(1)).item()
    assert similarity > 0.99, similarity  # the same model, within bf16's rounding
