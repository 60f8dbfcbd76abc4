"""``genrm data ...`` and ``genrm eval``: judge-training data sets, and the reliability table of a judge.

genrm data synthetic -o datasets/judge_synth [--inputs 240] [--seed 0] [--test-fraction 0.15]
genrm data sft datasets/judge_synth/train.jsonl -o runs/sft.jsonl [--exposure minimal]
genrm data rlvr datasets/judge_synth/train.jsonl -o runs/rlvr.jsonl
genrm eval --data datasets/judge_synth/test.jsonl [--backend rule|transformers --model PATH] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXPOSURES = ["minimal", "unlimited", "vlm", "no_verifier"]


def _read(path: str) -> Any:
    from genrm.judge_data import read_examples

    with open(path, encoding="utf-8") as source:
        return read_examples(source)


def _cmd_synthetic(args: argparse.Namespace) -> int:
    from genrm.judge_data import write_jsonl
    from genrm.synthetic import synthetic_splits

    train, test = synthetic_splits(args.inputs, args.seed, args.test_fraction)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    parts = {"train": train, "test": test}
    written = {name: write_jsonl(part, str(out / f"{name}.jsonl")) for name, part in parts.items()}
    losing = sum(e.loses_credit for e in train + test)
    print(f"wrote {written['train']} train and {written['test']} test examples to {out} "
          f"({losing} with a criterion losing credit, {len(train) + len(test) - losing} without)")  # fmt: skip
    return 0


def _cmd_records(args: argparse.Namespace) -> int:
    from genrm.judge_data import rlvr_record, sft_record, write_jsonl

    build = sft_record if args.data_command == "sft" else rlvr_record
    examples = _read(args.input)
    count = write_jsonl((build(example, args.exposure) for example in examples), args.output)
    print(f"wrote {count} {args.data_command} records to {args.output}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from genrm.judge import RuleJudge
    from genrm.reliability import evaluate

    examples = _read(args.data)
    if args.limit:
        examples = examples[: args.limit]
    if args.backend == "transformers":
        if not args.model:
            print("genrm eval: --backend transformers needs --model PATH", file=sys.stderr)
            return 2
        from genrm.model_judge import ModelJudge

        # no re-sampling: the table measures the judge's first answers
        judge: Any = ModelJudge.from_pretrained(
            args.model, args.device, args.max_tokens, constrained=not args.unconstrained, parse_retries=0
        )
    else:
        judge = RuleJudge()
    report, _ = evaluate(judge, examples, args.exposure, args.argument_threshold, progress=not args.quiet)
    print(report.markdown())
    if args.json:
        Path(args.json).write_text(report.to_json() + "\n", encoding="utf-8")
    return 0


def register(sub: Any) -> None:
    """Add ``data`` (with its own subcommands) and ``eval`` to the ``genrm`` command."""
    data = sub.add_parser("data", help="judge-training data: synthetic set, SFT and RLVR records")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")

    synthetic = data_sub.add_parser(
        "synthetic", help="write the synthetic judge-training set (no teacher needed)",
        description="Generate inputs of seven task families with rubrics over all six verifiers and fuzzy criteria, "
        "responses with known labels, balance them and split them by input into train.jsonl and test.jsonl.",
    )  # fmt: skip
    synthetic.add_argument("-o", "--output", required=True, metavar="DIR")
    synthetic.add_argument("--inputs", type=int, default=240, help="inputs to generate (default: 240)")
    synthetic.add_argument("--seed", type=int, default=0)
    synthetic.add_argument("--test-fraction", type=float, default=0.15, help="share of inputs held out")
    synthetic.set_defaults(handler=_cmd_synthetic)

    for name, what in (("sft", "prompt-completion records for TRL's SFTTrainer"),
                       ("rlvr", "prompt records with the judge_label column for TRL's GRPOTrainer")):  # fmt: skip
        records = data_sub.add_parser(name, help=what, description=f"Turn judge examples into {what}.")
        records.add_argument("input", metavar="EXAMPLES.jsonl")
        records.add_argument("-o", "--output", required=True, metavar="OUT.jsonl")
        records.add_argument("--exposure", choices=EXPOSURES, default="minimal")
        records.set_defaults(handler=_cmd_records)

    evaluation = sub.add_parser(
        "eval", help="the reliability table of a judge on labelled examples",
        description="Judge every labelled example and print the reliability table: schema, criterion slots, "
        "execution, arguments (judged by the verifier), credit, criterion-level and sample-level accuracy.",
    )  # fmt: skip
    evaluation.add_argument("--data", required=True, metavar="EXAMPLES.jsonl")
    evaluation.add_argument("--backend", choices=["rule", "transformers"], default="rule")
    evaluation.add_argument("--model", metavar="PATH", help="judge checkpoint for the transformers backend")
    evaluation.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    evaluation.add_argument("--max-tokens", type=int, default=1024, help="output token budget per answer")
    evaluation.add_argument("--unconstrained", action="store_true", help="no grammar-constrained decoding")
    evaluation.add_argument("--exposure", choices=EXPOSURES, default="minimal")
    evaluation.add_argument("--argument-threshold", type=float, default=0.9, help="verifier score counted right")
    evaluation.add_argument("--limit", type=int, help="only the first N examples")
    evaluation.add_argument("--json", metavar="OUT", help="also write the table as JSON")
    evaluation.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(handler=_cmd_eval)
