"""``genrm captions``: evaluating caption files with a judge.

genrm captions bcapscore CAPTIONS.jsonl --judge SPEC [-o DIR] [--names A B] [--method-options JSON]
genrm captions arena A.jsonl B.jsonl --judge SPEC [-o DIR] [--names A B] [--seed 0]
genrm captions eval CAPTIONS.jsonl [--metrics M ...] [--judge SPEC] [--names ...] [--human-ranking ...] [-o DIR]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from genrm.choices import BLIND_RANKING, CAPTION_QA, JUDGED_CAPTION_METRICS, REFERENCE_METRICS
from genrm.cli.judging import judge_backend_options, nothing_judged, read_model_lines, run_judged, write_report
from genrm.cli.lists import ListValues
from genrm.cli.paths import input_file, output_dir
from genrm.cli.settings import json_object


def _cmd_bcapscore(args: argparse.Namespace) -> int:
    from genrm.evaluation.bcapscore import score_captions
    from genrm.methods import make_method
    from genrm.methods.balcap.models import BalCapInstance

    instances = read_model_lines(args.captions, BalCapInstance, "captions bcapscore")
    if instances is None:
        return 2
    names = args.names
    report, code = run_judged("captions bcapscore", args, args.captions, lambda judge: score_captions(
        instances, judge, args.method_options, names, progress=not args.quiet), make_method("balcap"))  # fmt: skip
    if code:
        return code
    print(report.markdown())
    if args.output:
        write_report(args.output, "bcapscore", report.markdown(), report.to_json())
    rows = report.captions
    reason = next((c.failure for c in rows if c.failure), None)
    return nothing_judged("captions bcapscore", sum(c.failure is None for c in rows), len(rows), reason)


def _cmd_arena(args: argparse.Namespace) -> int:
    from genrm.evaluation.caparena import ArenaCaptions, compare_files
    from genrm.methods import make_method

    files = [read_model_lines(path, ArenaCaptions, "captions arena") for path in (args.first, args.second)]
    if files[0] is None or files[1] is None:
        return 2
    names = tuple(args.names) if args.names else (args.first, args.second)
    if len(names) != 2:
        print("genrm captions arena: error: --names takes two names (A B)", file=sys.stderr)
        return 2
    # CapArena's pairwise question is asked by the rubicap method's judge (its scripted judge answers it too)
    report, code = run_judged("captions arena", args, args.first,
                              lambda judge: compare_files(files[0], files[1], judge, names, args.seed),
                              make_method("rubicap"))  # fmt: skip
    if code:
        return code
    print(report.markdown())
    if args.output:
        write_report(args.output, "arena", report.markdown(), report.to_json())
    figures = report.figures()
    reason = next((c.failure for c in report.comparisons if c.failure), None)
    if not report.comparisons:
        reason = f"no caption of the first file has an id in the second ({figures['unmatched']} unmatched)"
    return nothing_judged("captions arena", figures["judged"], figures["comparisons"], reason)


def _judge_named(args: argparse.Namespace) -> bool:
    return bool(args.judge or args.backend)


def _word_limits(values: list[str] | None) -> list[int]:
    limits = []
    for value in values or []:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"--word-limits takes whole numbers of words of at least 1, got {value!r:.40}")
        limits.append(int(value))
    return sorted(set(limits))


def _eval_metrics(args: argparse.Namespace, limits: list[int]) -> list[str]:
    # The metrics the command computes; ValueError for a choice its options cannot serve.
    from genrm.evaluation.caption_eval import qa_metric

    judge = _judge_named(args)
    if args.metrics is None:
        metrics = [*REFERENCE_METRICS, *(JUDGED_CAPTION_METRICS if judge else ()), *([BLIND_RANKING] if judge else [])]
        metrics += [CAPTION_QA] if args.questions and judge else []
    else:
        metrics = list(args.metrics)
    judged = [m for m in metrics if m in (*JUDGED_CAPTION_METRICS, CAPTION_QA, BLIND_RANKING)]
    if judged and not judge:
        raise ValueError(f"--metrics {' '.join(judged)} needs a judge (--judge SPEC)")
    if args.questions and not judge:
        raise ValueError("--questions are answered by a judge: name one (--judge SPEC)")
    if CAPTION_QA in metrics and not args.questions:
        raise ValueError("the qa metric needs --questions QUESTIONS.jsonl")
    if args.questions and CAPTION_QA not in metrics:
        raise ValueError("--questions are read for the qa metric: add qa to --metrics")
    if limits and CAPTION_QA not in metrics:
        raise ValueError("--word-limits cut the captions the questions are asked of: give --questions too")
    return metrics + [qa_metric(n) for n in limits] if CAPTION_QA in metrics else metrics


def _cmd_eval(args: argparse.Namespace) -> int:
    from genrm.engine import run_blocking
    from genrm.evaluation.bcapscore import score_captions, system_names
    from genrm.evaluation.caption_eval import EvaluationJudge, check_ranking, evaluate_captions, report_files
    from genrm.evaluation.caption_qa import QAItem, answer_questions
    from genrm.evaluation.reference_metrics import unavailable
    from genrm.methods.balcap.models import BalCapInstance
    from genrm.methods.rubicap.blind_ranking import rank_captions

    command = "captions eval"
    try:  # every choice is checked before any file is read or anything judged
        limits = _word_limits(args.word_limits)
        metrics = _eval_metrics(args, limits)
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return 2
    skipped = {m: why for m in metrics if m in REFERENCE_METRICS and (why := unavailable(m)) is not None}
    if args.metrics is not None and skipped:  # asked for by name: say so before any work, not report without it
        metric, why = next(iter(skipped.items()))
        print(f"genrm {command}: error: --metrics {metric}: {why}", file=sys.stderr)
        return 2
    instances = read_model_lines(args.captions, BalCapInstance, command)
    items = read_model_lines(args.questions, QAItem, command) if args.questions else []
    if instances is None or items is None:
        return 2
    try:  # the names, the ranking and the questions' images are checked before anything is judged
        systems = system_names(instances, args.names)
        check_ranking(systems, args.human_ranking)
        if BLIND_RANKING in metrics and len(systems) < 2:
            if args.metrics is not None:
                raise ValueError("the blind ranking compares two systems or more: every image needs as many captions")
            metrics.remove(BLIND_RANKING)  # by default, a file of one system is simply not ranked
        captions = {i.id: i.responses for i in instances}
        lost = [item.id for item in items if item.id not in captions]
        if lost:
            raise ValueError(f"{args.questions}: questions about {lost[0]!r} have no caption in {args.captions}")
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return 2
    bcap = any(m in JUDGED_CAPTION_METRICS for m in metrics)
    ranked = BLIND_RANKING in metrics

    def work(judge: Any) -> Any:
        quiet, options = args.quiet, args.method_options
        judged = score_captions(instances, judge, options, args.names, progress=not quiet) if bcap else None
        qa = run_blocking(answer_questions(captions, items, systems, judge, [None, *limits], not quiet)) \
            if items else None  # fmt: skip
        images = {i.id: (i.image, i.responses) for i in instances}
        ranking = run_blocking(rank_captions(images, systems, judge, args.seed, not quiet)) if ranked else None
        return judged, qa, ranking

    judged, qa, ranking = None, None, None
    if bcap or items or ranked:
        done, code = run_judged(command, args, args.captions, work, EvaluationJudge())
        if code:
            return code
        judged, qa, ranking = done
    try:
        report = evaluate_captions(instances, metrics, args.names, judged, args.human_ranking, skipped, qa, ranking)
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return 2
    print(report.markdown())
    if args.output:
        written, note = report_files(report, args.output)
        print(f"\nwrote {', '.join(map(str, written))}")
        if note:
            print(f"genrm {command}: {note}", file=sys.stderr)
    if not report.computed():
        print(f"genrm {command}: no metric could be computed", file=sys.stderr)
        return 1
    return 0


def _caption_file(parser: argparse.ArgumentParser, written: str) -> None:
    # The input, output and system names every per-system caption evaluation takes.
    parser.add_argument(
        "captions", metavar="CAPTIONS.jsonl", type=input_file, help="balcap instances: image, reference, responses"
    )
    parser.add_argument("-o", "--output", metavar="DIR", type=output_dir, help=f"also write {written} there")
    parser.add_argument("--names", action=ListValues, metavar="NAME",
                        help="a name per caption position (the systems compared)")  # fmt: skip


def register(sub: Any) -> None:
    """Add ``captions`` (with its own subcommands) to the ``genrm`` command."""

    captions = sub.add_parser(
        "captions", help="evaluate caption files: reference metrics, b-CapScore, CapArena, human alignment"
    )
    captions_sub = captions.add_subparsers(dest="captions_command", required=True, metavar="CAPTIONS_COMMAND")
    bcap = captions_sub.add_parser(
        "bcapscore", help="b-CapScore of captions: harmonic mean of precision, recall and linguistic quality",
        description="Judge every caption once with the balcap method's evaluation prompt (pointable or justified "
        "by visible evidence) and no length mask, and report precision, recall, linguistic quality and b-CapScore "
        "(their harmonic mean), averaged over captions, per system (caption k of every instance is system k's "
        "when all instances hold the same number of captions). Failed judgements are counted apart.",
    )  # fmt: skip
    _caption_file(bcap, "bcapscore.md and bcapscore.json")
    bcap.add_argument("--method-options", type=json_object, default={}, metavar="JSON",
                      help="balcap options over the metric's own (prompt eval, length_rule none)")  # fmt: skip
    judge_backend_options(bcap)
    bcap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    bcap.set_defaults(handler=_cmd_bcapscore)

    arena = captions_sub.add_parser(
        "arena", help="CapArena-style pairwise comparison of two caption files: win rate, ties, position bias",
        description="For each image in both files (matched by id; the first response is the caption), the judge "
        "picks the better caption or a tie, with positions randomised per image (seeded). Reports wins, losses, "
        "ties, the win rate and win-lose rate of the first file, and how often the judge chose the caption shown "
        "first. Failed judgements are counted apart.",
    )  # fmt: skip
    arena.add_argument("first", metavar="A.jsonl", type=input_file, help="caption instances (id, image, responses)")
    arena.add_argument("second", metavar="B.jsonl", type=input_file, help="caption instances of the same images")
    arena.add_argument(
        "-o", "--output", metavar="DIR", type=output_dir, help="also write arena.md and arena.json there"
    )
    arena.add_argument("--names", action=ListValues, metavar="NAME", help="the two files' names in the report (A B)")
    arena.add_argument("--seed", type=int, default=0, help="the positions' random order (default: 0)")
    judge_backend_options(arena)
    arena.set_defaults(handler=_cmd_arena)

    evaluation = captions_sub.add_parser(
        "eval", help="reference metrics, b-CapScore, QA from captions and the blind ranking, per system",
        description="Score each system's captions (caption k of every instance is system k's) with the COCO "
        "caption metrics against the instances' references (pycocoevalcap; METEOR and SPICE need Java, SPICE also "
        "Stanford CoreNLP: a metric that cannot run is skipped with the reason), and with a judge also b-CapScore "
        "and its parts, the blind ranking, and (with --questions) question answering from the captions alone. "
        "With --human-ranking, the Spearman correlation of each metric's ranking of the systems "
        "with the human one (BalCapRL table 5). Writes eval.md, eval.json and eval.png with -o.",
    )  # fmt: skip
    _caption_file(evaluation, "eval.md, eval.json and eval.png")
    metrics = (*REFERENCE_METRICS, *JUDGED_CAPTION_METRICS, CAPTION_QA, BLIND_RANKING)
    evaluation.add_argument("--metrics", action=ListValues, choices=metrics, metavar="METRIC",
                            help=f"the metrics ({', '.join(metrics)}; default: every reference metric "
                            "this machine can run, and the judged ones when a judge is named)")  # fmt: skip
    evaluation.add_argument("--human-ranking", action=ListValues, metavar="NAME",
                            help="the systems by name, best first: each metric's Spearman agreement")  # fmt: skip
    evaluation.add_argument("--questions", metavar="QUESTIONS.jsonl", type=input_file,
                            help="multiple-choice questions per image (by id): a judge answers them from each caption "
                            "alone (the qa metric)")  # fmt: skip
    evaluation.add_argument("--word-limits", action=ListValues, metavar="WORDS",
                            help="also ask the questions of each caption cut to its first N words (qa@N)")  # fmt: skip
    evaluation.add_argument("--seed", type=int, default=0, help="the blind ranking's shuffled order (default: 0)")
    evaluation.add_argument("--method-options", type=json_object, default={}, metavar="JSON",
                            help="balcap options over b-CapScore's own (prompt eval, length_rule none)")  # fmt: skip
    judge_backend_options(evaluation)
    evaluation.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(handler=_cmd_eval)
