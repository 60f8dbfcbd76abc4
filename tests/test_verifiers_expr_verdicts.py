"""Remembered expression verdicts: decided checks are answered from memory, running ones are shared, failures are not
remembered, and the memory is bounded."""

import threading
import time
from unittest import mock

import pytest

from verifiers.expressions.pool import ExprWorkerPool
from verifiers.expressions.verdicts import ExprOutcome, VerdictMemo

EQUAL = ExprOutcome("ok", True, "read both as 2")
KEY = ("x^2", "x*x", 6)


def test_a_decided_check_is_remembered_and_a_failed_one_is_not():
    memo = VerdictMemo()
    for status in ("timeout", "busy", "error"):
        claim = memo.claim(KEY, wait_s=0)
        assert claim.verdict is None and claim.leads
        memo.settle(KEY, ExprOutcome(status, False, "load"), leads=True)
    assert len(memo) == 0
    memo.settle(KEY, EQUAL, memo.claim(KEY, wait_s=0).leads)
    unreadable = ExprOutcome("unparseable_pred", False, "no expression")
    memo.settle(("5", "abc", 6), unreadable, memo.claim(("5", "abc", 6), wait_s=0).leads)
    assert memo.claim(KEY, wait_s=0).verdict is EQUAL
    assert memo.claim(("5", "abc", 6), wait_s=0).verdict is unreadable
    assert memo.claim(("x^2", "x*x", 3), wait_s=0).verdict is None  # another rounding is another check


@pytest.mark.parametrize("ended, leads", [(EQUAL, False), (None, True)], ids=["decided", "raised"])
def test_a_caller_waits_for_the_same_check_running_for_another(ended, leads):
    # decided: the waiting caller takes its verdict; raised: it leads a check of its own
    memo = VerdictMemo()
    assert memo.claim(KEY, wait_s=0).leads
    found = []
    follower = threading.Thread(target=lambda: found.append(memo.claim(KEY, wait_s=30)))
    follower.start()
    time.sleep(0.05)
    assert not found  # still waiting for the leader
    memo.settle(KEY, ended, leads=True)
    follower.join(timeout=30)
    assert found[0].verdict is ended and found[0].leads is leads


def test_a_caller_waits_no_longer_than_it_was_given_and_then_runs_its_own():
    memo = VerdictMemo()
    assert memo.claim(KEY, wait_s=0).leads
    start = time.monotonic()
    claim = memo.claim(KEY, wait_s=0.1)
    assert claim.verdict is None and not claim.leads
    assert time.monotonic() - start < 10
    memo.settle(KEY, EQUAL, leads=False)  # its own check decided: remembered, and the leader's key stays running
    memo.settle(KEY, EQUAL, leads=True)
    assert memo.claim(KEY, wait_s=0).verdict is EQUAL and len(memo) == 1


def test_the_memory_is_bounded_in_entries_and_characters():
    memo = VerdictMemo(entries=3, chars=6400)
    for k in range(5):
        key = (str(k), "x", 6)
        memo.settle(key, EQUAL, memo.claim(key, wait_s=0).leads)
    assert len(memo) == 3
    assert memo.claim(("0", "x", 6), wait_s=0).verdict is None  # the oldest went first
    memo.settle(("0", "x", 6), None, leads=True)
    assert memo.claim(("4", "x", 6), wait_s=0).verdict is EQUAL
    long = ("1" * 90, "1" * 20, 6)  # over chars // 64 = 100 characters in all
    memo.settle(long, EQUAL, memo.claim(long, wait_s=0).leads)
    assert memo.claim(long, wait_s=0).verdict is None
    memo.settle(long, None, leads=True)
    wide = VerdictMemo(entries=100, chars=640)
    for k in range(20):
        key = (f"{k:05}", "y" * 5, 6)  # 10 characters each: at most 64 of them fit in 640
        wide.settle(key, EQUAL, wide.claim(key, wait_s=0).leads)
    assert len(wide) == 20
    for k in range(20, 80):
        key = (f"{k:05}", "y" * 5, 6)
        wide.settle(key, EQUAL, wide.claim(key, wait_s=0).leads)
    assert len(wide) == 64


@pytest.mark.parametrize("entries, chars", [(0, 1000), (10, 10)])
def test_a_memory_without_room_is_refused(entries, chars):
    with pytest.raises(ValueError, match="entries must be >= 1"):
        VerdictMemo(entries, chars)


