"""Expression checks under load: waiting for a worker is never scored, the deadline starts when a check starts, a
hostile target is a rubric error, and free workers go round the tenants fairly."""

import threading
import time

import pytest

from verifiers import VerifyConfig, run_verifier
from verifiers.expr_pool import ExprWorkerPool, tenant

TOWER = "10^{10^{10^{10}}}"


@pytest.fixture
def one_worker():
    pool = ExprWorkerPool(size=1)
    assert pool.wait_until_idle(120)
    yield pool
    pool.close()


def _occupy(pool: ExprWorkerPool, seconds: float, name: str = "hostile") -> threading.Thread:
    def run() -> None:
        with tenant(name):
            pool.check("5", TOWER, 6, seconds)

    thread = threading.Thread(target=run)
    thread.start()
    _until(lambda: not pool._idle.idle())  # the hostile check has the worker
    return thread


def _until(condition, timeout_s: float = 30.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "the pool did not reach the expected state"
        time.sleep(0.01)


@pytest.mark.slow
def test_a_correct_answer_waiting_for_a_busy_worker_is_busy_or_right_never_a_zero(one_worker):
    hostile = _occupy(one_worker, 1.5)
    refused = one_worker.check("9\\pi", "9\\pi", 6, deadline_s=1.0, wait_s=0.1)
    assert refused.status == "busy"  # not "timeout": nothing was judged
    # with room to wait, the check gets its whole deadline once the worker is free, and is judged right
    judged = one_worker.check("9\\pi", "9\\pi", 6, deadline_s=1.0, wait_s=10.0)
    hostile.join()
    assert (judged.status, judged.equal) == ("ok", True)


def test_busy_is_not_a_verdict_on_the_response():
    from unittest import mock

    from verifiers.expr_pool import ExprOutcome

    busy = ExprOutcome("busy", False, "no expression worker was free within 0 s (server busy)")
    with mock.patch("verifiers.expr_pool.ExprWorkerPool.check", return_value=busy):
        result = run_verifier("expr_verify", {"target": "9\\pi"}, {"predict": "9\\pi"})
    assert result.status == "busy" and not result.is_verdict


@pytest.mark.slow
def test_a_target_that_cannot_be_read_in_time_is_a_rubric_error(one_worker):
    outcome = one_worker.check(TOWER, "5", 6, deadline_s=0.5)
    assert outcome.status == "unparseable_target", outcome
    # the worker was replaced; a later check is judged normally, its target read once and cached
    for _ in range(50):
        later = one_worker.check("x^2", "x*x", 6, deadline_s=5.0, wait_s=10.0)
        if later.status == "ok":
            break
    assert (later.status, later.equal) == ("ok", True)


@pytest.mark.slow
def test_a_hostile_target_gives_no_response_a_score():
    config = VerifyConfig(deadline_s=0.5)
    result = run_verifier("expr_verify", {"target": TOWER}, {"predict": "5"}, config)
    assert result.status == "unparseable_target" and not result.is_verdict


@pytest.mark.slow
def test_free_workers_go_round_the_tenants(one_worker):
    order: list[str] = []
    lock = threading.Lock()

    def run(name: str, predict: str, deadline: float) -> None:
        with tenant(name):
            outcome = one_worker.check("5", predict, 6, deadline, wait_s=30.0)
        with lock:
            order.append(f"{name}:{outcome.status}")

    first = _occupy(one_worker, 0.6)
    hostile = [threading.Thread(target=run, args=("hostile", TOWER, 0.6)) for _ in range(4)]
    for thread in hostile:
        thread.start()
    _until(lambda: one_worker._idle.waiting() == 4)  # the four hostile checks queue before the cheap one
    cheap = threading.Thread(target=run, args=("cheap", "5", 5.0))
    cheap.start()
    for thread in [first, *hostile, cheap]:
        thread.join(timeout=30)
    # FIFO would serve the cheap check last; round-robin serves it right after the first queued hostile check
    assert order.index("cheap:ok") <= 1, order
