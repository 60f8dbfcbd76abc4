"""GRPO of the pairwise judge with MJ1's swap in the loop (MJ1 section 2.2): for each labelled pair, G sampled
judgements; each one's reasoning, cut before its evaluation and with response A and B exchanged (:mod:`genrm.methods
.pairwise.swap`), is resumed greedily on the swapped pair; the 2G sequences form one group, scored by eq. 2
(:mod:`genrm.methods.pairwise.rewards`), with eq. 3's advantages (reward minus the group mean), the ``|A| <= 0.01``
filter and the skip of groups whose originals are all wrong.

Why a loop of its own, not TRL's ``GRPOTrainer``: the continuations are sequences whose prompt is another prompt (the
swapped pair) followed by a reasoning the model did not write in that form; TRL's trainer generates and scores
completions of the dataset's prompts only, and has no place to add such rows. The loop is on-policy (one update per
batch of pairs, so the importance ratio is 1 and clipping never acts), with the policy-gradient loss
``-A * mean log p(token)`` per sequence: for an original its whole answer, for a continuation only the regenerated
evaluation and scores (the swapped reasoning is context, as in the source). LoRA through peft; a cosine schedule to a
floor, with warm-up (the source's ``5e-5 -> 1e-7``, 10%).

Settings are a dataclass read from YAML and ``--flags`` by ``trl.TrlParser`` (``genrm pairs train --config ...``).
Needs torch, transformers and peft.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genrm.methods.pairwise.mmrb2 import read_pairs
from genrm.methods.pairwise.models import MAX_IMAGES, PairExample
from genrm.methods.pairwise.prompts import pair_request
from genrm.methods.pairwise.reading import PairJudgement, read_judgement
from genrm.methods.pairwise.rewards import consistency, correctness, group_advantages, total_reward
from genrm.methods.pairwise.swap import swapped_prefix
from genrm.training.step_log import step_line

logger = logging.getLogger(__name__)


@dataclass
class SwapGRPOArguments:
    """The pairwise judge's GRPO (YAML keys of a recipe, or ``--flags``)."""

    train_file: str = field(
        default="datasets/examples/pairs/pairs.jsonl",
        metadata={"help": "labelled pairs (a pairs JSONL, or an MMRB2-layout .json file)"},
    )
    model_name_or_path: str = field(default="", metadata={"help": "the judge to train (after its cold-start SFT)"})
    build_tiny_judge: bool = field(
        default=False, metadata={"help": "when model_name_or_path does not exist, save a tiny random VLM judge there"}
    )
    output_dir: str = field(default="runs/pairwise-grpo", metadata={"help": "where the judge and its logs go"})
    num_generations: int = field(default=32, metadata={"help": "sampled judgements per pair (G); 2G with the swap"})
    temperature: float = field(default=0.7, metadata={"help": "sampling temperature of the originals"})
    max_completion_length: int = field(default=1024, metadata={"help": "tokens per judgement"})
    pairs_per_step: int = field(default=1, metadata={"help": "pairs whose groups make one update"})
    num_train_epochs: float = field(default=1.0, metadata={"help": "passes over the pairs"})
    max_steps: int = field(default=-1, metadata={"help": "updates to run (overrides the epochs when > 0)"})
    learning_rate: float = field(default=5e-5, metadata={"help": "peak learning rate"})
    min_learning_rate: float = field(default=1e-7, metadata={"help": "the cosine schedule's floor"})
    warmup_ratio: float = field(default=0.1, metadata={"help": "share of the updates spent warming up"})
    min_advantage: float = field(default=0.01, metadata={"help": "sequences with |A| at most this are not trained"})
    use_peft: bool = field(default=True, metadata={"help": "train a LoRA adapter (merged at the end)"})
    lora_r: int = field(default=64, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=128, metadata={"help": "LoRA alpha"})
    lora_target_modules: list[str] | None = field(default=None, metadata={"help": "modules LoRA adapts"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda"})
    seed: int = field(default=0, metadata={"help": "sampling and order seed"})
    logging_steps: int = field(default=1, metadata={"help": "log every N updates"})


@dataclass
class GroupOutcome:
    """What one pair's group gave: the rewards, advantages and which sequences train, with the texts."""

    originals: list[str]
    continuations: list[str]
    rewards: list[float]
    advantages: list[float]
    train: list[bool]
    skipped: bool
    correct: list[float]
    consistent: list[float]
    preferences: list[str | None]


def score_group(pair: PairExample, originals: list[str], continuations: list[str]) -> GroupOutcome:
    """Eq. 2 and 3 for one pair: ``originals`` are the sampled answers, ``continuations`` the swapped reasonings with
    their regenerated evaluation and scores (whole answers, on the swapped pair)."""
    if pair.label is None:
        raise ValueError(f"pair {pair.id} has no label")
    flipped = pair.swapped().label
    first: list[PairJudgement] = [read_judgement(text) for text in originals]
    second: list[PairJudgement] = [read_judgement(text) for text in continuations]
    own = [total_reward(j, s, pair.label) for j, s in zip(first, second, strict=True)]
    theirs = [total_reward(s, j, flipped) for j, s in zip(first, second, strict=True)]  # type: ignore[arg-type]
    correct = [correctness(j, pair.label) for j in first]
    consistent = [consistency(j, s, pair.label) for j, s in zip(first, second, strict=True)]
    group = group_advantages(own, theirs, [c > 0 for c in correct])
    return GroupOutcome(originals, continuations, own + theirs, group.advantages, group.train, group.skipped,
                        correct, consistent, [j.preference for j in (*first, *second)])  # fmt: skip


class _Judge:
    """The model being trained, its processor or tokenizer, and how a pair becomes model inputs."""

    def __init__(self, args: SwapGRPOArguments, image_dir: Path) -> None:
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        from genrm.engine.checkpoints import checkpoint_path
        from genrm.engine.generation import pick_device
        from genrm.engine.images import load_image

        path = checkpoint_path(args.model_name_or_path)
        self.vision = getattr(AutoConfig.from_pretrained(path), "vision_config", None) is not None
        if self.vision:
            self.processor = AutoProcessor.from_pretrained(path)
            self.tokenizer = self.processor.tokenizer
            model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
        else:
            self.processor = self.tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        if args.use_peft:
            from peft import LoraConfig, get_peft_model

            targets = args.lora_target_modules or ["q_proj", "k_proj", "v_proj", "o_proj"]
            model = get_peft_model(model, LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha,
                                                     target_modules=targets, task_type="CAUSAL_LM"))  # fmt: skip
        self.model = model.to(pick_device(args.device))
        # A pair's images are shown to its G originals and G continuations in a row: the most recent are kept (as
        # many as one pair may show, so that a long run does not hold every image of its data).
        self._image = functools.lru_cache(maxsize=MAX_IMAGES)(lambda reference: load_image(reference, image_dir))

    def inputs(self, pair: PairExample, prefix: str = "") -> dict[str, Any]:
        """The tensors of ``pair``'s prompt (its images included, each where it goes), followed by an answer's
        beginning ``prefix``."""
        prompt = pair_request(pair).prompt
        images = [self._image(reference) for reference in prompt.images] if self.vision else []
        messages = prompt.messages(image_placeholders=True)  # a text-only judge is refused image pairs up front
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + prefix
        if images:
            encoded = self.processor(images=images, text=[text], add_special_tokens=False, return_tensors="pt")
        else:
            encoded = self.tokenizer([text], add_special_tokens=False, return_tensors="pt")
        return {key: value.to(self.model.device) for key, value in encoded.items()}

    def generate(self, inputs: dict[str, Any], count: int, temperature: float, max_tokens: int) -> list[list[int]]:
        """``count`` continuations of ``inputs`` (sampled at ``temperature``; greedy at 0), each up to and with its
        end token."""
        import torch

        options: dict[str, Any] = {"do_sample": temperature > 0, "num_return_sequences": count}
        options.update(temperature=temperature, top_k=0) if temperature > 0 else options.update(
            temperature=None, top_p=None, top_k=None)  # fmt: skip
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=max_tokens, eos_token_id=self.tokenizer.eos_token_id,
                                      pad_token_id=self.tokenizer.pad_token_id, **options)  # fmt: skip
        rows = []
        for row in out[:, inputs["input_ids"].shape[1] :].tolist():
            end = row.index(self.tokenizer.eos_token_id) + 1 if self.tokenizer.eos_token_id in row else len(row)
            rows.append([t for t in row[:end] if t != self.tokenizer.pad_token_id] or row[:1])
        return rows

    def mean_logp(self, inputs: dict[str, Any], generated: list[int]) -> Any:
        """The mean log-probability of ``generated`` after ``inputs`` (with gradient)."""
        import torch

        ids = torch.cat([inputs["input_ids"], torch.tensor([generated], device=self.model.device)], dim=1)
        extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
        logits = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), **extra).logits
        start = inputs["input_ids"].shape[1]
        logp = torch.log_softmax(logits[0, start - 1 : -1].float(), dim=-1)
        return logp.gather(1, ids[0, start:].unsqueeze(1)).mean()


