"""Hostile predictions finish within the deadline, from threads and event loops; every failure path has a status."""

import asyncio
import os
import signal
import threading
import time
from unittest import mock

import pytest
from slow_expressions import SLOW

from verifiers import VerifyConfig, averify_call_result, format_call, run_verifier, text_verify, verify_call_result
from verifiers.expressions.pool import ExprWorkerPool, get_expr_pool
from verifiers.result import VerifierError

DEADLINE = 1.0
SLACK = 0.75  # process kill, pipe close and scheduling on a loaded two-core machine
CONFIG = VerifyConfig(deadline_s=DEADLINE)

HOSTILE = [
    # power towers, in both notations
    ("expr_verify(target='5')", "expr_verify(predict='10**10**10**10')"),
    ("expr_verify(target='5')", "expr_verify(predict='10^{10^{10^{10}}}')"),
    ("expr_verify(target='5')", "expr_verify(predict='9^{9^{9^{9^{9}}}}')"),
    # 100,000-character LaTeX
    ("expr_verify(target='5')", "expr_verify(predict='" + "\\\\frac{1}{2}+" * 8_000 + "1')"),
    # 5,000 nested brackets, as a call and inside an expression
    ("bbox_verify(target=[[0,0,1,1]])", "bbox_verify(predict=" + "[" * 5_000 + "]" * 5_000 + ")"),
    ("expr_verify(target='5')", "expr_verify(predict='" + "(" * 5_000 + "1" + ")" * 5_000 + "')"),
    ("expr_verify(target='5')", "expr_verify(predict='" + "(" * 900 + "1" + ")" * 900 + "')"),
    ("expr_verify(target='5')", "expr_verify(predict='" + "\\\\frac{" * 600 + "1" + "}{2}" * 600 + "')"),
    # NaN and infinities
    ("expr_verify(target='5')", "expr_verify(predict='nan')"),
    ("bbox_verify(target=[[0,0,1,1]])", "bbox_verify(predict=[[1e999, 0, 1, 1]])"),
    ("point_verify(target=[[0,0]])", "point_verify(predict=[[-1e999, 1e999]])"),
    ("expr_verify(target='5')", "expr_verify(predict='1e99999')"),
    # huge lists and strings
    ("bbox_verify(target=[[0,0,1,1]])", "bbox_verify(predict=" + str([[1, 2, 3, 4]] * 19_000) + ")"),
    ("list_verify(target=['a'])", "list_verify(predict=" + str(["x" * 9] * 15_000) + ")"),
    ("text_verify(target='a')", "text_verify(predict='" + "x" * 150_000 + "')"),
    ("time_verify(target='18:15', tformat='%H:%M')", "time_verify(predict='" + "1" * 150_000 + "')"),
    # a long dense expression inside the bounds
    ("expr_verify(target='5')", "expr_verify(predict='" + "x^{x^{x}}*" * 190 + "1')"),
]


