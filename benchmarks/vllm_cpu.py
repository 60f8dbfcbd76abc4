"""The in-process decode loop against vLLM's CPU build, on the same judge and input file, in one run.

    python benchmarks/vllm_cpu.py [--vllm-python PATH] [--input FILE] [--max-tokens 192] [--json FILE]

For each judge, the rubric method scores every group of ``--input`` (all groups at once, greedy, each answer
constrained to its rubric's grammar, at most ``--max-tokens`` tokens) twice: with ``transformers:DIR`` (the
project's continuous-batching loop with XGrammar, in process) and with ``vllm:judge@URL`` (vLLM's OpenAI server,
sent the same grammar). Reported: time to ready (loading in process; vLLM: from start to a healthy ``/health``),
responses per second and output tokens per second of the scoring, and peak resident memory (the scoring process; for
vLLM, its server with its engine process, sampled every 50 ms).

The judges (made here, no download): the tiny judge of ``genrm tiny-model`` (width 128, 4 layers) and a random judge
of Qwen3-0.6B's shape cut to 4 layers (width 1024, MLP 3072, 16 query and 8 key-value heads), both untrained: their
answers run to the grammar's end or the budget, so tokens per second is the figure to compare. vLLM runs from
``--vllm-python`` (default ``$GENRM_VLLM_PYTHON``; ``.ci/conformance-envs`` builds such an environment).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from benchmarks.hostile_load import MemoryWatch  # noqa: E402
from benchmarks.loopback import free_port  # noqa: E402
from serving.launcher import EngineLauncher, VLLMLaunch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JUDGES = {
    "tiny (128 x 4)": [],
    "Qwen3-0.6B shape, 4 layers": ["--hidden-size", "1024", "--intermediate-size", "3072", "--heads", "16",
                                   "--kv-heads", "8"],
}  # fmt: skip
_READY_TIMEOUT_S = 900.0


def _measure(spec: str, input_file: str, max_tokens: int) -> dict:
    """Score ``input_file`` with the judge ``spec`` in this process; the figures as a dict."""
    import asyncio

    from genrm.engine import EngineOptions, SamplingSettings
    from genrm.engine.blocking import run_blocking
    from genrm.methods import make_method, method_judge
    from genrm.methods.rubric.models import Instance
    from genrm.methods.run import judge_prepared

    start = time.perf_counter()
    method = make_method("rubric")
    options = EngineOptions(sampling=SamplingSettings(max_tokens=max_tokens), device="cpu")
    judge = method_judge(method, spec, options, parse_retries=0)
    tokens = [0]
    judge.engine.usage_callback = lambda prompt, completion: tokens.__setitem__(0, tokens[0] + completion)
    ready_s = time.perf_counter() - start
    lines = Path(input_file).read_text(encoding="utf-8").splitlines()
    prepared = [method.prepare(Instance.model_validate_json(line)) for line in lines if line.strip()]

    async def judge_all() -> list:
        return list(await asyncio.gather(*(judge_prepared(method, p, judge) for p in prepared)))

    start = time.perf_counter()
    readings = run_blocking(judge_all())
    seconds = time.perf_counter() - start
    read = sum(reading.failure is None for group in readings for reading in group)  # whole answers read
    responses = sum(len(p.instance.responses) for p in prepared)
    return {"ready_s": ready_s, "seconds": seconds, "responses": responses, "completion_tokens": tokens[0],
            "read": read, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}  # fmt: skip


def _child(spec: str, input_file: str, max_tokens: int) -> dict:
    output = subprocess.run([sys.executable, __file__, "--measure", spec, "--input", input_file,
                             "--max-tokens", str(max_tokens)], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    if output.returncode != 0:
        raise RuntimeError(f"scoring with {spec} failed:\n{output.stderr[-3000:]}")
    return json.loads(output.stdout.strip().splitlines()[-1])


def _vllm(python: str, model: Path, input_file: str, max_tokens: int) -> dict:
    launch = VLLMLaunch(str(model), port=free_port(), served_model_name="judge", context_length=4096, dtype="float32",
                        kv_cache_gib=2, startup_timeout_s=_READY_TIMEOUT_S,
                        program=(python, "-m", "vllm.entrypoints.openai.api_server"))  # fmt: skip
    start = time.perf_counter()
    with EngineLauncher(launch) as launched:
        ready_s = time.perf_counter() - start
        assert launched.process is not None
        watch = MemoryWatch(launched.process.pid)
        try:
            figures = _child(f"vllm:judge@{launched.base_url}", input_file, max_tokens)
        finally:
            watch.close()
    return {**figures, "ready_s": ready_s, "peak_rss": watch.peak_tree}


def main(argv: list[str] | None = None) -> int:
    """Run every judge on both engines; print the table and one summary line (exit 1 when vLLM is missing)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--vllm-python",
        default=os.environ.get("GENRM_VLLM_PYTHON"),
        help="the interpreter of an environment with vllm-cpu (default: $GENRM_VLLM_PYTHON)",
    )
    parser.add_argument("--input", default=str(ROOT / "datasets/examples/reward_core.jsonl"))
    parser.add_argument("--max-tokens", type=int, default=192, help="output tokens per answer at most (192)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(_measure(args.measure, args.input, args.max_tokens)))
        return 0
    if not args.vllm_python:
        print("vllm_cpu.py: give --vllm-python (or GENRM_VLLM_PYTHON): an environment with vllm-cpu", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, sizes in JUDGES.items():
            model = Path(folder) / f"judge-{len(rows)}"
            subprocess.run([sys.executable, "-m", "genrm", "tiny-model", str(model), *sizes], check=True,
                           capture_output=True, cwd=ROOT)  # fmt: skip
            for engine in ("in process", "vLLM CPU"):
                if engine == "in process":
                    figures = _child(f"transformers:{model}", args.input, args.max_tokens)
                else:
                    figures = _vllm(args.vllm_python, model, args.input, args.max_tokens)
                rows.append({"judge": name, "engine": engine, **figures})
                print(f"{name}, {engine}: done", file=sys.stderr, flush=True)
    print(f"{'judge':<28}{'engine':<12}{'ready':>8}{'responses/s':>13}{'tokens/s':>10}{'read':>7}{'peak RSS':>10}")
    for row in rows:
        print(f"{row['judge']:<28}{row['engine']:<12}{row['ready_s']:>7.1f}s"
              f"{row['responses'] / row['seconds']:>13.2f}{row['completion_tokens'] / row['seconds']:>10.0f}"
              f"{row['read']:>4}/{row['responses']:<2}{row['peak_rss'] / 2**20:>8.0f}MB")  # fmt: skip
    ratios = []
    for name in JUDGES:
        local, served = (next(r for r in rows if r["judge"] == name and r["engine"] == e)
                         for e in ("in process", "vLLM CPU"))  # fmt: skip
        ratios.append((name, (local["responses"] / local["seconds"]) / (served["responses"] / served["seconds"])))
    print("summary: in-process responses/s over vLLM CPU's: "
          + "; ".join(f"{name} {ratio:.2f}x" for name, ratio in ratios))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
