"""The in-process judge on a GPU: the decode loop against ``model.generate`` and one request at a time, constrained and
free, at 1, 8 and 64 requests in flight; and SFT and RLVR steps per second with LoRA.

    python benchmarks/gpu_judge.py [--shapes qwen3-0.6b qwen3-1.7b] [--in-flight 1 8 64] [--max-tokens 256]
                                   [--warmup-tokens 16] [--alone-requests 2] [--budget-s 0] [--no-train]
                                   [--json OUT.json]
    python benchmarks/gpu_judge.py --dry-run     # the same code on the CPU, a tiny shape, in a minute

Models are randomly initialised in bf16 from configs of the named architectures' shapes (Qwen3-0.6B: 28 layers of
1024, 16 query heads over 8 key-value heads of 128, a vocabulary of 151,936; Qwen3-1.7B: the same at 2048): nothing
is downloaded. Prompts are the scoring prompts of the shipped example set, at their real length, tokenized by the
tiny judge's tokenizer (its ids are a part of the vocabulary). An untrained model rarely ends an answer, so most run
to ``--max-tokens``: the figures measure decoding. Every figure is the first timed pass after a warm-up pass of the
same batch sizes with a budget of ``--warmup-tokens`` (grammars compiled, kernels chosen, at a fraction of a full
pass's time); ratios are within one run. One at a time is one rate per request, whatever is in flight elsewhere, so it
is measured once per schema, on ``--alone-requests`` requests in a row.

The first shape's rows come first, then its SFT and RLVR rates, then the other shapes: with ``--budget-s`` the
benchmark stops starting measurements once that many seconds have passed and reports what it has (the rows it
skipped are named). ``--json`` is rewritten after every row, so a run cut short still leaves its figures. Goals on an
H100: the loop with 64 in flight at least 10x one request at a time, and at least ``model.generate`` on the same
batch; constrained within 1.5x of free.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.engine.types import ChatRequest, SamplingSettings  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402

EXAMPLES = _HERE.parent / "datasets" / "examples" / "reward_core.jsonl"
G = 8  # responses per group, as a GRPO group

#: Qwen3 configs' sizes (their config.json), and a tiny one for the CPU dry run.
SHAPES: dict[str, dict[str, Any]] = {
    "qwen3-0.6b": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936},
    "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936},
    "tiny": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 2048},
}  # fmt: skip


def build_model(shape: str, tokenizer: Any, device: str, dtype: Any) -> Any:
    """A randomly initialised Qwen3 causal LM of ``shape``, on ``device`` in ``dtype``."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(**SHAPES[shape], tie_word_embeddings=True, max_position_embeddings=40960,
                         rope_theta=1_000_000, rms_norm_eps=1e-6, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


def requests(count: int, constrained: bool, tag: int) -> list[ChatRequest]:
    """``count`` scoring prompts of the example set in groups of :data:`G` (each pass's questions new: ``tag``)."""
    from genrm.methods.rubric.answer_schema import scoring_json_schema
    from genrm.methods.rubric.models import Instance
    from genrm.methods.rubric.planning import plan_rubric
    from genrm.methods.rubric.prompts import build_group_prompts

    out: list[ChatRequest] = []
    for line in read_jsonl_lines(EXAMPLES):
        instance = Instance.model_validate_json(line)
        plans = plan_rubric(instance.rubric, instance.task_type)
        schema = scoring_json_schema(plans) if constrained else None
        prompts = build_group_prompts(f"(pass {tag}) {instance.prompt}", plans, (list(instance.responses) * G)[:G])
        out += [ChatRequest(prompt, schema, "judge_output") for prompt in prompts]
        if len(out) >= count:
            return out[:count]
    raise ValueError(f"the example set holds fewer than {count} prompts")


def _timed(run: Any) -> tuple[float, list[Any]]:
    start = time.perf_counter()
    replies = run()
    return time.perf_counter() - start, replies


