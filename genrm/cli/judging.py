"""The options every command that asks a judge shares (``--judge`` or ``--backend`` and what it needs, the method,
the answer format, grounding, concurrency) and running one judged command: the judge opened from them, closed after,
and what failed said on one line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genrm.choices import DEFAULT_CONCURRENCY, DEFAULT_SCORING_FORMAT, DEVICES, GROUNDINGS, SCORING_FORMATS
from genrm.cli.numbers import positive_int, score_threshold
from genrm.engine.backends import DEFAULT_BACKEND, backend_names, spec_forms
from genrm.engine.images import DEFAULT_IMAGE_BUDGET
from genrm.engine.spec import EngineOptions

#: The engine's own defaults, which the judge options take.
_ENGINE = EngineOptions()

if TYPE_CHECKING:
    from genrm.engine import Judge, JudgeSpec


def answer_format_option(parser: argparse.ArgumentParser, default: str | None = DEFAULT_SCORING_FORMAT) -> None:
    """Add ``--answer-format`` (the version of a rubric judge's answer format it is asked for and trained on)."""
    parser.add_argument("--answer-format", choices=SCORING_FORMATS, default=default,
                        help="the rubric judge's format: compact (items by position), rlr3 (each copies its criterion "
                        "first; for a judge trained on it) or brief (compact under a short system prompt, for small "
                        f"judges trained from scratch); default: {DEFAULT_SCORING_FORMAT}")  # fmt: skip


def grounding_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--grounding`` (what of a model judge's answers is checked against the response)."""
    parser.add_argument("--grounding", choices=GROUNDINGS, default="on",
                        help="on (default): a model judge's values count only where the response states them, and "
                        "under the evidence format a fuzzy credit only with a quote of it; values: the values alone; "
                        "off: nothing is checked, which measures what grounding changes (docs/rubric.md)")  # fmt: skip


def argument_threshold_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--argument-threshold`` (the verifier score, in (0, 1], at which an extracted value counts as right)."""
    parser.add_argument("--argument-threshold", type=score_threshold, default=0.9,
                        help="verifier score, in (0, 1], at or above which an extracted value counts as right "
                        "(default: 0.9)")  # fmt: skip


def judge_spec_from_args(args: argparse.Namespace) -> JudgeSpec:
    """The judge the options of :func:`judge_backend_options` name: ``--judge SPEC``, or the spelled-out
    ``--backend``/``--model``/``--url``, its checkpoint found (:func:`checked_checkpoint`). Raises ValueError saying
    what is missing, contradicts or cannot be found."""
    from genrm.engine import JudgeSpec

    if args.judge is not None:
        if args.backend is not None or args.model or args.url:
            raise ValueError("--judge names the judge already; drop --backend, --model and --url")
        if args.judge.startswith(("http://", "https://")) and "@" not in args.judge:
            # genrm rl takes a reward server's URL; here the judge is run from this command
            raise ValueError(f"--judge {args.judge!r:.100} is a bare URL: this command runs the judge itself, so give "
                             "the judge's model and endpoint, sglang:MODEL@URL/v1 or openai:MODEL@URL/v1 (a reward "
                             "server's URL is what genrm rl and the policy's reward functions take)")  # fmt: skip
        return checked_checkpoint(JudgeSpec.parse(args.judge))
    return checked_checkpoint(JudgeSpec.spelled_out(
        args.backend or DEFAULT_BACKEND, args.model, args.url or (),
        "--model (a checkpoint path, or the served model's name)", "--url BASE_URL (ending in /v1)",
        "--backend",
    ))  # fmt: skip


def checked_checkpoint(spec: JudgeSpec) -> JudgeSpec:
    """``spec``, once the checkpoint of a judge run in process is found: a folder here, or a hub model cached or
    held by the hub (asked with a short timeout). Before anything is loaded, so that a mistyped path is one line in
    seconds. Raises ValueError saying what was looked for, here and on the hub."""
    from genrm.engine.backends import backend
    from genrm.engine.checkpoints import reachable_checkpoint

    if backend(spec.backend).model == "checkpoint" and spec.model:
        try:
            reachable_checkpoint(spec.model)
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
    return spec


def judge_from_args(
    args: argparse.Namespace, data_file: str | None = None, parse_retries: int = 0, method: Any = None
) -> Judge:
    """The judge the options of :func:`judge_backend_options` name (checked against ``method`` when given, which
    makes ``scripted`` the method's scripted judge); ValueError says what is missing or cannot judge.

    ``parse_retries``: how often a model judge is asked again for an answer it could not read (0 for evaluation, so
    the tables measure a judge's first answers). A judge run in process reads image paths relative to
    ``data_file``'s folder.
    """
    import os

    from genrm.engine import EngineOptions, SamplingSettings, make_judge
    from genrm.methods import method_judge

    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    options = EngineOptions(
        SamplingSettings(max_tokens=args.max_tokens), constrained=not args.unconstrained, api_key=key,
        device=args.device, image_dir=input_folder(data_file), image_budget=args.judge_image_pixels or None,
        max_batch_size=args.max_batch_size,
    )  # fmt: skip
    spec = judge_spec_from_args(args)
    if method is not None:
        return method_judge(method, spec, options, parse_retries)
    return make_judge(spec, options, parse_retries)


def input_folder(path: str | None) -> str | None:
    """The folder of an input file, which its image paths are read from (None for standard input)."""
    return str(Path(path).parent) if path and path != "-" else None


def run_judged(
    command: str, args: argparse.Namespace, data_file: str, work: Any, method: Any = None
) -> tuple[Any, int]:
    """Open the judge the options name (checked against ``method`` when given), run ``work(judge)``, close the judge.

    Returns ``(result, 0)``, or ``(None, code)`` after saying why on standard error: 2 for a setting or an input that
    is refused (a ValueError), 1 when the judge cannot be reached at all. ``command`` names the command in messages.
    """
    from genrm.engine import BackendUnavailable, run_blocking

    try:
        judge = judge_from_args(args, data_file, method=method)
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return None, 2
    try:
        return work(judge), 0
    except ValueError as exc:
        print(f"genrm {command}: error: {exc}", file=sys.stderr)
        return None, 2
    except BackendUnavailable as exc:
        print(f"genrm {command}: the judge cannot be reached, stopping: {exc}", file=sys.stderr)
        return None, 1
    finally:
        run_blocking(judge.aclose())


def nothing_judged(command: str, judged: int, asked: int, reason: str | None) -> int:
    """The exit code of an evaluation after its report is out: 0 when at least one of ``asked`` judgements was read,
    else 1, having said so on standard error (with the most frequent ``reason`` a judgement failed)."""
    if judged > 0:
        return 0
    why = f"; the most frequent reason: {reason}" if reason else ""
    print(f"genrm {command}: nothing could be judged ({asked} asked, 0 read){why}", file=sys.stderr)
    return 1


def write_report(directory: str, stem: str, markdown: str, json_text: str) -> None:
    """Write ``STEM.md`` and ``STEM.json`` into ``directory`` (made if missing) and say so."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(markdown + "\n", encoding="utf-8")
    (out / f"{stem}.json").write_text(json_text + "\n", encoding="utf-8")
    print(f"\nwrote {out / (stem + '.md')} and {out / (stem + '.json')}")


def read_model_lines(path: str, model: Any, command: str = "data") -> list[Any] | None:
    """Every line of a JSONL file as ``model``; None (after saying which line and why, as ``genrm COMMAND``) when one
    is invalid."""
    from genrm.jsonl import read_models

    try:
        with open(path, encoding="utf-8") as source:
            return read_models(source, model, path)
    except ValueError as exc:
        print(f"genrm {command}: {exc}", file=sys.stderr)
        return None


def _pixels(text: str) -> int:
    from genrm.engine.images import image_budget

    try:
        return image_budget(text) or 0
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("must be ")) from None


def concurrency_option(parser: argparse.ArgumentParser) -> None:
    """``--concurrency N``: the example groups judged at once (their requests share the judge's batches)."""
    parser.add_argument("--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"inputs judged at once (default: {DEFAULT_CONCURRENCY})")  # fmt: skip


def judge_backend_options(parser: argparse.ArgumentParser) -> None:
    """The options that name a judge: ``--judge SPEC``, or ``--backend`` and what it needs (read by
    :func:`judge_from_args`)."""
    parser.add_argument(
        "--judge", metavar="SPEC",
        help=f"the judge: {spec_forms()} (default: rule); or spell it out with --backend, --model, --url",
    )  # fmt: skip
    checkpoint, served = ", ".join(backend_names("checkpoint")), ", ".join(backend_names("served"))
    parser.add_argument("--backend", choices=backend_names(), help="the judge backend (default: rule)")
    parser.add_argument("--model", help=f"checkpoint path ({checkpoint}) or served model name ({served})")
    parser.add_argument("--url", action="append", metavar="BASE_URL",
                        help=f"OpenAI-compatible base URL ending in /v1 ({served}); repeat for replicas")  # fmt: skip
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument("--device", choices=DEVICES, default="auto")
    parser.add_argument("--max-tokens", type=positive_int, default=_ENGINE.sampling.max_tokens,
                        help="output token budget per answer (default: %(default)s)")  # fmt: skip
    parser.add_argument("--unconstrained", action="store_true", help="no grammar-constrained decoding")
    parser.add_argument("--max-batch-size", type=positive_int, default=_ENGINE.max_batch_size, metavar="N",
                        help="most prompts decoded together by a judge in process (transformers; default: "
                        "%(default)s; raise it on a GPU)")  # fmt: skip
    parser.add_argument(
        "--judge-image-pixels", type=_pixels, default=DEFAULT_IMAGE_BUDGET, metavar="PIXELS",
        help=f"most pixels of an image the judge is shown: larger ones are scaled down to it (default: "
        f"{DEFAULT_IMAGE_BUDGET}, 1280 tokens of 28 x 28 pixels; 0: every image at its own size)",
    )  # fmt: skip
