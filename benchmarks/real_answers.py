"""The rule judge against Math-Verify on labelled real model answers: accuracy, false positives, time per answer.

    python benchmarks/real_answers.py [--data benchmarks/data/gsm8k_model_answers.jsonl] [--limit N]

Each line of the data is one answer a model wrote, its gold value and a label (1: correct) that nobody here gave
(``benchmarks/data/README.md`` says where each set comes from). Two graders decide every answer, in one process:

- ``rule judge``: the reward ``genrm score`` gives (a rubric of one criterion, ``expr_verify(target=<gold>)``, read
  by the rule backend from the whole response), paid when it is 1.0;
- ``Math-Verify``: ``verify(parse(gold), parse(response))``, as its users call it.

Each grader runs a warm-up pass over the first answers, then one timed pass over all of them; the time is one
answer's decision, end to end. Printed: answers, accuracy, false-positive rate (label 0 paid), false-negative rate
(label 1 not paid), p50 and p99 per answer, a line per answer a grader gets wrong (``--show``), then one summary line.

Goal: the rule judge's accuracy at or above Math-Verify's and its false-positive rate at or below it, on every set.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from genrm.jsonl import read_jsonl_lines  # noqa: E402

_DEFAULT = Path(__file__).resolve().parent / "data" / "gsm8k_model_answers.jsonl"
_WARM_UP = 50


def _rule_judge() -> Callable[[str, str], bool]:
    from genrm.methods.rubric.method import score_instance
    from genrm.methods.rubric.models import Instance
    from verifiers import format_call

    def decide(gold: str, response: str) -> bool:
        reference = format_call("expr_verify", {"target": gold})
        instance = Instance(id="answer", prompt="Solve the problem.", task_type="general",
                            rubric={"essential": [{"criterion": "Gives the answer.", "reference": reference,
                                                   "weight": 1}]},
                            responses=[response])  # fmt: skip
        return score_instance(instance).rewards[0] == 1.0

    return decide


def _math_verify() -> Callable[[str, str], bool]:
    from math_verify import parse, verify

    def decide(gold: str, response: str) -> bool:
        return bool(verify(parse(gold), parse(response)))

    return decide


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _run(decide: Callable[[str, str], bool], rows: list[dict]) -> tuple[list[bool], list[float]]:
    for row in rows[:_WARM_UP]:
        decide(row["gold"], row["response"])
    verdicts, seconds = [], []
    for row in rows:
        start = time.perf_counter()
        verdicts.append(decide(row["gold"], row["response"]))
        seconds.append(time.perf_counter() - start)
    return verdicts, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=_DEFAULT, help="labelled answers (JSONL: gold, response, label)")
    parser.add_argument("--limit", type=int, default=0, help="read only the first N answers (0: all)")
    parser.add_argument("--show", action="store_true", help="print each answer a grader gets wrong")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"--data: {args.data} is not a file")
    rows = []
    for number, line in enumerate(read_jsonl_lines(args.data), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            parser.error(f"{args.data}: record {number}: not JSON ({exc.msg})")
        if not isinstance(row, dict) or not (isinstance(row.get("gold"), str) and isinstance(row.get("response"), str)
                and row.get("label") in (0, 1)):  # fmt: skip
            parser.error(f"{args.data}: record {number}: needs string fields gold and response and a label of 0 or 1")
        rows.append(row)
    if args.limit:
        rows = rows[: args.limit]
    if not rows:
        parser.error(f"{args.data}: no answers")

    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # its notice that timeouts are off, once per call
    results = {}
    for name, make in (("rule judge", _rule_judge), ("Math-Verify", _math_verify)):
        results[name] = _run(make(), rows)

    positives = sum(row["label"] for row in rows)
    negatives = len(rows) - positives
    print(f"{args.data.name}: {len(rows)} answers, {positives} labelled correct, {negatives} not")
    print(f"{'grader':<12} {'accuracy':>9} {'FPR':>7} {'FNR':>7} {'p50 ms':>8} {'p99 ms':>8}")
    summary = {}
    for name, (verdicts, seconds) in results.items():
        right = sum(v == bool(row["label"]) for v, row in zip(verdicts, rows, strict=True))
        false_pay = sum(v and not row["label"] for v, row in zip(verdicts, rows, strict=True))
        missed = sum(not v and row["label"] for v, row in zip(verdicts, rows, strict=True))
        accuracy, fpr = right / len(rows), false_pay / max(1, negatives)
        fnr = missed / max(1, positives)
        p50, p99 = statistics.median(seconds) * 1e3, _percentile(seconds, 0.99) * 1e3
        summary[name] = (accuracy, fpr, p50)
        print(f"{name:<12} {accuracy:>8.1%} {fpr:>6.1%} {fnr:>6.1%} {p50:>8.3f} {p99:>8.3f}")
        if args.show:
            for verdict, row in zip(verdicts, rows, strict=True):
                if verdict != bool(row["label"]):
                    print(f"  {name} wrong: gold {row['gold']!r}, label {row['label']}: {row['response'][-120:]!r}")
    (ours_acc, ours_fpr, ours_p50), (mv_acc, mv_fpr, mv_p50) = summary["rule judge"], summary["Math-Verify"]
    met = ours_acc >= mv_acc and ours_fpr <= mv_fpr
    print(
        f"summary: rule judge accuracy {ours_acc:.1%} / FPR {ours_fpr:.1%} against Math-Verify's {mv_acc:.1%} / "
        f"{mv_fpr:.1%}, p50 {ours_p50:.3f} ms against {mv_p50:.3f} ms per answer: goal {'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
