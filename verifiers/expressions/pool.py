"""A pool of expression worker processes with a hard per-call deadline, usable from any thread or event loop.

Symbolic algebra cannot be bounded by input size alone (``10^{10^{10^{10}}}`` is 19 characters), and Python offers
no safe way to interrupt a thread, while ``SIGALRM`` works only in the main thread of the main interpreter. So each
check runs in a worker process (``processes``); when the answer does not arrive before the deadline,
the worker is killed and a fresh one takes its place in the background (forked from a warmed-up zygote on Linux, in
milliseconds).

Workers are started on first use, and that start (about a second: Python, sympy and Math-Verify are imported) is not
counted against the deadline of the call that triggers it; call :func:`warm_up` at start-up to pay it early.

Time is split three ways, so that each failure is blamed on what caused it:

- **waiting for a free worker** is bounded by its own ``wait_s``; a call that gets none in that time has status
  ``busy``: the pool was overloaded, nothing was judged, and it is never a score;
- **reading the target** has ``deadline_s`` from when the worker takes the call; a target that cannot be read in that
  time (or in the worker's memory) has status ``unparseable_target``: a rubric error, not the response's;
- **reading and comparing the prediction** has ``deadline_s`` from when the target was read. Past it, the target is
  put to the test it would fail if it were to blame, a comparison with ``0`` under the same deadline (only then, so
  that no check pays for it otherwise): when that also runs out, the status is ``unparseable_target``
  (``10^{10^{10^{10}}}`` parses at once, but comparing it with anything evaluates it), else ``timeout``. The
  outcome is remembered, under the deadline it was found with: the next checks against a target found unreadable
  answer at once, and one found readable is not tested again (so hostile predictions against one target cost one
  test, not one each); a caller with another deadline tests it again.

A worker that dies under a check (killed while idle, a crash inside a library) is replaced, and the check runs once
more on a fresh worker; a check that kills its worker twice is judged as one that ran out (``unparseable_target``
when the target was not read yet, else ``timeout``), never reported as an ``error``.

Two lanes keep slow checks from crowding out quick ones. Every check starts in the *first slice* (``first_slice_s``,
0.25 s by default; almost every real expression is judged within it). A check still running at the end of its slice
becomes a *long* check, and at most ``size - 1`` long checks run at once (1 when ``size`` is 1), so a worker is
always left for first slices: when every long slot is taken, the check is stopped and runs again from the start, with
its whole deadline, when a slot frees (waiting for it is again bounded by ``wait_s``). Fifty checks that each take
their whole deadline therefore delay a correct expression by at most a few first slices, not by their deadlines.

Within a lane, free workers are handed out fairly between *tenants* (the server names one per request, see
:func:`tenant`): when several wait, the next free worker goes to the tenant that has waited longest for a turn, not
to whoever queued first. A process that forks gets a new pool on first use.

A check the pool has decided before (the same target, prediction and rounding: a group's equal answers) is answered
from memory, and one that is running for another caller is waited for rather than run twice
(``verdicts``).

Configuration: ``GENRM_EXPR_WORKERS`` (default 2), ``GENRM_EXPR_WORKER_MEMORY_MB`` (default 2048),
``GENRM_EXPR_FIRST_SLICE_S`` (default 0.25) and ``GENRM_EXPR_VERDICTS`` (verdicts remembered, default 4096; 0: none)
in the environment, or :func:`configure_expr_pool`.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import math
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator

from verifiers.expressions.processes import Launcher, Worker, make_launcher
from verifiers.expressions.verdicts import ExprOutcome, VerdictMemo

logger = logging.getLogger(__name__)

# The prediction a target is compared with when a check runs out of time, to tell whose fault it was.
_PROBE = "0"
_TESTED_TARGETS = 1024


class _Call:
    """One request on one worker, with the deadline of each phase counted from when that phase started."""

    def __init__(self, worker: Worker, payload: dict, deadline_s: float) -> None:
        self.worker, self.deadline_s = worker, deadline_s
        worker.send(payload)
        self.started = time.monotonic()
        self.target_read_at: float | None = None

    def wait(self, until: float) -> dict | None:
        """The answer; None when ``until`` (``time.monotonic()``) comes first. Raises TimeoutError when the current
        phase passes its deadline, EOFError or OSError when the worker died, ValueError on a garbled line."""
        while True:
            phase_end = (self.target_read_at or self.started) + self.deadline_s
            try:
                answer = self.worker.receive(min(phase_end, until))
            except TimeoutError:
                if until < phase_end:
                    return None
                raise
            if self.target_read_at is None and answer == {"target": "read"}:
                self.target_read_at = time.monotonic()
                continue
            return answer


_tenant: contextvars.ContextVar[tuple[str, float | None]] = contextvars.ContextVar(
    "expr_pool_tenant", default=("", None)
)


@contextlib.contextmanager
def tenant(name: str, budget_s: float | None = None) -> Iterator[None]:
    """Run the expression checks of this block as tenant ``name`` of the fair queue, waiting for workers at most
    ``budget_s`` seconds from now in all (then ``busy``), whatever each check's own ``wait_s``.

    Applies to this thread, and to the threads started from it with a copy of its context (``anyio.to_thread``,
    ``asyncio.to_thread``, ``contextvars.copy_context().run``).
    """
    end = None if budget_s is None else time.monotonic() + budget_s
    token = _tenant.set((name, end))
    try:
        yield
    finally:
        _tenant.reset(token)


class _Ticket:
    __slots__ = ("worker",)

    def __init__(self) -> None:
        self.worker: Worker | None = None


class _FairQueue:
    """Idle workers, handed to waiting callers round-robin over tenants (FIFO within a tenant), in two lanes.

    A caller of the long lane is served first while fewer than ``long_slots`` long checks run, and holds a long slot
    from then until :meth:`end_long`; callers of the first-slice lane take any worker the long lane does not.
    """

    def __init__(self, long_slots: int) -> None:
        self._cond = threading.Condition()
        self._idle: deque[Worker] = deque()
        self._waiting: dict[bool, OrderedDict[str, deque[_Ticket]]] = {False: OrderedDict(), True: OrderedDict()}
        self._long_slots = long_slots
        self._long = 0
        self._closed = False
        self._cut = False

    def _hand_out(self, long: bool) -> None:
        waiting = self._waiting[long]
        name, tickets = next(iter(waiting.items()))
        # The worker that came back last goes out first: its caches (sympy's, Math-Verify's, the parsed targets of a
        # group) are warm, and the others stand by for the checks that run long.
        tickets.popleft().worker = self._idle.pop()
        del waiting[name]
        if tickets:  # the tenant goes to the back of the line for its next check
            waiting[name] = tickets
        self._long += long

    def _dispatch(self) -> None:
        while self._idle:
            if self._waiting[True] and self._long < self._long_slots:
                self._hand_out(True)
            elif self._waiting[False]:
                self._hand_out(False)
            else:
                break
        self._cond.notify_all()

    def put(self, worker: Worker) -> None:
        """Return a worker (or add a new one) to the idle set."""
        with self._cond:
            self._idle.append(worker)
            self._dispatch()

    def get(self, name: str, timeout_s: float, long: bool = False) -> Worker | None:
        """An idle worker for tenant ``name`` in the given lane (a long one comes with a long slot), or None when
        none was handed over within ``timeout_s`` seconds."""
        end = time.monotonic() + timeout_s
        ticket = _Ticket()
        waiting = self._waiting[long]
        with self._cond:
            waiting.setdefault(name, deque()).append(ticket)
            self._dispatch()
            while ticket.worker is None:
                remaining = end - time.monotonic()
                if remaining <= 0 or self._closed or self._cut:
                    tickets = waiting.get(name)
                    if tickets is not None and ticket in tickets:
                        tickets.remove(ticket)
                        if not tickets:
                            del waiting[name]
                    return None
                self._cond.wait(remaining)
            return ticket.worker

    def set_cut(self, cut: bool) -> None:
        """While ``cut``, send every waiting caller away empty-handed (see :meth:`ExprWorkerPool.cut`)."""
        with self._cond:
            self._cut = cut
            self._cond.notify_all()

    def forget_waiting(self) -> None:
        """Drop every waiting caller and long slot: for a process whose every check was cut (see
        :meth:`ExprWorkerPool.reclaim`), where none of them waits any longer."""
        with self._cond:
            self._waiting = {False: OrderedDict(), True: OrderedDict()}
            self._long = 0

    def close(self) -> None:
        """Send every waiting caller away empty-handed, now and from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def begin_long(self) -> bool:
        """Take a long slot for a check already running, if one is free."""
        with self._cond:
            if self._long >= self._long_slots:
                return False
            self._long += 1
            return True

    def end_long(self) -> None:
        """Give back a long slot."""
        with self._cond:
            self._long -= 1
            self._dispatch()

    def waiting(self, long: bool | None = None) -> int:
        """Callers waiting for a worker now, in one lane or (None) in both."""
        with self._cond:
            lanes = (False, True) if long is None else (long,)
            return sum(len(t) for lane in lanes for t in self._waiting[lane].values())

    def long_running(self) -> int:
        """Long checks running now."""
        with self._cond:
            return self._long

    def idle(self) -> list[Worker]:
        """The idle workers now (for inspection)."""
        with self._cond:
            return list(self._idle)


