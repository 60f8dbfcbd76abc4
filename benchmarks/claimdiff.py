"""The claimdiff method's cost: judged captions per second through the reward server, and the judge's output per
difference in each answer form.

    python benchmarks/claimdiff.py [--seconds 5] [--concurrency 8] [--captions 400]

The judge is the scripted scene judge (:mod:`genrm.methods.claimdiff.scene_judge`), which answers at once: the rates
are the stack's own cost per caption (HTTP, validation, prompts, reading the answer, the reward arithmetic), what a
served judge's latency adds on top of. The server runs in its own process pinned to one core, the load generator on
the other. Rows:

- in process: ``score_instance`` over groups of G = 8 captions, no HTTP (the method's own cost);
- ``/v1/score``: one group of G = 8 captions per request, ``--concurrency`` requests in flight;
- ``/judge``: the source's protocol, one caption per request, ``--concurrency`` in flight.

Then the judge's answers to ``--captions`` captions drawn from the synthetic scenes (facts kept, dropped, hedged and
made up, seeded) in both answer forms: output characters and tokens per difference (tokens of the tiny judge's
byte-level BPE, made here from the method's own prompts and answers, since no real tokenizer can be downloaded;
ratios between the forms are what carries over).

Target: at least 1,000 captions/s through ``/v1/score`` on one core (the stack must not be what a served judge waits
on).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import subprocess
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from benchmarks.loopback import free_port, in_process_rate, rate, split_cores, start_server  # noqa: E402
from genrm.engine import Judge  # noqa: E402
from genrm.engine.scripted import ScriptedEngine  # noqa: E402
from genrm.methods import make_method  # noqa: E402
from genrm.methods.claimdiff.models import ClaimDiffInstance  # noqa: E402
from genrm.methods.claimdiff.prompts import caption_requests  # noqa: E402
from genrm.methods.claimdiff.scene_judge import answer, scripted  # noqa: E402

G = 8
TARGET = 1_000.0
_FACTS = ["a red car", "two dogs", "a green bench", "a man in a hat", "a white fridge", "three apples",
          "a wooden table", "a blue boat", "a yellow kite", "an old lamp", "four chairs", "a striped cat"]  # fmt: skip


def scenes(count: int, seed: int) -> dict[str, frozenset[str]]:
    """``count`` synthetic scenes of 4 to 7 facts each."""
    rng = random.Random(seed)
    return {f"scene-{i}.png": frozenset(rng.sample(_FACTS, rng.randint(4, 7))) for i in range(count)}


def caption(scene: frozenset[str], rng: random.Random) -> str:
    """A caption of ``scene``: most facts kept, some dropped, some hedged, sometimes one made up."""
    sentences = []
    for fact in sorted(scene):
        roll = rng.random()
        if roll < 0.15:
            continue
        sentences.append(("Possibly " + fact) if roll < 0.25 else fact.capitalize())
    if rng.random() < 0.4:
        sentences.append(rng.choice([f for f in _FACTS if f not in scene]).capitalize())
    return ". ".join(sentences) + "."


def reference(scene: frozenset[str]) -> str:
    """The reference caption: the scene's facts but the last."""
    return ". ".join(f.capitalize() for f in sorted(scene)[:-1]) + "."


def instances(scene_map: dict[str, frozenset[str]], seed: int) -> list[ClaimDiffInstance]:
    """One instance of G captions per scene."""
    rng = random.Random(seed)
    return [ClaimDiffInstance(id=image, image=image, reference=reference(scene),
                              responses=[caption(scene, rng) for _ in range(G)])
            for image, scene in scene_map.items()]  # fmt: skip


def _serve(port: int, scene_seed: int, scene_count: int) -> None:
    import uvicorn

    from serving.app import create_app
    from serving.settings import ServerSettings

    script = functools.partial(scripted, scenes=scenes(scene_count, scene_seed))
    app = create_app(ServerSettings(method="claimdiff", port=port), Judge(ScriptedEngine(script)))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _start(core: int | None, scene_seed: int, scene_count: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--scene-seed", str(scene_seed), "--scenes",
               str(scene_count)]  # fmt: skip
    return start_server(command, port, core, "claimdiff")


