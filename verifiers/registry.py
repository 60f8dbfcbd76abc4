"""The verifier registry: per verifier, its rubric-side and scoring-side signatures, what it returns, when to use it.

Prompts render the specification of exactly the verifiers a task allows with :func:`render_specs`; the call-string
protocol (``verifiers.calls``) checks every keyword against these signatures; :func:`run_verifier` validates and
converts the arguments, runs the check, and turns every failure into a :class:`~verifiers.result.VerifyResult` with a
status, so that it never raises.

Argument kinds, and how untrusted scoring-side values are read:

- ``str``: a string; on the scoring side a number is read as its text, and ``None`` as no prediction.
- ``bool``: True or False (rubric side only).
- ``str_list``: a list of strings; on the scoring side a string holding a list literal is read as that list, another
  string as a one-item list, and numbers as their text.
- ``str_lists``: a list of lists of strings (rubric side only).
- ``coords``: a list of boxes or points (checked by ``verifiers.grounding``); on the scoring side a string holding a
  list literal is read as that list.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from verifiers.config import DEFAULT_CONFIG, VerifyConfig
from verifiers.dates import check_time
from verifiers.expr import check_expr
from verifiers.grounding import check_bbox, check_point
from verifiers.lists import check_list
from verifiers.literals import read_literal
from verifiers.provenance import find_prediction
from verifiers.result import (
    BadCallError,
    PredictionError,
    TargetError,
    UnknownVerifierError,
    VerifierError,
    VerifyResult,
    failed,
)
from verifiers.text import check_text

logger = logging.getLogger(__name__)

Kind = Literal["str", "bool", "str_list", "str_lists", "coords"]
Side = Literal["rubric", "scoring"]
ValueKind = Literal["text", "expression", "time", "list", "boxes", "points"]
"""What a verifier's prediction is, for code that reads, writes or alters one (answer extraction, prompts, schemas,
audit attacks): it asks the registry for the kind instead of comparing verifier names."""
CheckFn = Callable[[Mapping[str, Any], Mapping[str, Any], VerifyConfig], VerifyResult]

_REQUIRED = object()
_TYPE_NAMES: dict[str, str] = {
    "str": "str",
    "bool": "bool",
    "str_list": "List[str]",
    "str_lists": "List[List[str]]",
    "coords": "List[List[int]]",
}
#: Longest string the scoring side may hold a list literal in (read as call strings read literals).
_MAX_LITERAL_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class Param:
    """One keyword of a verifier call."""

    name: str
    kind: Kind
    default: Any = _REQUIRED
    help: str = ""
    mirrors: str | None = None
    """On the scoring side: the rubric-side keyword that holds the same kind of value (``predict`` mirrors
    ``target``, ``pformat`` mirrors ``tformat``)."""
    alternative_to: str | None = None
    """On the rubric side: the keyword this one replaces, as a list of acceptable values (``candidates`` for
    ``target``)."""

    @property
    def required(self) -> bool:
        """Whether the keyword must be given."""
        return self.default is _REQUIRED

    def signature(self) -> str:
        """The keyword as written in a signature, e.g. ``ignore_case: bool = False``."""
        text = f"{self.name}: {_TYPE_NAMES[self.kind]}"
        return text if self.required else f"{text} = {self.default!r}"


@dataclass(frozen=True, slots=True)
class VerifierSpec:
    """Everything known about one verifier: both signatures, the return value, the usage rules, the check."""

    name: str
    rubric_params: tuple[Param, ...]
    scoring_params: tuple[Param, ...]
    returns: str
    usage: str
    check: CheckFn = field(repr=False, compare=False)
    value: ValueKind = "text"
    """What the prediction is (see :data:`ValueKind`)."""
    task_types: frozenset[str] = frozenset()
    """The default task types (besides ``general``, which allows every verifier) whose rubrics may use it."""
    uses_workers: bool = False
    """Whether a check may wait for the expression worker pool (``verifiers.expressions.pool``): such checks are the
    ones worth running concurrently, and the ones a server keeps apart from the cheap in-process checks."""

    @property
    def arity(self) -> int | None:
        """Numbers per item of a coordinates prediction (4 for a box, 2 for a point); None for other kinds."""
        return _ARITY.get(self.value)

    @property
    def list_valued(self) -> bool:
        """Whether the prediction is a list (of items, boxes or points)."""
        return self.value in ("list", "boxes", "points")

    @property
    def shape(self) -> str:
        """How a value of this verifier is described to a reader, e.g. ``[x1, y1, x2, y2] boxes``."""
        return _SHAPES[self.value]

    def render_value(self, value: Any) -> str:
        """A prediction as a response writes it: boxes ``[x1, y1, x2, y2]``, points ``(x, y)``, list items
        comma-separated, an option letter in parentheses, anything else as is."""
        if self.value in ("boxes", "points"):
            left, right = ("[", "]") if self.value == "boxes" else ("(", ")")
            return ", ".join(left + ", ".join(str(v) for v in item) + right for item in value)
        if self.value == "list":
            return ", ".join(str(v) for v in value)
        if self.value == "expression" and _OPTION_LETTER.fullmatch(str(value)):
            return f"({value})"
        return str(value)

    def prediction_of_target(self, target_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The scoring-side keywords that state the target of a rubric side (its first alternative, e.g. the first
        of its ``candidates``, when it has no target): what a response that is exactly right would extract."""
        prediction: dict[str, Any] = {}
        for param in self.scoring_params:
            if param.mirrors is None:
                continue
            value = target_kwargs.get(param.mirrors)
            if value is None:
                for alternative in self.rubric_params:
                    if alternative.alternative_to == param.mirrors and target_kwargs.get(alternative.name):
                        value = target_kwargs[alternative.name][0]
                        break
            prediction[param.name] = value
        return prediction

    def target_of_prediction(self, target_kwargs: Mapping[str, Any], prediction: Mapping[str, Any]) -> dict[str, Any]:
        """A rubric side whose target is ``prediction`` (scoring-side keywords), with the rubric's other options
        kept: how well another prediction matches this one is then a check of this verifier. A scoring keyword
        left empty keeps the rubric's own value (a prediction without ``pformat`` keeps the rubric's ``tformat``)."""
        mirrored = {p.mirrors for p in self.scoring_params if p.mirrors}
        replaced = {p.name for p in self.rubric_params if p.alternative_to in mirrored}
        rubric = {key: value for key, value in target_kwargs.items() if key not in replaced}
        for param in self.scoring_params:
            if param.mirrors is not None and prediction.get(param.name) is not None:
                rubric[param.mirrors] = prediction[param.name]
        return rubric

    def params(self, side: Side) -> tuple[Param, ...]:
        """The keywords of one side of the call."""
        return self.rubric_params if side == "rubric" else self.scoring_params

    def signature(self, side: Side) -> str:
        """The call signature of one side, e.g. ``bbox_verify(predict: List[List[int]])``."""
        return f"{self.name}({', '.join(p.signature() for p in self.params(side))})"

    def render(self, side: Side | None = None) -> str:
        """A plain-text block for prompts: the signatures (both, or one ``side``), the return value, the usage rules.

        The scoring side alone is what a judge needs: it extracts the prediction and never sees the rubric side.
        """
        lines = [self.name]
        if side in (None, "rubric"):
            lines.append(f"  rubric side:  {self.signature('rubric')}")
        if side in (None, "scoring"):
            lines.append(f"  scoring side: {self.signature('scoring')}")
            if side == "scoring":
                lines.extend(f"    {p.name}: {p.help}" for p in self.scoring_params if p.help)
        lines += [f"  returns: {self.returns}", f"  use: {self.usage}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (for ``genrm verifiers --json`` and API documentation)."""
        return {
            "name": self.name,
            "rubric_signature": self.signature("rubric"),
            "scoring_signature": self.signature("scoring"),
            "returns": self.returns,
            "usage": self.usage,
            "rubric_params": [{"name": p.name, "type": _TYPE_NAMES[p.kind], "required": p.required,
                               "help": p.help} for p in self.rubric_params],
            "scoring_params": [{"name": p.name, "type": _TYPE_NAMES[p.kind], "required": p.required,
                                "help": p.help} for p in self.scoring_params],
        }  # fmt: skip


_ARITY: dict[str, int] = {"boxes": 4, "points": 2}
_SHAPES: dict[str, str] = {
    "text": "text", "expression": "a number, option letter or expression", "time": "a date or time",
    "list": "a list of items", "boxes": "[x1, y1, x2, y2] boxes", "points": "[x, y] points",
}  # fmt: skip
_OPTION_LETTER = re.compile(r"[A-J]")

_TEXT_OPTIONS = (
    Param("use_latex", "bool", False, "strip LaTeX text markup ($, \\text{}, \\left, spacing) before comparing"),
    Param("ignore_space", "bool", False, "remove all white space before comparing"),
    Param("ignore_punc", "bool", False, "remove all punctuation before comparing"),
    Param("ignore_case", "bool", False, "compare case-insensitively"),
    Param("ignore_st", "bool", False, "treat Traditional and Simplified Chinese characters as equal"),
    Param(
        "char_edits",
        "bool",
        False,
        "score a target of one or two words by edit similarity too (partial credit "
        "for near spellings); off, another word is a miss",
    ),
)
_COORDS_HELP = "list of [x1, y1, x2, y2] boxes on the 0-1000 grid"


def _check_expr(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """expr_verify's check, refusing a prediction named with a keyword of the calls (:func:`call_keywords`)."""
    return check_expr(rubric, scoring, config, call_keywords())


SPECS: tuple[VerifierSpec, ...] = (
    VerifierSpec(
        "text_verify",
        (
            Param("target", "str", None, "the expected text"),
            Param(
                "candidates",
                "str_list",
                None,
                "several acceptable texts; the best match counts",
                alternative_to="target",
            ),
            *_TEXT_OPTIONS,
        ),
        (
            Param(
                "predict", "str", help="the text extracted from the response, '' when there is none", mirrors="target"
            ),
        ),
        "float in [0, 1]: normalized edit similarity; with candidates, the maximum over candidates",
        "OCR-style text or LaTeX transcription copied from the image or document. Not for semantic judgements "
        "or free-form visual question answering.",
        check_text,
        value="text",
        task_types=frozenset({"ocr", "chart", "document", "vqa"}),
    ),  # fmt: skip
    VerifierSpec(
        "expr_verify",
        (Param("target", "str", help="the expected value: number, option letter or (LaTeX) expression"),),
        (
            Param(
                "predict", "str", help="the value extracted from the response, '' when there is none", mirrors="target"
            ),
        ),
        "float in {0, 1}: 1 iff the target and the prediction are mathematically equivalent",
        "Option letters, numbers and mathematical expressions read directly from the response. Units and context "
        "stay in the criterion, not in the target. Never encode a semantic yes/no judgement as a target.",
        _check_expr,
        value="expression",
        task_types=frozenset({"math", "multiple_choice", "counting", "chart", "document", "vqa"}),
        uses_workers=True,
    ),  # fmt: skip
    VerifierSpec(
        "time_verify",
        (
            Param("target", "str", help="the expected date or time"),
            Param("tformat", "str", help="Python strptime format of target, e.g. '%H:%M'"),
        ),
        (
            Param("predict", "str", help="the date or time extracted from the response", mirrors="target"),
            Param(
                "pformat",
                "str",
                None,
                "Python strptime format of predict as written in the response",
                mirrors="tformat",
            ),
        ),
        "float in {0, 1}: 1 iff the parsed dates/times are equal on the fields the target format gives",
        "Dates and times with Python datetime formats; copy the prediction's format from the response. Weekday "
        "names are not used as targets.",
        check_time,
        value="time",
        task_types=frozenset({"time", "chart", "document", "vqa"}),
    ),  # fmt: skip
    VerifierSpec(
        "list_verify",
        (
            Param("target", "str_list", None, "the expected items, in any order"),
            Param(
                "candidates",
                "str_lists",
                None,
                "several complete acceptable lists; the best match counts",
                alternative_to="target",
            ),
            *_TEXT_OPTIONS,
        ),
        (
            Param(
                "predict",
                "str_list",
                help="the items extracted from the response, [] when there are none",
                mirrors="target",
            ),
        ),
        "float in [0, 1]: Hungarian matching over pairwise text similarity, divided by the longer list's length; "
        "with candidates, the maximum over candidate lists",
        "Lists of extractive text items, such as OCR key fields. Each candidate is one complete valid answer list.",
        check_list,
        value="list",
        task_types=frozenset({"ocr", "chart", "document", "vqa"}),
    ),  # fmt: skip
    VerifierSpec(
        "bbox_verify",
        (Param("target", "coords", help=_COORDS_HELP),),
        (Param("predict", "coords", help=_COORDS_HELP + ", [] when there is none", mirrors="target"),),
        "float in [0, 1]: Hungarian matching over pairwise IoU, divided by the larger number of boxes",
        "Single- or multi-object box grounding. Each box is [x1, y1, x2, y2] with coordinates normalized to 0-1000.",
        check_bbox,
        value="boxes",
        task_types=frozenset({"grounding"}),
    ),
    VerifierSpec(
        "point_verify",
        (Param("target", "coords", help="list of [x, y] points on the 0-1000 grid"),),
        (
            Param(
                "predict",
                "coords",
                help="list of [x, y] points on the 0-1000 grid, [] when there is none",
                mirrors="target",
            ),
        ),
        "float in [0, 1]: Hungarian matching over pairwise proximity (1 at the same spot, 0 at distance 100 or "
        "more), divided by the larger number of points",
        "Single- or multi-object point grounding. Each point is [x, y] with coordinates normalized to 0-1000.",
        check_point,
        value="points",
        task_types=frozenset({"grounding"}),
    ),
)

REGISTRY: dict[str, VerifierSpec] = {spec.name: spec for spec in SPECS}


@functools.cache
def call_keywords() -> frozenset[str]:
    """The keyword names of every verifier's two signatures (``predict``, ``target``, ``tformat`` ...)."""
    return frozenset(p.name for spec in REGISTRY.values() for p in (*spec.rubric_params, *spec.scoring_params))


def get_spec(name: str) -> VerifierSpec:
    """The spec of verifier ``name``; raises BadCallError listing the valid names when it is unknown."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownVerifierError(f"unknown verifier {name!r:.60}; valid verifiers: {', '.join(REGISTRY)}") from None


def uses_workers(name: str | None) -> bool:
    """Whether checks of verifier ``name`` may wait for an expression worker (False for unknown names and None)."""
    spec = REGISTRY.get(name) if isinstance(name, str) else None
    return spec is not None and spec.uses_workers


def render_specs(names: Iterable[str] | None = None, side: Side | None = None) -> str:
    """The prompt block describing the given verifiers (all of them by default), in the order given.

    ``side`` limits each block to the rubric-side or the scoring-side signature (default: both).
    """
    wanted = list(REGISTRY) if names is None else list(dict.fromkeys(names))
    return "\n\n".join(get_spec(name).render(side) for name in wanted)


def _literal_list(value: str) -> Any:
    if len(value) > _MAX_LITERAL_CHARS or not value.lstrip().startswith(("[", "(")):
        return value
    try:
        return read_literal(value)
    except VerifierError:
        return value


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _convert(param: Param, value: Any, side: Side) -> Any:
    """Check one argument's kind, reading scoring-side values leniently (see the module docstring)."""
    error = TargetError if side == "rubric" else PredictionError
    where = f"{param.name}=" + repr(value)[:60]
    if param.kind == "bool":
        if not isinstance(value, bool):
            raise error(f"{where} must be True or False")
        return value
    if value is None and side == "scoring" and param.required:
        # predict=None: the response states no value, which no target is met by (not even an empty one)
        raise PredictionError(f"{param.name} is None: the response states no value")
    if param.kind == "str":
        text = value if side == "rubric" else _as_text(value)
        if not isinstance(text, str):
            raise error(f"{where} must be a string")
        return text
    if side == "scoring" and isinstance(value, str):
        value = _literal_list(value)
    if param.kind == "coords":
        if not isinstance(value, (list, tuple)):
            raise error(f"{where} must be a list")
        return value
    if param.kind == "str_list":
        if side == "scoring" and isinstance(value, str):
            return (value,)
        if not isinstance(value, (list, tuple)):
            raise error(f"{where} must be a list of strings")
        items = tuple(_as_text(item) if side == "scoring" else item for item in value)
        if not all(isinstance(item, str) for item in items):
            raise error(f"{where} must be a list of strings")
        return items
    # str_lists
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(inner, (list, tuple)) and all(isinstance(item, str) for item in inner) for inner in value
    ):
        raise error(f"{where} must be a list of lists of strings")
    return tuple(tuple(inner) for inner in value)


def bind(spec: VerifierSpec, side: Side, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Validate one side's keyword arguments against the spec and fill in defaults.

    Raises BadCallError for unknown or missing keywords, TargetError for a bad rubric-side value, and
    PredictionError for a scoring-side value that cannot be read.
    """
    params = {p.name: p for p in spec.params(side)}
    other = "scoring" if side == "rubric" else "rubric"
    for name in kwargs:
        if name not in params:
            hint = (f"; {name} belongs to the {other} side" if any(p.name == name for p in spec.params(other))
                    else "")  # fmt: skip
            raise BadCallError(
                f"{spec.name} does not take {name!r:.40} on the {side} side{hint}; expected {spec.signature(side)}"
            )
    bound: dict[str, Any] = {}
    for name, param in params.items():
        if name not in kwargs:
            if param.required:
                raise BadCallError(f"{spec.name} needs {name}= on the {side} side: {spec.signature(side)}")
            bound[name] = param.default
        elif kwargs[name] is None and not param.required:
            bound[name] = None
        else:
            bound[name] = _convert(param, kwargs[name], side)
    return bound


def run_verifier(
    name: str,
    rubric_kwargs: Mapping[str, Any],
    scoring_kwargs: Mapping[str, Any],
    config: VerifyConfig | None = None,
) -> VerifyResult:
    """Validate both sides, run verifier ``name`` and return its result. Never raises: failures get a status.

    Whatever the prediction holds is the response's problem, never the server's: when a check fails unexpectedly
    (an exception no verifier anticipated) but the rubric side passes on its own, the prediction is what could not be
    read, and the result is ``unparseable_pred`` (score 0, a verdict) with the exception named in its reason. Only
    a failure that the rubric side alone reproduces stays ``error``.
    """
    config = config or DEFAULT_CONFIG
    try:
        spec = get_spec(name)
        rubric = bind(spec, "rubric", rubric_kwargs)
        try:
            scoring = bind(spec, "scoring", scoring_kwargs)
        except PredictionError as exc:
            _check_rubric_side(spec, rubric, config)  # for a 0 to be a verdict, the rubric side must be sound
            raise exc
        try:
            return spec.check(rubric, scoring, config)
        except VerifierError:
            raise
        except Exception as exc:  # noqa: BLE001 - blamed on the prediction only when the rubric side is sound
            _check_rubric_side(spec, rubric, config)
            logger.warning("%s could not read a prediction: %s: %.200s", name, type(exc).__name__, exc)
            raise PredictionError(
                f"the prediction could not be read ({type(exc).__name__}: {str(exc)[:160]})"
            ) from None
    except VerifierError as exc:
        return failed(exc.status, str(exc), _known(name))
    except Exception as exc:  # noqa: BLE001 - an unexpected failure is reported, never turned into a score
        return failed("error", f"{type(exc).__name__} in {name!r:.60}: {str(exc)[:200]}", _known(name))


def prediction_not_found(
    name: str, rubric_kwargs: Mapping[str, Any], scoring_kwargs: Mapping[str, Any], response: str
) -> str | None:
    """None when the value of a scoring-side call is found in ``response`` (:mod:`verifiers.provenance`), or when it
    states no value or cannot be read (the verifier scores those); else a sentence naming what is not there."""
    try:
        spec = get_spec(name)
        scoring = bind(spec, "scoring", scoring_kwargs)
    except VerifierError:
        return None
    value_param = next(p.name for p in spec.scoring_params if p.mirrors is not None)
    return find_prediction(spec.value, scoring[value_param], response, rubric_kwargs)


def _check_rubric_side(spec: VerifierSpec, rubric: Mapping[str, Any], config: VerifyConfig) -> None:
    """Raise TargetError (or the unexpected exception) when the rubric side fails with an empty prediction, which is
    cheap: no expression worker is involved."""
    try:
        spec.check(rubric, empty_prediction(spec), config)
    except PredictionError:
        pass


def _known(name: object) -> str | None:
    return name if isinstance(name, str) and name in REGISTRY else None


def empty_prediction(spec: VerifierSpec) -> dict[str, Any]:
    """Scoring-side keywords meaning "no prediction" ('' or []), used to check a rubric side on its own."""
    empty: dict[str, Any] = {"str": "", "str_list": [], "coords": []}
    return {p.name: (empty.get(p.kind) if p.required else p.default) for p in spec.scoring_params}
