"""The six verifiers as plain Python functions with the seed's keyword names, each returning a float in [0, 1].

Each function validates its arguments with the registry and runs the same check as the call-string protocol. Input
the caller controls raises a typed error (``TargetError`` for a bad target or option, ``BadCallError`` for a missing
keyword); anything about the prediction never raises: an unreadable prediction or one whose check passes the deadline
scores 0. For the status behind a score, use ``verifiers.run_verifier`` or ``verifiers.verify_call_result``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from verifiers.config import VerifyConfig
from verifiers.registry import get_spec, run_verifier
from verifiers.result import raise_for_failure

Coords = Sequence[Sequence[float]]
logger = logging.getLogger(__name__)


def _run(name: str, arguments: dict[str, Any]) -> float:
    spec = get_spec(name)
    config = arguments.pop("config")
    rubric = {p.name: arguments[p.name] for p in spec.rubric_params if arguments[p.name] is not None}
    scoring = {p.name: arguments[p.name] for p in spec.scoring_params if arguments[p.name] is not None}
    if "predict" not in scoring:
        scoring["predict"] = None  # reported as "the response states no value" (score 0), not as a missing keyword
    return raise_for_failure(run_verifier(name, rubric, scoring, config))


def text_verify(
    *,
    predict: str,
    target: str | None = None,
    candidates: Sequence[str] | None = None,
    use_latex: bool = False,
    ignore_space: bool = False,
    ignore_punc: bool = False,
    ignore_case: bool = False,
    ignore_st: bool = False,
    char_edits: bool = False,
    config: VerifyConfig | None = None,
) -> float:
    """Normalized edit similarity in [0, 1] of ``predict`` to ``target`` (or the best of ``candidates``).

    See ``verifiers.text`` for the normalization options and what is accepted.
    """
    return _run("text_verify", locals())


def expr_verify(*, predict: str, target: str, config: VerifyConfig | None = None) -> float:
    """1.0 when ``predict`` is mathematically equivalent to ``target`` (option letters, numbers, LaTeX), else 0.0.

    Bounded by ``config.deadline_s`` (2 s by default): a check past it returns 0.0. A target string that cannot be
    read (empty, blank, no expression in it) also returns 0.0 rather than raising, as math graders' score calls do, so
    that one bad reference cannot stop a training loop; it is logged, and ``verify_call_result`` or ``run_verifier``
    report it as status ``unparseable_target`` (not a verdict). A target that is not a string still raises
    TargetError. See ``verifiers.expr``.
    """
    if isinstance(target, str):
        rubric = {"target": target}
        result = run_verifier("expr_verify", rubric, {"predict": predict}, config)
        if result.status == "unparseable_target":
            logger.warning("expr_verify scored 0.0 for an unreadable target %.60r: %s", target, result.reason)
            return 0.0
        return raise_for_failure(result)
    return _run("expr_verify", locals())


def time_verify(
    *, predict: str, target: str, tformat: str, pformat: str | None = None, config: VerifyConfig | None = None
) -> float:
    """1.0 when the date/time ``predict`` (format ``pformat``) equals ``target`` (format ``tformat``), else 0.0.

    Only the fields ``tformat`` names are compared. See ``verifiers.dates``.
    """
    return _run("time_verify", locals())


def list_verify(
    *,
    predict: Sequence[str],
    target: Sequence[str] | None = None,
    candidates: Sequence[Sequence[str]] | None = None,
    use_latex: bool = False,
    ignore_space: bool = False,
    ignore_punc: bool = False,
    ignore_case: bool = False,
    ignore_st: bool = False,
    char_edits: bool = False,
    config: VerifyConfig | None = None,
) -> float:
    """Hungarian-matched text similarity in [0, 1] of a predicted list to ``target`` (or the best candidate list).

    Divided by the longer list's length, so missing and extra items both cost. See ``verifiers.lists``.
    """
    return _run("list_verify", locals())


def bbox_verify(*, predict: Coords, target: Coords, config: VerifyConfig | None = None) -> float:
    """Hungarian-matched IoU in [0, 1] of predicted boxes to target boxes ([x1, y1, x2, y2] on a 0-1000 grid).

    Divided by the larger number of boxes. See ``verifiers.grounding`` for the policy on malformed boxes.
    """
    return _run("bbox_verify", locals())


def point_verify(*, predict: Coords, target: Coords, config: VerifyConfig | None = None) -> float:
    """Hungarian-matched proximity in [0, 1] of predicted points to target points ([x, y] on a 0-1000 grid).

    Proximity is ``max(0, 1 - distance / config.point_radius)``. See ``verifiers.grounding``.
    """
    return _run("point_verify", locals())
