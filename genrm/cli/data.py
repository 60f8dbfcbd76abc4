"""``genrm data ...`` and ``genrm eval``: judge-training data sets, and the reliability table of a judge.

genrm data synthetic -o datasets/judge_synth [--inputs 240] [--seed 0] [--test-fraction 0.15] [--held-out FAMILY ...]
genrm data sft datasets/judge_synth/train.jsonl -o runs/sft.jsonl [--exposure minimal]
genrm data rlvr datasets/judge_synth/train.jsonl -o runs/rlvr.jsonl
genrm data hard datasets/judge_synth/train.jsonl --answers ANSWERS.jsonl -o runs/hard.jsonl
genrm data rubrics TASKS.jsonl -o INSTANCES.jsonl --teacher MODEL@URL [--teacher ...] [--aggregator MODEL@URL]
genrm data labels INSTANCES.jsonl -o DIR --teacher MODEL@URL --teacher ... [--min-teachers N]
genrm eval datasets/judge_synth/test.jsonl [--judge SPEC | --backend rule|transformers|openai|sglang ...]
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
    EXPOSURES,
    SYNTHETIC_FAMILIES,
)
from genrm.cli.judging import (
    answer_format_option,
    argument_threshold_option,
    concurrency_option,
    grounding_option,
    input_folder,
    judge_backend_options,
    judge_from_args,
    read_model_lines,
)
from genrm.cli.lists import ListValues
from genrm.cli.numbers import positive_int
from genrm.cli.paths import input_file, output_dir, output_file
from genrm.engine.blocking import run_blocking


def _read(path: str) -> Any:
    from genrm.methods.rubric.judge_data import read_examples

    with open(path, encoding="utf-8") as source:
        return read_examples(source, source=path)


def _cmd_synthetic(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubric.synthetic import FAMILIES, held_out_split, synthetic_splits

    held_out = list(dict.fromkeys(args.held_out or []))
    problem = next((why for bad, why in (
        (args.inputs < 1, f"--inputs must be at least 1, got {args.inputs}"),
        (not 0.0 < args.test_fraction < 1.0, f"--test-fraction must be in (0, 1), got {args.test_fraction}"),
        (len(held_out) >= len(FAMILIES), "--held-out must leave at least one family to train on"),
        (args.held_out_inputs is not None and args.held_out_inputs < 1, "--held-out-inputs must be at least 1"),
        (args.held_out_inputs is not None and not held_out, "--held-out-inputs sizes the --held-out split; name its "
         "families"),
    ) if bad), None)  # fmt: skip
    if problem:
        print(f"genrm data synthetic: error: {problem}", file=sys.stderr)
        return 2
    train, test = synthetic_splits(args.inputs, args.seed, args.test_fraction, held_out, progress=not args.quiet)
    parts = {"train": train, "test": test}
    if held_out:
        count = args.held_out_inputs or max(len(held_out), round(args.inputs * args.test_fraction))
        parts["test_held_out"] = held_out_split(count, args.seed, held_out, progress=not args.quiet)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    written = {name: write_jsonl(part, str(out / f"{name}.jsonl")) for name, part in parts.items()}
    losing = sum(e.loses_credit for e in train + test)
    held = parts.get("test_held_out", [])
    held_losing = sum(e.loses_credit for e in held)
    extra = (f"; {written['test_held_out']} held-out examples of {', '.join(held_out)} in test_held_out.jsonl "
             f"({held_losing} losing credit, {len(held) - held_losing} without)" if held_out else "")  # fmt: skip
    print(f"wrote {written['train']} train and {written['test']} test examples to {out} "
          f"({losing} with a criterion losing credit, {len(train) + len(test) - losing} without){extra}")  # fmt: skip
    return 0


def _cmd_from_audit(args: argparse.Namespace) -> int:
    from genrm.jsonl import read_jsonl_lines, write_jsonl
    from genrm.methods.rubric.evaluation.audit_set import (
        NEGATIVE_CATEGORIES,
        category_counts,
        read_audit,
        select,
        training_examples,
    )

    try:
        audit = read_audit(read_jsonl_lines(args.audit))
        chosen = select(audit, args.categories or NEGATIVE_CATEGORIES, args.exclude or ())
        if args.not_in:
            shared = sorted({e.input_id for e in chosen} & {e.input_id for e in _read(args.not_in)})
            if shared:
                raise ValueError(f"{len(shared)} inputs of {args.audit} are in {args.not_in} (the first: "
                                 f"{shared[0]}): build the audit from the training split")  # fmt: skip
    except ValueError as exc:
        print(f"genrm data from-audit: error: {exc}", file=sys.stderr)
        return 2
    kept = training_examples(chosen)
    if not kept:
        print(f"genrm data from-audit: error: no abnormal response of {args.audit} is kept", file=sys.stderr)
        return 1
    count = write_jsonl(kept, args.output)
    counts = category_counts(chosen)
    shown = ", ".join(f"{counts[c]} {c}" for c in NEGATIVE_CATEGORIES if counts.get(c))
    print(f"wrote {count} negative examples to {args.output} ({shown})")
    return 0


def _cmd_hard(args: argparse.Namespace) -> int:
    from genrm.jsonl import read_models, write_jsonl
    from genrm.methods.rubric.evaluation.answers import AnswerLine, hard_examples

    try:
        examples = _read(args.input)
        with open(args.answers, encoding="utf-8") as source:
            answers = read_models(source, AnswerLine, source=args.answers)
        hard = hard_examples(examples, answers, args.answers, args.input)
    except ValueError as exc:
        print(f"genrm data hard: error: {exc}", file=sys.stderr)
        return 2
    unanswered = len(examples) - len(answers)
    note = f"; {unanswered} examples of {args.input} have no answer line and are not kept" if unanswered else ""
    if not hard:
        print(f"genrm data hard: error: the judge got all {len(answers)} answered examples right: none to write{note}",
              file=sys.stderr)  # fmt: skip
        return 1
    count = write_jsonl(hard, args.output)
    print(f"wrote {count} examples the judge got wrong (of {len(answers)} answered) to {args.output}{note}")
    return 0


def _cmd_records(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubric.judge_data import rlvr_record, sft_record

    build = sft_record if args.data_command == "sft" else rlvr_record
    examples = _read(args.input)
    count = write_jsonl((build(example, args.exposure, args.answer_format) for example in examples), args.output)
    print(f"wrote {count} {args.data_command} records to {args.output}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from genrm.methods.rubric.evaluation.reliability import evaluate
    from genrm.methods.rubric.readers import rubric_reader

    examples = _read(args.data)
    if args.limit:
        examples = examples[: args.limit]
    try:
        judge = judge_from_args(args, args.data)
    except (OSError, ValueError) as exc:  # no checkpoint at that path, a contradicting option
        print(f"genrm eval: cannot make the judge: {exc}", file=sys.stderr)
        return 2
    if args.exposure == "vlm" and not judge.sees_images:
        print(f"genrm eval: --exposure vlm shows the judge the image, but {judge.model} is a text-only model",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        report, checks = evaluate(rubric_reader(judge), examples, args.exposure, args.argument_threshold,
                                  progress=not args.quiet, answer_format=args.answer_format,
                                  concurrency=args.concurrency, grounding=args.grounding)  # fmt: skip
    finally:
        run_blocking(judge.aclose())
    print(report.markdown())
    if args.json:
        Path(args.json).write_text(report.to_json() + "\n", encoding="utf-8")
    if args.answers:
        lines = [check.record(example).to_json() for check, example in zip(checks, examples, strict=True)]
        Path(args.answers).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return 0


def _teachers(args: argparse.Namespace) -> list[Any]:
    from genrm.methods.rubric.teachers import teacher_engine

    folder = input_folder(args.input)
    return [teacher_engine(spec, args.api_key_env, device=args.device, image_dir=folder) for spec in args.teacher]


def _run_or_exit(coroutine: Any) -> Any:
    from genrm.engine import BackendUnavailable

    try:
        return asyncio.run(coroutine)
    except BackendUnavailable as exc:
        print(f"genrm data: a teacher cannot be reached, stopping: {exc}", file=sys.stderr)
        return None


async def _close(teachers: list[Any]) -> None:
    for teacher in teachers:
        await teacher.aclose()


def _cmd_rubrics(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubric.teacher_rubrics import RubricTask, build_rubrics
    from genrm.methods.rubric.teachers import teacher_engine, teacher_reader

    tasks = read_model_lines(args.input, RubricTask)
    if tasks is None:
        return 2
    teachers = _teachers(args)
    aggregator = (
        teacher_engine(args.aggregator, args.api_key_env, device=args.device, image_dir=input_folder(args.input))
        if args.aggregator
        else teachers[0]
    )

    async def run() -> Any:
        try:
            checker = teacher_reader(aggregator) if args.dual_check == "aggregator" else None
            return await build_rubrics(
                tasks, teachers, aggregator, checker, repair_rounds=args.repair_rounds,
                concurrency=args.concurrency, progress=not args.quiet,
            )  # fmt: skip
        finally:
            await _close(teachers + ([aggregator] if args.aggregator else []))

    report = _run_or_exit(run())
    if report is None:
        return 1
    by_id = {task.id: task for task in tasks}
    kept = [by_id[o.task_id].instance(o.rubric) for o in report.outcomes if o.rubric is not None]
    print(report.markdown())
    if args.report:
        outcomes = [{"id": o.task_id, "kept": o.rubric is not None, "proposals": o.proposals, "merged": o.merged,
                     "dual_check": o.dual_check, "dropped": o.dropped, "failures": o.failures}
                    for o in report.outcomes]  # fmt: skip
        Path(args.report).write_text(json.dumps({"counts": report.counts(), "tasks": outcomes}, indent=1) + "\n")
    if tasks and not kept:  # a run that made nothing did not do its job, whatever the reason
        print(f"genrm data rubrics: no task got a rubric ({len(tasks)} tried; the table above says why); nothing "
              f"written to {args.output}", file=sys.stderr)  # fmt: skip
        return 1
    write_jsonl(kept, args.output)
    print(f"wrote {len(kept)} instances to {args.output}")
    return 0


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
    teachers = _teachers(args)

    async def run() -> Any:
        try:
            return await training.label(instances, teachers, args.min_teachers, args.concurrency, not args.quiet)
        finally:
            await _close(teachers)

    result = _run_or_exit(run())
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


def _cmd_caption_rubrics(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubicap.caption_rubrics import ImageItem, write_caption_rubrics
    from genrm.methods.rubric.teachers import teacher_engine

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
            await _close(engines)

    try:
        result = _run_or_exit(run())
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


def _teacher_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--teacher", action="append", required=True, metavar="SPEC",
                        help="a teacher: MODEL@URL[,URL...] (OpenAI-compatible, e.g. SGLang) or transformers:PATH; "
                        "repeat for several")  # fmt: skip
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the teachers' API key")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="for local teachers")
    parser.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"inputs worked on at once (default: {DEFAULT_CONCURRENCY})")  # fmt: skip
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def register(sub: Any) -> None:
    """Add ``data`` (with its own subcommands) and ``eval`` to the ``genrm`` command."""
    data = sub.add_parser("data", help="judge-training data: synthetic set, SFT and RLVR records")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")

    synthetic = data_sub.add_parser(
        "synthetic", help="write the synthetic judge-training set (no teacher needed)",
        description="Generate inputs of six task families with rubrics over all six verifiers and fuzzy criteria, "
        "responses with known labels, balance them and split them by input into train.jsonl and test.jsonl. "
        "--held-out leaves whole families out of both and writes them as test_held_out.jsonl, a harder test.",
    )  # fmt: skip
    synthetic.add_argument("-o", "--output", required=True, metavar="DIR", type=output_dir)
    synthetic.add_argument("--inputs", type=int, default=240, help="inputs to generate (default: 240)")
    synthetic.add_argument("--seed", type=int, default=0)
    synthetic.add_argument("--test-fraction", type=float, default=0.15, help="share of inputs held out")
    synthetic.add_argument("--held-out", action=ListValues, choices=SYNTHETIC_FAMILIES, metavar="FAMILY",
                           help="families kept out of train and test, written as test_held_out.jsonl")  # fmt: skip
    synthetic.add_argument(
        "--held-out-inputs",
        type=int,
        default=None,
        help="inputs of the held-out split (default: as many as the test split's)",
    )
    synthetic.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    synthetic.set_defaults(handler=_cmd_synthetic)

    from_audit = data_sub.add_parser(
        "from-audit", help="negative judge examples from an audit set: its abnormal responses and master keys",
        description="Write the abnormal responses and master-key responses of an audit set (genrm audit build) as "
        "judge examples, each labelled with its annotation (the credit it deserves), to add to a training set. "
        "Build the audit from the training split, and hold out the attacks and keys the trained judge is measured "
        "on (--exclude).",
    )  # fmt: skip
    from_audit.add_argument("audit", metavar="AUDIT.jsonl", type=input_file)
    from_audit.add_argument("-o", "--output", required=True, metavar="EXAMPLES.jsonl", type=output_file)
    from_audit.add_argument("--categories", action=ListValues, metavar="CATEGORY",
                            help="categories kept (default: every abnormal one and master_key)")  # fmt: skip
    from_audit.add_argument(
        "--exclude",
        action=ListValues,
        metavar="NAME",
        help="attacks and master keys left out (by name), to measure the judge on them",
    )
    from_audit.add_argument(
        "--not-in",
        metavar="TEST.jsonl",
        type=input_file,
        help="refuse when an input of the audit is in this file (a test split)",
    )
    from_audit.set_defaults(handler=_cmd_from_audit)

    hard = data_sub.add_parser(
        "hard", help="the examples a judge got wrong (from genrm eval --answers), to train it on with RLVR",
        description="Keep the examples whose answer line (genrm eval EXAMPLES.jsonl --answers ANSWERS.jsonl) is not "
        "right at the sample level. RLVR learns nothing from a prompt the judge already gets right: all its samples "
        "score alike, so their advantages are 0. Examples without an answer line (eval --limit) are not kept.",
    )  # fmt: skip
    hard.add_argument("input", metavar="EXAMPLES.jsonl", type=input_file)
    hard.add_argument("--answers", required=True, metavar="ANSWERS.jsonl", type=input_file,
                      help="genrm eval's --answers file for the same examples")  # fmt: skip
    hard.add_argument("-o", "--output", required=True, metavar="EXAMPLES.jsonl", type=output_file)
    hard.set_defaults(handler=_cmd_hard)

    for name, what in (("sft", "prompt-completion records for TRL's SFTTrainer"),
                       ("rlvr", "prompt records with the judge_label column for TRL's GRPOTrainer")):  # fmt: skip
        records = data_sub.add_parser(name, help=what, description=f"Turn judge examples into {what}.")
        records.add_argument("input", metavar="EXAMPLES.jsonl", type=input_file)
        records.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", type=output_file)
        records.add_argument("--exposure", choices=EXPOSURES, default="minimal")
        answer_format_option(records)
        records.set_defaults(handler=_cmd_records)

    rubrics = data_sub.add_parser(
        "rubrics", help="rubrics written by teachers, merged, and dual-checked against the reference answer",
        description="Each teacher writes a rubric per task (JSONL: id, prompt, image, reference_answer, task_type, "
        "responses); the aggregator merges valid proposals keeping what most agree on; rubrics whose essential "
        "verifiable criteria fail on the reference answer are repaired by the aggregator or dropped.",
    )  # fmt: skip
    rubrics.add_argument("input", metavar="TASKS.jsonl", type=input_file)
    rubrics.add_argument("-o", "--output", required=True, metavar="INSTANCES.jsonl", type=output_file)
    _teacher_options(rubrics)
    rubrics.add_argument("--aggregator", metavar="SPEC", help="the merging teacher (default: the first teacher)")
    rubrics.add_argument(
        "--dual-check",
        choices=["rule", "aggregator"],
        default="rule",
        help="who reads the reference answer: rule extraction (default) or the aggregator as judge",
    )
    rubrics.add_argument("--repair-rounds", type=int, default=1, help="repair attempts after a failed dual check")
    rubrics.add_argument("--report", metavar="OUT.json", type=output_file, help="write every task's outcome as JSON")
    rubrics.set_defaults(handler=_cmd_rubrics)

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
    _teacher_options(labels)
    labels.add_argument("--min-teachers", type=int, help="usable answers a label needs (default: a majority)")
    labels.add_argument("--test-fraction", type=float, default=0.15, help="share of inputs held out")
    labels.add_argument("--no-balance", action="store_true", help="keep every labelled example")
    labels.add_argument("--seed", type=int, default=0)
    labels.set_defaults(handler=_cmd_labels)

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

    evaluation = sub.add_parser(
        "eval", help="the reliability table of a judge on labelled examples",
        description="Judge every labelled example and print the reliability table: schema, criterion slots, "
        "execution, arguments (judged by the verifier), credit, criterion-level and sample-level accuracy.",
    )  # fmt: skip
    evaluation.add_argument("data", metavar="EXAMPLES.jsonl", type=input_file, help="labelled examples")
    judge_backend_options(evaluation)
    evaluation.add_argument("--exposure", choices=EXPOSURES, default="minimal")
    answer_format_option(evaluation)
    grounding_option(evaluation)
    argument_threshold_option(evaluation)
    evaluation.add_argument("--limit", type=int, help="only the first N examples")
    concurrency_option(evaluation)
    evaluation.add_argument("--json", metavar="OUT", type=output_file, help="also write the table as JSON")
    evaluation.add_argument("--answers", metavar="OUT.jsonl", type=output_file,
                            help="also write what was right in each answer, one line per example")  # fmt: skip
    evaluation.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    evaluation.set_defaults(handler=_cmd_eval)
