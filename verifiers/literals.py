"""Literal values in call strings, read and written the way people write LaTeX.

A rubric author writes ``expr_verify(target='\\frac{2}{3}')`` with one backslash, as in a ``.tex`` file, and so does a
teacher model. Python's own escapes would read ``\\f`` as a form feed, ``\\t`` as a tab, ``\\n`` as a new line (and
``\\u``, ``\\x``, ``\\N`` as errors), silently turning ``\\frac``, ``\\times``, ``\\neq`` into other text. So a string
literal in a call is read by these rules instead:

- **LaTeX as written.** When a single backslash stands before a letter anywhere in the string (``\\frac``, ``\\t``,
  ``\\n``), the string is taken as written: every backslash stays, except one before the string's own quote
  (``'it\\'s'``), which only escapes it. ``\\\\`` stays ``\\\\`` there too (a LaTeX line break, as in a matrix).
- **Doubled backslashes.** Otherwise backslashes are read as Python reads them: ``\\\\frac`` is ``\\frac``, the form
  the shipped data and ``repr()`` write. A string with no backslash reads the same either way.
- Raw strings (``r'\\frac{2}{3}'``) are taken as written, as Python does.

A value that still holds a control character (U+0000-U+001F, U+007F-U+009F) after reading is refused with
:class:`BadCallError`: it is almost always a JSON or YAML escape that ate a LaTeX command (the JSON string
``"\\times"`` holds a tab followed by ``imes``), and reading it as text would give a wrong verdict.

:func:`literal_source` writes a value back in the doubled form, so that writing and reading give the same value.
"""

from __future__ import annotations

import ast
import re
import unicodedata
import warnings
from typing import Any

from verifiers.result import BadCallError

# A backslash that is not itself escaped (an odd run of backslashes) standing before an ASCII letter.
_LATEX_COMMAND = re.compile(r"(?<!\\)(?:\\\\)*\\[A-Za-z]")
_CONTROL_NAMES = {
    "\b": ("a backspace", "\\b"),
    "\t": ("a tab", "\\t"),
    "\n": ("a line break", "\\n"),
    "\f": ("a form feed", "\\f"),
    "\r": ("a carriage return", "\\r"),
    "\v": ("a vertical tab", "\\v"),
    "\a": ("a bell", "\\a"),
}


def _is_control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"


def visible(text: str) -> str:
    """``text`` with each control character shown as its escape (``\\t``, ``\\x01``), for messages."""
    return "".join(
        _CONTROL_NAMES[c][1] if c in _CONTROL_NAMES else f"\\x{ord(c):02x}" if _is_control(c) else c for c in text
    )


def control_character_message(text: str) -> str | None:
    """Why ``text`` cannot be a value (it holds a control character), or None when it holds none."""
    for index, char in enumerate(text):
        if not _is_control(char):
            continue
        name, escape = _CONTROL_NAMES.get(char, (None, None))
        word = re.match(r"[A-Za-z]+", text[index + 1 :])
        hint = ""
        if escape is not None and word is not None:
            command = escape + word.group(0)
            hint = (
                f": {command} was probably read as an escape by JSON or YAML; write its backslash twice there "
                f"(\\{command}) so that the call holds the LaTeX"
            )
        code = f"U+{ord(char):04X}"
        return f"holds a control character ({f'{name}, ' if name else ''}{code}) at position {index}{hint}"
    return None


def _decode_body(prefix: str, quote: str, body: str, token: str) -> Any:
    # raw strings are Python's own "as written"; bytes are refused later ("must be a string")
    if "r" not in prefix.lower() and "b" not in prefix.lower() and _LATEX_COMMAND.search(body):
        # As written: only an escaped delimiter (an odd run of backslashes before it) loses its last backslash.
        return re.sub(rf"(?<!\\)((?:\\\\)*)\\({re.escape(quote[0])})", r"\1\2", body)
    return _python_literal(token)


