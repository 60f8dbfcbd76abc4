"""Rubric checks: which criteria are verifiable, which verifiers a task may use, and errors that say what is wrong.

A criterion is *verifiable* when its reference is a call (``name(...)``): the call must then name a known verifier,
use only rubric-side keywords with valid values, and be allowed for the instance's task type. Any other reference is
ground-truth text for a *fuzzy* criterion judged by the model.

Checks, each reported with the path of the offending field (``essential[1].reference``):

- unknown verifier, malformed call, rubric-side keyword or value the verifier rejects;
- verifier not allowed for the task type (:class:`RubricPolicy` maps task types to verifiers; the rubric writer is
  shown only those, so that grounding tasks get bbox/point and OCR gets text/list, and no verifier is abused to check
  a judgement);
- the target written into the criterion text (the rubric must keep answers in the reference): a target string or
  number, or every coordinate of a box or point, found as a whole word in the criterion.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from genrm.methods.base import MethodInputError
from genrm.methods.rubric.models import Criterion, Rubric, SectionName
from verifiers import run_verifier
from verifiers.calls import parse_call
from verifiers.registry import REGISTRY, empty_prediction
from verifiers.result import VerifierError

# A call: an identifier glued to "(" that opens with a keyword (or closes at once), or any "<name>_verify(". Ground
# truth such as "Arachnids (class Arachnida)" or "f(x) = x^2" stays text.
_CALL_SHAPE = re.compile(r"^\s*(?:[A-Za-z_]\w*\(\s*(?:[A-Za-z_]\w*\s*=|\)).*|\w+_verify\s*\(.*)\)\s*$", re.DOTALL)

ALL_VERIFIERS: frozenset[str] = frozenset(REGISTRY)

#: The default task types. ``general`` allows every verifier, ``caption`` none; the others allow the verifiers whose
#: registry entry names them (``verifiers.registry.VerifierSpec.task_types``).
DEFAULT_TASK_TYPES = ("general", "ocr", "grounding", "math", "multiple_choice", "counting", "chart", "document", "vqa",
                      "time", "caption")  # fmt: skip

#: The default task types and the verifiers each may use. ``None`` (no task type) allows every verifier.
DEFAULT_TASK_VERIFIERS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        task: ALL_VERIFIERS
        if task == "general"
        else frozenset(name for name, spec in REGISTRY.items() if task in spec.task_types)
        for task in DEFAULT_TASK_TYPES
    }
)


@dataclass(frozen=True)
class RubricPolicy:
    """Which verifiers each task type may use; extend ``task_verifiers`` for task types of your own."""

    task_verifiers: Mapping[str, frozenset[str]] = field(default_factory=lambda: DEFAULT_TASK_VERIFIERS)
    check_target_leaks: bool = True

    def allowed(self, task_type: str | None) -> frozenset[str]:
        """The verifiers allowed for ``task_type``; raises RubricError for an unknown task type."""
        if task_type is None:
            return ALL_VERIFIERS
        try:
            return self.task_verifiers[task_type]
        except KeyError:
            known = ", ".join(sorted(self.task_verifiers))
            raise RubricError([("task_type", f"unknown task type {task_type!r:.60}; known: {known}")]) from None


@dataclass(frozen=True, slots=True)
class CriterionPlan:
    """How one criterion is executed: by a verifier (with its hidden rubric-side arguments) or by the judge."""

    section: SectionName
    index: int
    criterion: Criterion
    verifier: str | None
    target_kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def verifiable(self) -> bool:
        """True when a verifier decides this criterion."""
        return self.verifier is not None

    @property
    def path(self) -> str:
        """Where the criterion sits in the rubric, e.g. ``essential[0]``."""
        return f"{self.section}[{self.index}]"


class RubricError(MethodInputError):
    """A rubric failed its checks; ``issues`` holds (field path, message) pairs, all of them. Its ``loc`` is the
    first issue's place in the instance (``("rubric", "essential", 1, "reference")``, or ``("task_type",)``)."""

    def __init__(self, issues: list[tuple[str, str]]) -> None:
        self.issues = issues
        first = issues[0][0] if issues else ""
        loc = split_path(first) if first == "task_type" else ["rubric", *split_path(first)]
        super().__init__("; ".join(f"{path}: {message}" for path, message in issues), loc, kind="rubric")


