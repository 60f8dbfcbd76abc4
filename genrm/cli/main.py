"""The ``genrm`` command line: one entry point, a subcommand per job.

    genrm verify "bbox_verify(target=[[531,118,892,435]])" "bbox_verify(predict=[[529,119,890,433]])"
    genrm verify --examples
    genrm verifiers [--only text_verify expr_verify] [--json]
    genrm score datasets/examples/reward_core.jsonl -o rewards.jsonl [--backend rule]
    genrm score INPUT.jsonl -o rewards.jsonl --backend transformers --model PATH
    genrm score INPUT.jsonl -o rewards.jsonl --backend sglang --url http://127.0.0.1:30000/v1 --model NAME
    genrm tiny-model runs/tiny-judge
    genrm data synthetic -o datasets/judge_synth;  genrm data sft|rlvr EXAMPLES.jsonl -o OUT.jsonl
    genrm eval datasets/judge_synth/test.jsonl [--backend transformers --model PATH]
    genrm train sft|rlvr --config recipes/sft_tiny_cpu.yaml

Each subcommand module keeps its heavy imports inside its handler, so ``genrm --help`` starts at once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from genrm import __version__
from genrm.cli.lists import ListValues
from genrm.cli.numbers import positive_int, share
from genrm.cli.paths import input_file, output_dir, output_file

#: One representative pair of calls per verifier (rubric side, scoring side), run by ``genrm verify --examples``.
EXAMPLE_CALLS: tuple[tuple[str, str], ...] = (
    ("text_verify(target='Export Volume', ignore_space=True, ignore_case=True)",
     "text_verify(predict='export volume')"),
    ("expr_verify(target=r'\\frac{4}{6}')", "expr_verify(predict='2/3')"),
    ("time_verify(target='18:15', tformat='%H:%M')", "time_verify(predict='6:15 PM', pformat='%I:%M %p')"),
    ("list_verify(target=['M-30', 'M-31', 'M-31UK'])", "list_verify(predict=['M-30', 'M-31'])"),
    ("bbox_verify(target=[[531, 118, 892, 435]])", "bbox_verify(predict=[[529, 119, 890, 433]])"),
    ("point_verify(target=[[591, 234]])", "point_verify(predict=[[589, 236]])"),
)  # fmt: skip


def _cmd_verify(args: argparse.Namespace) -> int:
    from verifiers import VerifyConfig, verify_call_result

    config = VerifyConfig(deadline_s=args.deadline)
    if args.examples:
        if args.reference or args.prediction:
            print("genrm verify: give either --examples or REFERENCE_CALL PREDICTION_CALL", file=sys.stderr)
            return 2
        return _run_examples(config, args.json)
    if not (args.reference and args.prediction):
        print("genrm verify: REFERENCE_CALL and PREDICTION_CALL are required (or --examples)", file=sys.stderr)
        return 2
    result = verify_call_result(args.reference, args.prediction, config)
    if args.json:
        print(json.dumps({"score": result.score, "status": result.status, "reason": result.reason,
                          "verifier": result.verifier}))  # fmt: skip
    else:
        print(f"score: {result.score:.4f}\nstatus: {result.status}\nreason: {result.reason}")
    return 0 if result.ok else 1


def _run_examples(config: object, as_json: bool) -> int:
    from verifiers import verify_call_result

    results = [verify_call_result(reference, prediction, config) for reference, prediction in EXAMPLE_CALLS]
    if as_json:
        print(
            json.dumps(
                [
                    {"reference": ref, "prediction": pred, "score": r.score, "status": r.status, "reason": r.reason}
                    for (ref, pred), r in zip(EXAMPLE_CALLS, results, strict=True)
                ]
            )
        )
    else:
        print(f"{'verifier':<13} {'score':>6}  {'status':<8} prediction")
        for (_, prediction), result in zip(EXAMPLE_CALLS, results, strict=True):
            print(f"{result.verifier or '?':<13} {result.score:>6.3f}  {result.status:<8} {prediction}")
    return 0 if all(r.ok for r in results) else 1


def _cmd_verifiers(args: argparse.Namespace) -> int:
    from verifiers.registry import REGISTRY, render_specs

    names = args.only or list(REGISTRY)
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        print(f"unknown verifier(s): {', '.join(unknown)}; valid: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([REGISTRY[name].to_dict() for name in names], indent=2))
    else:
        print(render_specs(names))
    return 0


def _cmd_methods(args: argparse.Namespace) -> int:
    from genrm.methods.registry import describe_method, method_names

    names = args.only or method_names()
    unknown = [name for name in names if name not in method_names()]
    if unknown:
        print(f"genrm methods: unknown method(s): {', '.join(unknown)}; known: {', '.join(method_names())}",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        described = [describe_method(name) for name in names]
    except (ValueError, ImportError, AttributeError) as exc:  # a plug-in whose module or options cannot be read
        print(f"genrm methods: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(described, indent=2))
        return 0
    blocks = []
    for method in described:
        lines = [f"{method['name']}{' (plug-in)' if method['plugin'] else ''}: {method['summary']}"]
        for option in method["options"]:
            kind = option["type"] + (f", {option['bounds']}" if option["bounds"] else "")
            lines.append(f"  {option['name']} ({kind}; default {json.dumps(option['default'])}): {option['help']}")
        lines += [] if method["options"] else ["  (no options)"]
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    sinks: list = []  # the output once it is open, for the count an interrupt reports
    try:
        return _score(args, sinks)
    except KeyboardInterrupt:  # at any moment: while the judge is made, the files opened, or the lines scored
        if args.output == "-":
            print("genrm score: interrupted", file=sys.stderr)
        else:
            written = sinks[0].lines if sinks else 0
            print(f"genrm score: interrupted: {written} whole lines written to {args.output}", file=sys.stderr)
        return 130


def _score(args: argparse.Namespace, sinks: list) -> int:
    import contextlib

    from genrm.cli.judging import judge_from_args
    from genrm.cli.settings import given_settings
    from genrm.engine import BackendUnavailable, run_blocking
    from genrm.jsonl import WholeLines, WriteFailed
    from genrm.methods import MethodConfig
    from genrm.methods.score_file import input_problem, score_file
    from genrm.methods.settings import RewardSettings, reward_settings
    from verifiers import VerifyConfig

    problem = None if args.input == "-" else input_problem(args.input)
    if problem is not None:  # before the judge is made: a model takes seconds to load
        print(f"genrm score: {problem}", file=sys.stderr)
        return 2
    try:
        settings = reward_settings(given_settings(args, list(RewardSettings.model_fields)))
        config = MethodConfig(exposure=settings.exposure, check_format=not args.no_format_check,
                              verify=VerifyConfig(deadline_s=args.deadline))  # fmt: skip
        method = settings.make(config)
    except ValueError as exc:
        print(f"genrm score: {exc}", file=sys.stderr)
        return 2
    try:
        judge = judge_from_args(args, None if args.input == "-" else args.input, parse_retries=1, method=method)
    except (OSError, ValueError) as exc:  # a missing option, no checkpoint at that path, no chat template
        print(f"genrm score: cannot make the judge: {exc}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        try:
            source = sys.stdin if args.input == "-" else stack.enter_context(open(args.input, encoding="utf-8"))
            # every line is written whole or cut back: a full disk leaves no torn last line
            sink = sys.stdout if args.output == "-" else stack.enter_context(WholeLines(args.output))
            sinks.append(sink)
            records = None
            if args.record_log is not None:
                records = stack.enter_context(WholeLines(args.record_log, "a"))
        except OSError as exc:
            print(f"genrm score: {exc.strerror}: {exc.filename}", file=sys.stderr)
            return 2
        stack.callback(run_blocking, judge.aclose())
        try:
            summary = score_file(source, sink, method, judge, progress=not args.quiet, records=records)
        except BackendUnavailable as exc:
            where = "" if args.output == "-" else f"; {sink.lines} whole lines written to {args.output}"  # type: ignore[union-attr]
            print(f"genrm score: the judge cannot be reached, stopping: {exc}{where}", file=sys.stderr)
            return 1
        except WriteFailed as exc:
            print(f"genrm score: {exc.strerror}; the lines before it are whole", file=sys.stderr)
            return 1
    if not args.quiet:
        print(summary.table(None if args.output == "-" else args.output), file=sys.stderr)
    shortfall = summary.shortfall(args.min_judged)
    if shortfall is not None:
        print(f"genrm score: {shortfall}", file=sys.stderr)
        return 1
    return 1 if summary.failed else 0


def _cmd_tiny_model(args: argparse.Namespace) -> int:
    from genrm.methods import method_names
    from genrm.training.tiny_model import TinyModelConfig, method_corpus, save_tiny_judge, save_tiny_vlm_judge

    if args.method not in method_names():
        print(f"genrm tiny-model: error: --method {args.method!r} is not a method (choose from "
              f"{', '.join(method_names())})", file=sys.stderr)  # fmt: skip
        return 2
    if args.hidden_size % args.heads or args.heads % args.kv_heads:
        print(f"genrm tiny-model: error: --hidden-size {args.hidden_size} must be a multiple of --heads {args.heads}, "
              f"and --heads of --kv-heads {args.kv_heads}", file=sys.stderr)  # fmt: skip
        return 2
    config = TinyModelConfig(
        vocab_size=args.vocab_size, hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size or 2 * args.hidden_size, num_hidden_layers=args.layers,
        num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, seed=args.seed,
    )  # fmt: skip
    save = save_tiny_vlm_judge if args.vision else save_tiny_judge
    out = save(args.output, config, corpus=method_corpus(args.method))
    print(f"saved a tiny {'vision-language ' if args.vision else ''}judge (untrained) to {out}")
    return 0


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``genrm`` command and its subcommands."""
    parser = OneLineErrors(
        prog="genrm", description="A self-hosted generative reward model stack: verifiers, judge, reward server."
    )
    parser.add_argument("--version", action="version", version=f"genrm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    verify = sub.add_parser(
        "verify",
        help="run a verifier: join a rubric-side call with a scoring-side call",
        description="Join a rubric-side call with a scoring-side call, run the verifier and print the score, "
        "the status and the reason. Exit code 0 when the status is ok, 1 otherwise.",
    )
    verify.add_argument(
        "reference", metavar="REFERENCE_CALL", nargs="?", help="e.g. \"expr_verify(target=r'\\frac{4}{6}')\""
    )
    verify.add_argument("prediction", metavar="PREDICTION_CALL", nargs="?", help="e.g. \"expr_verify(predict='2/3')\"")
    verify.add_argument("--examples", action="store_true", help="run one built-in example call pair per verifier")
    verify.add_argument("--deadline", type=float, default=2.0, help="time limit in seconds (default: 2)")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.set_defaults(handler=_cmd_verify)

    for name, what, description, handler in (
        ("verifiers", "the verifiers with both signatures and their usage rules", "List the verifiers with their "
         "rubric-side and scoring-side signatures, return values and usage rules, as the judge prompts show them.",
         _cmd_verifiers),
        ("methods", "the reward methods with their options", "List the reward methods (built in, then plug-ins) "
         "with each one's options: the keys of --method-options, their types, defaults and meaning.", _cmd_methods),
    ):  # fmt: skip
        listing = sub.add_parser(name, help=f"list {what}", description=description)
        listing.add_argument("--only", action=ListValues, metavar="NAME", help=f"only these {name}")
        listing.add_argument("--json", action="store_true", help="print JSON")
        listing.set_defaults(handler=handler)

    from genrm.cli.judging import judge_backend_options
    from genrm.cli.settings import add_settings_options
    from genrm.methods.settings import RewardSettings

    score = sub.add_parser(
        "score",
        help="score an instance JSONL file: one reward line per instance",
        description="Score every instance of a JSONL file (prompt, rubric, responses) and write one line per "
        "instance with its rewards (null where a reward depends on an unscored criterion) and a record per "
        "response. A bad line gets an error line and the others are still scored. Exit code 1 when any line "
        "failed, 2 on a usage error.",
    )
    score.add_argument("input", metavar="INPUT.jsonl", type=input_file, help="instance JSONL ('-' for standard input)")
    score.add_argument(
        "-o", "--output", default="-", metavar="OUTPUT.jsonl", type=output_file, help="default: standard output"
    )
    add_settings_options(score, RewardSettings)  # --method, --method-options, --exposure: declared once
    judge_backend_options(score)
    score.add_argument("--no-format-check", action="store_true", help="turn off the repetition/language mask")
    score.add_argument("--deadline", type=float, default=2.0, help="verifier time limit in seconds (default: 2)")
    score.add_argument("--min-judged", type=share, default=None, metavar="SHARE",
                       help="fail (exit 1) when fewer than this share (0-1) of the responses get a reward "
                       "(default: fail only when none does)")  # fmt: skip
    score.add_argument("--record-log", default=None, metavar="RECORDS.jsonl", type=output_file,
                       help="also write each scored instance with its result, as genrm serve --record-log does "
                       "(what genrm audit mine reads)")  # fmt: skip
    score.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    score.set_defaults(handler=_cmd_score)

    tiny = sub.add_parser(
        "tiny-model",
        help="save an untrained tiny judge checkpoint (tokenizer trained here, model from a config)",
        description="Train a byte-level BPE tokenizer on what the method's judge reads and writes (the rubric "
        "method's: the example set's judge prompts and answers), build a randomly initialised Qwen3 model of that "
        "vocabulary and save both (no download). For tests, CPU recipes and trying the transformers backend.",
    )
    tiny.add_argument("output", metavar="DIR", type=output_dir, help="directory to save the checkpoint to")
    from genrm.methods.registry import DEFAULT_METHOD
    from genrm.training.tiny_model import TinyModelConfig

    defaults = TinyModelConfig()
    tiny.add_argument("--vocab-size", type=int, default=defaults.vocab_size, help="tokenizer vocabulary (%(default)s)")
    tiny.add_argument("--hidden-size", type=int, default=defaults.hidden_size, help="model width (%(default)s)")
    tiny.add_argument("--layers", type=positive_int, default=defaults.num_hidden_layers,
                      help="decoder layers (%(default)s)")  # fmt: skip
    tiny.add_argument("--heads", type=positive_int, default=defaults.num_attention_heads,
                      help="query heads, each hidden-size / heads wide (%(default)s)")  # fmt: skip
    tiny.add_argument("--kv-heads", type=positive_int, default=defaults.num_key_value_heads,
                      help="key-value heads, a divisor of --heads (%(default)s)")  # fmt: skip
    tiny.add_argument(
        "--intermediate-size",
        type=positive_int,
        help="the MLP's width (default: twice --hidden-size; Qwen3's own models use three times)",
    )
    tiny.add_argument("--seed", type=int, default=0, help="initialisation seed (default: 0)")
    tiny.add_argument("--method", default=DEFAULT_METHOD,
                      help="the method whose judge corpus trains the tokenizer (default: %(default)s; a method that "
                      "names none takes the default one's)")  # fmt: skip
    tiny.add_argument("--vision", action="store_true",
                      help="a vision-language judge (LLaVA layout: a tiny CLIP encoder before the decoder), which the "
                      "caption and pairwise methods need to run a model in process")  # fmt: skip
    tiny.set_defaults(handler=_cmd_tiny_model)

    from genrm.cli.audit import register as register_audit
    from genrm.cli.captions import register as register_captions
    from genrm.cli.data import register as register_data
    from genrm.cli.records import register as register_records
    from genrm.cli.train import register as register_train

    register_data(sub)
    register_train(sub)
    register_audit(sub)
    register_captions(sub)
    register_records(sub)
    _register_plugins(sub)
    return parser


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line naming the command and where its help is, without the
    usage block first (59 lines for ``genrm serve``); its subcommands' parsers are of this class too. An option is
    taken in its own spelling only, not by a prefix of it (argparse's default): ``--out`` is not ``--output``, so a
    command a user wrote keeps its meaning when an option is added."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (PROG --help ...)`` on standard error and exit 2."""
        missing = message.removeprefix("the following arguments are required: ")
        if missing != message:  # argparse names positionals by their dest (``job, rest``), which says nothing
            message = "missing " + " ".join(self._shown(name) for name in missing.split(", ") if name != "rest")
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the options)\n")

    def _shown(self, name: str) -> str:
        for action in self._actions:
            if name in (action.dest, action.metavar):
                shown = str(action.metavar or action.dest.upper())
                return f"{shown} (one of: {', '.join(map(str, action.choices))})" if action.choices else shown
        return name


