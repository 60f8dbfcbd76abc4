"""The one text of a judge's JSON answer, from training to serving: separators, white space and strings.

A judge is trained on answers written by ``json.dumps`` (``", "`` and ``": "`` between items, no other white space),
so it must decode under a grammar that admits exactly that text, on every engine:

- in process, XGrammar compiles the request's schema with :data:`GRAMMAR_OPTIONS`;
- behind HTTP, an engine that takes a grammar per request (vLLM) is sent the same grammar as EBNF
  (:func:`answer_ebnf`), so its own flags (vLLM's default admits any white space, which an untrained judge writes
  until its token budget; its ``disable_any_whitespace`` admits only ``","`` and ``":"``, which a trained judge was
  never shown) do not decide what the judge may write;
- strings: XGrammar (0.2) admits no raw control character in a string without a length bound; in one with
  ``maxLength`` (every free-text field of an answer) it admits a raw tab or other control character, and no escape
  at all (no ``\"``, ``\\`` or ``\n``). So a served judge may write a raw tab there, which the readers accept
  (:func:`genrm.methods.answer_json.extract_json_object`: it says nothing of a verdict), and a training answer must
  hold no escape in such a field (a test checks the training answers against the grammar).

XGrammar is imported on first use (it needs torch): the ``local`` extra, or ``pip install xgrammar``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

#: Between items and after keys: what ``json.dumps`` writes by default, and the training answers hold.
ANSWER_SEPARATORS = (", ", ": ")
#: How XGrammar builds a grammar from a schema: no white space but the separators, no field outside the schema.
GRAMMAR_OPTIONS: dict[str, Any] = {"any_whitespace": False, "separators": ANSWER_SEPARATORS, "strict_mode": True}


def answer_text(value: Any) -> str:
    """``value`` written as a judge's answer is trained to be (the text the grammar admits; characters beyond ASCII as
    they are)."""
    return json.dumps(value, separators=ANSWER_SEPARATORS, ensure_ascii=False)


@functools.lru_cache(maxsize=256)
def _ebnf(schema_json: str) -> str:
    try:
        import xgrammar
    except ImportError:
        raise ValueError(
            "sending a judge its answer grammar needs XGrammar: pip install 'genrm[local]' (or xgrammar)"
        ) from None
    return str(xgrammar.Grammar.from_json_schema(schema_json, **GRAMMAR_OPTIONS))


def answer_ebnf(schema: dict[str, Any]) -> str:
    """The grammar of an answer to ``schema`` as EBNF, as XGrammar prints and parses it (remembered per schema).
    Raises ValueError when XGrammar is not installed."""
    return _ebnf(json.dumps(schema))  # key order kept: the grammar writes the properties in it


def require_xgrammar() -> None:
    """Raise ValueError now, naming the install, when XGrammar is missing (so an engine that needs it is refused
    when it is made, not at its first answer)."""
    answer_ebnf({"type": "object"})
