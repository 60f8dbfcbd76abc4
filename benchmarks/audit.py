"""False positives of a judge per setting (RLR3 table 5): the rule backend and a tiny trained judge.

    python benchmarks/audit.py [--judge PATH | --sft-steps N] [--device cpu] [--audit AUDIT.jsonl | --inputs N]

Runs ``genrm audit run`` on the shipped audit set (``datasets/audit/synth_test.jsonl``: the synthetic test split, the
deterministic constructors' abnormal responses and the master keys, each alone and around a wrong answer) with the
rule backend under every setting, and with a tiny judge trained here by the SFT recipe (``recipes/sft_tiny_cpu.yaml``,
about 6 minutes on 2 CPU cores; or ``--judge PATH``) under default, unlimited and no_verifier (the transformers
backend is text-only, so no vlm row). ``--inputs N`` builds a larger audit set instead: N new synthetic inputs
(another seed), without any whose prompt is in the training split. Prints both reports, the master keys' rates per key
for both judges, the time per judged response, and one summary line. On a GPU, pass ``--judge`` with a real judge
checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(_ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from genrm.cli import main as genrm  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402


def _audit(audit: str, out: Path, backend: list[str], settings: list[str]) -> tuple[dict, float]:
    start = time.perf_counter()
    code = genrm(["audit", "run", audit, "-o", str(out), *backend, "--settings", *settings, "-q"])
    if code != 0:
        raise RuntimeError(f"genrm audit run failed ({code}) for {backend}")
    return json.loads((out / "audit.json").read_text()), time.perf_counter() - start


def _held_out_audit(inputs: int) -> str:
    from genrm.jsonl import write_jsonl
    from genrm.methods.labelling import balance
    from genrm.methods.rubric.evaluation.audit_constructors import build_audit_set
    from genrm.methods.rubric.evaluation.audit_set import regular_examples
    from genrm.methods.rubric.judge_data import read_examples
    from genrm.methods.rubric.synthetic import generate_examples

    with open(_ROOT / "datasets" / "judge_synth" / "train.jsonl", encoding="utf-8") as source:
        seen = {example.prompt for example in read_examples(source)}
    fresh = [e for e in balance(generate_examples(inputs, seed=1), seed=1) if e.prompt not in seen]
    audit, report = build_audit_set(regular_examples(fresh), seed=1)
    print(report.markdown() + "\n")
    path = Path(tempfile.mkdtemp()) / "audit.jsonl"
    write_jsonl(audit, str(path))
    return str(path)


def _overall(setting: dict) -> float | None:
    counts = [c["fpr"] for c in setting["categories"]]
    total = sum(c["total"] for c in counts)
    return 100.0 * sum(c["count"] for c in counts) / total if total else None


def _keys(setting: dict) -> tuple[float | None, int, int]:
    """The master keys' false positive rate over all their criteria, and responses with a false positive / all."""
    keys = setting.get("master_keys", [])
    total = sum(k["fpr"]["total"] for k in keys)
    rate = 100.0 * sum(k["fpr"]["count"] for k in keys) / total if total else None
    return rate, sum(k["responses_with_fp"] for k in keys), sum(k["responses"] for k in keys)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--audit", default=str(_ROOT / "datasets" / "audit" / "synth_test.jsonl"))
    parser.add_argument("--judge", help="a trained judge checkpoint (default: train the tiny one here)")
    parser.add_argument("--sft-steps", type=int, help="SFT steps of the tiny judge (default: the recipe's, 300)")
    parser.add_argument("--inputs", type=int, help="build an audit set of N new held-out synthetic inputs instead")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    args = parser.parse_args()
    if args.inputs:
        args.audit = _held_out_audit(args.inputs)
    responses = sum(1 for line in read_jsonl_lines(args.audit) if line.strip())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        judge = args.judge
        if judge is None:
            judge = str(root / "sft")
            steps = ["--max_steps", str(args.sft_steps)] if args.sft_steps else []
            assert genrm(["train", "sft", "--config", str(_ROOT / "recipes" / "sft_tiny_cpu.yaml"),
                          "--model_name_or_path", str(root / "base"), "--output_dir", judge, "--logging_steps", "50",
                          *steps]) == 0  # fmt: skip
        rule_settings = ["default", "vlm", "unlimited", "no_verifier"]
        model_settings = ["default", "unlimited", "no_verifier"]
        rule, rule_s = _audit(args.audit, root / "rule", [], rule_settings)
        print((root / "rule" / "audit.md").read_text())
        model_backend = ["--backend", "transformers", "--model", judge, "--device", args.device, "--max-tokens", "400"]
        model, model_s = _audit(args.audit, root / "model", model_backend, model_settings)
        print((root / "model" / "audit.md").read_text())
    print(f"{'judge':<28}{'settings':>9}{'responses':>11}{'s/response':>12}")
    for name, seconds, count in (("rule", rule_s, len(rule_settings)), ("tiny judge (transformers)", model_s,
                                                                        len(model_settings))):  # fmt: skip
        print(f"{name:<28}{count:>9}{responses * count:>11}{seconds / (responses * count):>12.4f}")
    by = {s["setting"]: s for s in model["settings"]}
    rule_keys = {k["category"]: k for k in rule["settings"][0]["master_keys"]}
    model_keys = {k["category"]: k for k in by["default"]["master_keys"]}
    print(f"\n{'master key (default setting)':<30}{'rule FPR':>10}{'tiny judge FPR':>16}{'tiny responses':>16}")
    for name, key in model_keys.items():
        shown = f"{key['responses_with_fp']}/{key['responses']}"
        print(f"{name:<30}{_pct(rule_keys[name]['fpr']['percent']):>10}{_pct(key['fpr']['percent']):>16}{shown:>16}")
    keys = {"rule": _keys(rule["settings"][0]), "tiny": _keys(by["default"])}
    regular = rule["settings"][0]["regular"]["percent"], by["default"]["regular"]["percent"]
    print(
        f"summary: false positive rate over all abnormal criteria under the default setting: rule "
        f"{_pct(_overall(rule['settings'][0]))}, tiny judge {_pct(_overall(by['default']))} (unlimited "
        f"{_pct(_overall(by['unlimited']))}, no verifier {_pct(_overall(by['no_verifier']))}); master keys rule "
        f"{_pct(keys['rule'][0])} ({keys['rule'][1]}/{keys['rule'][2]} responses), tiny judge {_pct(keys['tiny'][0])} "
        f"({keys['tiny'][1]}/{keys['tiny'][2]}); regular accuracy rule {_pct(regular[0])}, tiny judge "
        f"{_pct(regular[1])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
