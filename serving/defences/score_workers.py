"""Large ``/v1/score`` requests scored in worker processes, so that one client's CPU work cannot slow another's.

Under the rule judge every step of a request is CPU work: parsing, reading, verifying, serialising. The threads of one
process share one interpreter, so however fair the server's queues are, each step of a cheap request waits behind
the steps of every heavy request under way (six clients sending groups of 6 MB took another client's p99 from 10 ms
to 1 s). So a request that is not cheap (:func:`scored_inline`) is handed, as the bytes that came, to one of
``score_workers`` worker processes. The worker parses, checks, reads, scores and serialises it, and sends back the
answer's bytes, the record log's lines and the counts for ``/metrics``. The operating system shares the cores
between processes, and the workers run at a lower priority (nice +10), so a cheap request handled in the server's own
process is answered at once.

- **Fair**: two lanes, each one worker per request at a time, handed out round-robin over requests
  (:class:`FairSlots`). A request whose body is at most ``score_light_bytes`` goes to the light lane (one request at a
  time, nice +5, a stopped worker replaced at once) and has ``score_light_slice_s`` there: past it, its worker is
  stopped and the request scored again from the start in the heavy lane (``size`` workers, nice +10), where every
  larger request goes. A light request therefore never waits behind a heavy one, and behind another light one at most
  for its slice: a worker held for a whole request made the round robin fair between whole requests, not between their
  work (six clients sending 800 kB of opening ``\\(`` put an 18 kB request's p99 at 14.9 s).
- **Stopped in place**: at a slice's end, past ``score_timeout_s`` and when the client leaves, the worker is sent
  ``SIGUSR1``: it cuts its request where it is (its expression worker, if checking, is killed and forked again from
  its zygote in milliseconds), answers, and takes the next request, so no worker has to start again (seconds, under
  load). One that has not answered within ``_STOP_GRACE_S`` (work in C that does not return) is killed and replaced.
- **Deadline**: past ``score_timeout_s`` the request is refused with 503: a failed judgement, never a reward.
- **Memory**: a worker's address space is capped at ``score_worker_memory_mb`` above what it holds once ready
  (``RLIMIT_AS``, inherited by its expression worker): a request that needs more is refused with 413 and the worker
  replaced, where a 26 MB body once took a worker to 1.7 GB.
- **Images**: the worker names the request's image references; the server reads them (in its own image workers,
  :mod:`serving.images`) and sends the request again with them read.
- **Where it applies**: the rule judge, on a server whose method and judge come from its settings (the worker builds
  its own from them). With a model judge, the judge's budget (``max_judge_calls``, ``max_judge_bytes``) bounds a
  request's CPU work, and requests are scored in the server's process.
- **Expression checks** of a request scored in a worker run in that worker's own expression pool (one process,
  started on its first check).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import traceback
import uuid
from collections.abc import Sequence
from typing import Any

import anyio

from serving.defences.fair_slots import FairSlots
from serving.defences.worker_processes import WorkerDied, WorkerProcesses, process_bytes
from serving.group_checks import WHERE

logger = logging.getLogger("genrm.serving")

#: A request is scored in the server's own process when its body is at most this many bytes ...
INLINE_BODY_BYTES = 16 * 2**10
#: ... and its responses times its body's bytes are at most this (a few ms of work); else in a worker.
INLINE_WORK = 256 * 2**10
_HEAVY_NICE, _LIGHT_NICE = 10, 5
# Workers the light lane keeps ready. A second one (about 250 MB with its expression worker) did not keep the lane
# free of clients whose light requests each run past the slice: each stopped worker takes seconds to replace.
_LIGHT_READY = 1
# How long a worker told to stop its request has to answer before it is killed; and, once stopped, how long its engine
# loop has to be free of the cut request before the worker is no longer trusted.
# Both are far above what a stop takes (milliseconds) so that a loaded machine is not taken for a stuck worker.
_STOP_GRACE_S, _STOP_SETTLE_S = 1.0, 1.0
# An error met this close to the address-space cap is the cap's doing: an allocation refused inside a library's native
# code can surface as another error than MemoryError (pydantic-core raises AttributeError "This object has no
# __dict__"), and the request is refused for its memory (413) rather than answered 500.
_NEAR_CAP_BYTES = 64 * 2**20
# A worker that holds this much more memory than when it started leaves after its request: the memory a large
# request took is not given back to the system while the process lives.
_RETIRE_GROWTH = 256 * 2**20


def scored_inline(body_bytes: int, responses: int | None) -> bool:
    """Whether a request of ``body_bytes`` bytes with ``responses`` responses in all (None: not counted yet) is cheap
    enough to score in the server's own process."""
    if body_bytes > INLINE_BODY_BYTES:
        return False
    return responses is None or responses * body_bytes <= INLINE_WORK


