"""Expression checks under load: waiting for a worker is never scored, the deadline starts when a check starts, a
hostile target is a rubric error, and free workers go round the tenants fairly."""

import threading
import time

import pytest
from slow_expressions import SLOW, slow_sum

from verifiers import VerifyConfig, run_verifier
from verifiers.expressions.pool import ExprWorkerPool, tenant


def _slow(k: int) -> str:
    # Hostile checks that must each take a worker are all different: the pool runs one check of equal ones at a time.
    return slow_sum(k + 1)


@pytest.fixture
def one_worker():
    pool = ExprWorkerPool(size=1)
    assert pool.wait_until_idle(120)
    yield pool
    pool.close()


def _occupy(pool: ExprWorkerPool, seconds: float, name: str = "hostile") -> threading.Thread:
    def run() -> None:
        with tenant(name):
            pool.check("5", SLOW, 6, seconds)

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

    from verifiers.expressions.pool import ExprOutcome

    busy = ExprOutcome("busy", False, "no expression worker was free within 0 s (server busy)")
    with mock.patch("verifiers.expressions.pool.ExprWorkerPool.check", return_value=busy):
        result = run_verifier("expr_verify", {"target": "9\\pi"}, {"predict": "9\\pi"})
    assert result.status == "busy" and not result.is_verdict


@pytest.mark.slow
def test_a_target_that_cannot_be_read_in_time_is_a_rubric_error(one_worker):
    outcome = one_worker.check(SLOW, "5", 6, deadline_s=0.5)
    assert outcome.status == "unparseable_target", outcome
    # the worker was replaced; a later check is judged normally, its target read once and cached
    for _ in range(50):
        later = one_worker.check("x^2", "x*x", 6, deadline_s=5.0, wait_s=10.0)
        if later.status == "ok":
            break
    assert (later.status, later.equal) == ("ok", True)


@pytest.mark.slow
def test_a_target_found_unreadable_is_remembered_and_a_slow_prediction_is_not_blamed_on_its_target(one_worker):
    from unittest import mock

    first = one_worker.check(SLOW, "5", 6, deadline_s=0.5, wait_s=10.0)
    assert first.status == "unparseable_target", first
    with mock.patch.object(one_worker, "_check", side_effect=AssertionError("a worker was asked again")):
        again = one_worker.check(SLOW, "7", 6, deadline_s=0.5)
    assert again.status == "unparseable_target" and "compared with a number" in again.reason
    # a prediction that cannot be compared in time against a target that can: the prediction's timeout; the target
    # is tested once, then known to be readable
    checks = []
    real = one_worker._check
    with mock.patch.object(one_worker, "_check", side_effect=lambda *a: checks.append(a[1]) or real(*a)):
        for _ in range(2):
            slow = one_worker.check("5", SLOW, 6, deadline_s=0.5, wait_s=10.0)
            assert slow.status == "timeout", slow
    assert checks == [SLOW, "0", SLOW]


@pytest.mark.slow
def test_a_hostile_target_gives_no_response_a_score():
    config = VerifyConfig(deadline_s=0.5)
    result = run_verifier("expr_verify", {"target": SLOW}, {"predict": "5"}, config)
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
    hostile = [threading.Thread(target=run, args=("hostile", _slow(k), 0.6)) for k in range(1, 5)]
    for thread in hostile:
        thread.start()
    _until(lambda: one_worker._idle.waiting() == 4)  # the four hostile checks queue before the cheap one
    cheap = threading.Thread(target=run, args=("cheap", "5", 5.0))
    cheap.start()
    for thread in [first, *hostile, cheap]:
        thread.join(timeout=30)
    # FIFO would serve the cheap check last; round-robin serves it right after the first queued hostile check
    assert order.index("cheap:ok") <= 1, order


def _start_hostile(pool: ExprWorkerPool, count: int, deadline_s: float) -> list[threading.Thread]:
    threads = []
    for k in range(count):
        thread = threading.Thread(target=_hostile_check, args=(pool, k, deadline_s))
        thread.start()
        threads.append(thread)
    return threads


def _hostile_check(pool: ExprWorkerPool, k: int, deadline_s: float) -> None:
    with tenant(f"hostile-{k}"):
        pool.check("5", _slow(k), 6, deadline_s, wait_s=60.0)


@pytest.mark.slow
def test_checks_that_run_long_leave_a_worker_for_quick_ones():
    # Six hostile checks of 20 s each hold both workers of a FIFO pool for a minute; with a long lane of one slot,
    # the other worker stops each hostile check after its first slice, so a correct check gets a worker in seconds.
    pool = ExprWorkerPool(size=2, first_slice_s=0.2)
    assert pool.wait_until_idle(120)
    hostile = _start_hostile(pool, 6, deadline_s=20.0)
    try:
        _until(lambda: pool._idle.long_running() == 1 and pool._idle.waiting() >= 4)
        with tenant("correct"):
            outcome = pool.check("9\\pi", "9\\pi", 6, deadline_s=5.0, wait_s=15.0)
        assert (outcome.status, outcome.equal) == ("ok", True), outcome
        assert pool._idle.long_running() == 1  # the long lane never takes the last worker
    finally:
        pool.close()
        for thread in hostile:
            thread.join(timeout=30)


@pytest.mark.slow
def test_a_check_stopped_after_its_first_slice_runs_again_with_its_whole_deadline():
    # A first slice shorter than any comparison, and the one long slot taken: the check is stopped, waits for the
    # slot and is judged from the start, never scored on the slice it had.
    pool = ExprWorkerPool(size=2, first_slice_s=1e-4)
    assert pool.wait_until_idle(120)
    hostile = _start_hostile(pool, 1, deadline_s=1.0)
    try:
        _until(lambda: pool._idle.long_running() == 1)
        expansion = "x^{10}+10x^9+45x^8+120x^7+210x^6+252x^5+210x^4+120x^3+45x^2+10x+1"
        outcome = pool.check("(x+1)^{10}", expansion, 6, deadline_s=10.0, wait_s=30.0)
        assert (outcome.status, outcome.equal) == ("ok", True), outcome
    finally:
        pool.close()
        hostile[0].join(timeout=30)


@pytest.mark.slow
def test_a_long_check_with_a_free_slot_goes_on_where_it_is():
    pool = ExprWorkerPool(size=2, first_slice_s=0.05)
    assert pool.wait_until_idle(120)
    launches = []
    real_launch = pool._launcher.launch
    pool._launcher.launch = lambda: launches.append(1) or real_launch()
    try:
        outcome = pool.check("5", SLOW, 6, deadline_s=0.5)
        assert outcome.status == "timeout"
        assert pool.wait_until_idle(60)
        assert len(launches) == 1  # only the worker killed at the deadline was replaced: none was stopped and rerun
    finally:
        pool.close()