def measure(generator: Any, mode: str, count: int, constrained: bool, tag: int) -> dict[str, float]:
    """Responses and output tokens per second of ``count`` requests: ``loop`` (all in flight through the engine's
    decode loop), ``generate`` (one ``model.generate`` batch of all), ``alone`` (``count`` requests one after the
    other, each alone on the model)."""
    from genrm.engine.local import LocalEngine

    items = requests(count, constrained, tag)
    if mode == "loop":
        engine = LocalEngine(generator, max_batch_size=max(count, 1))
        groups = [items[i : i + G] for i in range(0, len(items), G)]

        async def together() -> list[Any]:
            done = await asyncio.gather(*(engine.complete(group) for group in groups))
            return [reply for group in done for reply in group]

        elapsed, replies = _timed(lambda: asyncio.run(together()))
    elif mode == "generate":
        elapsed, replies = _timed(lambda: generator.generate(items))
    else:
        elapsed, replies = _timed(lambda: [generator.generate([item])[0] for item in items])
    failed = [reply.error for reply in replies if reply.error]
    if failed:
        raise RuntimeError(f"{mode}: {len(failed)} failed requests, e.g. {failed[0]}")
    tokens = sum(reply.completion_tokens for reply in replies)
    return {"responses_per_s": len(items) / elapsed, "tokens_per_s": tokens / elapsed, "seconds": elapsed,
            "mean_prompt_tokens": sum(r.prompt_tokens for r in replies) / len(replies)}  # fmt: skip


