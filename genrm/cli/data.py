"""``genrm data labels``: judge examples of any method labelled by teachers; the teacher options and loop that the
methods' own ``genrm data`` commands share (the rubric's are in :mod:`genrm.methods.rubric.commands`).

genrm data labels INSTANCES.jsonl -o DIR --teacher MODEL@URL --teacher ... [--min-teachers N] [--method NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from genrm.choices import (
    DEFAULT_CONCURRENCY,
    DEVICES,
)
from genrm.cli.groups import subcommands
from genrm.cli.judging import (
    input_folder,
    read_model_lines,
)
from genrm.cli.numbers import positive_int
from genrm.cli.paths import input_file, output_dir


def teachers_of(args: argparse.Namespace) -> list[Any]:
    from genrm.engine.teachers import teacher_engine

    folder = input_folder(args.input)
    return [teacher_engine(spec, args.api_key_env, device=args.device, image_dir=folder) for spec in args.teacher]


def run_or_exit(coroutine: Any) -> Any:
    from genrm.engine import BackendUnavailable

    try:
        return asyncio.run(coroutine)
    except BackendUnavailable as exc:
        print(f"genrm data: a teacher cannot be reached, stopping: {exc}", file=sys.stderr)
        return None


async def close_all(teachers: list[Any]) -> None:
    for teacher in teachers:
        await teacher.aclose()


def _cmd_labels(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods import make_method
    from genrm.methods.base import TrainsItsJudge
    from genrm.methods.labelling import balance, split_by_input

    try:
        method = make_method(args.method)
    except ValueError as exc:
        print(f"genrm data labels: error: {exc}", file=sys.stderr)
        return 2
    if not isinstance(method, TrainsItsJudge):
        print(f"genrm data labels: error: the {method.name} method has no judge training", file=sys.stderr)
        return 2
    training = method.judge_training()
    if training.read_input is None:
        instances = read_model_lines(args.input, training.input_model or method.instance_model)
        if instances is None:  # the reader has named the bad line
            return 2
    else:
        try:
            instances = training.read_input(args.input)
        except ValueError as exc:
            print(f"genrm data labels: error: {exc}", file=sys.stderr)
            return 2
    teachers = teachers_of(args)

    async def run() -> Any:
        try:
            return await training.label(instances, teachers, args.min_teachers, args.concurrency, not args.quiet)
        finally:
            await close_all(teachers)

    result = run_or_exit(run())
    if result is None:
        return 1
    examples, report = result
    print(report.markdown())
    if not args.no_balance:
        examples = balance(examples, args.seed)
    if not examples:
        print("genrm data labels: no response could be labelled; nothing written", file=sys.stderr)
        return 1
    train, test = split_by_input(examples, args.test_fraction, args.seed)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(train, str(out / "train.jsonl"))
    write_jsonl(test, str(out / "test.jsonl"))
    (out / "labels_report.json").write_text(json.dumps(report.counts(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(train)} train and {len(test)} test examples to {out}")
    return 0


def teacher_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--teacher", action="append", required=True, metavar="SPEC",
                        help="a teacher: MODEL@URL[,URL...] (OpenAI-compatible, e.g. SGLang) or transformers:PATH; "
                        "repeat for several")  # fmt: skip
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the teachers' API key")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="for local teachers")
    parser.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"inputs worked on at once (default: {DEFAULT_CONCURRENCY})")  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def register(sub: Any) -> None:
    """Add ``data labels`` (any method's) to the ``genrm`` command."""
    data_sub = subcommands(sub, "data")

    labels = data_sub.add_parser(
        "labels", help="judge examples labelled by teachers, balanced and split",
        description="Every teacher judges every response of the instances as the method's judge would. Rubric "
        "method: per criterion the median credit is kept and, for verifiable criteria, the extracted value of a "
        "teacher whose credit equals it. Claimdiff method: the differences of the first teacher (in the order "
        "given) whose answer reads, when at least --min-teachers answers read. Pairwise method (its input is "
        "labelled pairs): the tagged answer of the first teacher whose well-formed answer prefers the label. Writes "
        "train.jsonl, test.jsonl (no input in both) and labels_report.json.",
    )  # fmt: skip
    labels.add_argument("input", metavar="INSTANCES.jsonl", type=input_file)
    labels.add_argument("--method", default="rubric", help="the reward method whose judge is labelled (rubric)")
    labels.add_argument("-o", "--output", required=True, metavar="DIR", type=output_dir)
    teacher_options(labels)
    labels.add_argument("--min-teachers", type=int, help="usable answers a label needs (default: a majority)")
    labels.add_argument("--test-fraction", type=float, default=0.15, help="share of inputs held out")
    labels.add_argument("--no-balance", action="store_true", help="keep every labelled example")
    labels.add_argument("--seed", type=int, default=0)
    labels.set_defaults(handler=_cmd_labels)
