"""The one text of a judge's JSON answer, from training to serving: separators, white space and strings.

A judge is trained on answers written by ``json.dumps`` (``", "`` and ``": "`` between items, no other white space),
so it must decode under a grammar that admits exactly that text, on every engine:

- in process, XGrammar compiles :func:`answer_ebnf` of the request's schema;
- behind HTTP, an engine that takes a grammar per request (SGLang, vLLM) is sent that same EBNF, so its own flags
  (vLLM's default admits any white space, which an untrained judge writes until its token budget; its
  ``disable_any_whitespace`` admits only ``","`` and ``":"``, which a trained judge was never shown) do not decide
  what the judge may write;
- strings: JSON admits no raw control character in a string, and the readers parse strictly
  (:func:`genrm.methods.answer_json.extract_json_object`), so the grammar must not admit one either. XGrammar (0.2)
  builds a string with ``maxLength`` (every free-text field of an answer) from characters other than ``"``, ``\\``,
  CR and LF, which lets a raw tab or other control character through, and any string from characters that include
  the bytes of a UTF-16 surrogate; :func:`answer_ebnf` narrows those classes to what a JSON string admits
  unescaped. A bounded string admits no escape at all (no ``\"``, ``\\`` or ``\n``), so a training answer must
  hold none in such a field (a test checks the training answers against the grammar).

XGrammar is imported on first use (it needs torch): the ``local`` extra, or ``pip install xgrammar``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

#: Between items and after keys: what ``json.dumps`` writes by default, and the training answers hold.
ANSWER_SEPARATORS = (", ", ": ")
#: How XGrammar builds a grammar from a schema: no white space but the separators, no field outside the schema.
GRAMMAR_OPTIONS: dict[str, Any] = {"any_whitespace": False, "separators": ANSWER_SEPARATORS, "strict_mode": True}


def answer_text(value: Any) -> str:
    """``value`` written as a judge's answer is trained to be (the text the grammar admits; characters beyond ASCII as
    they are)."""
    return json.dumps(value, separators=ANSWER_SEPARATORS, ensure_ascii=False)


# XGrammar's classes of a string's unescaped characters (``[^\"\\\r\n]`` in a bounded string, with ``\0-\x1f`` in
# front in any other), and what JSON admits there: no control character, quote or backslash. In process the UTF-16
# surrogates are left out too: XGrammar takes the bytes of one as a character, but they are not UTF-8 and decode to
# three U+FFFD, which carry a bounded string past its maxLength. That class needs XGrammar 0.2.8 (0.2.7, which
# SGLang pins, reads a negative class with a character past U+007F wrongly and then refuses ASCII; a positive class
# of the same characters makes 0.2.8's token masks disagree with its matcher), so a served engine is sent the
# portable one, and a served judge that writes a surrogate's bytes fails that judgement on the length.
_STRING_CHARACTERS = re.compile(r"\[\^(?:\\0-\\x1f)?\\\"\\\\(?:\\r\\n)?\]")
_JSON_STRING_CHARACTERS = {True: r"[^\0-\x1f\"\\]", False: r"[^\0-\x1f\"\\\ud800-\udfff]"}


_MISSING = "sending a judge its answer grammar needs XGrammar: pip install 'genrm[local]' (or xgrammar)"


@functools.lru_cache(maxsize=256)
def _ebnf(schema_json: str, portable: bool) -> str:
    try:
        import xgrammar
    except ImportError:
        raise ValueError(_MISSING) from None
    grammar = str(xgrammar.Grammar.from_json_schema(schema_json, **GRAMMAR_OPTIONS))
    return _STRING_CHARACTERS.sub(lambda _: _JSON_STRING_CHARACTERS[portable], grammar)


def answer_ebnf(schema: dict[str, Any], portable: bool = True) -> str:
    """The grammar of an answer to ``schema`` as EBNF, as XGrammar prints and parses it (remembered per schema):
    ``portable`` for any XGrammar an engine may run (0.2 on), else for this process's (which also refuses the bytes
    of a UTF-16 surrogate in a string). Raises ValueError when XGrammar is not installed."""
    return _ebnf(json.dumps(schema), portable)  # key order kept: the grammar writes the properties in it


def require_xgrammar() -> None:
    """Raise ValueError now, naming the install, when XGrammar is missing (so an engine that needs it is refused
    when it is made, not at its first answer). Only looked up, not imported: the import takes torch (seconds), and
    a command that only asks an engine's health needs none of it."""
    import importlib.util

    if importlib.util.find_spec("xgrammar") is None:
        raise ValueError(_MISSING)
