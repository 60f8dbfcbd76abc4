"""The expression worker: a child process that checks expression equivalence with Math-Verify.

Started by ``processes``, never for direct use, in one of two ways:

- ``python -m verifiers.expressions.worker --memory-mb N`` serves one request at a time on stdin/stdout;
- ``python -m verifiers.expressions.worker --memory-mb N --zygote-fd FD`` imports and warms up Math-Verify once, then
  forks a worker for every request on the Unix socket ``FD``; the request carries the worker's two pipe ends
  (``SCM_RIGHTS``), the answer its pid and a pidfd to kill it by. A worker killed at a deadline is replaced in
  milliseconds instead of the second an import of sympy takes. Forked workers die with the zygote
  (``PR_SET_PDEATHSIG``), and the zygote exits when the socket closes, so none outlives the server.

Protocol of a worker: one JSON request per line (``{"target", "predict", "float_rounding"}``), one JSON answer per line
(``{"status", "equal", "reason"}``), after a first ``{"ready": true}`` line. Between a request and its answer it writes
``{"target": "read"}`` once the target is parsed, so that the parent can tell a target that cannot be read in time (a
rubric error) from a prediction that cannot (a verdict on the response), and give each phase its own deadline (a target
that parses but cannot be compared in time is found by the parent, ``pool``). Parsed targets are cached:
the G responses of a group share theirs. Its address space is capped with ``RLIMIT_AS`` so an expression that explodes
in memory raises ``MemoryError`` here instead of swapping the machine; the parent kills it when a request passes its
deadline, which is why its own (signal-based) timeouts are turned off. LaTeX is parsed in ANTLR's two stages
(``latex_parsing``), and a wrong answer is told apart by one exact evaluation before sympy's ``simplify``
(``quick_inequality``). An exact power, factorial or binomial coefficient too large to compute is refused
before sympy starts it (``power_guard``), with the ``timeout`` the deadline would have given.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import re
import signal
import socket
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

from verifiers.expressions.power_guard import PowerTooLarge
from verifiers.sentences import sentence
from verifiers.text import bracket_depths

_TARGET_CACHE_SIZE = 256
# Deepest bracket nesting read. ANTLR's prediction slows with depth (about 1.4 s at 50 levels, 6 s at 400), so a
# text nested deeper runs out of any usual deadline anyway; it is refused before the parser starts. No answer a
# person writes comes near it (a ten-level continued fraction is 20 deep).
MAX_NESTING = 100
_MAX_PLAIN_NESTING = 8

_WARM_UP = (
    ("\\frac{1}{2}", "0.5"),
    ("\\{1, 2\\}", "\\{2, 1\\}"),
    ("x = 2", "2"),
    ("[1, 2)", "[1,2)"),
    ("9\\pi", "9\\pi"),
    ("x^2", "x*x"),
    ("\\sqrt{2}/2", "1/\\sqrt{2}"),
    ("\\sin^2 x + \\cos^2 x", "1"),
    ("(x+1)^{3}", "x^3+3x^2+3x+1"),
    ("e^{i\\pi}", "-1"),
)


def _limit_memory(megabytes: int) -> None:
    try:
        import resource
    except ImportError:  # not on this platform; the deadline still bounds the work
        return
    limit = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


# Plain-text mathematics written the way calculators take it. Math-Verify's own rewrite of " sqrt(2)" leaves a LaTeX
# line break before it ("1 + sqrt(2)" reads as 1), and it reads a plain "pi" or "log(3)" as a product of letters.
_PLAIN_SQRT = re.compile(r"(?<![\\A-Za-z])sqrt\s*\(([^()]*)\)")
_PLAIN_NAME = re.compile(
    r"(?<![\\A-Za-z])(?:(pi)(?![A-Za-z])|(arcsin|arccos|arctan|sinh|cosh|tanh|sin|cos|tan|sec|csc|cot|log|ln|exp)"
    r"(?=\s*\())"
)
_NON_DIGIT = re.compile(r"\D")
# Groups whose letters are words, names or units, never variables: Math-Verify drops or renames them by design.
_WORD_GROUP = re.compile(
    r"\\(?:text\w*|math(?:rm|bb|cal|frak|sf|tt)|operatorname\*?|mbox|begin|end|unit|si|SI|qty)\s*\{[^{}]*\}"
)
_COMMAND = re.compile(r"\\[A-Za-z]+")
# e and i may be read as the constants; an applied function keeps its name out of the free symbols
_CONSTANT_LETTERS = frozenset("ei")
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_RELATION_SIDES = re.compile(r"=|:|\\in(?![A-Za-z])")
_WORD = re.compile(r"[A-Za-z]{3,}|(?<![A-Za-z])or(?![A-Za-z])")
# a formula that is one math span or one box is checked inside it
_ONE_SPAN = re.compile(r"\$\$?([^$]*?)\$\$?|\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)
_WHITE_RUN = re.compile(r"\s{2,}")
# an upright or italic single letter is the letter (\mathrm{e}, \mathrm{i}, \mathrm{d}x): Math-Verify's own rewrite of
# it cuts a fraction short, so that "1 - \frac{1}{\mathrm{e}}" read as 1, equal to any "1 - ..."
_FONT_LETTER = re.compile(r"\\math(?:rm|it)\s*\{\s*([A-Za-z])\s*\}")


def _plain_math(text: str) -> str:
    if "sqrt" in text:
        for _ in range(_MAX_PLAIN_NESTING):  # inner roots first: sqrt(1 + sqrt(2))
            text, count = _PLAIN_SQRT.subn(r"\\sqrt{\1}", text)
            if not count:
                break
    return _PLAIN_NAME.sub(lambda m: "\\" + (m.group(1) or m.group(2)) + " ", text)


def _wrap(text: str) -> str:
    # Math-Verify extracts LaTeX between math delimiters; a bare expression is wrapped so that it is read whole.
    text = text.replace("**", "^").replace("\u2212", "-").replace("\u00d7", "\\times ").replace("\u00b7", "\\cdot ")
    text = _FONT_LETTER.sub(r"\1", _plain_math(text))
    # TeX reads a run of white space as one space; Math-Verify's extraction takes seconds over 2,000 of them
    text = _WHITE_RUN.sub(" ", text)
    if "$" in text or "\\(" in text or "\\[" in text:
        return text
    return f"${text}$"


class Checker:
    """Parses and compares expressions with Math-Verify (imported once per worker)."""

    def __init__(self) -> None:
        from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

        from verifiers.expressions.latex_parsing import enable_two_stage_parsing
        from verifiers.expressions.power_guard import enable_power_guard
        from verifiers.expressions.quick_inequality import enable_quick_inequality

        enable_two_stage_parsing()
        enable_quick_inequality()
        enable_power_guard()
        self._parse, self._verify = parse, verify
        self._config = [LatexExtractionConfig(), ExprExtractionConfig()]
        # A formula is read as LaTeX first. Math-Verify's plain-expression extraction, its fallback when the LaTeX
        # does not parse, picks a number out of the text: "6 ★ 5", "5or" and "5 ⊥" were each read as 5. It is asked
        # only when the LaTeX reading finds nothing at all (a currency sign after the number, "1,000.99$", leaves no
        # math span), and for words (a worked solution, a phrase with no value), where the value has to be found.
        self._formula_config = [LatexExtractionConfig()]
        self._targets: OrderedDict[str, list[Any]] = OrderedDict()

    def _read(self, text: str) -> list[Any]:
        if nesting(text) > MAX_NESTING:
            raise RecursionError(f"nested more than {MAX_NESTING} brackets deep")
        wrapped = _wrap(text)
        if sentence(text) is not None:
            return self._parse(wrapped, extraction_config=self._config, parsing_timeout=None)
        found = self._parse(wrapped, extraction_config=self._formula_config, parsing_timeout=None)
        if found:
            return found
        found = self._parse(wrapped, extraction_config=self._config, parsing_timeout=None)
        # the fallback may read the formula only if what it read holds every digit of it ("1,000.99$", not "6 \$ 5")
        if found and _NON_DIGIT.sub("", str(found[-1])) != _NON_DIGIT.sub("", text):
            return []
        return found

    def _read_target(self, target: str) -> list[Any]:
        # A target that parses but cannot be compared in time (10^{10^{10^{10}}}) is told apart by the pool, which
        # compares it with 0 when a check runs out (verifiers.expressions.pool): no check pays for that test otherwise.
        gold = self._targets.get(target)
        if gold is None:
            gold = self._read(target)
            self._targets[target] = gold
            if len(self._targets) > _TARGET_CACHE_SIZE:
                self._targets.popitem(last=False)
        self._targets.move_to_end(target)
        return gold

    def _lost_symbols(self, text: str, parsed: list[Any]) -> list[str]:
        """The letters of the bare formula ``text`` that its reading ``parsed`` holds nowhere, in order of appearance.

        Math-Verify reads letters after a number as a unit and drops them: ``\\frac{1}{2}m`` is read as 1/2, and a
        target read in part pays answers to another question. Only the value side of a bare formula is looked at (what
        follows its last ``=``, ``:`` or ``\\in``: the names before it are dropped by design); a text with math
        delimiters, a box or a word of three letters or more is prose, from which an answer is extracted. Letters in
        ``\\text{}``, ``\\mathrm{}`` and the like, command names and the constants e and i are not counted, and
        case is not (symbols are read in lower case).
        """
        text = text.strip()
        whole = _ONE_SPAN.fullmatch(text)
        if whole:
            text = next(group for group in whole.groups() if group is not None)
        elif text.startswith("\\boxed{") and text.endswith("}") and _balanced_braces(text[7:-1]):
            text = text[7:-1]
        if _DELIMITED.search(text) or sentence(text) is not None:
            return []
        value = _RELATION_SIDES.split(text)[-1]
        letters = _COMMAND.sub(" ", _WORD_GROUP.sub(" ", value))
        if _WORD.search(letters):
            return []
        found = dict.fromkeys(letter.lower() for letter in re.findall(r"[A-Za-z]", letters))
        if not found:
            return []
        from sympy import Derivative, Integral, Symbol
        from sympy.core.function import AppliedUndef

        kept: set[str] = set(_CONSTANT_LETTERS)
        for item in parsed:
            if hasattr(item, "free_symbols") and hasattr(item, "atoms"):  # an expression, a set or a matrix
                # bound variables count as read (the n of a sum, the x of a limit), and so does the d of a differential
                names = [str(symbol) for symbol in item.atoms(Symbol)]
                names += [str(applied.func) for applied in item.atoms(AppliedUndef)]
                if item.atoms(Derivative, Integral):
                    names.append("d")
                kept.update(letter.lower() for name in names for letter in name)
        return [letter for letter in found if letter not in kept]

    def _equal_with_imaginary_unit(self, gold: list[Any], parsed: list[Any], float_rounding: int) -> bool:
        # A complex number in product form, i(2-i) against 1+2i: the parser reads i as a variable. When i is the only
        # symbol on both sides, it is compared once more as the imaginary unit.
        if "i" not in {getattr(s, "name", None) for item in (*gold, *parsed) if hasattr(item, "free_symbols")
                       for s in item.free_symbols}:  # fmt: skip
            return False
        gold_i, parsed_i = _with_imaginary_unit(gold), _with_imaginary_unit(parsed)
        if gold_i is None or parsed_i is None:
            return False
        return bool(self._verify(gold_i, parsed_i, float_rounding=float_rounding, timeout_seconds=None))

    def check(
        self, target: str, predict: str, float_rounding: int, target_read: Callable[[], None] = lambda: None
    ) -> dict[str, Any]:
        """Compare two expressions; the answer's ``status`` is ok, unparseable_target or unparseable_pred.

        ``target_read`` is called once the target is parsed, before the prediction is.
        """
        try:
            gold = self._read_target(target)
        except RecursionError as exc:
            return {"status": "unparseable_target", "reason": f"the target is nested too deeply to parse ({exc})"}
        if not gold:
            return {"status": "unparseable_target", "reason": "Math-Verify found no expression in the target"}
        lost = self._lost_symbols(target, gold)
        if lost:
            # read whole or refused: a target read in part would pay an answer to another question
            named = ", ".join(lost)
            return {"status": "unparseable_target",
                    "reason": f"the target is read without {named} (as {str(gold[0])[:60]}); write it so that every "
                              f"symbol is read (\\frac{{{lost[0]}}}{{2}} for \\frac{{1}}{{2}}{lost[0]}), a unit in "
                              "\\text{}"}  # fmt: skip
        target_read()
        try:
            parsed = self._read(predict)
        except RecursionError as exc:
            return {"status": "unparseable_pred", "reason": f"the pred is nested too deeply to parse ({exc})"}
        if not parsed:
            return {"status": "unparseable_pred", "reason": "Math-Verify found no expression in the pred"}
        # A set and the relations that describe it are the same answer (x \in [-2, 7] and -2 \le x \le 7).
        equal = bool(self._verify(gold, parsed, float_rounding=float_rounding, timeout_seconds=None,
                                  allow_set_relation_comp=True))  # fmt: skip
        if not equal:
            equal = self._equal_with_imaginary_unit(gold, parsed, float_rounding)
        reason = f"read the target as {str(gold[0])[:80]} and the prediction as {str(parsed[0])[:80]}"
        return {"status": "ok", "equal": equal, "reason": reason}


def _balanced_braces(text: str) -> bool:
    depth = 0
    for char in text:
        depth += (char == "{") - (char == "}")
        if depth < 0:
            return False
    return depth == 0


def nesting(text: str) -> int:
    """The deepest nesting of brackets (``(``, ``[`` and ``{`` together) in ``text``."""
    return max(bracket_depths(text), default=0)


def _with_imaginary_unit(items: list[Any]) -> list[Any] | None:
    """``items`` with the symbol ``i`` read as the imaginary unit, or None when an item has any other free symbol."""
    from sympy import Basic, I

    out = []
    for item in items:
        if isinstance(item, Basic):
            symbols = item.free_symbols
            if any(getattr(symbol, "name", None) != "i" for symbol in symbols):
                return None
            item = item.subs({symbol: I for symbol in symbols})
        out.append(item)
    return out


def _answer(checker: Checker, line: str, target_read: Callable[[], None]) -> dict[str, Any]:
    try:
        request = json.loads(line)
        target, predict, rounding = str(request["target"]), str(request["predict"]), int(request["float_rounding"])
        return checker.check(target, predict, rounding, target_read)
    except MemoryError:
        return {"status": "timeout", "reason": "the expression exceeded the worker's memory limit"}
    except (
        PowerTooLarge
    ) as exc:  # what the deadline would end, ended before it starts (verifiers.expressions.power_guard)
        return {"status": "timeout", "reason": f"the expression cannot be compared within any deadline: {exc}"}
    except RecursionError:
        return {"status": "unparseable_pred", "reason": "the expression is nested too deeply to compare"}
    except Exception as exc:  # reported to the caller as status "error", never as a verdict
        return {"status": "error", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}


def serve(checker: Checker, reader: TextIO, writer: TextIO) -> None:
    """Answer requests from ``reader`` on ``writer`` until ``reader`` closes."""
    writer.write('{"ready": true}\n')
    writer.flush()

    def target_read() -> None:
        writer.write('{"target": "read"}\n')
        writer.flush()

    for line in reader:
        writer.write(json.dumps(_answer(checker, line, target_read)) + "\n")
        writer.flush()


def _die_with_parent() -> None:
    # Linux only: the kernel kills this worker when the zygote that forked it exits, whatever the reason.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_forked(checker: Checker, fds: list[int], control: socket.socket, memory_mb: int) -> NoReturn:
    code = 0
    try:
        control.close()  # the zygote must see the socket close when the server goes, whatever its workers hold
        _die_with_parent()
        if os.getppid() == 1:
            os._exit(0)
        _limit_memory(memory_mb)
        with os.fdopen(fds[0], "r") as reader, os.fdopen(fds[1], "w") as writer:
            serve(checker, reader, writer)
    except BrokenPipeError:
        pass
    except BaseException:  # noqa: BLE001 - nothing of the zygote's may run in the worker
        code = 1
    os._exit(code)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def zygote(checker: Checker, control_fd: int, memory_mb: int) -> None:
    """Fork a worker for every request on the socket ``control_fd`` until it closes (see the module docstring).

    Killed workers stay zombies until the next request reaps them, so that a pid sent to the server is never reused
    while the server may still signal it.
    """
    control = socket.socket(fileno=control_fd)
    control.send(b"ready")
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 2)
        except (ConnectionError, OSError):
            return
        if not message:
            return
        _reap()
        if message != b"fork" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            control.send(b"error: expected b'fork' and two file descriptors")
            continue
        pid = os.fork()
        if pid == 0:
            _run_forked(checker, fds, control, memory_mb)
        for fd in fds:
            os.close(fd)
        handles = [os.pidfd_open(pid)] if hasattr(os, "pidfd_open") else []
        try:
            socket.send_fds(control, [str(pid).encode()], handles)
        finally:
            for fd in handles:
                os.close(fd)


def main(argv: list[str] | None = None) -> None:
    """Serve requests on stdin/stdout until stdin closes, or fork workers for a socket (``--zygote-fd``)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--zygote-fd", type=int, default=None)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # Math-Verify warns on every call that its own timeouts are off
    sys.setrecursionlimit(4000)
    checker = Checker()
    for target, predict in _WARM_UP:  # the first comparisons of each kind are slow; pay for them before serving
        checker.check(target, predict, 6)
    # What is alive now (sympy, Math-Verify, their caches) lives as long as the process: out of the collector's sight,
    # a collection does not walk it, and a forked worker does not copy the pages it would touch doing so.
    gc.collect()
    gc.freeze()
    if args.zygote_fd is not None:
        zygote(checker, args.zygote_fd, args.memory_mb)
        return
    _limit_memory(args.memory_mb)
    serve(checker, sys.stdin, sys.stdout)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):  # the parent went away; nothing is left to answer
        sys.exit(0)
