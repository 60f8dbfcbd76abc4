"""The in-process judge alone (no HTTP, no verifiers): one group at a time against 8 groups in flight, for the
continuous decode loop and for ``model.generate`` batch by batch.

    python benchmarks/local_judge.py [--model PATH] [--max-tokens 128] [--groups 8] [--rounds 2] [--all-cores]

Groups of G = 8 scoring prompts (the shipped example set's first ``--groups`` instances, each group's responses
repeated to 8, the question made new for every pass as in training) with their rubric's schema, greedy decoding,
XGrammar-constrained (and one unconstrained pass). The judge is the untrained tiny judge of ``genrm tiny-model``
unless ``--model`` names a checkpoint; it writes until the token budget, so every answer has ``--max-tokens`` tokens
and the figures measure decoding, not a judge's answers.
Pinned to one core (one torch thread) by default. Medians of ``--rounds``, the two columns' passes taken in turn;
ratios are within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.engine.local import LocalEngine  # noqa: E402
from genrm.engine.types import ChatRequest, SamplingSettings  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.rubric.answer_schema import scoring_json_schema  # noqa: E402
from genrm.methods.rubric.models import Instance  # noqa: E402
from genrm.methods.rubric.planning import plan_rubric  # noqa: E402
from genrm.methods.rubric.prompts import build_group_prompts  # noqa: E402

G = 8
EXAMPLES = _HERE.parent / "datasets" / "examples" / "reward_core.jsonl"


_passes = itertools.count()


def _groups(count: int, constrained: bool) -> list[list[ChatRequest]]:
    # Each pass's questions are new (a pass number leads them), as in training, where every group is a new question:
    # the judge's kept prefixes then help only with what is truly shared, the system message.
    lines = read_jsonl_lines(EXAMPLES)[:count]
    groups, tag = [], next(_passes)
    for instance in (Instance.model_validate_json(line) for line in lines):
        plans = plan_rubric(instance.rubric, instance.task_type)
        schema = scoring_json_schema(plans) if constrained else None
        question = f"(pass {tag}) {instance.prompt}"
        prompts = build_group_prompts(question, plans, (list(instance.responses) * G)[:G])
        groups.append([ChatRequest(prompt, schema, "judge_output") for prompt in prompts])
    return groups


def _rate(engine: LocalEngine, groups: list[list[ChatRequest]], together: bool) -> tuple[float, int]:
    """Responses per second over the groups, one at a time or all in flight, and the tokens written."""

    async def run() -> list:
        if together:
            return await asyncio.gather(*(engine.complete(group) for group in groups))
        return [await engine.complete(group) for group in groups]

    start = time.perf_counter()
    replies = asyncio.run(run())
    elapsed = time.perf_counter() - start
    assert all(reply.error is None for group in replies for reply in group)
    return sum(map(len, groups)) / elapsed, sum(reply.completion_tokens for group in replies for reply in group)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="judge checkpoint (default: the untrained tiny judge, made here)")
    parser.add_argument("--max-tokens", type=int, default=128, help="the token budget (default: 128)")
    parser.add_argument("--groups", type=int, default=8, help="groups in flight together (default: 8)")
    parser.add_argument("--rounds", type=int, default=2, help="passes per figure; the median is printed (2)")
    parser.add_argument("--all-cores", action="store_true", help="do not pin to one core")
    args = parser.parse_args()
    import torch

    from genrm.engine.generation import LocalGenerator

    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if model is None:
            from genrm.training.tiny_model import save_tiny_judge

            model = str(save_tiny_judge(Path(scratch) / "tiny-judge"))
        print(f"{args.groups} groups of G = {G}, greedy, budget {args.max_tokens} tokens, "
              f"{'all cores' if args.all_cores else 'one core'}; responses/s (median of {args.rounds})")  # fmt: skip
        print(f"{'decoding':<22} {'schema':<13} {'one group at a time':>20} {f'{args.groups} in flight':>12} "
              f"{'ratio':>6}")  # fmt: skip
        figures = {}
        for constrained in (True, False):
            for continuous in (True, False):
                if not constrained and not continuous:
                    continue
                sampling = SamplingSettings(max_tokens=args.max_tokens)
                generator = LocalGenerator.from_pretrained(model, device="cpu", sampling=sampling,
                                                           constrained=constrained, continuous=continuous)  # fmt: skip
                engine = LocalEngine(generator, max_batch_size=G * args.groups)
                _rate(engine, _groups(1, constrained), False)  # warm-up: grammars, the system message's cache
                # the two columns' passes in turn, so that a shared machine's drift weighs on both alike
                passes = [
                    (
                        _rate(engine, _groups(args.groups, constrained), False)[0],
                        _rate(engine, _groups(args.groups, constrained), True)[0],
                    )
                    for _ in range(args.rounds)
                ]
                one = statistics.median(alone for alone, _ in passes)
                many = statistics.median(together for _, together in passes)
                asyncio.run(engine.aclose())
                label = "continuous loop" if continuous else "model.generate"
                schema = "XGrammar" if constrained else "free"
                figures[(label, schema)] = (one, many)
                print(f"{label:<22} {schema:<13} {one:>20.2f} {many:>12.2f} {many / one:>6.2f}")
    loop_one, loop_many = figures[("continuous loop", "XGrammar")]
    generate_one, generate_many = figures[("model.generate", "XGrammar")]
    print(f"\nsummary: {args.groups} groups in flight {loop_many:.2f} responses/s against {loop_one:.2f} one at a "
          f"time with the continuous loop (x{loop_many / loop_one:.2f}; target x3 on CPU: "
          f"{'met' if loop_many >= 3 * loop_one else 'NOT met'}), model.generate x{generate_many / generate_one:.2f}; "
          f"loop / generate in flight x{loop_many / generate_many:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