def split_path(path: str) -> list[str | int]:
    """A rubric field path as a location: ``essential[1].reference`` -> ``["essential", 1, "reference"]``."""
    parts: list[str | int] = []
    for piece in path.replace("]", "").split("."):
        name, _, index = piece.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index))
    return parts


def looks_like_call(reference: str) -> bool:
    """Whether a reference is written as a call (and so must be a valid verifier call)."""
    return bool(_CALL_SHAPE.match(reference))


def target_values(verifier: str, kwargs: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """A target's values as text: groups of strings that together reveal it (one string, or a shape's coordinates)."""
    if REGISTRY[verifier].arity is not None:
        target = kwargs.get("target") or []
        shapes = [target] if target and not isinstance(target[0], (list, tuple)) else target
        return [tuple(_number_text(v) for v in shape) for shape in shapes]
    values: list[Any] = []
    for key in ("target", "candidates"):
        value = kwargs.get(key)
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                values.extend(item if isinstance(item, (list, tuple)) else [item])
    return [(str(v).strip(),) for v in values if str(v).strip()]


def _number_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def appears_in(needle: str, haystack: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a whole word or number.

    Case-insensitive, except for a single letter (an option label): ``A`` must appear as a capital on its own, or the
    article "a" would count.
    """
    if len(needle) == 1 and needle.isalpha():
        return re.search(rf"(?<![\w']){re.escape(needle)}(?![\w'])", haystack) is not None
    start = r"(?<![\w.])" if needle[:1].isalnum() else ""
    end = r"(?!\w|\.\d)" if needle[-1:].isalnum() else ""
    return re.search(start + re.escape(needle) + end, haystack, re.IGNORECASE) is not None


def _leaks(verifier: str | None, kwargs: Mapping[str, Any], reference: str, criterion: str) -> str | None:
    if verifier is None:
        text = reference.strip()
        return text if len(text) <= 200 and appears_in(text, criterion) else None
    for group in target_values(verifier, kwargs):
        if all(appears_in(value, criterion) for value in group):
            return ", ".join(group)
    return None


def plan_criterion(section: SectionName, index: int, criterion: Criterion) -> CriterionPlan:
    """Classify one criterion; raises RubricError when its reference is a call that is not a valid verifier call."""
    path = f"{section}[{index}].reference"
    if not looks_like_call(criterion.reference):
        return CriterionPlan(section, index, criterion, None)
    try:
        call = parse_call(criterion.reference, side="rubric")
    except VerifierError as exc:
        raise RubricError([(path, str(exc))]) from None
    kwargs = call.as_dict()
    checked = run_verifier(call.name, kwargs, empty_prediction(REGISTRY[call.name]))
    if checked.status in ("unparseable_target", "bad_call", "error"):
        raise RubricError([(path, checked.reason)])
    return CriterionPlan(section, index, criterion, call.name, MappingProxyType(kwargs))


def plan_rubric(
    rubric: Rubric, task_type: str | None = None, policy: RubricPolicy | None = None
) -> list[CriterionPlan]:
    """Check a rubric and return the execution plan of each criterion, essential first.

    Raises RubricError listing every problem found (see the module docstring).
    """
    policy = policy or RubricPolicy()
    issues: list[tuple[str, str]] = []
    try:
        allowed = policy.allowed(task_type)
    except RubricError as exc:
        issues.extend(exc.issues)
        allowed = ALL_VERIFIERS
    plans = []
    for section, index, criterion in rubric.criteria():
        try:
            plan = plan_criterion(section, index, criterion)
        except RubricError as exc:
            issues.extend(exc.issues)
            continue
        if plan.verifier is not None and plan.verifier not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            message = f"{plan.verifier} is not allowed for task type {task_type!r}; allowed: {names}"
            issues.append((f"{plan.path}.reference", message))
        if policy.check_target_leaks:
            leaked = _leaks(plan.verifier, plan.target_kwargs, criterion.reference, criterion.criterion)
            if leaked is not None:
                message = f"the criterion text gives away the target ({leaked!r:.60}); keep it in the reference"
                issues.append((f"{plan.path}.criterion", message))
        plans.append(plan)
    if issues:
        raise RubricError(issues)
    return plans


def verifiers_in(plans: Iterable[CriterionPlan]) -> list[str]:
    """The distinct verifiers a rubric uses, in registry order (for the prompt's verifier specification block)."""
    used = {plan.verifier for plan in plans if plan.verifier}
    return [name for name in REGISTRY if name in used]