class ExprWorkerPool:
    """A fixed number of expression workers shared by all threads of a process.

    Args:
        size: number of worker processes (each holds sympy and Math-Verify, about 150 MB, shared with the zygote
            until written).
        memory_mb: address-space limit of each worker in MiB; an expression that needs more gets status timeout.
        start_timeout_s: how long a worker may take to start before the start counts as failed.
        first_slice_s: seconds a check may run before it counts as long (see the module docstring); > 0.
        verdicts: how many decided checks are remembered (``verdicts``); 0 remembers none and runs
            every check, equal ones too.
    """

    def __init__(
        self,
        size: int = 2,
        memory_mb: int = 2048,
        start_timeout_s: float = 60.0,
        first_slice_s: float = 0.25,
        verdicts: int = 4096,
    ) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        if memory_mb < 256:
            raise ValueError(f"memory_mb must be at least 256, got {memory_mb}")
        if not first_slice_s > 0:
            raise ValueError(f"first_slice_s must be positive, got {first_slice_s}")
        if verdicts < 0:
            raise ValueError(f"verdicts must be at least 0, got {verdicts}")
        self.size, self.memory_mb, self.start_timeout_s = size, memory_mb, start_timeout_s
        self.first_slice_s = first_slice_s
        self._idle = _FairQueue(long_slots=max(1, size - 1))
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._launcher: Launcher | None = None
        self._ready = False
        self._closed = False
        self._cutting = False
        self._start_error: str | None = None
        # targets put to the test once (see the module docstring), under a rounding and a deadline (what one caller
        # learns under a short deadline says nothing of a longer one): None when readable, else why not
        self._targets_tested: OrderedDict[tuple[str, int, float], str | None] = OrderedDict()
        self._verdicts = VerdictMemo(verdicts) if verdicts else None

    def _spawn_into_idle(self) -> Worker | None:
        # the worker joins the pool and the idle set at once (under the lock): reclaim() never finds it in between
        try:
            assert self._launcher is not None
            worker = self._launcher.launch()
        except Exception as exc:  # noqa: BLE001 - any start failure is reported to callers as status "error"
            self._start_error = f"{type(exc).__name__}: {exc}"
            if not self._closed:
                logger.error("expression worker failed to start: %s", self._start_error)
            return None
        with self._lock:
            if self._closed:
                worker.kill()
                return None
            self._all.add(worker)
            self._idle.put(worker)
        return worker

    def start(self) -> None:
        """Start the workers; returns once the first is ready. Raises RuntimeError when it cannot start."""
        if self._ready:
            return
        with self._start_lock:  # concurrent first callers wait here, outside any call's deadline
            if self._ready:
                return
            if self._launcher is None:
                self._launcher = make_launcher(self.memory_mb, self.start_timeout_s)
            if self._spawn_into_idle() is None:
                raise RuntimeError(f"the expression worker could not start: {self._start_error}")
            for _ in range(self.size - 1):
                threading.Thread(target=self._spawn_into_idle, daemon=True).start()
            self._ready = True

    def _retire(self, worker: Worker) -> None:
        # once per worker: a second retire of the same one (a cut check's, then reclaim's) starts no second worker
        with self._lock:
            present = worker in self._all
            self._all.discard(worker)
        worker.kill()
        if present and not self._closed:
            threading.Thread(target=self._spawn_into_idle, daemon=True).start()

    def cut(self) -> None:
        """Stop every check of this process now: the workers checks hold are killed (and replaced), those waiting
        for a worker are sent away, and every check ends at once with status ``error`` until :meth:`resume`. For a
        caller whose work was cut (Ctrl-C, a stop signal) while its checks run in other threads, which would
        otherwise run to their deadlines; a process that scores other callers' work meanwhile must not call it."""
        self._cutting = True
        self._idle.set_cut(True)
        with self._lock:
            idle = set(self._idle.idle())
            held = [worker for worker in self._all if worker not in idle]
        for worker in held:  # the thread reading its answer sees it end, and retires it
            worker.terminate()

    def resume(self) -> None:
        """End a :meth:`cut` once its checks have returned: the pool is made whole (:meth:`reclaim`) and checks run
        again."""
        self.reclaim()
        self._idle.set_cut(False)
        self._cutting = False

    def reclaim(self) -> None:
        """Make the pool whole again after every check of this process was cut by an exception raised in the thread
        running it (a stop signal's, Ctrl-C): each worker a cut check held is killed and replaced (forked from the
        zygote: milliseconds), and the callers and checks the pool counted as waiting or running are forgotten.

        Only for a process where no check runs any longer (a scoring worker between requests): a check running in
        another thread would lose its worker."""
        with self._lock:
            idle = set(self._idle.idle())
            held = [worker for worker in self._all if worker not in idle]
        for worker in held:
            self._retire(worker)
        self._idle.forget_waiting()
        if self._verdicts is not None:
            self._verdicts.forget_running()

    def check(
        self, target: str, predict: str, float_rounding: int, deadline_s: float, wait_s: float | None = None
    ) -> ExprOutcome:
        """Compare two expressions. Never raises; failures come back as a status (see the module docstring).

        Args:
            target, predict: the two expressions, as written.
            float_rounding: decimal places for numeric comparison.
            deadline_s: seconds for reading the target, and again for reading and comparing the prediction.
            wait_s: seconds to wait for free workers in all (default: ``deadline_s``); then status ``busy``.
        """
        try:
            self.start()
        except RuntimeError as exc:
            return ExprOutcome("error", False, str(exc))
        wait_s = deadline_s if wait_s is None else wait_s
        # The same check running for another caller (a group's equal answers) is waited for, no longer than this
        # check could take itself: its wait for a worker and its two deadlines.
        if self._verdicts is None:
            return self._tested_check(target, predict, float_rounding, deadline_s, wait_s)
        claim = self._verdicts.claim((target, predict, float_rounding), wait_s + 2 * deadline_s)
        if claim.verdict is not None:
            return claim.verdict
        outcome = None
        try:
            outcome = self._tested_check(target, predict, float_rounding, deadline_s, wait_s)
        finally:
            self._verdicts.settle((target, predict, float_rounding), outcome, claim.leads)
        return outcome

    def _tested_check(
        self, target: str, predict: str, float_rounding: int, deadline_s: float, wait_s: float
    ) -> ExprOutcome:
        # A check, and the target's test when the check runs out of time (see the module docstring).
        key = (target, float_rounding, deadline_s)
        with self._lock:
            tested = key in self._targets_tested
            known = self._targets_tested.get(key)
        if known is not None:
            return ExprOutcome("unparseable_target", False, known)
        outcome = self._check(target, predict, float_rounding, deadline_s, wait_s)
        if outcome.status != "timeout" or predict == _PROBE or tested:
            return outcome
        probe = self._check(target, _PROBE, float_rounding, deadline_s, wait_s)
        if probe.status in ("busy", "error"):  # the test could not run: nothing is learnt about the target
            return outcome
        unreadable = probe.status in ("timeout", "unparseable_target")
        reason = f"the target cannot be compared with a number within {deadline_s:g} s" if unreadable else None
        with self._lock:
            self._targets_tested[key] = reason
            while len(self._targets_tested) > _TESTED_TARGETS:
                self._targets_tested.popitem(last=False)
        return ExprOutcome("unparseable_target", False, reason) if reason else outcome

    def _check(
        self, target: str, predict: str, float_rounding: int, deadline_s: float, wait_s: float, attempt: int = 0
    ) -> ExprOutcome:
        cut = self._closed_outcome()
        if cut is not None:
            return cut
        name, end = _tenant.get()
        wait_end = time.monotonic() + wait_s if end is None else min(time.monotonic() + wait_s, end)
        busy = ExprOutcome("busy", False, f"no expression worker was free within {wait_s:g} s (server busy)")
        worker = self._idle.get(name, max(0.0, wait_end - time.monotonic()))
        if worker is None:
            return self._closed_outcome() or busy
        payload = {"target": target, "predict": predict, "float_rounding": float_rounding}
        call: _Call | None = None
        long = False
        died: str | None = None
        try:
            call = _Call(worker, payload, deadline_s)
            answer = call.wait(call.started + self.first_slice_s)
            if answer is None and self._idle.begin_long():
                long = True
                answer = call.wait(math.inf)
            elif answer is None:  # every long slot is taken: stop, and start again when one is free
                self._retire(worker)
                worker = self._idle.get(name, max(0.0, wait_end - time.monotonic()), long=True)
                if worker is None:
                    return self._closed_outcome() or busy
                long = True
                call = _Call(worker, payload, deadline_s)
                answer = call.wait(math.inf)
        except TimeoutError:
            self._retire(worker)
            if call is None or call.target_read_at is None:
                return ExprOutcome(
                    "unparseable_target", False, f"the target could not be read within {deadline_s:g} s"
                )
            return ExprOutcome("timeout", False, f"the expression check did not finish within {deadline_s:g} s")
        except (EOFError, OSError, ValueError) as exc:
            self._retire(worker)
            died = str(exc) or type(exc).__name__
        except BaseException:  # the check was cut (Ctrl-C, a stop signal): its worker may still be computing
            self._retire(worker)
            raise
        finally:
            if long:
                self._idle.end_long()
        if died is not None:
            return self._after_death(died, call, (target, predict, float_rounding, deadline_s, wait_s), attempt)
        self._idle.put(worker)
        status, reason = str(answer.get("status")), str(answer.get("reason", ""))
        if call.target_read_at is None and status in ("timeout", "unparseable_pred"):  # limits hit by the target
            return ExprOutcome("unparseable_target", False, f"the target could not be read: {reason}")
        return ExprOutcome(status, bool(answer.get("equal")), reason)

    def _after_death(self, died: str, call: _Call | None, request: tuple, attempt: int) -> ExprOutcome:
        # A worker can die under a check for reasons of its own (killed while idle, a crash in a library): the check
        # runs once more on a fresh worker. Dying twice on the same check is the check's doing, judged as one that ran
        # out: the target's when it was not read yet, else the prediction's. Never "error", which callers turn into a
        # server error.
        cut = self._closed_outcome()
        if cut is not None:
            return cut
        if attempt == 0:
            logger.warning("an expression worker died during a check (%s); running it again on a fresh worker", died)
            return self._check(*request, attempt=1)
        if call is None or call.target_read_at is None:
            return ExprOutcome("unparseable_target", False, f"the expression worker died twice reading the target "
                               f"({died})")  # fmt: skip
        return ExprOutcome("timeout", False, f"the expression worker died twice on this check ({died}), as a check "
                           "that runs out would")  # fmt: skip

    def _closed_outcome(self) -> ExprOutcome | None:
        if self._closed:
            return ExprOutcome("error", False, "the expression worker pool was closed")
        if self._cutting:
            return ExprOutcome("error", False, "the check was cut: its caller stopped")
        return None

    def wait_until_idle(self, timeout_s: float = 60.0) -> bool:
        """Start the pool and wait until all ``size`` workers are up and idle (those killed at a deadline are
        replaced in the background); True when they are, False after ``timeout_s`` seconds. A server need not call
        it; it lets a caller measure a check's own time apart from the wait for a worker."""
        self.start()
        end = time.monotonic() + timeout_s
        while len(self._idle.idle()) < self.size:
            if time.monotonic() > end:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        """Kill every worker. The pool cannot be used afterwards."""
        with self._lock:
            self._closed = True
            workers, self._all = list(self._all), set()
        self._idle.close()
        idle = set(self._idle.idle())
        for worker in workers:
            # A worker in use is only stopped: the thread waiting on it sees it end and closes its pipes.
            (worker.kill if worker in idle else worker.terminate)()
        if self._launcher is not None:
            self._launcher.close()


