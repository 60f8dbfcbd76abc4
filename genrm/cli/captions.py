"""``genrm captions``: evaluating caption files with a judge.

genrm captions bcapscore CAPTIONS.jsonl --judge SPEC [-o DIR] [--names A,B] [--method-options JSON]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from genrm.cli.data import judge_backend_options, judge_from_args


def _cmd_bcapscore(args: argparse.Namespace) -> int:
    from genrm.cli.data import read_model_lines
    from genrm.engine import BackendUnavailable, run_blocking
    from genrm.evaluation.bcapscore import score_captions
    from genrm.methods import check_judge, make_method
    from genrm.methods.balcap.models import BalCapInstance

    instances = read_model_lines(args.captions, BalCapInstance)
    if instances is None:
        return 2
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    try:
        judge = judge_from_args(args, args.captions)
        check_judge(make_method("balcap"), judge)
    except ValueError as exc:
        print(f"genrm captions bcapscore: error: {exc}", file=sys.stderr)
        return 2
    try:
        report = score_captions(instances, judge, args.method_options, names, progress=not args.quiet)
    except ValueError as exc:
        print(f"genrm captions bcapscore: error: {exc}", file=sys.stderr)
        return 2
    except BackendUnavailable as exc:
        print(f"genrm captions bcapscore: the judge cannot be reached, stopping: {exc}", file=sys.stderr)
        return 1
    finally:
        run_blocking(judge.aclose())
    print(report.markdown())
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bcapscore.md").write_text(report.markdown() + "\n", encoding="utf-8")
        (out / "bcapscore.json").write_text(report.to_json() + "\n", encoding="utf-8")
        print(f"\nwrote {out / 'bcapscore.md'} and {out / 'bcapscore.json'}")
    return 0


def register(sub: Any) -> None:
    """Add ``captions`` (with its own subcommands) to the ``genrm`` command."""
    from genrm.cli.settings import json_object

    captions = sub.add_parser("captions", help="evaluate caption files with a judge (b-CapScore)")
    captions_sub = captions.add_subparsers(dest="captions_command", required=True, metavar="CAPTIONS_COMMAND")
    bcap = captions_sub.add_parser(
        "bcapscore", help="b-CapScore of captions: harmonic mean of precision, recall and linguistic quality",
        description="Judge every caption once with the balcap method's evaluation prompt (pointable or justified "
        "by visible evidence) and no length mask, and report precision, recall, linguistic quality and b-CapScore "
        "(their harmonic mean), averaged over captions, per system (caption k of every instance is system k's "
        "when all instances hold the same number of captions). Failed judgements are counted apart.",
    )  # fmt: skip
    bcap.add_argument("captions", metavar="CAPTIONS.jsonl", help="balcap instances: image, reference, responses")
    bcap.add_argument("-o", "--output", metavar="DIR", help="also write bcapscore.md and bcapscore.json there")
    bcap.add_argument("--names", metavar="A,B,...", help="a name per caption position (the systems compared)")
    bcap.add_argument("--method-options", type=json_object, default={}, metavar="JSON",
                      help="balcap options over the metric's own (prompt eval, length_rule none)")  # fmt: skip
    judge_backend_options(bcap)
    bcap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    bcap.set_defaults(handler=_cmd_bcapscore)
