"""The result of one verification, and the errors the library raises.

A score alone cannot tell "the prediction is wrong" from "the verifier could not judge". Every verifier therefore
produces a :class:`VerifyResult` whose ``status`` says which of the two happened:

- ``ok``: the prediction was read and compared; ``score`` is the verdict.
- ``unparseable_pred``: the prediction could not be read (malformed, empty, too large); ``score`` is 0. This is a
  verdict on the response: a response whose value cannot be read earns nothing.
- ``timeout``: checking took longer than the deadline, or exceeded the worker's memory bound; ``score`` is 0.
- ``unparseable_target``: the rubric-side values are invalid (a rubric error, not the response's fault).
- ``bad_call``: a call string or its keywords are malformed (unknown verifier, unknown keyword, wrong side).
- ``busy``: no expression worker was free within ``VerifyConfig.worker_wait_s`` (the process is overloaded).
- ``error``: an unexpected failure inside the library.

The last four are failures to judge: their ``score`` is 0 only so that the field is always a float, and callers
must not use it as a reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "unparseable_pred", "timeout", "unparseable_target", "bad_call", "busy", "error"]

#: Statuses whose score is a verdict on the prediction.
VERDICT_STATUSES: frozenset[str] = frozenset({"ok", "unparseable_pred", "timeout"})

#: What each status means, in a few words (summaries and tables print it beside a count).
STATUS_MEANINGS: dict[str, str] = {
    "ok": "the value was read and compared; the score is the verdict",
    "unparseable_pred": "the response states no value the verifier can read; scores 0",
    "timeout": "checking the value ran past its deadline or memory bound; scores 0",
    "unparseable_target": "the rubric's target cannot be checked (fix the rubric); no score",
    "bad_call": "a call string is malformed (unknown verifier or keyword); no score",
    "busy": "no expression worker was free in time (overload; retry); no score",
    "error": "an unexpected failure inside the verifier (a bug; retry); no score",
}


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """Outcome of one verification.

    Attributes:
        score: similarity or equivalence in [0, 1]; 0 whenever ``status`` is not ``ok``.
        status: what happened (see the module docstring).
        reason: one human-readable sentence on how the score came about or what went wrong.
        verifier: the verifier's name, when it is known.
    """

    score: float
    status: Status
    reason: str
    verifier: str | None = None

    @property
    def ok(self) -> bool:
        """True when the prediction was read and compared."""
        return self.status == "ok"

    @property
    def is_verdict(self) -> bool:
        """True when ``score`` judges the prediction (ok, unreadable prediction, or timeout)."""
        return self.status in VERDICT_STATUSES


class VerifierError(ValueError):
    """Base class of the errors raised for input the caller controls (call strings and rubric-side values)."""

    status: Status = "error"


class BadCallError(VerifierError):
    """A call string, verifier name or keyword is malformed or not allowed."""

    status: Status = "bad_call"


class UnknownVerifierError(BadCallError):
    """A call names a verifier that is not in the registry."""


class TargetError(VerifierError):
    """A rubric-side value (target, candidates, options, format) is invalid."""

    status: Status = "unparseable_target"


class PredictionError(VerifierError):
    """A scoring-side value cannot be read. Verifiers turn this into ``unparseable_pred`` with score 0."""

    status: Status = "unparseable_pred"


def failed(status: Status, reason: str, verifier: str | None = None) -> VerifyResult:
    """Build a result with score 0 for a non-``ok`` status."""
    return VerifyResult(score=0.0, status=status, reason=reason, verifier=verifier)


def raise_for_failure(result: VerifyResult) -> float:
    """Return ``result.score``, raising the typed error for statuses that are not verdicts.

    This is the policy of the float-returning API: input the caller controls (call strings, rubric-side values)
    raises; anything about the prediction (unreadable, too slow) scores 0.
    """
    if result.is_verdict:
        return result.score
    error_type = {"bad_call": BadCallError, "unparseable_target": TargetError}.get(result.status, VerifierError)
    raise error_type(result.reason)
