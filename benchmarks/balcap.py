"""The balcap method's cost: judge calls per completion for its three reward columns, and judged responses per second
in process and through the reward server.

    python benchmarks/balcap.py [--seconds 5] [--concurrency 8] [--batch 64]

The judge is the scripted scene judge (:mod:`genrm.methods.balcap.scene_judge`), which answers at once: the rates are
the stack's own cost per response (HTTP, validation, prompts, reading the answer, the reward arithmetic), what a
served judge's latency adds on top of. The server runs in its own process pinned to one core, the load generator on
the other. Rows:

- judge calls per completion for the three columns of one TRL batch of ``--batch`` completions: through
  ``MethodReward.columns()`` (the columns share one scoring), against three separate reward functions (one scoring
  per column, what three independent TRL reward functions would cost);
- responses/s: ``score_instance`` in process over groups of G = 8, and ``/v1/score`` with one group of G = 8 per
  request and ``--concurrency`` requests in flight;
- the judge's answer size: output characters and tokens per answer (tokens of a byte-level BPE made here from the
  method's own prompt and answers, since no real tokenizer can be downloaded).

Targets: 1 judge call per completion for all three columns; at least 1,000 responses/s through ``/v1/score`` on one
core.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from benchmarks.claimdiff import caption, reference, scenes  # noqa: E402
from benchmarks.loopback import free_port, in_process_rate, rate, split_cores, start_server  # noqa: E402
from genrm.engine import Judge  # noqa: E402
from genrm.engine.scripted import ScriptedEngine  # noqa: E402
from genrm.methods import make_method, score_instance  # noqa: E402
from genrm.methods.balcap.models import BalCapInstance  # noqa: E402
from genrm.methods.balcap.scene_judge import scripted  # noqa: E402

G = 8
TARGET = 1_000.0


def instances(scene_map: dict[str, frozenset[str]], seed: int) -> list[BalCapInstance]:
    """One instance of G captions per scene."""
    rng = random.Random(seed)
    return [BalCapInstance(id=image, image=image, reference=reference(scene),
                           responses=[caption(scene, rng) for _ in range(G)])
            for image, scene in scene_map.items()]  # fmt: skip


def judge_calls(groups: list[BalCapInstance], scene_map: dict[str, frozenset[str]], batch: int) -> dict[str, float]:
    """Judge calls per completion for the three columns of one batch: shared scoring, and one scoring per column."""
    from policy_rl.method_reward import MethodReward
    from policy_rl.scorers import JudgeScorer

    rows = [(g, text) for g in groups for text in g.responses][:batch]
    column = [g.model_copy(update={"responses": []}).model_dump_json() for g, _ in rows]
    completions = [[{"role": "assistant", "content": text}] for _, text in rows]
    prompts = ["Describe this image in detail."] * len(rows)
    out = {}
    for name, shared in (("columns (shared scoring)", True), ("three separate reward functions", False)):
        engine = ScriptedEngine(functools.partial(scripted, scenes=scene_map))
        method = make_method("balcap")
        if shared:
            functions = MethodReward(method, JudgeScorer(Judge(engine), method)).columns()
            for function in functions:
                function(prompts, completions, genrm_instance=column)
        else:
            for _ in method.reward_columns:
                MethodReward(method, JudgeScorer(Judge(engine), method))(prompts, completions, genrm_instance=column)
        out[name] = len(engine.requests) / len(rows)
    return out


def answer_size(groups: list[BalCapInstance], scene_map: dict[str, frozenset[str]]) -> dict[str, float]:
    """Output characters and tokens per judge answer."""
    from genrm.training.tiny_model import build_tokenizer

    engine = ScriptedEngine(functools.partial(scripted, scenes=scene_map))
    method, judge = make_method("balcap"), Judge(engine)
    answers = []
    for group in groups:
        score_instance(method, group, judge)
    for request in engine.requests:
        answers.append(scripted(request, scene_map))
    tokenizer = build_tokenizer([engine.requests[0].prompt.system] + answers[: len(answers) // 2], vocab_size=2048)
    tokens = sum(len(tokenizer(a, add_special_tokens=False)["input_ids"]) for a in answers)
    return {"answers": len(answers), "chars": sum(map(len, answers)) / len(answers), "tokens": tokens / len(answers)}


def _serve(port: int, scene_seed: int, scene_count: int) -> None:
    import uvicorn

    from serving.app import create_app
    from serving.settings import ServerSettings

    script = functools.partial(scripted, scenes=scenes(scene_count, scene_seed))
    app = create_app(ServerSettings(method="balcap", port=port), Judge(ScriptedEngine(script)))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    parser.add_argument("--batch", type=int, default=64, help="completions of the TRL batch whose judge calls count")
    parser.add_argument("--scenes", type=int, default=24, help="synthetic scenes")
    parser.add_argument("--scene-seed", type=int, default=0)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.scene_seed, args.scenes)
        return
    scene_map = scenes(args.scenes, args.scene_seed)
    groups = instances(scene_map, 1)
    calls = judge_calls(groups, scene_map, args.batch)
    print(f"{'three reward columns of one batch':<46} {'judge calls / completion':>25}")
    for name, value in calls.items():
        print(f"{name:<46} {value:>25.2f}")
    judge = Judge(ScriptedEngine(functools.partial(scripted, scenes=scene_map)))
    rows = [
        ("in process (score_instance, G = 8)", in_process_rate(make_method("balcap"), groups, judge, args.seconds))
    ]
    server_core = split_cores()
    port = free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--scene-seed", str(args.scene_seed), "--scenes",
               str(args.scenes)]  # fmt: skip
    process, url = start_server(command, port, server_core, "balcap")
    try:
        bodies = [('{"groups": [' + g.model_dump_json() + "]}").encode() for g in groups]
        rate(url, "/v1/score", bodies, G, args.concurrency, 1.0)  # warm-up
        rows.append((f"/v1/score, G = {G}, {args.concurrency} in flight",
                     rate(url, "/v1/score", bodies, G, args.concurrency, args.seconds)))  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=30)
    print()
    print(f"{'path':<46} {'responses/s':>12}")
    for name, per_second in rows:
        print(f"{name:<46} {per_second:>12,.0f}")
    size = answer_size(groups, scene_map)
    print(f"\njudge answers: {size['answers']}, {size['chars']:.0f} characters and {size['tokens']:.0f} tokens each")
    shared = calls["columns (shared scoring)"]
    served = rows[1][1]
    verdict = "meets" if shared == 1.0 and served >= TARGET else "misses"
    print(f"\nsummary: {shared:.2f} judge calls per completion for three reward columns "
          f"(x{calls['three separate reward functions'] / shared:.0f} fewer than one per column), {served:,.0f} "
          f"responses/s through /v1/score on one core ({verdict} the targets)")  # fmt: skip


if __name__ == "__main__":
    main()