def run_swap_grpo(args: SwapGRPOArguments) -> Path:
    """Train the judge (see the module docstring); returns the output directory (model, processor, log)."""
    import torch
    from transformers import get_cosine_with_min_lr_schedule_with_warmup

    if not args.model_name_or_path:
        raise ValueError("model_name_or_path is required (the judge after its cold-start SFT)")
    if args.num_generations < 2:
        raise ValueError("num_generations must be at least 2: the advantages are relative to the group")
    source = Path(args.train_file)
    pairs = [p for p in read_pairs(source) if p.label is not None]
    if not pairs:
        raise ValueError(f"{source} has no labelled pair")
    if args.build_tiny_judge and not Path(args.model_name_or_path).exists():
        from genrm.training.tiny_model import save_tiny_vlm_judge

        logger.info("saving a tiny random vision-language judge to %s", args.model_name_or_path)
        save_tiny_vlm_judge(args.model_name_or_path)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    judge = _Judge(args, source.parent)
    if not judge.vision and any(p.images() for p in pairs):
        raise ValueError(f"{args.model_name_or_path} cannot see images, and the pairs of {source} have them")
    per_epoch = math.ceil(len(pairs) / args.pairs_per_step)
    steps = args.max_steps if args.max_steps > 0 else max(1, math.ceil(per_epoch * args.num_train_epochs))
    trainable = [p for p in judge.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.learning_rate)
    schedule = get_cosine_with_min_lr_schedule_with_warmup(optimizer, int(args.warmup_ratio * steps), steps,
                                                           min_lr=args.min_learning_rate)  # fmt: skip
    order: list[PairExample] = []
    history: list[dict[str, float]] = []
    for step in range(1, steps + 1):
        batch = []
        for _ in range(args.pairs_per_step):
            if not order:
                order = random.sample(pairs, len(pairs))
            batch.append(order.pop())
        history.append(_update(judge, batch, args, optimizer, step))
        with warnings.catch_warnings():  # a step with every group skipped takes no optimizer step; the schedule
            warnings.simplefilter("ignore", UserWarning)  # counts updates all the same
            schedule.step()
        if step % args.logging_steps == 0:
            logger.info("%s", step_line(step, steps, history[-1]))
    return _save(judge, args, history)


