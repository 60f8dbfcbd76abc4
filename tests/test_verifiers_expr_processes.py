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

from verifiers.expr_pool import ExprWorkerPool
from verifiers.expr_processes import SubprocessLauncher, ZygoteLauncher

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
        from verifiers.expr_pool import ExprWorkerPool, tenant
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
        with mock.patch("verifiers.expr_pool.make_launcher", return_value=launcher):
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
