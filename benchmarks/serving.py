"""Reward-server throughput and latency on loopback, and the server's own overhead per response.

    python benchmarks/serving.py [--seconds 5] [--concurrency 8]

Two servers, each in its own process (``genrm serve``), pinned to one core while the load generator runs on the
other: the ``rule`` backend, and a zero-latency judge that answers every criterion at once (a fuzzy credit of 1,
an empty call for verifiable criteria), so its figures are the server's own cost: HTTP, validation, rubric checks,
execution, aggregation and serialization. Requests carry one group of G = 8 responses (the shipped example set, each
group's 4 responses twice). For each server: latency of one request at a time (p50 and p99, and p50 per response),
then throughput with ``--concurrency`` requests in flight for ``--seconds``.

Two more servers run the ``transformers`` backend on a judge checkpoint (``--model``; by default the untrained tiny
judge of ``genrm tiny-model``, made in a temporary directory) on the same single core, with XGrammar-constrained
answers: ``transformers`` with the continuous decode loop (the default), ``generate`` with ``model.generate`` batch
by batch (``--no-continuous-batching``). Each one's sequential rate (responses over the total time of
``--model-requests`` requests sent one at a time) against its rate with ``--concurrency`` requests in flight shows
what batching gains; the latter is fixed work (two requests per slot, timed until the last returns), since a request
takes seconds and a window of time would count whole waves of them or none. The untrained model writes until the
token budget (``--model-max-tokens``, 128), so every answer has the same length, and an answer cut at the budget
cannot be read and is asked for once more (the judge's default ``parse_retries``), in both figures alike. These
figures measure the serving and decoding path, not a real judge's answers (``--no-model`` skips them).

A mixed-load row runs the ``rule`` server under attack: ``--hostile`` hostile expression checks (sums of ten million
exact terms that run to their deadline, and power towers and deep nesting that the worker refuses at once; each string
new, so no cache helps) kept in flight for ``--mixed-seconds``, while one client
sends cheap checks (text and box verifications, one at a time) and another sends correct expression checks (``k\\pi``
against ``k\\pi``). It reports the cheap checks' p50 and p99, and how the correct expressions came back: right (1),
busy (a 503: no worker was free within the server's budget; not scored), or wrong (any score but 1: must be 0).

Hostile-group rows: one ``/v1/score`` request whose group holds ``--hostile-group`` (64) different hostile responses
of one form, on a fresh ``rule`` server: the time to answer and the statuses. Image rows: claimdiff requests through a
server whose judge (the scripted scene judge behind an OpenAI-compatible app on loopback) counts the calls and bytes it
is sent, for images given as a data URI and as a path, and for requests the server must refuse (junk image bytes, a
request over ``max_judge_bytes``, a local file, a loopback URL) with nothing sent (``--no-images`` skips them).

Targets on this machine: overhead <= 2 ms p50 per response (zero-latency backend); >= 1,000 responses/s with the
rule backend at G = 8; under the mixed load, cheap p99 <= 50 ms and every correct expression right (none busy, none
wrong).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import httpx  # noqa: E402

from benchmarks.loopback import closed_loop, free_port, split_cores, start_server  # noqa: E402
from genrm.engine import Judge  # noqa: E402
from genrm.jsonl import read_jsonl_lines  # noqa: E402
from genrm.methods.rubric.judge_output import CriterionJudgement, ParsedJudgement  # noqa: E402
from genrm.methods.rubric.method import PreparedInstance, RubricMethod  # noqa: E402
from genrm.methods.rubric.models import Instance  # noqa: E402
from verifiers import format_call  # noqa: E402
from verifiers.registry import REGISTRY, empty_prediction  # noqa: E402

G = 8
#: The transformers rows: the continuous decode loop (the default), and model.generate batch by batch.
MODEL_KINDS = {"transformers": [], "generate": ["--no-continuous-batching"]}
#: Requests per slot in flight for the transformers rows (fixed work, see _throughput).
MODEL_WAVES = 2
EXAMPLES = _HERE.parent / "datasets" / "examples" / "reward_core.jsonl"
OVERHEAD_TARGET_MS = 2.0
RULE_TARGET = 1_000.0


class ZeroLatencyMethod(RubricMethod):
    """The rubric method with a judge that answers at once: credit 1 for fuzzy criteria, the verifier called with an
    empty prediction otherwise."""

    async def judge(self, prepared: PreparedInstance, judge: Judge) -> list[ParsedJudgement]:
        criteria = []
        for plan in prepared.plans:
            if plan.verifier is None:
                criteria.append(CriterionJudgement(plan, credit=1.0))
            else:
                empty = {k: v for k, v in empty_prediction(REGISTRY[plan.verifier]).items() if v is not None}
                criteria.append(CriterionJudgement(plan, call=format_call(plan.verifier, empty)))
        return [ParsedJudgement(None, "zero", "", list(criteria)) for _ in prepared.instance.responses]


def _serve_zero(port: int) -> None:
    import uvicorn

    from serving.app import create_app
    from serving.settings import ServerSettings

    app = create_app(ServerSettings(port=port, log_level="warning"), method=ZeroLatencyMethod())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _start(
    kind: str, core: int | None, model: str | None = None, max_tokens: int = 128
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    serve = [sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level", "warning"]
    if kind == "rule":
        command = serve
    elif kind in MODEL_KINDS:
        options = ["--backend", "transformers", "--model", str(model), "--device", "cpu", "--max-tokens",
                   str(max_tokens)]  # fmt: skip
        command = [*serve, *options, "--max-batch-size", "64", *MODEL_KINDS[kind]]
    else:
        command = [sys.executable, __file__, "--serve-zero", str(port)]
    return start_server(command, port, core, kind)


def _bodies() -> list[bytes]:
    bodies = []
    for line in read_jsonl_lines(EXAMPLES):
        instance = Instance.model_validate_json(line)
        responses = (instance.responses * G)[:G]
        bodies.append(('{"groups": [' + instance.model_copy(update={"responses": responses}).model_dump_json() + "]}")
                      .encode())  # fmt: skip
    return bodies


async def _latency(url: str, bodies: list[bytes], count: int, timeout_s: float = 60.0) -> list[float]:
    times = []
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s) as http:
        for i in range(count):
            start = time.perf_counter()
            response = await http.post("/v1/score", content=bodies[i % len(bodies)], headers=headers)
            times.append(time.perf_counter() - start)
            response.raise_for_status()
    return times


async def _throughput(
    url: str,
    bodies: list[bytes],
    concurrency: int,
    seconds: float,
    timeout_s: float = 60.0,
    requests: int | None = None,
) -> tuple[int, float]:
    return await closed_loop(url, "/v1/score", bodies, concurrency, seconds, timeout_s, requests)


# Checks that hold a worker to its deadline (a sum of ten million exact terms), and the forms the worker now refuses
# at once (a power tower, brackets nested past the parser's depth): each string new, so no cache helps.
_SLOW_SUM = "\\sum_{{n=1}}^{{10^{{7}}}} \\frac{{{k}}}{{n^3}}"
_HOSTILE = (_SLOW_SUM, "{k}^{{{k}^{{{k}^{{{k}}}}}}}", "(" * 900 + "{k}" + ")" * 900)
_CHEAP = (
    ("text_verify(target='North Gate {k}', ignore_case=True)", "text_verify(predict='north gate {k}')"),
    ("bbox_verify(target=[[10, 10, 200, 200]])", "bbox_verify(predict=[[12, 10, 200, 19{d}]])"),
)


async def _mixed_load(url: str, hostile: int, seconds: float) -> dict[str, object]:
    """Hostile expression checks kept in flight, a client of cheap checks and a client of correct expressions."""
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=hostile + 4, max_keepalive_connections=hostile + 4)
    cheap_times: list[float] = []
    correct_times: list[float] = []
    outcomes = {"right": 0, "busy": 0, "wrong": 0}
    counter = iter(range(2, 10**9))
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def verify(reference: str, prediction: str) -> httpx.Response:
            return await http.post("/v1/verify", json={"reference": reference, "prediction": prediction})

        async def attacker(offset: int) -> None:
            while time.perf_counter() < stop_at:
                k = next(counter)
                predict = _HOSTILE[(offset + k) % len(_HOSTILE)].format(k=k)
                await verify("expr_verify(target='5')", f"expr_verify(predict='{predict}')")

        async def cheap() -> None:
            while time.perf_counter() < stop_at:
                k = next(counter)
                reference, prediction = _CHEAP[k % len(_CHEAP)]
                start = time.perf_counter()
                response = await verify(reference.format(k=k), prediction.format(k=k, d=k % 10))
                cheap_times.append(time.perf_counter() - start)
                response.raise_for_status()

        async def correct() -> None:
            while time.perf_counter() < stop_at:
                k = next(counter)
                start = time.perf_counter()
                response = await verify(f"expr_verify(target='{k}\\pi')", f"expr_verify(predict='{k}\\pi')")
                correct_times.append(time.perf_counter() - start)
                if response.status_code == 503:
                    outcomes["busy"] += 1
                elif response.status_code == 200 and response.json()["score"] == 1.0:
                    outcomes["right"] += 1
                else:
                    outcomes["wrong"] += 1
                await asyncio.sleep(0.2)

        await asyncio.sleep(0)
        await asyncio.gather(*(attacker(k) for k in range(hostile)), cheap(), correct())
    return {"cheap": cheap_times, "correct": correct_times, **outcomes}


def _hostile_group_rows(core: int | None, size: int) -> list[tuple[str, float, dict[str, int]]]:
    """Time to answer one group of ``size`` distinct hostile responses on a fresh ``rule`` server, per form."""
    from collections import Counter

    rubric = {"essential": [{"criterion": "the answer", "weight": 1, "reference": "expr_verify(target='5')"}]}
    forms = {"power towers": "{k}^{{{k}^{{{k}^{{{k}}}}}}}", "(10k)! factorials": "({k}0!)!",
             "900-deep brackets": "(" * 900 + "{k}" + ")" * 900,
             "10^7-term sums": _SLOW_SUM}  # fmt: skip
    rows = []
    for name, form in forms.items():
        responses = [f"Final answer: $\\boxed{{{form.format(k=k)}}}$" for k in range(3, 3 + size)]
        body = {"groups": [{"id": "hostile", "prompt": "What is 2 + 3?", "rubric": rubric, "responses": responses}]}
        process, url = _start("rule", core)
        try:
            start = time.perf_counter()
            answer = httpx.post(url + "/v1/score", json=body, timeout=600)
            elapsed = time.perf_counter() - start
        finally:
            process.terminate()
            process.wait(timeout=30)
        answer.raise_for_status()
        records = answer.json()["groups"][0]["records"]
        rows.append((name, elapsed, dict(Counter(c["status"] for r in records for c in r["criteria"]))))
    return rows


def _image_rows(core: int | None) -> list[tuple[str, int, int, int, int, float]]:
    """Image-laden claimdiff requests through a server whose judge (the scripted scene judge behind an
    OpenAI-compatible app on loopback) counts what it is sent: (case, status, judge calls, bytes, rewards known,
    seconds)."""
    import base64
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from genrm.methods.claimdiff.scene_judge import responder
    from genrm.methods.scene_images import scene_png

    received = {"calls": 0, "bytes": 0}

    async def complete(request: Request) -> JSONResponse:
        raw = await request.body()
        received["calls"] += 1
        received["bytes"] += len(raw)
        body = json.loads(raw)
        return JSONResponse({"id": "x", "object": "chat.completion", "model": body["model"],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": responder(body)}}]})  # fmt: skip

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "scenes", "object": "model"}]})

    judge_app = Starlette(
        routes=[Route("/v1/chat/completions", complete, methods=["POST"]), Route("/v1/models", models)]
    )
    judge_port = free_port()
    judge_server = uvicorn.Server(uvicorn.Config(judge_app, host="127.0.0.1", port=judge_port, log_level="warning"))
    threading.Thread(target=judge_server.run, daemon=True).start()
    while not judge_server.started:
        time.sleep(0.05)
    reference = "A red car. Two dogs. A green bench."
    captions = ["A red car. Two dogs.", "A red car. Three cats."]
    with tempfile.TemporaryDirectory() as folder:
        photo = scene_png("park.png", 600, noise=True)  # about 1 MB
        (Path(folder) / "photo.png").write_bytes(photo)
        (Path(folder) / "park.png").write_bytes(scene_png("park.png"))
        inline = "data:image/png;base64," + base64.b64encode(photo).decode()
        junk = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 7_000_000).decode()
        heavy = scene_png("park.png", 900, noise=True)  # about 2.4 MB
        large = "data:image/png;base64," + base64.b64encode(heavy).decode()
        # request -> (image, times the two captions are repeated, groups); each group holds the image
        cases = {
            "1 MB data URI, 8 captions": (inline, 4, 1),
            "1 MB by path, 8 captions": ("photo.png", 4, 1),
            "1 MB data URI, 64 captions": (inline, 32, 1),
            "7 MB junk data URI, 64 captions": (junk, 32, 1),
            "2.4 MB image, 4 groups x 64": (large, 32, 4),
            "/etc/passwd, 64 captions": ("/etc/passwd", 32, 1),
            "http://127.0.0.1/, 64 captions": (f"http://127.0.0.1:{judge_port}/v1/models", 32, 1),
        }
        port = free_port()
        command = [sys.executable, "-m", "genrm", "serve", "--port", str(port), "--log-level", "warning",
                   "--method", "claimdiff", "--judge", f"openai:scenes@http://127.0.0.1:{judge_port}/v1",
                   "--image-dir", folder]  # fmt: skip
        process, url = start_server(command, port, core, "claimdiff")
        rows = []
        try:
            with httpx.Client(base_url=url, timeout=600) as http:
                for name, (image, times, count) in cases.items():
                    groups = [{"id": f"g{n}", "image": image, "reference": reference, "responses": captions * times}
                              for n in range(count)]  # fmt: skip
                    before = dict(received)
                    start = time.perf_counter()
                    answer = http.post("/v1/score", json={"groups": groups})
                    elapsed = time.perf_counter() - start
                    judged = sum(r is not None for g in answer.json().get("groups", []) for r in g["rewards"])
                    rows.append((name, answer.status_code, received["calls"] - before["calls"],
                                 received["bytes"] - before["bytes"], judged, elapsed))  # fmt: skip
        finally:
            process.terminate()
            process.wait(timeout=30)
            judge_server.should_exit = True
    return rows


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="throughput phase per server (default: 5)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (default: 8)")
    parser.add_argument("--latency-requests", type=int, default=200, help="sequential requests (default: 200)")
    parser.add_argument("--model", help="judge checkpoint for the transformers row (default: the tiny judge)")
    parser.add_argument("--no-model", action="store_true", help="skip the transformers backend")
    parser.add_argument("--model-requests", type=int, default=10, help="sequential requests, transformers row")
    parser.add_argument(
        "--model-max-tokens",
        type=int,
        default=128,
        help="the judge's token budget (default: 128; the untrained judge writes to the budget)",
    )
    parser.add_argument("--hostile", type=int, default=50, help="hostile expression checks in flight (default: 50)")
    parser.add_argument("--mixed-seconds", type=float, default=20.0, help="mixed-load phase (default: 20; 0 skips)")
    parser.add_argument("--hostile-group", type=int, default=64,
                        help="responses in each hostile group (default: 64; 0 skips)")  # fmt: skip
    parser.add_argument("--no-images", action="store_true", help="skip the image-laden requests")
    parser.add_argument("--serve-zero", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_zero is not None:
        _serve_zero(args.serve_zero)
        return 0

    server_core = split_cores()
    bodies = _bodies()
    print(f"G = {G} responses per request, {len(bodies)} distinct groups; server on core {server_core}, "
          f"load generator on {'the others' if server_core is not None else 'the same core'}")  # fmt: skip
    print(f"{'backend':<12} {'p50 ms':>8} {'p99 ms':>8} {'p50 ms/resp':>12} {'responses/s':>12} {'requests':>9}")
    figures = {}
    with tempfile.TemporaryDirectory() as scratch:
        kinds = ["zero", "rule"]
        model = args.model
        if not args.no_model:
            kinds += list(MODEL_KINDS)
            if model is None:
                from genrm.training.tiny_model import save_tiny_judge

                model = str(save_tiny_judge(Path(scratch) / "tiny-judge"))
        for kind in kinds:
            warm, count = (2, args.model_requests) if kind in MODEL_KINDS else (20, args.latency_requests)
            # a model request takes seconds: fixed work (MODEL_WAVES requests per slot), not a window of time
            fixed = args.concurrency * MODEL_WAVES if kind in MODEL_KINDS else None
            process, url = _start(kind, server_core, model, args.model_max_tokens)
            patience = 600.0 if kind in MODEL_KINDS else 60.0
            try:
                asyncio.run(_latency(url, bodies, warm, patience))  # warm-up: connections, caches, compiled grammars
                times = asyncio.run(_latency(url, bodies, count, patience))
                requests, elapsed = asyncio.run(
                    _throughput(url, bodies, args.concurrency, args.seconds, patience, fixed)
                )
            finally:
                process.terminate()
                process.wait(timeout=30)
            p50, p99 = statistics.median(times) * 1e3, _percentile(times, 0.99) * 1e3
            rate = requests * G / elapsed
            figures[kind] = (p50 / G, rate, G * len(times) / sum(times))
            print(f"{kind:<12} {p50:>8.2f} {p99:>8.2f} {p50 / G:>12.3f} {rate:>12,.1f} {requests:>9}")

    mixed = None
    if args.mixed_seconds > 0:
        process, url = _start("rule", server_core)
        try:
            asyncio.run(_latency(url, bodies, 5))
            mixed = asyncio.run(_mixed_load(url, args.hostile, args.mixed_seconds))
        finally:
            process.terminate()
            process.wait(timeout=30)
        cheap = mixed["cheap"]
        print(f"\nmixed load on the rule server for {args.mixed_seconds:g} s: {args.hostile} hostile expression "
              "checks in flight, one client of cheap checks, one of correct expressions")  # fmt: skip
        correct = mixed["correct"]
        print(f"{'hostile':>8} {'cheap p50 ms':>13} {'cheap p99 ms':>13} {'cheap n':>8} {'right':>6} {'busy':>5} "
              f"{'wrong':>6} {'correct p50 s':>14} {'correct max s':>14}")  # fmt: skip
        print(f"{args.hostile:>8} {statistics.median(cheap) * 1e3:>13.2f} {_percentile(cheap, 0.99) * 1e3:>13.2f} "
              f"{len(cheap):>8} {mixed['right']:>6} {mixed['busy']:>5} {mixed['wrong']:>6} "
              f"{statistics.median(correct):>14.2f} {max(correct):>14.2f}")  # fmt: skip

    groups = []
    if args.hostile_group > 0:
        groups = _hostile_group_rows(server_core, args.hostile_group)
        print(f"\none group of {args.hostile_group} different hostile responses on a fresh rule server (deadline 2 s "
              "a check, 30 s of waiting for workers a request)")  # fmt: skip
        print(f"{'form':<20} {'seconds':>8}  statuses")
        for name, elapsed, statuses in groups:
            print(f"{name:<20} {elapsed:>8.2f}  {statuses}")
    images = []
    if not args.no_images:
        images = _image_rows(server_core)
        print("\nimage-laden claimdiff requests: what one request sends the judge (the server reads each image once "
              "and refuses a request over max_judge_bytes, 512 MiB, before any call)")  # fmt: skip
        print(f"{'request':<34} {'HTTP':>5} {'judge calls':>12} {'MB to judge':>12} {'rewards':>8} {'seconds':>8}")
        for name, status, calls, sent, judged, elapsed in images:
            print(f"{name:<34} {status:>5} {calls:>12} {sent / 1e6:>12.1f} {judged:>8} {elapsed:>8.2f}")

    overhead, rule_rate = figures["zero"][0], figures["rule"][1]
    met = overhead <= OVERHEAD_TARGET_MS and rule_rate >= RULE_TARGET
    if mixed is not None:
        every_correct_right = mixed["wrong"] == 0 and mixed["busy"] == 0 and mixed["right"] > 0
        met = met and _percentile(mixed["cheap"], 0.99) <= 0.050 and every_correct_right
    print(f"\nsummary: server overhead {overhead:.3f} ms p50 per response (target <= {OVERHEAD_TARGET_MS}); rule "
          f"backend {rule_rate:,.0f} responses/s at G={G}, concurrency {args.concurrency} (target >= "
          f"{RULE_TARGET:,.0f}): {'met' if met else 'NOT met'}", end="")  # fmt: skip
    if mixed is not None:
        cheap_p99 = _percentile(mixed["cheap"], 0.99) * 1e3
        print(f"; under {args.hostile} hostile checks in flight cheap p99 {cheap_p99:.1f} "
              f"ms (target <= 50), correct expressions {mixed['right']} right, {mixed['busy']} busy, "
              f"{mixed['wrong']} wrong (target: all right)", end="")  # fmt: skip
    if "transformers" in figures:
        _, batched, sequential = figures["transformers"]
        _, generated, generated_one = figures["generate"]
        print(f"; transformers backend {sequential:,.1f} responses/s one request at a time, {batched:,.1f} with "
              f"{args.concurrency} in flight (continuous batching x{batched / sequential:.1f}; model.generate "
              f"batch by batch {generated_one:,.1f} and {generated:,.1f}, x{generated / generated_one:.1f})",
              end="")  # fmt: skip
    if groups:
        worst = max(groups, key=lambda row: row[1])
        print(f"; a group of {args.hostile_group} hostile responses answered in {worst[1]:.1f} s at worst "
              f"({worst[0]})", end="")  # fmt: skip
    if images:
        refused = [row for row in images if row[1] >= 400]
        print(f"; {len(refused)} hostile or oversized image requests refused with "
              f"{sum(row[3] for row in refused) / 1e6:.1f} MB sent to the judge", end="")  # fmt: skip
    print()
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