@pytest.mark.slow
@pytest.mark.parametrize("reference, prediction", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_prediction_returns_within_the_deadline(reference, prediction):
    # the deadline runs from when a check starts: waiting for a worker (the start of the pool, or the replacement of
    # one killed by the previous case) is not part of it, and is bounded apart (tests/test_verifiers_capacity.py)
    assert get_expr_pool().wait_until_idle(120)
    start = time.monotonic()
    result = verify_call_result(reference, prediction, CONFIG)
    elapsed = time.monotonic() - start
    assert elapsed < DEADLINE + SLACK, (elapsed, result)
    assert result.score == 0.0
    assert result.status in {"timeout", "unparseable_pred", "bad_call", "ok"}


@pytest.mark.slow
def test_workers_recover_after_a_timeout():
    pool = get_expr_pool()
    pool.start()
    slow = verify_call_result("expr_verify(target='5')", format_call("expr_verify", {"predict": SLOW}), CONFIG)
    assert slow.status == "timeout"
    # the killed worker is replaced in the background; a later call is judged normally (each try a new check, not
    # one the pool remembers)
    for k in range(20):
        later = verify_call_result(f"expr_verify(target='x^{{{k + 2}}}')",
                                   f"expr_verify(predict='{'*'.join(['x'] * (k + 2))}')", VerifyConfig())  # fmt: skip
        if later.status == "ok":
            break
    assert (later.score, later.status) == (1.0, "ok")


@pytest.mark.slow
def test_many_threads_each_get_their_own_verdict():
    get_expr_pool().start()
    # the right answers are all different checks, so that none is answered from the pool's memory
    right = [(f"expr_verify(target='x^{k}')", f"expr_verify(predict='{'*'.join(['x'] * k)}')") for k in range(2, 6)]
    calls = [call for pair in zip([HOSTILE[1]] * 4, right, strict=True) for call in pair] + [
        ("text_verify(target='abc')", "text_verify(predict='abd')")
    ] * 4
    results: list = [None] * len(calls)
    elapsed: list = [None] * len(calls)

    def run(i: int) -> None:
        start = time.monotonic()
        results[i] = verify_call_result(*calls[i], CONFIG)
        elapsed[i] = time.monotonic() - start

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # each check has its whole deadline once it has a worker: the hostile ones time out, and waiting behind them
    # (and behind the restart of the workers they cost) never turns a right answer into a timeout
    assert all(e is not None for e in elapsed), elapsed
    assert [r.status for r in results[:8]] == ["timeout", "ok"] * 4, results
    assert all(r.score == 1.0 for r in results[1:8:2])
    assert all(r.status == "ok" for r in results[-4:])  # in-process verifiers never wait for a worker


@pytest.mark.slow
def test_event_loop_keeps_running_during_a_hostile_check():
    get_expr_pool().start()

    async def main() -> tuple[int, list]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(
            averify_call_result("expr_verify(target='5')", format_call("expr_verify", {"predict": SLOW}), CONFIG),
            averify_call_result("expr_verify(target='1/2')", "expr_verify(predict='0.5')", CONFIG),
        )
        stop.set()
        await task
        return ticks, results

    ticks, results = asyncio.run(main())
    assert ticks >= 20  # the loop ran throughout the ~1 s check
    assert [r.status for r in results] == ["timeout", "ok"]


def test_worker_that_cannot_start_gives_status_error():
    pool = ExprWorkerPool(size=1)
    launcher = mock.Mock(**{"launch.side_effect": OSError("no python here")})
    with mock.patch("verifiers.expressions.pool.make_launcher", return_value=launcher):
        outcome = pool.check("x", "x", 6, 1.0)
    assert outcome.status == "error" and "no python here" in outcome.reason
    pool.close()


@pytest.mark.slow
def test_a_check_handed_a_dead_worker_runs_again_on_a_fresh_one():
    pool = ExprWorkerPool(size=1)
    try:
        pool.start()
        os.kill(pool._idle.idle()[0].pid, signal.SIGKILL)  # dies while idle: the next check is handed a dead worker
        outcome = pool.check("x^2", "x*x", 6, 5.0)
        assert outcome.status == "ok" and outcome.equal
    finally:
        pool.close()


@pytest.mark.parametrize("target_read, status", [(False, "unparseable_target"), (True, "timeout")])
def test_a_check_that_kills_its_worker_twice_is_judged_as_one_that_ran_out(target_read, status):
    from verifiers.expressions.pool import _Call

    real_wait, deaths = _Call.wait, []

    def dies(call, until):  # the check's two attempts die; what follows (the pool's test of the target) does not
        if len(deaths) == 2:
            return real_wait(call, until)
        deaths.append(call)
        if target_read:
            call.target_read_at = time.monotonic()
        raise EOFError("the worker exited")

    pool = ExprWorkerPool(size=1)
    try:
        with mock.patch.object(_Call, "wait", dies):
            outcome = pool.check("x", "y", 6, 1.0)
        assert outcome.status == status and "died twice" in outcome.reason  # never "error"
        assert pool.check("x^2", "x*x", 6, 5.0).status == "ok"  # the pool serves on
    finally:
        pool.close()


def test_no_free_worker_in_time_is_busy_never_a_verdict():
    pool = ExprWorkerPool(size=1)
    pool._ready = True  # started, but every worker is busy
    outcome = pool.check("x", "x", 6, deadline_s=5.0, wait_s=0.2)
    assert outcome.status == "busy" and "no expression worker was free within 0.2 s" in outcome.reason


def test_unexpected_failure_inside_a_verifier_is_an_error_not_a_score():
    with mock.patch("verifiers.text.similarity", side_effect=RuntimeError("boom")):
        result = run_verifier("text_verify", {"target": "a"}, {"predict": "a"})
        assert (result.score, result.status) == (0.0, "error")
        assert "RuntimeError" in result.reason and "boom" in result.reason
        with pytest.raises(VerifierError):
            text_verify(target="a", predict="a")


def test_worker_error_answer_is_passed_on():
    pool = get_expr_pool()
    with mock.patch.object(type(pool), "check", return_value=mock.Mock(status="error", equal=False, reason="x")):
        result = run_verifier("expr_verify", {"target": "\\sqrt{2}"}, {"predict": "\\sqrt{3}"})
    assert result.status == "error"
    with mock.patch.object(type(pool), "check", return_value=mock.Mock(status="timeout", equal=False, reason="t")):
        result = run_verifier("expr_verify", {"target": "\\sqrt{2}"}, {"predict": "\\sqrt{3}"})
    assert (result.score, result.status) == (0.0, "timeout")
