"""The rubric method's own commands (a ``genrm.commands`` plug-in): its judge-training data, the reliability table
of its judge, and the audit sets of labelled examples.

genrm data synthetic -o datasets/judge_synth [--inputs 240] [--seed 0] [--test-fraction 0.15] [--held-out FAMILY ...]
genrm data sft datasets/judge_synth/train.jsonl -o runs/sft.jsonl [--exposure minimal]
genrm data rlvr datasets/judge_synth/train.jsonl -o runs/rlvr.jsonl
genrm data hard datasets/judge_synth/train.jsonl --answers ANSWERS.jsonl -o runs/hard.jsonl
genrm data from-audit audit.jsonl -o runs/negatives.jsonl [--exclude NAME ...] [--not-in TEST.jsonl]
genrm data rubrics TASKS.jsonl -o INSTANCES.jsonl --teacher MODEL@URL [--teacher ...] [--aggregator MODEL@URL]
genrm eval datasets/judge_synth/test.jsonl [--judge SPEC | --backend rule|transformers|openai|sglang ...]
genrm audit build datasets/judge_synth/test.jsonl -o audit.jsonl [--seed 0] [--per-category N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from genrm.choices import DEFAULT_CONCURRENCY, DEVICES, EXPOSURES, SYNTHETIC_FAMILIES
from genrm.cli.data import close_all, run_or_exit, teacher_options, teachers_of
from genrm.cli.groups import subcommands
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


def _cmd_rubrics(args: argparse.Namespace) -> int:
    from genrm.engine.teachers import teacher_engine
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubric.teacher_rubrics import RubricTask, build_rubrics
    from genrm.methods.rubric.teachers import teacher_reader

    tasks = read_model_lines(args.input, RubricTask)
    if tasks is None:
        return 2
    teachers = teachers_of(args)
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
            await close_all(teachers + ([aggregator] if args.aggregator else []))

    report = run_or_exit(run())
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


def _cmd_build(args: argparse.Namespace) -> int:
    from genrm.jsonl import write_jsonl
    from genrm.methods.rubric.evaluation.audit_run import read_audit_file
    from genrm.methods.rubric.evaluation.audit_set import ABNORMAL, category_counts, regular_examples

    examples = []
    for path in args.input:
        try:
            examples += regular_examples(read_audit_file(path))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if args.master_key_inputs < 0:
        print("genrm audit build: error: --master-key-inputs must be 0 or more", file=sys.stderr)
        return 2
    if args.generator:
        from genrm.methods.rubric.evaluation.audit_constructors import (
            build_context,
            master_key_examples,
            regular_bases,
        )

        built = _build_with_models(args, examples)
        if built is None:
            return 1
        audit, report = built
        if args.master_key_inputs:  # the keys need no model: built as the deterministic set builds them
            bases = regular_bases(examples)[1]
            audit += master_key_examples(bases, build_context(bases), args.seed, args.master_key_inputs, report)
    else:
        from genrm.methods.rubric.evaluation.audit_constructors import build_audit_set

        audit, report = build_audit_set(examples, args.seed, args.per_category, args.master_key_inputs)
    if not any(e.category in ABNORMAL for e in audit):
        print("genrm audit build: no abnormal response could be built in every category; see the report below",
              file=sys.stderr)  # fmt: skip
        print(report.markdown(), file=sys.stderr)
        return 1
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(audit, args.output)
    print(report.markdown())
    print(f"\nwrote {len(audit)} examples to {args.output}: {json.dumps(category_counts(audit))}")
    if args.report:
        summary = {
            "inputs": report.inputs,
            "regular": report.regular,
            "built": dict(report.built),
            "attacks": dict(report.attacks),
            "master_keys": dict(report.master_keys),
            "skipped": dict(report.skipped),
            "trimmed": report.trimmed,
        }
        Path(args.report).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


def _build_with_models(args: argparse.Namespace, examples: list) -> Any:
    from genrm.engine import BackendUnavailable
    from genrm.engine.teachers import teacher_engine
    from genrm.methods.rubric.evaluation.audit_llm import build_llm_abnormal

    generator = teacher_engine(args.generator, args.api_key_env, device=args.device)
    checkers = [teacher_engine(spec, args.api_key_env, device=args.device) for spec in args.checker or []]

    async def run() -> Any:
        try:
            return await build_llm_abnormal(examples, generator, checkers, args.seed, args.per_category,
                                            args.concurrency)  # fmt: skip
        finally:
            for model in (generator, *checkers):
                await model.aclose()

    try:
        return asyncio.run(run())
    except BackendUnavailable as exc:
        print(f"genrm audit build: a model cannot be reached, stopping: {exc}", file=sys.stderr)
        return None


def register(sub: Any) -> None:
    """Add the rubric method's commands to the ``genrm`` command: ``data synthetic|from-audit|hard|sft|rlvr|rubrics``,
    ``eval`` and ``audit build``."""
    data_sub = subcommands(sub, "data")

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
    teacher_options(rubrics)
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

    audit_sub = subcommands(sub, "audit")

    build = audit_sub.add_parser(
        "build", help="an audit set: regular responses and annotated abnormal ones, balanced by category",
        description="From labelled test examples (genrm.methods.rubric.judge_data.JudgeExample JSONL), build abnormal "
        "responses of four categories (no final answer, irrelevant, wrong but plausible, adversarial), at most one "
        "per input and as many per category, each with per-criterion annotations. Deterministic constructors by "
        "default; with --generator a model rewrites responses and --checker models review them.",
    )  # fmt: skip
    build.add_argument("input", nargs="+", metavar="EXAMPLES.jsonl", type=input_file)
    build.add_argument("-o", "--output", required=True, metavar="AUDIT.jsonl", type=output_file)
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--per-category", type=int, metavar="N", help="at most N abnormal responses per category")
    build.add_argument("--report", metavar="OUT.json", type=output_file, help="also write the build report as JSON")
    build.add_argument("--generator", metavar="SPEC", help="model constructor: MODEL@URL or transformers:PATH")
    build.add_argument("--checker", action="append", metavar="SPEC", help="quality-control model; repeat for several")
    build.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the models' API key")
    build.add_argument("--device", choices=DEVICES, default="auto", help="for local models")
    build.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                       help=f"candidates generated at once (default: {DEFAULT_CONCURRENCY})")  # fmt: skip
    build.add_argument("--master-key-inputs", type=int, default=2, metavar="N",
                       help="inputs each master key is tried on, alone and around a wrong response (default: 2; 0 "
                       "leaves them out)")  # fmt: skip
    build.set_defaults(handler=_cmd_build)

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
