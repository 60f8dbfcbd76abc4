"""``genrm audit run``, ``mine`` and ``captions``: the false-positive audit of any method's judge (the rubric's audit
sets are built by ``genrm audit build``, :mod:`genrm.methods.rubric.commands`).

genrm audit run audit.jsonl -o runs/audit [--backend rule|transformers|openai|sglang ...] [--settings ...]
genrm audit run INSTANCES.jsonl -o runs/audit --method pairwise|claimdiff|balcap|rubicap --judge SPEC [--setting ...]
genrm audit mine runs/records.jsonl -o runs/mined [--min-reward 0.75] [--max-words 8]
genrm audit captions captions.jsonl -o runs/caption-audit --judge MODEL@URL [--method balcap] [--setting NAME=JSON ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from genrm.cli.groups import subcommands
from genrm.cli.judging import (
    answer_format_option,
    argument_threshold_option,
    concurrency_option,
    grounding_option,
    judge_backend_options,
    judge_from_args,
)
from genrm.cli.lists import ListValues
from genrm.cli.paths import input_file, output_dir


def _cmd_run(args: argparse.Namespace) -> int:
    from genrm.engine import BackendUnavailable, run_blocking
    from genrm.methods import make_method
    from genrm.methods.base import AuditsWithSets

    try:
        method = make_method(args.method)
    except ValueError as exc:
        print(f"genrm audit run: error: {exc}", file=sys.stderr)
        return 2
    if not isinstance(method, AuditsWithSets):
        if args.settings or args.answer_format or args.grounding != "on":
            print("genrm audit run: error: --settings, --answer-format and --grounding are for a method audited by "
                  f"sets; give the {args.method} method's settings with --setting NAME=JSON",
                  file=sys.stderr)  # fmt: skip
            return 2
        return _audit_responses(args, args.audit, "audit", "audit run")
    audit = method.set_audit()
    if args.setting:
        print(f"genrm audit run: error: --setting is for methods audited on their responses; the {args.method} "
              f"method's settings are --settings {' '.join(audit.settings)}", file=sys.stderr)  # fmt: skip
        return 2
    unknown = [s for s in args.settings or () if s not in audit.settings]
    if unknown:
        print(f"genrm audit run: error: --settings: {', '.join(unknown)} is not a setting of the {args.method} method "
              f"(choose from {', '.join(audit.settings)})", file=sys.stderr)  # fmt: skip
        return 2
    try:
        examples = audit.read(args.audit, not args.no_master_keys)
    except ValueError as exc:
        print(f"genrm audit run: error: {exc}", file=sys.stderr)
        return 2
    judge = judge_from_args(args, args.audit)
    try:
        report = audit.run(judge, examples, args.settings, margin=args.fp_margin,
                           argument_threshold=args.argument_threshold, worst=args.worst, progress=not args.quiet,
                           answer_format=args.answer_format, concurrency=args.concurrency,
                           grounding=args.grounding)  # fmt: skip
    except BackendUnavailable as exc:
        print(f"genrm audit run: the judge cannot be reached, stopping: {exc}", file=sys.stderr)
        return 1
    finally:
        run_blocking(judge.aclose())
    for setting, why in report.skipped.items():
        print(f"genrm audit run: {setting} skipped: {why}", file=sys.stderr)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    table = report.markdown(worst=args.worst)
    (out / "audit.md").write_text(table + "\n", encoding="utf-8")
    (out / "audit.json").write_text(report.to_json() + "\n", encoding="utf-8")
    print(table)
    try:
        chart = audit.plot(report, out / "audit.png")
        print(f"\nwrote {out / 'audit.md'}, {out / 'audit.json'} and {chart}")
    except ImportError:
        print(f"\nwrote {out / 'audit.md'} and {out / 'audit.json'} (no chart: matplotlib is not installed)")
    return 0


def _cmd_captions(args: argparse.Namespace) -> int:
    return _audit_responses(args, args.captions, "caption_audit", "audit captions")


def _audit_responses(args: argparse.Namespace, path: str, stem: str, command: str) -> int:
    """The response audit of a method other than the rubric one (:mod:`genrm.evaluation.response_audit`)."""
    from genrm.cli.judging import nothing_judged, read_model_lines, run_judged, write_report
    from genrm.evaluation.response_audit import audit_plan, parse_settings, run_response_audit
    from genrm.methods import make_method

    try:
        audit_plan(args.method)
        method = make_method(args.method)
        settings = parse_settings(args.setting) if args.setting else None
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return 2
    instances = read_model_lines(path, method.instance_model, command)
    if instances is None:
        return 2
    report, code = run_judged(command, args, path, lambda judge: run_response_audit(
        instances, judge, settings, progress=not args.quiet, method=args.method,
        master_keys=not args.no_master_keys), method)  # fmt: skip
    if code:
        return code
    print(report.markdown())
    write_report(args.output, stem, report.markdown(), json.dumps(report.counts(), indent=1))
    return nothing_judged(command, sum(not pair.failed for pair in report.pairs), len(report.pairs), None)


def _response_audit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--setting", action="append", metavar="NAME=JSON",
                        help="a setting of a method other than rubric: a name and the method's options; repeat "
                        "(default: the method's own comparison, its safeguards on and off)")  # fmt: skip
    parser.add_argument("--no-master-keys", action="store_true",
                        help="leave out the master-key attacks (a reasoning opener or a symbol, alone or around a "
                        "wrong response)")  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _cmd_mine(args: argparse.Namespace) -> int:
    from genrm.cli.judging import write_report
    from genrm.evaluation.mining import mine_records

    try:
        with open(args.records, encoding="utf-8", errors="replace") as source:
            report = mine_records(source, args.min_reward, args.max_words, args.min_prompts, args.max_distinct)
    except (OSError, ValueError) as exc:
        print(f"genrm audit mine: error: {exc}", file=sys.stderr)
        return 2
    if report.groups == 0:
        print(f"genrm audit mine: error: {args.records} holds no scored group ({report.unreadable} lines are not "
              "records of genrm serve --record-log)", file=sys.stderr)  # fmt: skip
        return 2
    print(report.markdown(args.top))
    write_report(args.output, "mined", report.markdown(args.top), json.dumps(report.counts(), indent=1,
                                                                             ensure_ascii=False))  # fmt: skip
    return 0


def register(sub: Any) -> None:
    """Add ``audit run``, ``audit mine`` and ``audit captions`` (any method's) to the ``genrm`` command."""
    from genrm.methods.registry import DEFAULT_METHOD

    audit_sub = subcommands(sub, "audit")

    run = audit_sub.add_parser(
        "run", help="false positive rates per category and attack, per judge setting, of any reward method",
        description="The rubric method (default): judge every response of an audit set (genrm audit build) under "
        "each setting (default: minimal exposure + verifiers; vlm: image shown; unlimited: targets shown; "
        "no_verifier: every criterion fuzzy) and report accuracy on regular responses and the false positive rate "
        "per category, adversarial attack and master key, split verifiable / fuzzy, as markdown, JSON and a bar "
        "chart, with the worst cases. Any other method (--method): the input is the method's instances with "
        "regular responses; the abnormal responses that test the method and the master keys are built from them, "
        "scored under each of the method's settings (its safeguards on and off) and reported as the share that is "
        "rewarded at least as well as the regular response (and strictly better: rises), per category and key.",
    )  # fmt: skip
    run.add_argument(
        "audit", metavar="AUDIT.jsonl", type=input_file, help="an audit set (rubric) or the method's instances"
    )
    run.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        type=output_dir,
        help="where audit.md, audit.json (audit.png) go",
    )
    run.add_argument("--method", default=DEFAULT_METHOD, help=f"the reward method audited (default: {DEFAULT_METHOD})")
    judge_backend_options(run)
    run.add_argument("--settings", action=ListValues, metavar="SETTING",
                     help="the settings run, of a method audited by sets (default: all; the rubric method's: "
                     "default, vlm, unlimited, no_verifier)")  # fmt: skip
    answer_format_option(run, default=None)
    grounding_option(run)
    run.add_argument("--fp-margin", type=float, default=0.25,
                     help="credit above the deserved one that counts as a false positive (default: 0.25)")  # fmt: skip
    argument_threshold_option(run)
    run.add_argument("--worst", type=int, default=10, help="worst false positives listed per setting")
    concurrency_option(run)
    _response_audit_options(run)
    run.set_defaults(handler=_cmd_run)

    mine = audit_sub.add_parser(
        "mine", help="responses of a record log that earned a high reward with little content: candidate attacks",
        description="Read a record log (genrm serve --record-log) and list the responses rewarded at least "
        "--min-reward that are short, repeated across prompts, or mostly repeated words, ranked by how many prompts "
        "paid them: candidates for new audit cases, for a person to read.",
    )  # fmt: skip
    mine.add_argument("records", metavar="RECORDS.jsonl", type=input_file, help="the record log")
    mine.add_argument(
        "-o", "--output", required=True, metavar="DIR", type=output_dir, help="where mined.md and mined.json go"
    )
    mine.add_argument("--min-reward", type=float, default=0.75, help="a high reward (default: 0.75)")
    mine.add_argument("--max-words", type=int, default=8, help="at most this many words is short (default: 8)")
    mine.add_argument("--min-prompts", type=int, default=2, help="paid under this many prompts is repeated (2)")
    mine.add_argument("--max-distinct", type=float, default=0.35,
                      help="distinct words over words at or below this is low content (default: 0.35)")  # fmt: skip
    mine.add_argument("--top", type=int, default=20, help="candidates shown (all are in mined.json)")
    mine.set_defaults(handler=_cmd_mine)

    captions = audit_sub.add_parser(
        "captions", help="false positives of a caption reward (claimdiff, balcap) on abnormal captions, per setting",
        description="From each regular caption (the instances' responses) build the abnormal ones that test the "
        "method (claimdiff: a made-up object, the first sentence dropped, every sentence hedged, the reference "
        "copied, a self-praising sentence; balcap: meta-commentary, length padding, repetition, hedging, a made-up "
        "object, self-praise), score both under each setting (the method's options) and report how often the "
        "abnormal caption is rewarded at least as well as its regular one, per category; failed judgements are "
        "counted apart.",
    )  # fmt: skip
    captions.add_argument(
        "captions", metavar="CAPTIONS.jsonl", type=input_file, help="the method's instances with regular captions"
    )
    captions.add_argument("-o", "--output", required=True, metavar="DIR", type=output_dir)
    captions.add_argument("--method", default="claimdiff", help="the caption reward method audited (claimdiff)")
    judge_backend_options(captions)
    _response_audit_options(captions)
    captions.set_defaults(handler=_cmd_captions)
