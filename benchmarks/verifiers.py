"""Verifier throughput and latency on realistic inputs, and the worst case on a hostile set.

    python benchmarks/verifiers.py [--seconds 2] [--all-cores]

For each verifier, it calls the Python function on a rotating set of typical inputs for a fixed time and reports
calls per second with the p50 and p99 latency of one call; the same for the call-string path (``verify_call_result``,
which also parses both call strings). Then it runs every input of a hostile set (power towers, 100,000-character
LaTeX, 5,000 nested brackets, NaN, huge lists) and reports the slowest. By default the process is pinned to one core
(the expression workers inherit the pinning), as the targets are stated per core.

Then expr_verify against Math-Verify itself (called as its users do: ``verify(parse(target), parse(prediction))``) on
Math-Verify's own test cases (``benchmarks/data/math_verify_cases.jsonl``, extracted by
``benchmarks/math_verify_cases.py``), in two kinds of input: the cases as written (whole responses, delimiters and
all) and the answers Math-Verify's own ``parse`` extracts from them. Each call style makes one pass over the cases
in a process of its own after the same warm-up on other inputs, and is scored against the case's expected verdict (as
its test states it, under that test's options). A third style, Math-Verify with ``$...$`` added around both sides,
shows what reading the extracted answers costs it. Last, the group workload: one target and G = 8 predictions (the
case's and the next seven cases'), every response checked, as a user calling either per response does; there
expr_verify runs twice, as it is (a check decided before is answered from memory) and remembering nothing. The
per-verifier rows above run every check too (the pool remembers nothing there); one more row shows a check decided
before.

A second input set, ``benchmarks/data/other_graders_cases.jsonl``, holds the answer-equivalence cases of other
graders' public test suites (sources and licences in ``benchmarks/data/README.md``), scored the same way as written
against Math-Verify in the same run. And the first expression check in a fresh process is timed, cold and after
``warm_up()`` (the start of the expression workers, which a server pays at start-up).

Targets: text, list, bbox, point >= 20,000 calls/s; expr p99 <= 20 ms; no hostile input past the deadline; expr
accuracy on Math-Verify's cases at least Math-Verify's on both kinds of input, p50 and p99 at or below its own, and
at least twice its throughput on groups; at least 95% on the other graders' cases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# This file is named after the package it measures: drop its own folder from the path so that the import below
# finds the package, and put the repository root first so that a checkout runs without being installed.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from genrm.jsonl import read_jsonl_lines  # noqa: E402
from verifiers import (  # noqa: E402
    VerifyConfig,
    bbox_verify,
    expr_verify,
    list_verify,
    point_verify,
    text_verify,
    time_verify,
    verify_call_result,
    warm_up,
)
from verifiers.expressions.pool import configure_expr_pool  # noqa: E402

rng = random.Random(0)
WORDS = "total revenue export volume net income gross margin fiscal year quarter region sales unit price".split()


def _phrase(n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _typo(text: str) -> str:
    i = rng.randrange(len(text))
    return text[:i] + rng.choice("abcdefgh") + text[i + 1 :]


def _box() -> list[int]:
    x, y = rng.randrange(0, 800), rng.randrange(0, 800)
    return [x, y, x + rng.randrange(20, 200), y + rng.randrange(20, 200)]


def _jitter(box: list[int]) -> list[int]:
    return [min(1000, max(0, v + rng.randrange(-8, 9))) for v in box]


def text_cases(n: int = 200) -> list[dict]:
    cases = []
    for _ in range(n):
        target = _phrase(rng.randrange(2, 6))
        cases.append({"target": target, "predict": rng.choice([target, _typo(target), target.upper()]),
                      "ignore_case": rng.random() < 0.5})  # fmt: skip
    return cases


def list_cases(n: int = 200) -> list[dict]:
    cases = []
    for _ in range(n):
        target = [f"{rng.choice(WORDS)}-{rng.randrange(100)}" for _ in range(rng.randrange(2, 6))]
        predict = [_typo(t) if rng.random() < 0.3 else t for t in target if rng.random() < 0.85]
        rng.shuffle(predict)
        cases.append({"target": target, "predict": predict})
    return cases


def bbox_cases(n: int = 200) -> list[dict]:
    cases = []
    for _ in range(n):
        target = [_box() for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        cases.append({"target": target, "predict": [_jitter(b) for b in target]})
    return cases


def point_cases(n: int = 200) -> list[dict]:
    cases = []
    for _ in range(n):
        target = [[rng.randrange(1000), rng.randrange(1000)] for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        cases.append({"target": target, "predict": [[min(1000, x + 3), max(0, y - 2)] for x, y in target]})
    return cases


def time_cases(n: int = 200) -> list[dict]:
    cases = []
    for _ in range(n):
        h, m = rng.randrange(24), rng.randrange(60)
        predict = f"{(h - 1) % 12 + 1}:{m:02d} {'PM' if h >= 12 else 'AM'}"
        cases.append({"target": f"{h:02d}:{m:02d}", "tformat": "%H:%M", "predict": predict, "pformat": "%I:%M %p"})
    return cases


def expr_cases(n: int = 200) -> list[dict]:
    latex = [(r"\frac{4}{6}", "2/3"), (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}"), (r"2\pi", r"2\cdot\pi"),
             ("x^2+2x+1", "(x+1)^2"), ("[1, 2)", "[1,2)"), (r"\{1,2,3\}", r"\{3,2,1\}"), ("y=2x+1", "y=1+2x"),
             (r"1.2\times 10^{5}", "120000"), (r"\sqrt{8}", r"2\sqrt{2}"), ("(1, 2)", "(2, 1)")]  # fmt: skip
    cases = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            value = rng.randrange(-1000, 100_000)
            cases.append({"target": f"{value:,}", "predict": str(value)})
        elif kind == 1:
            cases.append({"target": rng.choice("ABCD"), "predict": f"({rng.choice('ABCD')})"})
        elif kind == 2:
            a, b = rng.randrange(1, 50), rng.randrange(1, 50)
            cases.append({"target": f"\\frac{{{a}}}{{{b}}}", "predict": f"{a / b:.6f}"})
        else:
            target, predict = latex[i // 4 % len(latex)]
            cases.append({"target": target, "predict": predict})
    return cases


def _call(name: str, case: dict) -> tuple[str, str]:
    rubric = {k: v for k, v in case.items() if k not in ("predict", "pformat")}
    scoring = {k: v for k, v in case.items() if k in ("predict", "pformat")}
    render = lambda kw: ", ".join(f"{k}={v!r}" for k, v in kw.items())  # noqa: E731
    return f"{name}({render(rubric)})", f"{name}({render(scoring)})"


def measure(fn: Callable[[dict], object], cases: list[dict], seconds: float) -> tuple[float, float, float]:
    """Calls per second, p50 and p99 latency in milliseconds of ``fn`` over ``cases`` for about ``seconds``."""
    for case in cases:  # one warm pass: caches, lazy imports, worker start
        fn(case)
    latencies = []
    clock = time.perf_counter
    end = clock() + seconds
    i = 0
    while clock() < end:
        case = cases[i % len(cases)]
        start = clock()
        fn(case)
        latencies.append(clock() - start)
        i += 1
    total = sum(latencies)
    quantiles = statistics.quantiles(latencies, n=100)
    return len(latencies) / total, quantiles[49] * 1e3, quantiles[98] * 1e3


def hostile_set() -> list[tuple[str, str, str]]:
    """(label, reference call, prediction call) triples that try to hang or crash a verifier."""
    return [
        ("power tower 10**10**10**10", "expr_verify(target='5')", "expr_verify(predict='10**10**10**10')"),
        ("power tower LaTeX", "expr_verify(target='5')", "expr_verify(predict='10^{10^{10^{10}}}')"),
        ("100k-char LaTeX", "expr_verify(target='5')", "expr_verify(predict='" + "\\\\frac{1}{2}+" * 8_000 + "1')"),
        ("1,990-char LaTeX", "expr_verify(target='5')", "expr_verify(predict='" + "\\\\frac{1}{2}+" * 153 + "1')"),
        ("5,000 nested brackets (call)", "bbox_verify(target=[[0,0,1,1]])",
         "bbox_verify(predict=" + "[" * 5_000 + "]" * 5_000 + ")"),
        ("5,000 nested parentheses (expr)", "expr_verify(target='5')",
         "expr_verify(predict='" + "(" * 5_000 + "1" + ")" * 5_000 + "')"),
        ("900 nested parentheses (expr)", "expr_verify(target='5')",
         "expr_verify(predict='" + "(" * 900 + "1" + ")" * 900 + "')"),
        ("600 nested fractions", "expr_verify(target='5')",
         "expr_verify(predict='" + "\\\\frac{" * 600 + "1" + "}{2}" * 600 + "')"),
        ("NaN expr", "expr_verify(target='5')", "expr_verify(predict='nan')"),
        ("infinite box", "bbox_verify(target=[[0,0,1,1]])", "bbox_verify(predict=[[1e999, 0, 1, 1]])"),
        ("19,000 boxes", "bbox_verify(target=[[0,0,1,1]])",
         "bbox_verify(predict=" + str([[1, 2, 3, 4]] * 19_000) + ")"),
        ("1,000 boxes vs 1,000", "bbox_verify(target=" + str([_box() for _ in range(1000)]) + ")",
         "bbox_verify(predict=" + str([_box() for _ in range(1000)]) + ")"),
        ("1,000 points vs 1,000", "point_verify(target=" + str([[rng.randrange(1000)] * 2 for _ in range(1000)]) + ")",
         "point_verify(predict=" + str([[rng.randrange(1000)] * 2 for _ in range(1000)]) + ")"),
        ("15,000-item list", "list_verify(target=['a'])", "list_verify(predict=" + str(["x" * 9] * 15_000) + ")"),
        ("200 x 200 items of 500 chars", "list_verify(target=" + str([_phrase(70)[:500] for _ in range(200)]) + ")",
         "list_verify(predict=" + str([_phrase(70)[:500] for _ in range(200)]) + ")"),
        ("20,000-char text vs 20,000", "text_verify(target='" + "ab" * 10_000 + "')",
         "text_verify(predict='" + "ba" * 10_000 + "')"),
        ("150,000-char text", "text_verify(target='a')", "text_verify(predict='" + "x" * 150_000 + "')"),
        ("150,000-char time", "time_verify(target='18:15', tformat='%H:%M')",
         "time_verify(predict='" + "1" * 150_000 + "')"),
        ("dense expression", "expr_verify(target='5')", "expr_verify(predict='" + "x^{x^{x}}*" * 190 + "1')"),
        ("1,990 spaces before text", "expr_verify(target='5')",
         "expr_verify(predict='1" + " " * 1_990 + "\\\\text{')"),
        ("60,000 unclosed \\( (a response)", "expr_verify(target='5')",
         "expr_verify(predict='" + "\\\\(" * 60_000 + "')"),
        ("1,000 unclosed \\( in a sentence", "expr_verify(target='5')",
         "expr_verify(predict='It is " + "\\\\( a " * 330 + "5.')"),
    ]  # fmt: skip


MATH_VERIFY_CASES = _HERE / "data" / "math_verify_cases.jsonl"
OTHER_GRADERS_CASES = _HERE / "data" / "other_graders_cases.jsonl"
GROUP = 8


def _style(name: str) -> Callable[[str, str], bool]:
    if name.startswith("expr_verify"):
        if name == NO_MEMORY:  # every check run, equal ones too: what the remembered verdicts add is seen apart
            configure_expr_pool(verdicts=0)
        return lambda target, predict: expr_verify(target=target, predict=predict) >= 0.5
    from math_verify import parse, verify

    if name == "Math-Verify":
        return lambda target, predict: bool(verify(parse(target), parse(predict)))
    # Math-Verify with the delimiters its LaTeX extraction needs added, as expr_verify's worker adds them
    return lambda target, predict: bool(verify(parse(f"${target}$"), parse(f"${predict}$")))


NO_MEMORY = "expr_verify, no memory"
STYLES = ("Math-Verify", "Math-Verify, $-wrapped", "expr_verify", NO_MEMORY)
# the styles each kind of input is measured in: reading extracted answers is Math-Verify's concern on whole and
# extracted answers; repeated checks, hence remembered verdicts, occur only in groups
KIND_STYLES = {"whole": STYLES[:3], "extracted": STYLES[:3], "groups": ("Math-Verify", "expr_verify", NO_MEMORY)}
WARM_UP = (("\\frac{1}{2}", "0.5"), ("x = 2", "2"), ("[1, 2)", "[1,2)"), ("9\\pi", "9\\pi"), ("$x^2$", "$x*x$"),
           ("\\sqrt{2}/2", "The answer is $\\boxed{\\frac{1}{\\sqrt{2}}}$"))  # fmt: skip


def _extracted(text: str) -> str:
    from math_verify import parse

    parsed = parse(text)
    return parsed[1] if len(parsed) > 1 else text


def _inputs(path: Path, kind: str) -> list[tuple[str, str, bool | None]]:
    cases = [json.loads(line) for line in read_jsonl_lines(path) if line.strip()]
    if kind == "groups":  # one target and the case's prediction with the next cases' (mostly wrong ones)
        return [(c["gold"], cases[(i + k) % len(cases)]["pred"], None) for i, c in enumerate(cases)
                for k in range(GROUP)]  # fmt: skip
    if kind == "extracted":
        return [(_extracted(c["gold"]), _extracted(c["pred"]), bool(c["expected"])) for c in cases]
    return [(c["gold"], c["pred"], bool(c["expected"])) for c in cases]


def one_style(inputs: Path, style: str) -> dict[str, object]:
    """One pass of ``style`` in this process over the inputs (a JSON list of ``[target, prediction, expected]``,
    written by another process, so that parsing them there warms no cache here): its accuracy and latencies."""
    rows = json.loads(inputs.read_text(encoding="utf-8"))
    fn = _style(style)
    warm_up()
    for target, predict in WARM_UP:  # imports and first-use costs, on inputs that are not the cases
        fn(target, predict)
    right, latencies = 0, []
    for target, predict, expected in rows:
        start = time.perf_counter()
        try:
            verdict = bool(fn(target, predict))
        except Exception:  # a library error is a wrong verdict, not a crash of the benchmark
            verdict = False
        latencies.append(time.perf_counter() - start)
        right += verdict == expected
    return {"accuracy": 100.0 * right / len(rows), "p50": _quantile(latencies, 50), "p99": _quantile(latencies, 99),
            "rate": len(rows) / sum(latencies), "cases": len(rows)}  # fmt: skip


def _quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1e3


def _in_own_process(inputs: Path, style: str) -> dict[str, object]:
    import subprocess

    command = [sys.executable, __file__, "--one-style", style, "--inputs", str(inputs)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def math_verify_comparison(
    path: Path, rounds: int = 3, kinds: tuple[str, ...] = ("whole", "extracted", "groups"), title: str = ""
) -> dict[str, dict[str, dict[str, object]]]:
    """Per input kind (whole, extracted, groups) and call style, each pass run in a process of its own (so that no
    style finds another's caches warm), ``rounds`` times in turn: the median over rounds of the accuracy in %, the p50
    and p99 in ms and the responses per second (one pass is at the mercy of a shared machine's noise)."""
    import tempfile

    runs: dict[tuple[str, str], list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind in kinds:
            inputs = Path(folder) / f"{kind}.json"
            inputs.write_text(json.dumps(_inputs(path, kind)), encoding="utf-8")
            for _ in range(rounds):
                for style in KIND_STYLES[kind]:
                    runs.setdefault((kind, style), []).append(_in_own_process(inputs, style))
    out: dict[str, dict[str, dict[str, object]]] = {}
    print(f"\nexpr against Math-Verify on {title or 'its own test cases'} (each pass in a process of its own; "
          f"medians of {rounds})")  # fmt: skip
    print(f"{'input':<10} {'style':<24} {'cases':>6} {'accuracy':>9} {'p50 ms':>8} {'p99 ms':>8} {'responses/s':>12}")
    for (kind, style), passes in runs.items():
        row = out.setdefault(kind, {})[style] = {
            key: statistics.median(float(p[key]) for p in passes) for key in ("accuracy", "p50", "p99", "rate")
        }
        row["cases"] = passes[0]["cases"]
        accuracy = "" if kind == "groups" else f"{row['accuracy']:.1f}%"
        print(f"{kind:<10} {style:<24} {row['cases']:>6} {accuracy:>9} {row['p50']:>8.2f} {row['p99']:>8.2f} "
              f"{row['rate']:>12,.0f}")  # fmt: skip
    return out


_FIRST_CALL = """
import json, sys, time
start = time.perf_counter()
from verifiers import expr_verify, warm_up
imported = time.perf_counter()
if sys.argv[1] == "warm":
    warm_up()
warmed = time.perf_counter()
expr_verify(target="\\\\frac{1}{2}+x", predict="x+0.5")
done = time.perf_counter()
print(json.dumps({"import": (imported - start) * 1e3, "warm_up": (warmed - imported) * 1e3,
                  "first": (done - warmed) * 1e3}))
"""


def first_call_times(rounds: int = 3) -> dict[str, float]:
    """Median over ``rounds`` fresh processes of the first expression check's time in ms, cold and after warm_up()."""
    import subprocess

    out = {}
    for mode in ("cold", "warm"):
        passes = []
        for _ in range(rounds):
            command = [sys.executable, "-c", _FIRST_CALL, mode]
            done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=_HERE.parent)
            passes.append(json.loads(done.stdout.strip().splitlines()[-1]))
        for key in ("import", "warm_up", "first"):
            out[f"{mode} {key}"] = statistics.median(p[key] for p in passes)
    print(f"\nfirst expression check in a fresh process (ms, medians of {rounds})")
    print(f"{'start':<22} {'import':>8} {'warm_up()':>10} {'first check':>12}")
    for mode, label in (("cold", "cold"), ("warm", "after warm_up()")):
        print(
            f"{label:<22} {out[f'{mode} import']:>8.0f} {out[f'{mode} warm_up']:>10.0f} {out[f'{mode} first']:>12.0f}"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per row (default: 2)")
    parser.add_argument("--all-cores", action="store_true", help="do not pin the process to one core")
    parser.add_argument("--math-verify-cases", type=Path, default=MATH_VERIFY_CASES, help="Math-Verify's test cases")
    parser.add_argument("--rounds", type=int, default=3, help="passes per style against Math-Verify (default: 3)")
    parser.add_argument("--other-graders-cases", type=Path, default=OTHER_GRADERS_CASES,
                        help="other graders' test cases (benchmarks/data/README.md)")  # fmt: skip
    parser.add_argument("--one-style", choices=STYLES, help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_style:  # a child of math_verify_comparison: one style on one kind of input, the figures as JSON
        print(json.dumps(one_style(args.inputs, args.one_style)))
        return
    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    suites = [
        ("text_verify", text_verify, text_cases()),
        ("list_verify", list_verify, list_cases()),
        ("bbox_verify", bbox_verify, bbox_cases()),
        ("point_verify", point_verify, point_cases()),
        ("time_verify", time_verify, time_cases()),
        ("expr_verify", expr_verify, expr_cases()),
    ]
    print(f"{'verifier':<14} {'path':<9} {'calls/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    rows = {}
    # each row cycles over its cases: the expression pool remembers nothing here, so that every check is run
    configure_expr_pool(verdicts=0)
    warm_up()
    for name, fn, cases in suites:
        rows[(name, "function")] = measure(lambda c, fn=fn: fn(**c), cases, args.seconds)
        calls = {id(c): _call(name, c) for c in cases}
        rows[(name, "call")] = measure(lambda c, calls=calls: verify_call_result(*calls[id(c)]), cases, args.seconds)
        for path in ("function", "call"):
            rate, p50, p99 = rows[(name, path)]
            print(f"{name:<14} {path:<9} {rate:>10,.0f} {p50:>8.3f} {p99:>8.3f}")
    configure_expr_pool()
    warm_up()
    rate, p50, p99 = measure(lambda c: expr_verify(**c), expr_cases(), args.seconds)
    print(f"{'expr_verify':<14} {'repeated':<9} {rate:>10,.0f} {p50:>8.3f} {p99:>8.3f}  (checks decided before, "
          "answered from memory)")  # fmt: skip

    config = VerifyConfig()
    print(f"\nhostile set (deadline {config.deadline_s:g} s)")
    print(f"{'input':<32} {'seconds':>8}  status")
    worst, over = 0.0, 0
    for label, reference, prediction in hostile_set():
        start = time.perf_counter()
        result = verify_call_result(reference, prediction, config)
        elapsed = time.perf_counter() - start
        worst = max(worst, elapsed)
        over += elapsed > config.deadline_s + 0.25
        print(f"{label:<32} {elapsed:>8.3f}  {result.status} ({result.score:.2f})")

    firsts = first_call_times(args.rounds)
    versus = math_verify_comparison(args.math_verify_cases, args.rounds)
    others = math_verify_comparison(args.other_graders_cases, args.rounds, ("whole",),
                                    "cases from other graders' test suites")["whole"]  # fmt: skip
    ours = lambda kind: versus[kind]["expr_verify"]  # noqa: E731
    theirs = lambda kind: versus[kind]["Math-Verify"]  # noqa: E731
    mv_met = all(
        ours(kind)["accuracy"] >= theirs(kind)["accuracy"] and ours(kind)["p50"] <= theirs(kind)["p50"]
        and ours(kind)["p99"] <= theirs(kind)["p99"]
        for kind in ("whole", "extracted")
    )  # fmt: skip
    group_ratio = ours("groups")["rate"] / theirs("groups")["rate"]
    unremembered = versus["groups"][NO_MEMORY]["rate"] / theirs("groups")["rate"]
    mv_met = mv_met and group_ratio >= 2
    other_ours, other_theirs = others["expr_verify"]["accuracy"], others["Math-Verify, $-wrapped"]["accuracy"]
    mv_met = mv_met and other_ours >= 95

    fast = {
        name: rows[(name, "function")][0] for name in ("text_verify", "list_verify", "bbox_verify", "point_verify")
    }
    slowest = min(fast, key=fast.get)
    expr_p99 = rows[("expr_verify", "function")][2]
    met = fast[slowest] >= 20_000 and expr_p99 <= 20 and over == 0 and mv_met
    ratio = lambda kind, column: ours(kind)[column] / theirs(kind)[column]  # noqa: E731
    print(
        f"\nsummary: slowest of text/list/bbox/point {slowest} {fast[slowest]:,.0f} calls/s (target 20,000); "
        f"expr p99 {expr_p99:.2f} ms (target 20); hostile worst {worst:.2f} s, {over} past the deadline; "
        f"on Math-Verify's cases expr_verify {ours('whole')['accuracy']:.1f}% / {ours('extracted')['accuracy']:.1f}% "
        f"against {theirs('whole')['accuracy']:.1f}% / {theirs('extracted')['accuracy']:.1f}% (whole / extracted), "
        f"p50 x{ratio('whole', 'p50'):.2f} / x{ratio('extracted', 'p50'):.2f} and p99 x{ratio('whole', 'p99'):.2f} / "
        f"x{ratio('extracted', 'p99'):.2f} of Math-Verify's, groups x{group_ratio:.2f} its throughput "
        f"(x{unremembered:.2f} remembering no verdict); on other graders' cases expr_verify {other_ours:.1f}% "
        f"against Math-Verify {others['Math-Verify']['accuracy']:.1f}% ({other_theirs:.1f}% $-wrapped; target 95); "
        f"first check {firsts['cold first']:.0f} ms cold, {firsts['warm first']:.0f} ms after warm_up(); "
        f"{'all targets met' if met else 'TARGETS MISSED'}"
    )


if __name__ == "__main__":
    main()
