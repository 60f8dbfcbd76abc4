"""The call-string protocol: join a rubric-side call with a scoring-side call and run the verifier.

A rubric holds ``bbox_verify(target=[[531,118,892,435]])``; the judge emits
``bbox_verify(predict=[[529,119,890,433]])`` without ever seeing the target. :func:`verify_call` parses both, checks
that they name the same verifier and that each uses only its own side's keywords, and runs the check.

String arguments are read as people write LaTeX (``target='\\frac{2}{3}'`` is ``\\frac{2}{3}``, not a form feed and
``rac``); the doubled form (``'\\\\frac{2}{3}'``) reads the same. See :mod:`verifiers.literals` for the rules, and
:func:`format_call` for writing a call that reads back exactly.

Call strings are untrusted. They are parsed with ``ast.parse`` and each argument is read with ``ast.literal_eval``,
which accepts only literals (strings, numbers, tuples, lists, dicts, sets, booleans, None): no name lookup, attribute,
subscript, call, comprehension, f-string or operator other than a sign is ever evaluated, so no call string can run
code. The function name must be in the registry, arguments must be keywords, and strings longer than
``VerifyConfig.max_call_chars`` are refused before parsing.
"""

from __future__ import annotations

import ast
import asyncio
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verifiers.config import DEFAULT_CONFIG, VerifyConfig
from verifiers.literals import literal_source, normalize_string_literals, syntax_error_cause
from verifiers.registry import REGISTRY, Side, bind, get_spec, run_verifier
from verifiers.result import BadCallError, VerifierError, VerifyResult, failed, raise_for_failure


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A verifier call read from a string: the verifier's name and its keyword arguments (literal values)."""

    name: str
    kwargs: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        """The keyword arguments as a dict."""
        return dict(self.kwargs)


_NODE_NAMES = {
    "Call": "a function call",
    "Name": "a variable name",
    "Attribute": "an attribute access",
    "Subscript": "a subscript",
    "BinOp": "an arithmetic expression",
    "BoolOp": "a boolean expression",
    "Compare": "a comparison",
    "JoinedStr": "an f-string",
    "Lambda": "a lambda",
    "ListComp": "a comprehension",
    "GeneratorExp": "a generator expression",
    "IfExp": "a conditional expression",
    "Starred": "a starred expression",
}