def _python_literal(token: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "\!" and "\," are kept as written, with a SyntaxWarning we do not want
        try:
            return ast.literal_eval(token)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise BadCallError(f"not a valid string literal: {getattr(exc, 'msg', exc)}") from None


# A string literal: its prefix, then a triple-quoted or single-line body; a quote outside a string literal cannot
# occur in a call (names, numbers, brackets, commas), so the first quote always opens one.
_STRING_LITERAL = re.compile(r"(?<!\w)([rRbBuUfF]{0,2})('{3}|\"{3}|'|\")((?:\\.|(?!\2)[^\\])*?)\2", re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def normalize_string_literals(text: str) -> str:
    """``text`` with each string literal rewritten as ``repr()`` of its value under this module's rules.

    The result parses with ``ast`` to the values the rules give, so that ``ast.literal_eval`` reads LaTeX right.
    Raises BadCallError when a value holds a control character (naming it) or cannot be read.
    """
    if "\\" not in text and not _CONTROL.search(text):
        return text  # nothing to read differently from Python, and nothing to refuse
    pieces: list[str] = []
    last = 0
    for match in _STRING_LITERAL.finditer(text):
        prefix, quote, body = match.groups()
        if ("\n" in body and len(quote) == 1) or "f" in prefix.lower():
            continue  # a broken string or an f-string: ast.parse reports it
        value = _decode_body(prefix, quote, body, match.group(0))
        if isinstance(value, str):
            message = control_character_message(value)
            if message is not None:
                shown = visible(match.group(0)[:40]) + ("..." if len(match.group(0)) > 40 else "")
                raise BadCallError(f"the string {shown} {message}")
        pieces += [text[last : match.start()], repr(value)]
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def syntax_error_cause(text: str) -> BadCallError | None:
    """The error to report for ``text`` that Python cannot parse when it holds a control character, else None.

    A JSON ``"\\neq"`` puts a line break inside the quotes: the call no longer parses, and the line break is why.
    """
    message = control_character_message(text)
    return BadCallError(f"the call {message}") if message is not None else None


def read_literal(text: str) -> Any:
    """The Python literal written in ``text`` (a list such as ``['\\frac{1}{2}', '3']``), strings read as LaTeX.

    Raises BadCallError when it is not a literal or a string in it holds a control character.
    """
    source = normalize_string_literals(text.strip())
    try:
        return ast.literal_eval(source)
    except SyntaxError as exc:
        raise syntax_error_cause(text) or BadCallError(f"not a literal: {exc.msg}") from None
    except (ValueError, TypeError, MemoryError, RecursionError) as exc:
        raise BadCallError(f"not a literal: {exc}") from None


def without_control_characters(value: Any) -> Any:
    """``value`` (a string, or lists and tuples of them) with control characters out of its strings: the white-space
    ones (tab, line break, form feed, ...) become a space, the others are dropped. For values read from free text,
    such as a policy's response, where they are noise around the value and would make the call unreadable."""
    if isinstance(value, str):
        if not _CONTROL.search(value):
            return value
        return _CONTROL.sub(lambda m: " " if m.group(0).isspace() else "", value)
    if isinstance(value, (list, tuple)):
        return type(value)(without_control_characters(item) for item in value)
    return value


def _string_source(value: str) -> str:
    escaped = []
    for char in value:
        if char == "\\":
            escaped.append("\\\\")
        elif char == "'":
            escaped.append("\\'")
        elif _is_control(char):
            escaped.append(f"\\{ord(char):03o}")  # octal: no letter after the backslash, so read back as written
        else:
            escaped.append(char)
    return "'" + "".join(escaped) + "'"


def literal_source(value: Any) -> str:
    """Source text for ``value`` (str, number, bool, None, or lists, tuples and dicts of them) that reads back equal.

    Strings are written with doubled backslashes (``'\\\\frac{2}{3}'``), which :func:`read_literal` reads back
    exactly; a string holding a control character is written so that reading it back refuses it, as it should.
    """
    if isinstance(value, str):
        return _string_source(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal_source(item) for item in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal_source(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal_source(k)}: {literal_source(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "1e999" if value > 0 else "-1e999"  # a literal that reads back as infinity (repr's inf is a name)
    return repr(value)