def test_a_groups_equal_answers_ask_a_worker_once():
    pool = ExprWorkerPool(size=2)
    pool._ready = True
    calls, meeting = [], threading.Event()

    def tested_check(target, predict, float_rounding, deadline_s, wait_s):
        calls.append(predict)
        meeting.wait(timeout=30)  # the equal answers all arrive while the first is still being checked
        return ExprOutcome("ok", predict == "2", "compared")

    answers = ["2", "3", "2", "2", "3", "2", "1", "2"]
    results: list = [None] * len(answers)
    with mock.patch.object(pool, "_tested_check", side_effect=tested_check):
        threads = [
            threading.Thread(target=lambda i=i: results.__setitem__(i, pool.check("2", answers[i], 6, 5.0)))
            for i in range(len(answers))
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.2)
        meeting.set()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(calls) == ["1", "2", "3"]
        assert [r.equal for r in results] == [a == "2" for a in answers]
        assert pool.check("2", "3", 6, 5.0).equal is False and len(calls) == 3  # later: from memory


def test_a_check_that_timed_out_is_run_again_for_the_next_caller():
    pool = ExprWorkerPool(size=1)
    pool._ready = True
    timeout = ExprOutcome("timeout", False, "the expression check did not finish within 1 s")
    with mock.patch.object(pool, "_tested_check", return_value=timeout) as tested:
        assert pool.check("5", "10^{10^{10}}", 6, 1.0) is timeout
        assert pool.check("5", "10^{10^{10}}", 6, 1.0) is timeout
    assert tested.call_count == 2


@pytest.mark.slow
def test_equal_answers_on_real_workers_are_judged_once_and_alike():
    pool = ExprWorkerPool(size=2)
    assert pool.wait_until_idle(120)
    sent = []
    real = pool._check
    try:
        with mock.patch.object(pool, "_check", side_effect=lambda *a: sent.append(a[1]) or real(*a)):
            answers = ["\\frac{\\sqrt{2}}{2}", "\\sqrt{3}"] * 4
            with_threads: list = [None] * len(answers)
            threads = [
                threading.Thread(
                    target=lambda i=i: with_threads.__setitem__(i, pool.check("1/\\sqrt{2}", answers[i], 6, 5.0))
                )
                for i in range(len(answers))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
        assert [(r.status, r.equal) for r in with_threads] == [("ok", True), ("ok", False)] * 4
        assert sorted(set(sent)) == sorted(set(answers)) and len(sent) == 2
    finally:
        pool.close()


def test_a_pool_that_remembers_nothing_runs_every_check():
    pool = ExprWorkerPool(size=1, verdicts=0)
    pool._ready = True
    with mock.patch.object(pool, "_tested_check", return_value=EQUAL) as tested:
        assert pool.check("x^2", "x*x", 6, 1.0) is EQUAL and pool.check("x^2", "x*x", 6, 1.0) is EQUAL
    assert tested.call_count == 2
    with pytest.raises(ValueError, match="verdicts must be at least 0"):
        ExprWorkerPool(verdicts=-1)


def test_the_environment_sets_how_many_verdicts_are_remembered(monkeypatch):
    from verifiers.expressions.pool import configure_expr_pool, get_expr_pool

    monkeypatch.setenv("GENRM_EXPR_VERDICTS", "0")
    try:
        assert configure_expr_pool()._verdicts is None
        monkeypatch.setenv("GENRM_EXPR_VERDICTS", "7")
        assert configure_expr_pool()._verdicts._entries == 7
    finally:
        monkeypatch.delenv("GENRM_EXPR_VERDICTS")
        configure_expr_pool()
    assert get_expr_pool()._verdicts._entries == 4096


def test_what_a_target_s_test_found_under_one_deadline_is_not_taken_for_another():
    # a target that cannot be compared within 0.1 s and can within 5 s: one caller's short deadline must not make it
    # a rubric error for a caller with a longer one, nor the other way round
    pool = ExprWorkerPool(size=1, verdicts=0)
    pool._ready = True

    def check(target, predict, float_rounding, deadline_s, wait_s, attempt=0):
        if deadline_s < 1:
            return ExprOutcome("timeout", False, f"the expression check did not finish within {deadline_s:g} s")
        return ExprOutcome("ok", predict == "2", "compared")

    with mock.patch.object(pool, "_check", side_effect=check):
        assert pool.check("x", "3", 6, 0.1).status == "unparseable_target"
        assert pool.check("x", "2", 6, 5.0).status == "ok"
        assert pool.check("x", "2", 6, 0.1).status == "unparseable_target"  # still known under its own deadline
