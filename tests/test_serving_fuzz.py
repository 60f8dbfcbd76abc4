"""Hostile response texts and call strings against `genrm serve` in its own process, over real HTTP on loopback.

Hypothesis writes the *content* an attacker controls (responses of a policy, scoring-side call strings): expressions
that never finish, deep nesting, characters that grow under normalization, lone surrogates, huge numbers, odd
literals. Whatever it writes, every answer must come back within the request's budget and never as a 5xx, and
``/health`` must keep answering fast meanwhile: the event loop never waits on a check.
"""

import json
import statistics
import threading
import time

import httpx
import pytest
from fake_judge import ServeProcess
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from slow_expressions import slow_sum

pytestmark = pytest.mark.slow

DEADLINE_S = 0.5  # per check, from when it starts
BUDGET_S = 8.0  # per request, waiting for expression workers
# A request may wait its budget, then run its last checks (target and prediction: a deadline each), and the server
# may spend a little on everything else: this is the most any answer may take.
ANSWER_BOUND_S = BUDGET_S + 2 * DEADLINE_S + 2.0
HEALTH_BOUND_S = 0.1

hostile_pieces = st.sampled_from([
    "10^{10^{10^{10}}}", "9^{9^{9^{9^{9}}}}", "10**10**10**10", "(" * 900 + "1" + ")" * 900,
    "\\frac{" * 600 + "1" + "}{2}" * 600, "\ufdfa" * 3_000, "\ud800", "\udfff", "1" + "0" * 400, "nan", "inf",
    "-1e999", "+99:99", "\x00", "\\boxed{", "}", "[[", "]]", "\u202e", "A", "(B)", "\\pi", "x^2", "2024-01-01T18:15",
])  # fmt: skip
texts = st.lists(st.one_of(hostile_pieces, st.text(max_size=40)), max_size=6).map("".join)
literals = st.one_of(
    hostile_pieces.map(repr),
    texts.map(repr),
    st.lists(st.lists(st.one_of(st.integers(-(10**400), 10**400), st.floats()), max_size=5), max_size=5).map(repr),
    st.lists(texts, max_size=5).map(repr),
    hostile_pieces,
)
VERIFIERS = {
    "expr_verify": "expr_verify(target='9\\\\pi')",
    "text_verify": "text_verify(target='North Gate', ignore_st=True, use_latex=True)",
    "list_verify": "list_verify(target=['a', 'b'], ignore_punc=True)",
    "time_verify": "time_verify(target='2024-01-01T18:15+01:00', tformat='%Y-%m-%dT%H:%M%z')",
    "bbox_verify": "bbox_verify(target=[[0, 0, 10, 10]])",
    "point_verify": "point_verify(target=[[5, 5]])",
}
calls = st.tuples(st.sampled_from(sorted(VERIFIERS)), literals).map(lambda c: (c[0], f"{c[0]}(predict={c[1]})"))
responses = st.lists(
    st.one_of(hostile_pieces.map(lambda t: f"\\boxed{{{t}}}"), texts.map(lambda t: f"So \\boxed{{{t}}}."), texts),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def server():
    import os

    env = {"GENRM_VERIFIER_DEADLINE_S": str(DEADLINE_S), "GENRM_VERIFIER_BUDGET_S": str(BUDGET_S)}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with ServeProcess("--log-level", "warning") as served, httpx.Client(base_url=served.url) as http:
            yield http, served
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


class _HealthWatch:
    """Polls /health every 20 ms on its own connection and keeps each answer's latency (or its failure)."""

    def __init__(self, url: str) -> None:
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(url,), daemon=True)

    def _run(self, url: str) -> None:
        with httpx.Client(base_url=url, timeout=5.0) as http:
            while not self._stop.is_set():
                start = time.monotonic()
                try:
                    status = http.get("/health").status_code
                except httpx.HTTPError as exc:
                    self.failures.append(type(exc).__name__)
                    continue
                self.latencies.append(time.monotonic() - start)
                if status != 200:
                    self.failures.append(f"HTTP {status}")
                self._stop.wait(0.02)

    def __enter__(self) -> "_HealthWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _post(http: httpx.Client, path: str, body: dict) -> tuple[httpx.Response, float]:
    # json.dumps escapes lone surrogates (\ud800), as any JSON client may send them
    start = time.monotonic()
    answer = http.post(path, content=json.dumps(body), headers={"content-type": "application/json"}, timeout=60)
    return answer, time.monotonic() - start


def _group(verifier: str, texts_: list[str]) -> dict:
    reference = VERIFIERS[verifier]
    return {"id": "fuzz", "prompt": "Answer.", "task_type": "general", "responses": texts_,
            "rubric": {"essential": [{"criterion": "Right.", "reference": reference, "weight": 3}]}}  # fmt: skip