def _update(judge: _Judge, batch: list[PairExample], args: SwapGRPOArguments, optimizer: Any, step: int
            ) -> dict[str, float]:  # fmt: skip
    judge.model.eval()
    groups = []
    for pair in batch:
        prompt = judge.inputs(pair)
        sampled = judge.generate(prompt, args.num_generations, args.temperature, args.max_completion_length)
        originals = [judge.tokenizer.decode(ids, skip_special_tokens=True) for ids in sampled]
        resumed = []
        for text in originals:
            prefix = swapped_prefix(text)
            context = judge.inputs(pair.swapped(), prefix)
            (ids,) = judge.generate(context, 1, 0.0, args.max_completion_length)
            resumed.append((context, ids, prefix + judge.tokenizer.decode(ids, skip_special_tokens=True)))
        outcome = score_group(pair, originals, [text for _, _, text in resumed])
        groups.append((prompt, sampled, resumed, outcome))
    judge.model.train()
    optimizer.zero_grad()
    kept = [(ctx, ids, adv) for prompt, sampled, resumed, outcome in groups
            for (ctx, ids), adv, train in zip([(prompt, s) for s in sampled] + [(c, i) for c, i, _ in resumed],
                                              outcome.advantages, outcome.train, strict=True) if train]  # fmt: skip
    for context, ids, advantage in kept:  # one sequence at a time: memory stays that of one forward pass
        loss = -advantage * judge.mean_logp(context, ids) / len(kept)
        loss.backward()
    if kept:
        optimizer.step()
    outcomes = [g[3] for g in groups]
    originals_n = sum(len(o.originals) for o in outcomes)
    return {
        "step": float(step), "learning_rate": optimizer.param_groups[0]["lr"],
        "reward": sum(r for o in outcomes for r in o.rewards[: len(o.originals)]) / originals_n,
        "correct": sum(c for o in outcomes for c in o.correct) / originals_n,
        "consistent": sum(c for o in outcomes for c in o.consistent) / originals_n,
        **position_figures(outcomes),
        "sequences_trained": float(len(kept)), "groups_skipped": float(sum(o.skipped for o in outcomes)),
    }  # fmt: skip


def position_figures(outcomes: Sequence[GroupOutcome]) -> dict[str, float]:
    """The batch's bias figures: ``a_rate``, the share of read judgements (originals and their continuations on the
    swapped pair) that prefer position A, and ``swap_agreement``, the share of originals whose continuation prefers
    the same response in its new position, right or wrong (label-free, beside ``consistent``: mean R_cons). NaN where
    nothing was read."""
    chosen = [p for o in outcomes for p in o.preferences if p is not None]
    pairs = [(o.preferences[i], o.preferences[len(o.originals) + i]) for o in outcomes
             for i in range(len(o.originals))]  # fmt: skip
    read = [(a, b) for a, b in pairs if a is not None and b is not None]
    nan = float("nan")
    return {"a_rate": sum(p == "A" for p in chosen) / len(chosen) if chosen else nan,
            "swap_agreement": sum(a != b for a, b in read) / len(read) if read else nan}  # fmt: skip


def _save(judge: _Judge, args: SwapGRPOArguments, history: list[dict[str, float]]) -> Path:
    from genrm.training.common import written_files

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = judge.model
    if hasattr(model, "peft_config"):
        model.save_pretrained(str(out / "adapter"))
        model = model.merge_and_unload()
    model.save_pretrained(str(out))
    judge.processor.save_pretrained(str(out))
    (out / "log_history.json").write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    logger.info("saved the judge to %s: %s", out, written_files(out))
    return out
