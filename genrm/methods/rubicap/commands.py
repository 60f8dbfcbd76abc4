"""The rubicap method's own commands (a ``genrm.commands`` plug-in): per-image caption rubrics from a committee.

genrm data caption-rubrics IMAGES.jsonl -o OUT.jsonl --captioner SPEC [--captioner ...] --student SPEC --writer SPEC
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from genrm.choices import DEFAULT_CONCURRENCY, DEVICES
from genrm.cli.data import close_all, run_or_exit
from genrm.cli.groups import subcommands
from genrm.cli.judging import input_folder, read_model_lines
from genrm.cli.numbers import positive_int
from genrm.cli.paths import input_file, output_file


def _cmd_caption_rubrics(args: argparse.Namespace) -> int:
    from genrm.engine.teachers import teacher_engine
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubicap.caption_rubrics import ImageItem, write_caption_rubrics

    items = read_model_lines(args.input, ImageItem)
    if items is None:
        return 2
    try:
        folder = input_folder(args.input)
        captioners = [teacher_engine(spec, args.api_key_env, device=args.device, image_dir=folder)
                      for spec in args.captioner]  # fmt: skip
        student = teacher_engine(args.student, args.api_key_env, device=args.device, image_dir=folder)
        writer = teacher_engine(args.writer, args.api_key_env, device=args.device, image_dir=folder)
    except ValueError as exc:
        print(f"genrm data caption-rubrics: error: {exc}", file=sys.stderr)
        return 2
    engines = [*captioners, student, writer]

    async def run() -> Any:
        try:
            return await write_caption_rubrics(items, captioners, student, writer, args.min_teachers,
                                               args.concurrency, not args.quiet)  # fmt: skip
        finally:
            await close_all(engines)

    try:
        result = run_or_exit(run())
    except ValueError as exc:
        print(f"genrm data caption-rubrics: error: {exc}", file=sys.stderr)
        return 2
    if result is None:
        return 1
    instances, report = result
    print(report.markdown())
    if args.report:
        Path(args.report).write_text(json.dumps(report.counts(), indent=1) + "\n", encoding="utf-8")
    if not instances:
        print("genrm data caption-rubrics: no image kept a criterion; nothing written", file=sys.stderr)
        return 1
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(instances, args.output)
    print(f"wrote {len(instances)} rubicap instances to {args.output}")
    return 0


def register(sub: Any) -> None:
    """Add ``data caption-rubrics`` to the ``genrm`` command."""
    data_sub = subcommands(sub, "data")

    caption_rubrics = data_sub.add_parser(
        "caption-rubrics", help="per-image caption rubrics from a committee of captioners (RubiCap)",
        description="Every captioner and the student caption each image; the writer turns the student's "
        "deficiencies against the captioners' consensus (anonymised as Model 1..K) into binary criteria with "
        "severity weights 1-3; criteria with another weight, that the student already meets, or that fewer than "
        "--min-teachers captioners support are dropped. Writes rubicap instances (JSONL) and reports what was "
        "kept and dropped, and why.",
    )  # fmt: skip
    cr = caption_rubrics
    cr.add_argument(
        "input", metavar="IMAGES.jsonl", type=input_file, help="one {id, image, prompt?, reference?} a line"
    )
    cr.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", type=output_file)
    cr.add_argument("--captioner", action="append", required=True, metavar="SPEC",
                    help="a captioner of the committee (MODEL@URL or transformers:PATH); repeat")  # fmt: skip
    cr.add_argument("--student", required=True, metavar="SPEC", help="the student policy (the same forms)")
    cr.add_argument("--writer", required=True, metavar="SPEC", help="the rubric writer (a VLM)")
    cr.add_argument("--min-teachers", type=int,
                    help="captioners that must support a criterion (default: half of them, rounded up)")  # fmt: skip
    cr.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    cr.add_argument("--device", choices=DEVICES, default="auto", help="for local models")
    cr.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                    help=f"images worked on at once (default: {DEFAULT_CONCURRENCY})")  # fmt: skip
    cr.add_argument("--report", metavar="OUT.json", type=output_file, help="also write the report as JSON")
    cr.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    cr.set_defaults(handler=_cmd_caption_rubrics)