class Budget:
    """The benchmark's time budget: ``seconds`` from its start (0: none); what it skipped, by name."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.start, self.skipped = seconds, time.perf_counter(), []

    def allows(self, what: str) -> bool:
        """Whether ``what`` may start now; remembered as skipped when it may not."""
        if self.seconds and time.perf_counter() - self.start > self.seconds:
            self.skipped.append(what)
            return False
        return True


def _warm(generator: Any, tokens: int) -> Any:
    """``generator`` with a budget of ``tokens`` output tokens (the same model, grammars and caches)."""
    warm = dataclasses.replace(generator.sampling, max_tokens=min(tokens, generator.sampling.max_tokens))
    return _Budgeted(generator, warm)


class _Budgeted:
    """A generator seen through other sampling settings, for the warm-up pass."""

    def __init__(self, generator: Any, sampling: Any) -> None:
        self._generator, self._sampling = generator, sampling

    def __getattr__(self, name: str) -> Any:
        return getattr(self._generator, name)

    def _swap(self, call: Any, *args: Any) -> Any:
        kept, self._generator.sampling = self._generator.sampling, self._sampling
        try:
            return call(*args)
        finally:
            self._generator.sampling = kept

    def generate(self, items: Any) -> Any:
        return self._swap(self._generator.generate, items)

    def open_loop(self, temperature: float) -> Any:
        return self._swap(self._generator.open_loop, temperature)


def decode_table(shape: str, args: argparse.Namespace, tokenizer: Any, budget: Budget,
                 done: Any) -> list[dict[str, Any]]:  # fmt: skip
    """Every mode, schema and in-flight count for one shape; rows of figures (``done`` is called with each)."""
    import torch

    from genrm.engine.generation import LocalGenerator

    if not budget.allows(f"{shape} decoding"):
        return []
    model = build_model(shape, tokenizer, args.device, torch.bfloat16 if args.device == "cuda" else torch.float32)
    sampling = SamplingSettings(max_tokens=args.max_tokens)
    rows, tag = [], 0
    for constrained in (True, False):
        for mode in ("loop", "generate", "alone"):
            generator = LocalGenerator(model, tokenizer, sampling, constrained=constrained, name=shape,
                                       continuous=mode == "loop")  # fmt: skip
            # one request at a time is one rate per request: measured once, on --alone-requests in a row
            counts = [args.alone_requests] if mode == "alone" else args.in_flight
            for count in counts:
                schema = "XGrammar" if constrained else "free"
                if not budget.allows(f"{shape} {mode} {schema} {count}"):
                    continue
                if args.device == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                # warm-up of the same batch sizes on a short budget: grammars compiled, kernels chosen
                measure(_warm(generator, args.warmup_tokens), mode, count, constrained, tag := tag + 1)
                figures = measure(generator, mode, count, constrained, tag := tag + 1)
                peak = torch.cuda.max_memory_allocated() / 2**30 if args.device == "cuda" else None
                shown_count = 1 if mode == "alone" else count
                rows.append({"shape": shape, "mode": mode, "schema": schema, "in_flight": shown_count,
                             "requests": count, **figures, "peak_gib": peak})  # fmt: skip
                shown = f"{peak:>9.2f}" if args.device == "cuda" else f"{'n/a':>9}"
                print(f"{shape:<11} {mode:<9} {schema:<9} {shown_count:>9} {figures['responses_per_s']:>10.2f} "
                      f"{figures['tokens_per_s']:>10.0f} {figures['mean_prompt_tokens']:>8.0f} {shown}",
                      flush=True)  # fmt: skip
                done(rows[-1])
    del model
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return rows


#: The recipes a user runs for LoRA on a real judge (GPU), and the tiny CPU ones for the dry run, with the LoRA the
#: dry run adds; each run is cut to a few steps, saves nothing and reports nowhere.
TRAIN_RECIPES = {"cuda": {"sft": "recipes/sft_qwen3_lora.yaml", "rlvr": "recipes/rlvr_qwen3_lora.yaml"},
                 "cpu": {"sft": "recipes/sft_tiny_cpu.yaml", "rlvr": "recipes/rlvr_tiny_cpu.yaml"}}  # fmt: skip
_DRY_RUN_LORA = ["--use_peft", "--lora_r", "16", "--lora_alpha", "32", "--lora_target_modules", "q_proj", "k_proj",
                 "v_proj", "o_proj", "--use_cpu", "true", "--bf16", "false"]  # fmt: skip


def train_rates(shape: str, args: argparse.Namespace, tokenizer: Any) -> dict[str, Any]:
    """SFT and RLVR optimiser steps per second of the ``shape`` model with LoRA, through ``genrm train`` with the
    recipes users run (:data:`TRAIN_RECIPES`: on a GPU, LoRA r 64 on every linear layer, gradient checkpointing, their
    batch and accumulation; RLVR's answers at ``--max-tokens``). A job that fails (out of memory, say) is reported as
    ``{job}_error`` and the other still runs."""
    import torch

    from genrm.cli import main
    from genrm.training.tiny_model import save_checkpoint

    cuda = args.device == "cuda"
    common = ["--plot", "false", "--save_strategy", "no", "--report_to", "none", "--merge_lora", "false",
              "--max_steps", "2" if args.dry_run else "10", *([] if cuda else _DRY_RUN_LORA)]  # fmt: skip
    extra = {"sft": ["--eval_strategy", "no"],
             "rlvr": ["--max_completion_length", str(args.max_tokens), "--log_completions", "false"]}  # fmt: skip
    rates: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "base"
        save_checkpoint(base, tokenizer, build_model(shape, tokenizer, "cpu", torch.bfloat16))
        for job in ("sft", "rlvr"):
            recipe = _HERE.parent / TRAIN_RECIPES["cuda" if cuda else "cpu"][job]
            out = Path(scratch) / job
            try:
                code = main(["train", job, "--config", str(recipe), "--model_name_or_path", str(base), "--output_dir",
                             str(out), *common, *extra[job]])  # fmt: skip
                if code != 0:
                    raise RuntimeError(f"genrm train {job} exited {code}")
                history = json.loads((out / "log_history.json").read_text())
                rates[f"{job}_steps_per_s"] = float(history[-1]["train_steps_per_second"])
                print(
                    f"{shape} {job} with LoRA ({recipe.name}): {rates[f'{job}_steps_per_s']:.3f} steps/s", flush=True
                )
            except Exception as exc:  # noqa: BLE001 - one job's failure (out of memory) is a figure too
                rates[f"{job}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(f"{shape} {job} with LoRA ({recipe.name}) failed: {rates[f'{job}_error']}", flush=True)
            finally:
                if cuda:
                    torch.cuda.empty_cache()
    return rates


def _summary(rows: list[dict[str, Any]], training: dict[str, Any], args: argparse.Namespace, where: str,
             skipped: list[str]) -> str:  # fmt: skip
    """The one summary line: the goals of the first shape, constrained, at the most in flight (where measured)."""
    top, shape = max(args.in_flight), args.shapes[0]

    def rate(mode: str, count: int | None, schema: str = "XGrammar") -> float | None:
        return next((r["responses_per_s"] for r in rows
                     if (r["shape"], r["mode"], r["schema"]) == (shape, mode, schema)
                     and (count is None or r["in_flight"] == count)), None)  # fmt: skip

    alone, loop, generate = rate("alone", None), rate("loop", top), rate("generate", top)
    free = rate("loop", top, "free")
    parts = []
    if None in (alone, loop, generate):
        parts.append(f"{shape} constrained at {top} in flight: not measured (see the rows skipped)")
    else:
        met = loop >= 10 * alone and loop >= generate
        parts.append(f"{shape} constrained, {top} in flight: the loop {loop:.2f} responses/s = x{loop / alone:.1f} "
                     f"one at a time (goal x10) and x{loop / generate:.2f} model.generate (goal x1): "
                     f"{'met' if met else 'NOT met'}")  # fmt: skip
    if free is not None and loop is not None:
        parts.append(f"free/constrained x{free / loop:.2f} (goal at most x1.5)")
    for job, name in (("sft", "SFT"), ("rlvr", "RLVR")):
        if f"{job}_steps_per_s" in training:
            parts.append(f"LoRA {name} {training[f'{job}_steps_per_s']:.3f} steps/s")
        elif f"{job}_error" in training:
            parts.append(f"LoRA {name} failed ({training[f'{job}_error'][:60]})")
    if skipped:
        more = " ..." if len(skipped) > 4 else ""
        parts.append(f"skipped for the budget: {len(skipped)} ({', '.join(skipped[:4])}{more})")
    return "summary: " + "; ".join(parts) + f" [{where}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=["qwen3-0.6b", "qwen3-1.7b"])
    parser.add_argument("--in-flight", nargs="+", type=int, default=[1, 8, 64], help="requests in flight (1 8 64)")
    parser.add_argument("--max-tokens", type=int, default=256, help="the answers' token budget (256)")
    parser.add_argument("--warmup-tokens", type=int, default=16, help="the warm-up pass's token budget (16)")
    parser.add_argument("--alone-requests", type=int, default=2, help="requests timed one at a time (2)")
    parser.add_argument("--budget-s", type=float, default=0, help="start no measurement after this many s (0: none)")
    parser.add_argument("--no-train", action="store_true", help="skip the SFT and RLVR steps")
    parser.add_argument(
        "--dry-run", action="store_true", help="on the CPU: the tiny shape, 1 and 8 in flight, 32 tokens"
    )
    parser.add_argument("--json", metavar="OUT.json", help="also write every figure as JSON (after every row)")
    args = parser.parse_args()
    import torch

    if args.dry_run:
        args.device, args.shapes, args.in_flight, args.max_tokens = "cpu", ["tiny"], [1, 8], 32
        args.warmup_tokens = min(args.warmup_tokens, 8)
    elif not torch.cuda.is_available():
        print("gpu_judge: no CUDA device; --dry-run runs the same code on the CPU", file=sys.stderr)
        return 2
    else:
        args.device = "cuda"
    from genrm.methods.rubric.judge_corpus import judge_corpus
    from genrm.training.tiny_model import build_tokenizer

    tokenizer = build_tokenizer(judge_corpus(), 2048)
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU (dry run)"
    budget = Budget(args.budget_s)
    rows: list[dict[str, Any]] = []
    training: dict[str, Any] = {}

    def save(_row: Any = None, final: bool = False) -> None:
        if args.json:
            summary = _summary(rows, training, args, where, budget.skipped) if final else None
            Path(args.json).write_text(json.dumps({"device": where, "rows": rows, "training": training,
                                                   "skipped": budget.skipped, "complete": final,
                                                   "summary": summary}, indent=1) + "\n")  # fmt: skip

    print(f"{where}; torch {torch.__version__}; budget {args.max_tokens} tokens, greedy; bf16 on CUDA")
    print(f"{'shape':<11} {'mode':<9} {'schema':<9} {'in flight':>9} {'resp/s':>10} {'tok/s':>10} {'prompt':>8} "
          f"{'peak GiB':>9}")  # fmt: skip
    for index, shape in enumerate(args.shapes):
        rows += decode_table(shape, args, tokenizer, budget, save)
        if index == 0 and not args.no_train and budget.allows(f"{shape} LoRA SFT and RLVR steps"):
            training.update(train_rates(shape, args, tokenizer))
            save()
    summary = _summary(rows, training, args, where, budget.skipped)
    print(f"\n{summary}")
    save(final=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
