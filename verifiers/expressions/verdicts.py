"""Verdicts of expression checks already made, and the checks running now, shared by the callers of one pool.

The G responses of a GRPO group often end in the same final answer, and a check is a pure function of the target,
the prediction and the rounding: its verdict is remembered, and a caller asking for a check that is running already
waits for that one instead of taking a second worker for it. Only answers that the expression itself decides are
remembered (status ``ok``, and ``unparseable_pred``: no expression found, or one nested too deeply); what depends on
load or luck (``timeout``, ``busy``, ``error``) never is, so a caller that shared a running check which ended that
way runs its own.

Bounded: at most ``entries`` verdicts and ``chars`` characters of keys, the least recently used going first; a
check longer than ``chars // 64`` characters in all is not remembered. Not covered: the target test of
``pool`` (it has its own memory).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

_DECIDED = frozenset({"ok", "unparseable_pred"})

Key = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class ExprOutcome:
    """What a worker said about one comparison; ``equal`` is meaningful only when ``status`` is ``ok``."""

    status: str
    equal: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Claim:
    """What :meth:`VerdictMemo.claim` found: a remembered ``verdict``, or none and whether the caller ``leads``
    (runs the check others wait for) or runs its own after waiting in vain."""

    verdict: ExprOutcome | None
    leads: bool


class VerdictMemo:
    """Remembered verdicts by (target, prediction, float rounding), and the keys being checked now.

    Args:
        entries: most verdicts kept (>= 1).
        chars: most characters of keys kept (>= 64).
    """

    def __init__(self, entries: int = 4096, chars: int = 1_000_000) -> None:
        if entries < 1 or chars < 64:
            raise ValueError(f"entries must be >= 1 and chars >= 64, got {entries} and {chars}")
        self._entries, self._chars, self._longest = entries, chars, chars // 64
        self._known: OrderedDict[Key, ExprOutcome] = OrderedDict()
        self._held = 0
        self._running: set[Key] = set()
        self._cond = threading.Condition()

    def claim(self, key: Key, wait_s: float) -> Claim:
        """The remembered verdict for ``key``; else, while the same check runs for another caller, wait for it up to
        ``wait_s`` seconds; else lead. A caller that leads must call :meth:`settle` with the same key."""
        end = time.monotonic() + wait_s
        with self._cond:
            while True:
                known = self._known.get(key)
                if known is not None:
                    self._known.move_to_end(key)
                    return Claim(known, leads=False)
                if key not in self._running:
                    self._running.add(key)
                    return Claim(None, leads=True)
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return Claim(None, leads=False)
                self._cond.wait(remaining)

    def settle(self, key: Key, outcome: ExprOutcome | None, leads: bool) -> None:
        """Record how the check of ``key`` ended (None: it raised) and wake those waiting for it; ``leads`` as the
        caller's :meth:`claim` said."""
        size = len(key[0]) + len(key[1])
        with self._cond:
            if leads:
                self._running.discard(key)
            if outcome is not None and outcome.status in _DECIDED and size <= self._longest and key not in self._known:
                self._known[key] = outcome
                self._held += size
                while len(self._known) > self._entries or self._held > self._chars:
                    old, _ = self._known.popitem(last=False)
                    self._held -= len(old[0]) + len(old[1])
            self._cond.notify_all()

    def forget_running(self) -> None:
        """Forget every check counted as running (for a process whose every check was cut, see
        ``ExprWorkerPool.reclaim``), and wake those waiting for one."""
        with self._cond:
            self._running.clear()
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._known)