_pool: ExprWorkerPool | None = None
_pool_pid: int | None = None
_pool_lock = threading.Lock()


def _env_number(name: str, default: float, kind: type[int] | type[float] = int) -> float:
    value = os.environ.get(name)
    try:
        return kind(value) if value else default
    except ValueError:
        raise ValueError(f"{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None


def configure_expr_pool(
    size: int | None = None,
    memory_mb: int | None = None,
    first_slice_s: float | None = None,
    verdicts: int | None = None,
) -> ExprWorkerPool:
    """Replace the process-wide pool with one of the given size, memory limit (MiB), first slice (seconds) and number
    of remembered verdicts; the old one is closed. Unset arguments come from the environment (see the module
    docstring)."""
    global _pool, _pool_pid
    new = ExprWorkerPool(
        size=size if size is not None else int(_env_number("GENRM_EXPR_WORKERS", 2)),
        memory_mb=memory_mb if memory_mb is not None else int(_env_number("GENRM_EXPR_WORKER_MEMORY_MB", 2048)),
        first_slice_s=first_slice_s
        if first_slice_s is not None
        else _env_number("GENRM_EXPR_FIRST_SLICE_S", 0.25, float),
        verdicts=verdicts if verdicts is not None else int(_env_number("GENRM_EXPR_VERDICTS", 4096)),
    )
    with _pool_lock:
        old, old_pid = _pool, _pool_pid
        _pool, _pool_pid = new, os.getpid()
    if old is not None and old_pid == os.getpid():  # a forked child must not kill its parent's workers
        old.close()
    return new


def get_expr_pool() -> ExprWorkerPool:
    """The process-wide pool, created on first use (and again in a forked child)."""
    with _pool_lock:
        if _pool is not None and _pool_pid == os.getpid():
            return _pool
    return configure_expr_pool()


def expression_workers() -> int:
    """How many expression checks can run at once in this process (the pool's size)."""
    return get_expr_pool().size


@contextlib.contextmanager
def cut_checks() -> Iterator[None]:
    """Within this block every expression check of this process is cut (see :meth:`ExprWorkerPool.cut`); on leaving
    it, the pool is whole again. For a caller cut while its checks run in other threads: it cuts them, then waits for
    those threads, then goes on (or stops)."""
    pool = get_expr_pool()
    pool.cut()
    try:
        yield
    finally:
        pool.resume()


def warm_up(wait: bool = True) -> None:
    """Start the expression workers now, so that the first expression check does not wait for them (about a second
    in a fresh process: Python, sympy and Math-Verify imported, each kind of comparison run once).

    With ``wait=False`` the start runs in a background thread and this returns at once: a caller that will check
    expressions soon (a reward function being built) pays nothing, and a check that comes first waits only for what
    is left of the start. A start that fails there is reported by the first check, as it would be without warming.
    """
    pool = get_expr_pool()
    if wait:
        pool.start()
        return

    def start_quietly() -> None:
        with contextlib.suppress(RuntimeError):
            pool.start()

    threading.Thread(target=start_quietly, name="expr-warm-up", daemon=True).start()


@atexit.register
def _close_pool() -> None:
    if _pool is not None and _pool_pid == os.getpid():
        _pool.close()