def _payload(instance: ClaimDiffInstance, text: str, index: int) -> bytes:
    body = {"data_source": instance.id, "query": instance.prompt, "prompt": instance.prompt, "answer": "",
            "solution": instance.reference, "response": text, "reward_verifier": "gemini_caption_diff",
            "reward_verifier_parm": json.dumps({"image_path": [instance.image]}), "fmt_ratio": 0.0,
            "data_index": index}  # fmt: skip
    return json.dumps(body).encode()


def output_per_difference(scene_map: dict[str, frozenset[str]], count: int, seed: int) -> dict[str, dict[str, float]]:
    """Output characters and tokens per difference of the scene judge's answers, in each form."""
    from genrm.training.tiny_model import build_tokenizer

    rng = random.Random(seed)
    images = sorted(scene_map)
    asked = []
    for _ in range(count):
        image = rng.choice(images)
        asked.append((image, reference(scene_map[image]), caption(scene_map[image], rng)))
    answers: dict[str, list[str]] = {"json": [], "blocks": []}
    differences = []
    for image, ref, text in asked:
        (request,) = caption_requests(image, ref, [text], False, False, "json")
        found = answer(image, request.prompt.user, request.schema, scene_map)
        differences.append(len(json.loads(found)["differences"]))
        answers["json"].append(found)
        answers["blocks"].append(answer(image, request.prompt.user, None, scene_map))
    corpus = [request.prompt.system] + answers["json"][: count // 2] + answers["blocks"][: count // 2]
    tokenizer = build_tokenizer(corpus, vocab_size=2048)
    total = sum(differences)
    out = {}
    for form, texts in answers.items():
        chars = sum(len(t) for t in texts)
        tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
        out[form] = {"answers": len(texts), "differences": total, "chars_per_difference": chars / total,
                     "tokens_per_difference": tokens / total, "tokens_per_answer": tokens / len(texts)}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    parser.add_argument("--captions", type=int, default=400, help="captions whose answers are measured")
    parser.add_argument("--scenes", type=int, default=24, help="synthetic scenes")
    parser.add_argument("--scene-seed", type=int, default=0)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.scene_seed, args.scenes)
        return
    scene_map = scenes(args.scenes, args.scene_seed)
    groups = instances(scene_map, 1)
    judge = Judge(ScriptedEngine(functools.partial(scripted, scenes=scene_map)))
    rows = [
        ("in process (score_instance, G = 8)", in_process_rate(make_method("claimdiff"), groups, judge, args.seconds))
    ]
    process, url = _start(split_cores(), args.scene_seed, args.scenes)
    try:
        score_bodies = [('{"groups": [' + g.model_dump_json() + "]}").encode() for g in groups]
        judge_bodies = [_payload(g, text, i) for g in groups for i, text in enumerate(g.responses)]
        rate(url, "/v1/score", score_bodies, G, args.concurrency, 1.0)  # warm-up
        score_rate = rate(url, "/v1/score", score_bodies, G, args.concurrency, args.seconds)
        judge_rate = rate(url, "/judge", judge_bodies, 1, args.concurrency, args.seconds)
        rows.append((f"/v1/score, G = {G}, {args.concurrency} in flight", score_rate))
        rows.append((f"/judge, 1 caption per request, {args.concurrency} in flight", judge_rate))
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"{'path':<46} {'captions/s':>11}")
    for name, per_second in rows:
        print(f"{name:<46} {per_second:>11,.0f}")
    sizes = output_per_difference(scene_map, args.captions, 2)
    print()
    print(f"{'answer form':<12} {'answers':>8} {'differences':>12} {'chars/diff':>11} {'tokens/diff':>12} "
          f"{'tokens/answer':>14}")  # fmt: skip
    for form, size in sizes.items():
        print(f"{form:<12} {size['answers']:>8} {size['differences']:>12} {size['chars_per_difference']:>11.1f} "
              f"{size['tokens_per_difference']:>12.1f} {size['tokens_per_answer']:>14.1f}")  # fmt: skip
    served = rows[1][1]
    ratio = sizes["json"]["tokens_per_difference"] / sizes["blocks"]["tokens_per_difference"]
    verdict = "meets" if served >= TARGET else "misses"
    print(f"\nsummary: {served:,.0f} captions/s through /v1/score on one core ({verdict} the {TARGET:,.0f} target), "
          f"{sizes['json']['tokens_per_difference']:.1f} output tokens per difference in JSON "
          f"(x{ratio:.2f} the source's plain-text blocks)")  # fmt: skip


if __name__ == "__main__":
    main()