def _register_plugins(sub: argparse._SubParsersAction) -> None:
    # Subcommands of the packages built on this one (``serve`` from ``serving``) register through the
    # ``genrm.commands`` entry-point group, so this package never imports them.
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group="genrm.commands"), key=lambda e: e.name):
        try:
            entry.load()(sub)  # registering may import what the subcommand's options are made from
        except ImportError as exc:  # an optional extra is not installed: say how to get the subcommand
            sub.add_parser(entry.name, help=f"unavailable: {exc}; install the matching extra (e.g. .[serve])")


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """Exit with the usage error of the (sub)command ``args`` chose for ``unknown`` arguments, naming the closest
    option it has for each mistyped one (``--ouput``: did you mean ``--output``?)."""
    import difflib

    chosen = parser
    while True:  # down the subcommands that were chosen (genrm data synthetic ...)
        subcommands = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subcommands[0].dest, None) if subcommands else None
        if name is None or name not in subcommands[0].choices:
            break
        chosen = subcommands[0].choices[name]
    options = [option for action in chosen._actions for option in action.option_strings]
    hints = []
    for word in unknown:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)
            if close:
                hints.append(f"{word.split('=', 1)[0]}: did you mean {close[0]}?")
    chosen.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``genrm`` command line; returns the process exit code (2 for a usage error, 0 after ``--help``)."""
    try:
        parser = make_parser()
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # said by the subcommand that got them, with the closest option it has
            _refuse_unknown(parser, args, unknown)
    except SystemExit as stop:  # argparse has printed the usage error or the help; the code is what it exits with
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    except KeyboardInterrupt:  # Ctrl-C while the commands' modules are imported
        print("genrm: interrupted", file=sys.stderr)
        return 130
    try:
        return args.handler(args)
    except ValueError as exc:  # configuration values out of range, e.g. --deadline 0
        print(f"genrm {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: what was written so far is kept (outputs are written line by line)
        print(f"genrm {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader closed the pipe (genrm score ... -o - | head -1): it has what it wanted
        # Python flushes stdout again at exit, which would raise once more; point it at /dev/null first, as the
        # Python documentation's note on SIGPIPE does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command a closed pipe stopped


def entry() -> NoReturn:
    """The ``genrm`` console script and ``python -m genrm``: :func:`main`, then exit with its code. A Ctrl-C that
    comes while the process exits, its work done, is ignored (it would end the process by the signal, with no line)."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)
