"""Reliability of the tiny judge before and after training (base → SFT → RLVR), and time per training step.

    python benchmarks/genrm_train.py [--sft-steps N] [--rlvr-steps N] [--device cpu]

Builds the untrained tiny judge (``genrm tiny-model``), trains it with the tiny CPU recipes
(``recipes/sft_tiny_cpu.yaml``, then ``recipes/rlvr_tiny_cpu.yaml`` from the SFT judge) and prints the reliability
table of each stage on the synthetic test split, decoded freely (what the model learned) and with XGrammar (what the
server gives). Time per step comes from the trainers' own logs. On a GPU, pass ``--base`` with a real checkpoint and
recipes of its size.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(_ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from genrm.cli import main as genrm  # noqa: E402

MEASURES = ["Schema", "Criterion", "Execution", "Arguments", "Credit", "Criterion-level", "Sample-level"]


def _table(model: str, data: str, device: str, constrained: bool, out: Path) -> dict[str, float | None]:
    args = ["eval", "--data", data, "--backend", "transformers", "--model", model, "--device", device,
            "--max-tokens", "400", "--json", str(out), "-q"]  # fmt: skip
    if not constrained:
        args.append("--unconstrained")
    if genrm(args) != 0:
        raise RuntimeError(f"genrm eval failed for {model}")
    return {row["measure"]: row["percent"] for row in json.loads(out.read_text())["rows"]}


def _seconds_per_step(run: Path) -> tuple[float, int]:
    history = json.loads((run / "log_history.json").read_text())
    final = next(e for e in reversed(history) if "train_runtime" in e)
    steps = max(e.get("step", 0) for e in history)
    return final["train_runtime"] / steps, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sft-steps", type=int, help="default: the recipe's (300)")
    parser.add_argument("--rlvr-steps", type=int, help="default: the recipe's (40)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--base", help="base checkpoint (default: the untrained tiny judge, made here)")
    parser.add_argument("--data", default=str(_ROOT / "datasets" / "judge_synth" / "test.jsonl"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        base = args.base or str(root / "base")
        if not args.base:
            genrm(["tiny-model", base])
        sft, rlvr = root / "sft", root / "rlvr"
        common = ["--plot", "false"]
        if args.device != "cpu":
            common += ["--use_cpu", "false"]
        sft_steps = ["--max_steps", str(args.sft_steps)] if args.sft_steps else []
        rlvr_steps = ["--max_steps", str(args.rlvr_steps)] if args.rlvr_steps else []
        assert genrm(["train", "sft", "--config", str(_ROOT / "recipes" / "sft_tiny_cpu.yaml"), "--model_name_or_path",
                      base, "--output_dir", str(sft), "--logging_steps", "20", *sft_steps, *common]) == 0  # fmt: skip
        assert genrm(["train", "rlvr", "--config", str(_ROOT / "recipes" / "rlvr_tiny_cpu.yaml"),
                      "--model_name_or_path", str(sft), "--output_dir", str(rlvr), "--logging_steps", "2",
                      *rlvr_steps, *common]) == 0  # fmt: skip
        stages = {"base": base, "SFT": str(sft), "RLVR": str(rlvr)}
        tables = {(stage, constrained): _table(path, args.data, args.device, constrained, root / "table.json")
                  for stage, path in stages.items() for constrained in (False, True)}  # fmt: skip
        (sft_step, sft_count), (rlvr_step, rlvr_count) = _seconds_per_step(sft), _seconds_per_step(rlvr)
        sft_losses = [e["loss"] for e in json.loads((sft / "log_history.json").read_text()) if "loss" in e]
        rlvr_history = [e for e in json.loads((rlvr / "log_history.json").read_text()) if "loss" in e]
    for constrained in (False, True):
        print(f"\nreliability on {args.data} ({'XGrammar-constrained' if constrained else 'free'} decoding), %")
        print(f"{'measure':<16}" + "".join(f"{stage:>8}" for stage in stages))
        for measure in MEASURES:
            cells = [tables[stage, constrained][measure] for stage in stages]
            print(f"{measure:<16}" + "".join(f"{'n/a' if c is None else f'{c:.1f}':>8}" for c in cells))

    def early_late(key: str) -> str:  # means over the first and the last five logged steps (noisy per step)
        values = [e[key] for e in rlvr_history]
        return f"{sum(values[:5]) / len(values[:5]):.3f} -> {sum(values[-5:]) / len(values[-5:]):.3f}"

    print(f"\nSFT {sft_count} steps: {sft_step:.2f} s/step, loss {sft_losses[0]:.3f} -> {sft_losses[-1]:.3f}; "
          f"RLVR {rlvr_count} steps: {rlvr_step:.2f} s/step, format reward "
          f"{early_late('rewards/format_reward_func/mean')}, content reward "
          f"{early_late('rewards/content_reward_func/mean')} (first -> last 5 logs)")  # fmt: skip
    schema = {stage: tables[stage, False]["Schema"] for stage in stages}
    free = {stage: tables[stage, False]["Sample-level"] for stage in stages}
    print(
        f"summary: free decoding, schema {schema['base']:.1f}% -> SFT {schema['SFT']:.1f}% -> RLVR "
        f"{schema['RLVR']:.1f}%, sample-level accuracy {free['base']:.1f}% -> {free['SFT']:.1f}% -> "
        f"{free['RLVR']:.1f}%; SFT {sft_step:.2f} s/step, RLVR {rlvr_step:.2f} s/step on {args.device}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
