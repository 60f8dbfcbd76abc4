"""The rubicap method's cost in its two prompt layouts: judge calls, prompt and output tokens per rollout, and how
often the two layouts agree on a verdict.

    python benchmarks/rubicap.py [--scenes 24] [--seconds 3]

The judge is the scripted rubric judge (:mod:`genrm.methods.rubicap.scene_judge`) over synthetic scenes: G = 8
captions per scene (facts kept, dropped, hedged, made up; seeded) and a rubric of one criterion per fact plus one
against a made-up object, weights 1-3. Tokens are those of a byte-level BPE made here from the method's own prompts
and answers (no real tokenizer can be downloaded): ratios between the layouts are what carries over. "New prompt
tokens" are what a prefix cache cannot reuse: each request's tokens after the longest prefix it shares with an earlier
request of the same group. Agreement is 1.0 by construction with a scripted judge; with a served judge it measures
whether judging all criteria at once changes verdicts (run the same layouts with ``--judge``).
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from benchmarks.claimdiff import caption, scenes  # noqa: E402
from benchmarks.loopback import in_process_rate  # noqa: E402
from genrm.engine import Judge  # noqa: E402
from genrm.engine.scripted import ScriptedEngine  # noqa: E402
from genrm.methods import make_method, score_instance  # noqa: E402
from genrm.methods.rubicap.models import CaptionCriterion, RubiCapInstance  # noqa: E402
from genrm.methods.rubicap.scene_judge import scripted  # noqa: E402

G = 8
LAYOUTS = ("per_criterion", "all_criteria")


def instances(scene_map: dict[str, frozenset[str]], seed: int) -> list[RubiCapInstance]:
    """One instance of G captions per scene, with a rubric of its facts and one made-up object."""
    rng = random.Random(seed)
    out = []
    for image, scene in scene_map.items():
        rubric = [CaptionCriterion(criterion=f"States {fact}", evaluation_rule=f"Pass if the caption states {fact}.",
                                   weight=rng.randint(1, 3)) for fact in sorted(scene)]  # fmt: skip
        rubric.append(CaptionCriterion(criterion="No boat", evaluation_rule="Pass if the caption does not state a "
                                       "blue boat.", weight=3))  # fmt: skip
        out.append(RubiCapInstance(id=image, image=image, rubric=rubric,
                                   responses=[caption(scene, rng) for _ in range(G)]))  # fmt: skip
    return out


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def measure(groups: list[RubiCapInstance], scene_map: dict[str, frozenset[str]], layout: str, seconds: float
            ) -> dict[str, float]:  # fmt: skip
    """Calls, prompt tokens (all and new), output tokens per rollout, responses/s and the verdicts of one layout."""
    from genrm.training.tiny_model import build_tokenizer

    method = make_method("rubicap", options={"layout": layout})
    verdicts, requests_per_group = [], []
    for group in groups:
        engine = ScriptedEngine(functools.partial(scripted, scenes=scene_map))
        result = score_instance(method, group, Judge(engine))
        verdicts += [s for record in result.records for s in record.satisfied]
        requests_per_group.append(engine.requests)
    flat = [r for rs in requests_per_group for r in rs]
    answers = [scripted(r, scenes=scene_map) for r in flat]
    tokenizer = build_tokenizer([flat[0].prompt.system, flat[-1].prompt.system, *(r.prompt.user for r in flat[:200]),
                                 *answers[:200]], vocab_size=2048)  # fmt: skip
    prompt_tokens = new_tokens = 0
    for requests in requests_per_group:
        seen: list[list[int]] = []
        for request in requests:
            ids = tokenizer(request.prompt.system + "\n" + request.prompt.user, add_special_tokens=False)["input_ids"]
            prompt_tokens += len(ids)
            new_tokens += len(ids) - max((_common(ids, earlier) for earlier in seen), default=0)
            seen.append(ids)
    output = sum(len(tokenizer(a, add_special_tokens=False)["input_ids"]) for a in answers)
    rollouts = sum(len(g.responses) for g in groups)
    rate = in_process_rate(
        method, groups, Judge(ScriptedEngine(functools.partial(scripted, scenes=scene_map))), seconds
    )
    return {"calls": len(flat) / rollouts, "prompt": prompt_tokens / rollouts, "new_prompt": new_tokens / rollouts,
            "output": output / rollouts, "rate": rate, "verdicts": verdicts}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=24, help="synthetic scenes (one group of G = 8 each)")
    parser.add_argument("--scene-seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each throughput run")
    args = parser.parse_args()
    scene_map = scenes(args.scenes, args.scene_seed)
    groups = instances(scene_map, 1)
    criteria = sum(len(g.rubric) for g in groups) / len(groups)
    figures = {layout: measure(groups, scene_map, layout, args.seconds) for layout in LAYOUTS}
    print(f"{len(groups)} groups of G = {G}, {criteria:.1f} criteria per rubric on average\n")
    print(f"{'layout':<15} {'calls/rollout':>14} {'prompt tok':>11} {'new prompt tok':>15} {'output tok':>11} "
          f"{'responses/s':>12}")  # fmt: skip
    for layout, f in figures.items():
        print(f"{layout:<15} {f['calls']:>14.2f} {f['prompt']:>11.0f} {f['new_prompt']:>15.0f} {f['output']:>11.0f} "
              f"{f['rate']:>12,.0f}")  # fmt: skip
    one, every = (figures[layout] for layout in LAYOUTS)
    agree = sum(a == b for a, b in zip(one["verdicts"], every["verdicts"], strict=True)) / len(one["verdicts"])
    print(f"\nsummary: one call for all criteria takes {every['calls']:.0f} call per rollout instead of "
          f"{one['calls']:.1f}, with x{every['output'] / one['output']:.2f} the output tokens and "
          f"x{every['new_prompt'] / one['new_prompt']:.2f} the uncached prompt tokens; the layouts agree on "
          f"{agree:.0%} of verdicts (scripted judge)")  # fmt: skip


if __name__ == "__main__":
    main()