def test_hostile_content_never_gives_a_5xx_a_late_answer_or_a_slow_health(server):
    http, served = server
    seen: list[tuple[str, int, float]] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(call=calls, texts_=responses, verifier=st.sampled_from(sorted(VERIFIERS)))
    # Explicit hostile examples come first, whatever Hypothesis draws: seconds of checks that run to their deadline,
    # through which /health is watched.
    @example(call=("expr_verify", "expr_verify(predict='10^{10^{10^{10}}}')"), texts_=["\\boxed{9^{9^{9^{9}}}}"] * 4,
             verifier="expr_verify")  # fmt: skip
    @example(call=("expr_verify", "expr_verify(predict='7^{7^{7^{7}}}')"),
             texts_=["\\boxed{" + "\ufdfa" * 3_000 + "}"], verifier="text_verify")  # fmt: skip
    @example(call=("list_verify", "list_verify(predict=['" + "\ufdfa" * 3_000 + "'])"),
             texts_=["\\boxed{8^{8^{8^{8}}}}", "\\boxed{6^{6^{6^{6}}}}"], verifier="expr_verify")  # fmt: skip
    def probe(call, texts_, verifier):
        name, prediction = call
        verified, elapsed = _post(http, "/v1/verify", {"reference": VERIFIERS[name], "prediction": prediction})
        seen.append(("verify", verified.status_code, elapsed))
        scored, elapsed = _post(http, "/v1/score", {"groups": [_group(verifier, texts_)]})
        seen.append(("score", scored.status_code, elapsed))
        assert verified.status_code < 500, (prediction[:200], verified.text[:300])
        assert scored.status_code < 500, (texts_, scored.text[:300])
        if scored.status_code == 200:
            rewards = scored.json()["groups"][0]["rewards"]
            assert all(r is None or 0.0 <= r <= 1.0 for r in rewards)

    with _HealthWatch(served.url) as health:
        probe()
    assert served.process.poll() is None  # still serving
    slowest = max(elapsed for _, _, elapsed in seen)
    assert slowest < ANSWER_BOUND_S, sorted(seen, key=lambda s: -s[2])[:5]
    assert not health.failures, health.failures[:5]
    assert len(health.latencies) >= 20
    assert max(health.latencies) < HEALTH_BOUND_S, (max(health.latencies), statistics.median(health.latencies))


def test_a_body_that_fails_validation_leaves_the_keep_alive_connection_serving(server):
    _, served = server
    good = {
        "reference": "text_verify(target='North Gate', ignore_case=True)",
        "prediction": "text_verify(predict='north gate')",
    }
    opened: list[object] = []
    # One connection only: every request after a refused one must travel on the connection that carried it.
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(base_url=served.url, limits=limits, timeout=30) as http:
        for bad in ('{"reference": NaN, "prediction": "x"}', '{"reference": Infinity, "prediction": -Infinity}'):
            for _ in range(5):
                refused = http.post("/v1/verify", content=bad, headers={"content-type": "application/json"})
                assert refused.status_code == 422, refused.text[:300]
                assert refused.headers.get("connection", "").lower() != "close"
                opened.append(refused.extensions["network_stream"].get_extra_info("socket").getsockname())
                answered = http.post("/v1/verify", json=good)
                assert answered.status_code == 200 and answered.json()["score"] == 1.0
                opened.append(answered.extensions["network_stream"].get_extra_info("socket").getsockname())
    assert len(set(opened)) == 1, set(opened)  # the same local port throughout: never reset, never reopened


def test_a_correct_expression_is_judged_right_behind_fifty_hostile_ones():
    # Each hostile check may run 30 s. Queued first come, first served, or fairly but without a first slice, the
    # correct check gets a worker only once every hostile request before it has been answered (or given up). Stopped
    # after their first slice, the hostile checks let it through while almost all of them are still pending.
    import asyncio
    import os
    from unittest import mock

    hostile = [slow_sum(k) for k in range(50)]
    env = {"GENRM_VERIFIER_DEADLINE_S": "30", "GENRM_VERIFIER_BUDGET_S": "120"}

    async def load(url: str) -> tuple[httpx.Response, int]:
        limits = httpx.Limits(max_connections=60, max_keepalive_connections=60)
        async with httpx.AsyncClient(base_url=url, timeout=180, limits=limits) as http:

            def verify(target: str, predict: str):
                body = {
                    "reference": f"expr_verify(target='{target}')",
                    "prediction": f"expr_verify(predict='{predict}')",
                }
                return http.post("/v1/verify", json=body)

            attack = [asyncio.ensure_future(verify("5", tower)) for tower in hostile]
            await asyncio.sleep(1.0)  # the hostile requests reach the server first
            answer = await verify("9\\pi", "9\\pi")
            pending = sum(not task.done() for task in attack)
            for task in attack:
                task.cancel()
            await asyncio.gather(*attack, return_exceptions=True)
            return answer, pending

    with mock.patch.dict(os.environ, env), ServeProcess("--log-level", "warning") as served:
        try:
            answer, pending = asyncio.run(load(served.url))
        finally:
            served.process.kill()  # hostile checks are still running; nothing needs a graceful stop
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["score"] == 1.0, answer.json()
    # one long check at a time, 30 s each: measured 49 of 50 pending (11.5 s); without the slice, 0 of 50 (89 s)
    assert pending >= 40, pending
