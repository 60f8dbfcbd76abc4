"""Expression worker processes: forked from a zygote on Linux, killed by a handle that names only them, and gone
when the process that owns them goes, however it goes."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from unittest import mock

import pytest
from slow_expressions import SLOW

from verifiers.expressions.pool import ExprWorkerPool
from verifiers.expressions.processes import SubprocessLauncher, ZygoteLauncher

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote needs Linux")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's bookkeeping remains


def _wait_gone(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        left = [pid for pid in pids if _alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return left


@linux_only
def test_the_pool_forks_its_workers_from_a_zygote():
    pool = ExprWorkerPool(size=2)
    try:
        assert pool.wait_until_idle(120)
        assert isinstance(pool._launcher, ZygoteLauncher)
        zygote = pool._launcher._proc.pid
        for worker in pool._idle.idle():
            ppid = int(Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            assert ppid == zygote
        outcome = pool.check("x^2", "x*x", 6, 5.0)
        assert (outcome.status, outcome.equal) == ("ok", True)
    finally:
        pool.close()


@linux_only
def test_a_killed_zygote_takes_its_workers_and_is_started_again():
    pool = ExprWorkerPool(size=1)
    try:
        assert pool.wait_until_idle(120)
        zygote, worker = pool._launcher._proc.pid, pool._idle.idle()[0].pid
        os.kill(zygote, signal.SIGKILL)
        assert _wait_gone([worker]) == []  # PR_SET_PDEATHSIG
        statuses = []
        for _ in range(20):
            outcome = pool.check("x^2", "x*x", 6, 5.0, wait_s=30.0)
            statuses.append(outcome.status)
            if outcome.status == "ok":
                break
        assert statuses[-1] == "ok" and set(statuses) <= {"error", "ok"}, statuses
        assert pool._launcher._proc.pid != zygote
    finally:
        pool.close()


@linux_only
def test_nothing_outlives_a_server_killed_with_sigkill():
    program = textwrap.dedent(
        """
        import time
        from verifiers.expressions.pool import ExprWorkerPool, tenant
        import threading
        pool = ExprWorkerPool(size=2)
        assert pool.wait_until_idle(120)
        threading.Thread(target=pool.check, args=("5", SLOW_CHECK, 6, 600.0), daemon=True).start()
        time.sleep(0.5)  # one worker is busy with an endless check
        print(pool._launcher._proc.pid, *(w.pid for w in pool._all), flush=True)
        time.sleep(600)
        """
    ).replace("SLOW_CHECK", repr(SLOW))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    server = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pids = [int(p) for p in server.stdout.readline().split()]
        assert len(pids) == 3 and all(_alive(pid) for pid in pids)
        server.kill()
        server.wait(timeout=30)
        assert _wait_gone(pids) == []
    finally:
        server.kill()


def test_the_subprocess_launcher_serves_where_no_zygote_can():
    pool = ExprWorkerPool(size=1)
    launcher = SubprocessLauncher(memory_mb=2048, start_timeout_s=120.0)
    try:
        with mock.patch("verifiers.expressions.pool.make_launcher", return_value=launcher):
            assert pool.wait_until_idle(120)
        assert (pool.check("x^2", "x*x", 6, 5.0).status, pool.check("5", SLOW, 6, 0.5).status) == (
            "ok",
            "timeout",
        )
        assert pool.wait_until_idle(120)
        assert pool.check("\\frac{1}{2}", "0.5", 6, 5.0).equal
    finally:
        pool.close()


@linux_only
def test_a_zygote_refuses_a_request_without_two_descriptors():
    launcher = ZygoteLauncher(memory_mb=2048, start_timeout_s=120.0)
    try:
        with pytest.raises(RuntimeError, match="refused to fork"):
            launcher._fork([])
        worker = launcher.launch()  # still serving
        worker.send({"target": "2", "predict": "2", "float_rounding": 6})
        deadline = time.monotonic() + 30
        assert worker.receive(deadline) == {"target": "read"}
        assert worker.receive(deadline)["equal"] is True
        worker.kill()
    finally:
        launcher.close()


def test_cut_checks_end_at_once_and_leave_the_pool_whole():
    # two checks that would each hold a worker for minutes, in threads of their own, as a group's checks run; their
    # caller is cut (Ctrl-C, a stop signal) and cuts them
    import threading

    from slow_expressions import slow_sum

    from verifiers.expressions.pool import _FairQueue

    pool = ExprWorkerPool(size=2, verdicts=0)
    try:
        assert pool.wait_until_idle(120)
        before = {worker.pid for worker in pool._idle.idle()}
        outcomes: list = []
        threads = [threading.Thread(target=lambda k=k: outcomes.append(pool.check(slow_sum(k), "1", 6, 60.0)))
                   for k in range(2)]  # fmt: skip
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while (pool._idle.idle() or pool._idle.waiting()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not pool._idle.idle()  # both are checking
        start = time.monotonic()
        pool.cut()
        for thread in threads:
            thread.join(30)
        cut_s = time.monotonic() - start
        during = pool.check("x^2", "x*x", 6, 5.0)  # a check while the cut lasts ends at once too
        pool.resume()
        assert cut_s < 5.0 and [o.status for o in outcomes] == ["error", "error"] and during.status == "error"
        assert "cut" in outcomes[0].reason
        after = pool.check("x^2", "x*x", 6, 5.0)
        assert (after.status, after.equal) == ("ok", True)
        assert pool.wait_until_idle(60) and len(pool._all) == 2  # replaced, once each
        assert not before & {worker.pid for worker in pool._idle.idle()}
        assert _wait_gone(list(before)) == []
        assert isinstance(pool._idle, _FairQueue) and pool._idle.long_running() == 0
    finally:
        pool.close()


def test_a_check_cut_in_its_own_thread_gives_its_worker_back_once():
    # Ctrl-C while the calling thread itself waits for a check: the exception leaves, the worker it held is killed
    # and replaced, and the pool keeps its size
    pool = ExprWorkerPool(size=1, verdicts=0)
    try:
        assert pool.wait_until_idle(120)
        (held,) = pool._idle.idle()
        previous = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        try:
            with pytest.raises(KeyboardInterrupt):
                pool.check(SLOW, "1", 6, 60.0)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert _wait_gone([held.pid]) == []
        pool.reclaim()  # nothing else was held: it changes nothing
        outcome = pool.check("x^2", "x*x", 6, 5.0)
        assert (outcome.status, outcome.equal) == ("ok", True) and len(pool._all) == 1
    finally:
        pool.close()