class ScoreWorkers:
    """``size`` (>= 1) worker processes scoring ``/v1/score`` bodies for ``settings`` (see the module docstring),
    each request within ``settings.score_timeout_s``."""

    def __init__(self, settings: Any, size: int) -> None:
        self.size, self.timeout_s = size, settings.score_timeout_s
        self.light_bytes, self.light_slice_s = settings.score_light_bytes, settings.score_light_slice_s
        self._heavy = WorkerProcesses(_spawn, _serve, (settings, _HEAVY_NICE, False), _STOP_GRACE_S)
        # the light lane's workers start their expression worker with them: its start (a second or two) would take
        # more than a light request's slice
        self._light = WorkerProcesses(_spawn, _serve, (settings, _LIGHT_NICE, True), _STOP_GRACE_S)
        self._heavy_slots, self._light_slots = FairSlots(size, 1), FairSlots(1, 1)
        self._closed = False

    def start(self) -> None:
        """Start every worker now (blocking, a few seconds), instead of at the first request that needs one."""
        self._closed = False
        self._light.start(_LIGHT_READY)
        self._heavy.start(self.size)

    def start_in_background(self) -> None:
        """:meth:`start` in a thread of its own; a worker that cannot start is logged (and tried again on use)."""

        def start() -> None:
            try:
                self.start()
            except Exception:  # noqa: BLE001 - the request that needs one will report it
                logger.exception("the scoring workers did not start")

        threading.Thread(target=start, name="genrm-score-workers", daemon=True).start()

    async def score(self, tenant: str, raw: bytes, images: dict[int, str] | None) -> tuple[Any, ...]:
        """The outcome of scoring body ``raw`` (images read: ``images``, by group) in a worker, as request ``tenant``:
        ``("ok", answer, log_lines, counts)``, ``("images", [(group, reference), ...])``, ``("invalid", errors)``,
        ``("refused", status, loc, message, kind)``, ``("memory",)`` (past ``score_worker_memory_mb``) or
        ``("crash", text)``. Raises TimeoutError past the deadline, WorkerDied when the worker died."""
        if len(raw) <= self.light_bytes:
            async with self._light_slots.slot(tenant):
                try:
                    return await self._call(self._light, raw, images, min(self.light_slice_s, self.timeout_s))
                except TimeoutError:  # more work than its size said: stopped, and scored again in the heavy lane
                    self._replace_light()
                    if self.timeout_s <= self.light_slice_s:
                        raise
                except BaseException:  # its worker was stopped (its client left)
                    self._replace_light()
                    raise
        async with self._heavy_slots.slot(tenant):
            return await self._call(self._heavy, raw, images, self.timeout_s)

    @staticmethod
    async def _call(workers: WorkerProcesses, raw: bytes, images: dict[int, str] | None, timeout_s: float) -> Any:
        cancel = threading.Event()
        try:
            return await anyio.to_thread.run_sync(workers.call, (raw, images), timeout_s, cancel,
                                                  abandon_on_cancel=True)  # fmt: skip
        except BaseException:
            cancel.set()  # the request was cut (its client left, or shutdown): its worker is stopped
            raise

    def _replace_light(self) -> None:
        """Start the light lane's next worker now, in a thread, so the next light request does not wait for it."""

        if self._closed:
            return

        def start() -> None:
            with contextlib.suppress(Exception):  # the next light request starts one, or reports why it cannot
                self._light.start(_LIGHT_READY)

        threading.Thread(target=start, name="genrm-light-worker", daemon=True).start()

    def close(self) -> None:
        """Stop every worker, busy ones too."""
        self._closed = True
        self._light.close()
        self._heavy.close()


def _spawn() -> Any:
    # not fork: the server has threads; not the fork server: the image workers set its preloaded modules
    return multiprocessing.get_context("spawn")


def _serve(connection: Any, settings: Any, nice: int, warm: bool) -> None:
    """A worker at priority ``nice``: build the method and judge from ``settings`` (and start its expression worker
    now when ``warm``, else on its first check), then score each body it is sent."""
    from verifiers import warm_up
    from verifiers.expressions.pool import configure_expr_pool

    with contextlib.suppress(OSError):
        os.nice(nice)
    configure_expr_pool(size=1)  # a worker scores one request at a time
    scorer = _Scorer(settings)
    if warm:
        with contextlib.suppress(RuntimeError):  # a pool that cannot start is reported by the first check
            warm_up()
    _cap_memory(settings.score_worker_memory_mb)
    grown = process_bytes(1) + _RETIRE_GROWTH
    stop = _StopSignal()
    try:
        connection.send(("ready",))
        while True:
            raw, images = connection.recv()
            try:
                stop.armed = True
                outcome = scorer.run(raw, images)
            except _Stopped:
                outcome = ("stopped",)
            finally:
                stop.armed = False
            # out of memory, or stopped and not whole again: not trusted again
            retire = outcome[0] == "memory" or (outcome[0] == "stopped" and not _recovered())
            retire = retire or process_bytes(1) > grown
            connection.send((outcome, retire))
            if retire:
                return
    except (EOFError, OSError):  # the server has gone (stopped, or killed while this worker started): so does it
        return


