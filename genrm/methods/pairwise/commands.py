"""``genrm pairs``: the pairwise judge (MJ1) on labelled pairs.

genrm pairs eval PAIRS [PAIRS ...] --judge SPEC [--task T] [--conditions real shuffled blank] [--seed 0] [-o DIR]
genrm pairs train --config RECIPE.yaml [--field value ...]      # GRPO of the judge with the swap in the loop
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from genrm.choices import BENCHMARK_TASKS, IMAGE_CONDITIONS, PAIR_PROMPT_MODES
from genrm.cli.judging import judge_backend_options, nothing_judged, run_judged, write_report
from genrm.cli.lists import ListValues
from genrm.cli.paths import input_file, output_dir
from genrm.cli.recipes import read_recipe, recipe_parser

_TRAIN_EXAMPLE = "genrm pairs train --config recipes/pairs_grpo_tiny_cpu.yaml"


def _cmd_eval(args: argparse.Namespace) -> int:
    from genrm.methods import make_method
    from genrm.methods.pairwise.evaluation import evaluate_pairs
    from genrm.methods.pairwise.mmrb2 import read_pairs

    folders = {str(Path(path).resolve().parent) for path in args.pairs}
    if len(folders) > 1:
        print("genrm pairs eval: error: the pair files must share one folder (their image paths are read from it)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        pairs = [pair for path in args.pairs for pair in read_pairs(path, args.task)]
    except (ValueError, OSError) as exc:
        print(f"genrm pairs eval: error: {exc}", file=sys.stderr)
        return 2
    conditions = args.conditions
    report, code = run_judged("pairs eval", args, args.pairs[0],
                              lambda judge: evaluate_pairs(pairs, judge, conditions, args.seed, args.prompt),
                              make_method("pairwise"))  # fmt: skip
    if code:
        return code
    print(report.markdown())
    if args.output:
        write_report(args.output, "pairs_eval", report.markdown(), report.to_json())
    return nothing_judged("pairs eval", *report.judged(), report.first_failure())


def pairs_train_parser() -> Any:
    """The ``trl.TrlParser`` of ``genrm pairs train`` (recipe keys and ``--flags`` of ``SwapGRPOArguments``)."""
    from genrm.methods.pairwise.grpo import SwapGRPOArguments

    return recipe_parser((SwapGRPOArguments,), "genrm pairs train", _TRAIN_EXAMPLE)


def _cmd_train(args: argparse.Namespace) -> int:
    from genrm.methods.pairwise.grpo import run_swap_grpo

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    read = read_recipe(pairs_train_parser, args.rest, "genrm pairs train", _TRAIN_EXAMPLE)
    if read is None:
        return 2
    (arguments,) = read
    try:
        run_swap_grpo(arguments)
    except (ValueError, FileNotFoundError) as exc:
        print(f"genrm pairs train: error: {exc}", file=sys.stderr)
        return 2
    return 0


def register(sub: Any) -> None:
    """Add ``pairs`` (with its own subcommands) to the ``genrm`` command."""
    pairs = sub.add_parser("pairs", help="the pairwise judge (MJ1): evaluate it on labelled pairs")
    pairs_sub = pairs.add_subparsers(dest="pairs_command", required=True, metavar="PAIRS_COMMAND")
    evaluation = pairs_sub.add_parser(
        "eval", help="accuracy, A-rate, swap agreement and R_cons of a pairwise judge, under image conditions",
        description="Judge every pair as given and with its responses swapped, and report per image condition the "
        "accuracy (both orders), the rate of choosing position A, and the share of pairs whose two judgements "
        "prefer the same response (swap agreement), and MJ1's R_cons; per task family too when there are several. "
        "Responses may be text, images or both. Conditions: real images, shuffled ones (another pair's prompt "
        "images), blank grey squares (MJ1's grounding diagnostic). Failed judgements (no readable scores, a tie) "
        "are counted apart.",
    )  # fmt: skip
    evaluation.add_argument(
        "pairs",
        metavar="PAIRS",
        nargs="+",
        type=input_file,
        help="labelled pairs, in one folder: a JSONL (id, prompt, image, response_a, response_b, family, label), or "
        "MMRB2's task files (t2i.json, edit.json, interleaved.json, reasoning.json)",
    )
    evaluation.add_argument("--task", choices=BENCHMARK_TASKS, default=None,
                            help="the MMRB2 task of .json files not named after one")  # fmt: skip
    evaluation.add_argument("--conditions", action=ListValues, default=["real"], choices=IMAGE_CONDITIONS,
                            metavar="CONDITION", help="image conditions (real)")  # fmt: skip
    evaluation.add_argument("--seed", type=int, default=0, help="the shuffled condition's permutation (0)")
    evaluation.add_argument("--prompt", choices=PAIR_PROMPT_MODES, default="grounded",
                            help="grounded (MJ1's chain) or open (the same criteria and scores, no chain: MJ1's "
                            "open-ended baseline)")  # fmt: skip
    evaluation.add_argument(
        "-o", "--output", metavar="DIR", type=output_dir, help="also write pairs_eval.md and pairs_eval.json"
    )
    judge_backend_options(evaluation)
    evaluation.set_defaults(handler=_cmd_eval)

    train = pairs_sub.add_parser(
        "train", help="GRPO of the pairwise judge with MJ1's swap in the loop", add_help=False, prefix_chars="+",
        description="Arguments go to TRL's parser: --config recipe.yaml and any field of SwapGRPOArguments.",
    )  # fmt: skip
    train.add_argument("rest", nargs=argparse.REMAINDER)  # with "+" as prefix, every --flag is left to TRL
    train.set_defaults(handler=_cmd_train)