def _literal(node: ast.expr, name: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        found = next((_NODE_NAMES.get(type(n).__name__) for n in ast.walk(node) if type(n).__name__ in _NODE_NAMES),
                     None) or f"a {type(node).__name__} node"  # fmt: skip
        raise BadCallError(
            f"the value of {name}= must be a literal (string, number, list, True/False/None), but contains {found}"
        ) from None


def _parse(text: str, max_chars: int) -> ParsedCall:
    if len(text) > max_chars:
        raise BadCallError(f"the call has {len(text)} characters; at most {max_chars} are accepted")
    source = normalize_string_literals(text.strip())
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise syntax_error_cause(text) or BadCallError(f"not a valid call: {exc.msg}{where}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise BadCallError(f"not a valid call: {type(exc).__name__} {exc}".rstrip()) from None
    call = tree.body
    if not isinstance(call, ast.Call):
        raise BadCallError(f"expected a call such as text_verify(predict='...'), got a {type(call).__name__}")
    if not isinstance(call.func, ast.Name):
        raise BadCallError("the called function must be a plain verifier name such as bbox_verify")
    spec = get_spec(call.func.id)
    if call.args:
        raise BadCallError(f"{spec.name} takes keyword arguments only, e.g. {spec.signature('scoring')}")
    seen: set[str] = set()
    kwargs = []
    for keyword in call.keywords:
        if keyword.arg is None:
            raise BadCallError("**kwargs unpacking is not allowed in a verifier call")
        if keyword.arg in seen:
            raise BadCallError(f"keyword {keyword.arg} is given twice")
        seen.add(keyword.arg)
        kwargs.append((keyword.arg, _literal(keyword.value, keyword.arg)))
    return ParsedCall(spec.name, tuple(kwargs))


# Only short calls are cached, so that hostile long predictions cannot fill memory through the cache.
_parse_cached = lru_cache(maxsize=8192)(_parse)
_MAX_CACHED_CHARS = 2048


def parse_call(text: str, side: Side | None = None, config: VerifyConfig | None = None) -> ParsedCall:
    """Parse a verifier call string. With ``side``, also check its keywords against that side's signature.

    Raises BadCallError (naming what is wrong) for anything but a whitelisted verifier called with literal keyword
    arguments. Parsing is cached: the rubric-side call of a criterion repeats for every response of a group.
    """
    if not isinstance(text, str):
        raise BadCallError(f"a call must be a string, got {type(text).__name__}")
    max_chars = (config or DEFAULT_CONFIG).max_call_chars
    parsed = _parse_cached(text, max_chars) if len(text) <= _MAX_CACHED_CHARS else _parse(text, max_chars)
    if side is not None:
        spec = REGISTRY[parsed.name]
        params = {p.name for p in spec.params(side)}
        for name, _ in parsed.kwargs:
            if name not in params:
                # bind() words the error (which side the keyword belongs to, the expected signature).
                bind(spec, side, parsed.as_dict())
    return parsed


def format_call(verifier: str, keywords: dict[str, Any]) -> str:
    """A call string with literal keyword values, e.g. ``expr_verify(predict='\\\\frac{2}{3}')``, that
    :func:`parse_call` reads back to the same values (strings in the doubled-backslash form)."""
    return f"{verifier}({', '.join(f'{key}={literal_source(value)}' for key, value in keywords.items())})"


def verify_call_result(reference: str, prediction: str, config: VerifyConfig | None = None) -> VerifyResult:
    """Run the verifier named by a rubric-side call on a scoring-side call. Never raises.

    Args:
        reference: the rubric-side call, e.g. ``"time_verify(target='18:15', tformat='%H:%M')"``.
        prediction: the scoring-side call, e.g. ``"time_verify(predict='6:15 PM', pformat='%I:%M %p')"``.
        config: deadline, scales and size bounds; the defaults when omitted.

    Returns:
        A VerifyResult: score in [0, 1], status and reason. A prediction call that cannot be parsed, or that names a
        different verifier, has status ``bad_call``; a broken reference has ``bad_call`` or ``unparseable_target``.
    """
    config = config or DEFAULT_CONFIG
    try:
        ref = parse_call(reference, "rubric", config)
    except VerifierError as exc:
        return failed(exc.status, f"reference: {exc}")
    try:
        pred = parse_call(prediction, "scoring", config)
    except VerifierError as exc:
        return failed(exc.status, f"prediction: {exc}", ref.name)
    if pred.name != ref.name:
        return failed("bad_call", f"the prediction calls {pred.name} but the reference calls {ref.name}", ref.name)
    return run_verifier(ref.name, ref.as_dict(), pred.as_dict(), config)


def verify_call(reference: str, prediction: str, config: VerifyConfig | None = None) -> float:
    """Score in [0, 1] of a scoring-side call against a rubric-side call.

    Returns 0.0 when the prediction cannot be read or its check passes the deadline. Raises BadCallError or
    TargetError (subclasses of VerifierError and ValueError) when a call string or the reference's values are
    invalid, since then nothing was judged. Use :func:`verify_call_result` to get the status instead.
    """
    return raise_for_failure(verify_call_result(reference, prediction, config))


async def averify_call_result(reference: str, prediction: str, config: VerifyConfig | None = None) -> VerifyResult:
    """:func:`verify_call_result` for event loops: runs in a worker thread, so the loop is never blocked."""
    return await asyncio.to_thread(verify_call_result, reference, prediction, config)