class _Stopped(BaseException):
    """The server stopped this worker's request (``SIGUSR1``). Not an Exception: no handler of a request catches it."""


class _StopSignal:
    """Raises :class:`_Stopped` in this process's main thread at ``SIGUSR1`` while ``armed`` (a request runs); a
    signal that comes once its request is done is ignored."""

    def __init__(self) -> None:
        self.armed = False
        signal.signal(signal.SIGUSR1, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.armed:
            self.armed = False
            raise _Stopped


def _recovered() -> bool:
    """After a stopped request: its expression checks' workers replaced and its engine coroutine cancelled; whether
    this worker is whole again (else it leaves, and a fresh one starts)."""
    from genrm.engine.blocking import engine_responsive
    from verifiers.expressions.pool import get_expr_pool

    get_expr_pool().reclaim()
    return engine_responsive(_STOP_SETTLE_S)


def near_memory_cap(margin_bytes: int = _NEAR_CAP_BYTES) -> bool:
    """Whether this process's address space is within ``margin_bytes`` of its cap (False without one)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return soft != resource.RLIM_INFINITY and process_bytes(0) > soft - margin_bytes


def _cap_memory(memory_mb: int) -> None:
    """Cap this process's address space at ``memory_mb`` MiB above its size now (where the system allows)."""
    import resource

    limit = process_bytes(0) + memory_mb * 2**20
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class _Scorer:
    """What a worker needs to score a body: the server's method, judge and request model, made from its settings."""

    def __init__(self, settings: Any) -> None:
        from genrm.methods import check_judge
        from serving.payloads import score_request_model
        from serving.server_method import make_server_judge, make_server_method

        self.settings = settings
        self.method = make_server_method(settings)
        self.judge = make_server_judge(settings, self.method)
        check_judge(self.method, self.judge)
        self.request_model = score_request_model(self.method.instance_model)

    def run(self, raw: bytes, images: dict[int, str] | None) -> tuple[Any, ...]:
        from fastapi.exceptions import RequestValidationError

        from serving.errors import RequestError

        try:
            return self._run(raw, images)
        except RequestValidationError as exc:
            return ("invalid", list(exc.errors()))
        except RequestError as exc:
            (detail,) = exc.detail
            return ("refused", exc.status, detail["loc"], detail["msg"], detail["type"])
        except MemoryError:
            return ("memory",)
        except Exception:  # noqa: BLE001 - the server answers 500 and logs it
            if near_memory_cap():
                return ("memory",)
            return ("crash", traceback.format_exc(limit=20))

    def _run(self, raw: bytes, images: dict[int, str] | None) -> tuple[Any, ...]:
        from genrm.methods.base import IMAGE_FIELD
        from serving.defences.answers import answer_limit, bounded_answer
        from serving.defences.bodies import validated_body
        from serving.group_checks import check_group_count, check_limits
        from serving.record_log import record_lines

        settings = self.settings
        groups = validated_body(self.request_model, raw).groups  # type: ignore[attr-defined]
        check_group_count(settings, len(groups), WHERE)
        check_limits(settings, groups, WHERE)
        references = [(i, getattr(group, IMAGE_FIELD, None)) for i, group in enumerate(groups)]
        references = [(i, reference) for i, reference in references if isinstance(reference, str)]
        if references and images is None:
            return ("images", references)
        read = [group if images is None or i not in images else group.model_copy(update={IMAGE_FIELD: images[i]})
                for i, group in enumerate(groups)]  # fmt: skip
        results = score_blocking(self.method, self.judge, settings, read)
        counts = [(result.rewards or [], self.method.tally(result)) for result in results]
        limit = answer_limit(len(raw), settings.max_answer_ratio, settings.max_answer_bytes)
        answer, answered = bounded_answer(results, limit)
        lines = record_lines(uuid.uuid4().hex, groups, answered) if settings.record_log else None
        return ("ok", answer, lines, counts)


def score_blocking(method: Any, judge: Any, settings: Any, groups: Sequence[Any]) -> list[Any]:
    """Every group's result, in order, scored in this thread: text made safe, every group prepared (a bad one refuses
    the whole request), then each judged and scored, its expression checks within ``settings.verifier_budget_s``."""
    from genrm.engine import run_blocking
    from genrm.methods.run import judge_prepared
    from serving.group_checks import WHERE, mark_replaced, prepare_safely
    from verifiers.expressions.pool import tenant

    prepared, replaced = prepare_safely(method, groups, WHERE)
    results = []
    for one in prepared:
        readings = run_blocking(judge_prepared(method, one, judge))
        with tenant(uuid.uuid4().hex, settings.verifier_budget_s):
            results.append(method.score(one, readings))
    mark_replaced(results, replaced)
    return results


__all__ = ["INLINE_BODY_BYTES", "INLINE_WORK", "ScoreWorkers", "WorkerDied", "score_blocking", "scored_inline"]
