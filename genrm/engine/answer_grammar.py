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
  hold none in such a field (a test checks the training answers against the grammar);
- quotes: a string whose schema names the text it is quoted from (:data:`QUOTE_OF`) admits only a run of that
  text's words as written there, or nothing (:func:`quote_rules`), so a constrained judge cannot write a quote the
  text does not hold, whatever it was trained on.

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


#: A string schema's keyword (an annotation to any JSON-schema validator) whose value is the text the string is
#: quoted from: the grammar admits only a run of that text's words as written there, or the empty string.
QUOTE_OF = "x-quote-of"
#: The longest text a quote is held to by the grammar: a quote of a longer one is a plain string (its rules grow
#: with the text, and so does compiling them), which the caller's own check still looks for in the text.
MAX_QUOTED_TEXT_CHARS = 8000
#: A word of a quoted text: a run of letters and digits, or one other character that is not white space.
_WORD = re.compile(r"\w+|[^\w\s]")
#: What a bounded JSON string cannot hold unescaped (see the module docstring).
_UNWRITABLE = re.compile(r'[\0-\x1f"\\\ud800-\udfff]')
_SLOT = "genrm-quote-slot-{}"


def quote_rules(text: str, name: str) -> list[str]:
    """EBNF rules (XGrammar's dialect) whose rule ``name`` admits the empty string or a run of ``text``'s words
    (:data:`_WORD`) as written there, from the first character of one word to the last of another; the white space
    between two words is written as in the text, a new line or a tab as a space. A word a JSON string cannot hold
    unescaped (a quote mark, a backslash) ends every run that reaches it. ``name`` must be a rule name (letters,
    digits, ``_``); the rules are about twice as many as the words."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    writable = [not _UNWRITABLE.search(text[a:b]) for a, b in words]
    rules, starts = [], []
    for i, (start, end) in enumerate(words):
        if not writable[i]:
            continue
        starts.append(f"{name}_{i}")
        rule = f'{name}_{i} ::= "{text[start:end]}"'
        if i + 1 < len(words) and writable[i + 1]:
            space = _UNWRITABLE.sub(" ", text[end : words[i + 1][0]])
            between = f'"{space}" ' if space else ""
            rule += f' ("" | {between}{name}_{i + 1})'
        rules.append(rule)
    return [f'{name} ::= ""{"".join(f" | {s}" for s in starts)}', *rules]


def _take_quotes(node: Any, texts: list[str]) -> Any:
    # The schema with each quoted string replaced by a constant naming its slot (the text's index in ``texts``),
    # which the grammar then replaces by the text's rules; a text too long to hold stays a plain string.
    if isinstance(node, list):
        return [_take_quotes(item, texts) for item in node]
    if not isinstance(node, dict):
        return node
    if QUOTE_OF in node:
        rest = {key: value for key, value in node.items() if key != QUOTE_OF}
        text = node[QUOTE_OF]
        if not isinstance(text, str) or len(text) > MAX_QUOTED_TEXT_CHARS:
            return rest
        if text not in texts:
            texts.append(text)
        return {"const": _SLOT.format(texts.index(text))}
    return {key: _take_quotes(value, texts) for key, value in node.items()}


def plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the grammar's own keywords (:data:`QUOTE_OF`): what is sent to an engine that takes a JSON
    schema rather than a grammar, which has no use for the quoted text."""
    return _plain(schema)


def _plain(node: Any) -> Any:
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if isinstance(node, dict):
        return {key: _plain(value) for key, value in node.items() if key != QUOTE_OF}
    return node


@functools.lru_cache(maxsize=256)
def _ebnf(schema_json: str, portable: bool) -> str:
    try:
        import xgrammar
    except ImportError:
        raise ValueError(
            "sending a judge its answer grammar needs XGrammar: pip install 'genrm[local]' (or xgrammar)"
        ) from None
    texts: list[str] = []
    schema = _take_quotes(json.loads(schema_json), texts)
    grammar = str(xgrammar.Grammar.from_json_schema(json.dumps(schema), **GRAMMAR_OPTIONS))
    grammar = _STRING_CHARACTERS.sub(lambda _: _JSON_STRING_CHARACTERS[portable], grammar)
    rules = []
    for index, text in enumerate(texts):
        name, slot = f"q{index}", f'"\\"{_SLOT.format(index)}\\""'
        if slot not in grammar:  # XGrammar wrote the constant otherwise: the answer would be held to the slot's name
            raise ValueError(f"the answer grammar has no {slot} to put a quote's rules in")
        grammar = grammar.replace(slot, f'"\\"" {name} "\\""')
        rules += quote_rules(text, name)
    return grammar + "".join(rule + "\n" for rule in rules)


def answer_ebnf(schema: dict[str, Any], portable: bool = True) -> str:
    """The grammar of an answer to ``schema`` as EBNF, as XGrammar prints and parses it (remembered per schema):
    ``portable`` for any XGrammar an engine may run (0.2 on), else for this process's (which also refuses the bytes
    of a UTF-16 surrogate in a string); a string with :data:`QUOTE_OF` admits only a quote of its text. Raises
    ValueError when XGrammar is not installed."""
    return _ebnf(json.dumps(schema), portable)  # key order kept: the grammar writes the properties in it


def require_xgrammar() -> None:
    """Raise ValueError now, naming the install, when XGrammar is missing (so an engine that needs it is refused
    when it is made, not at its first answer)."""
    answer_ebnf({"type": "object"})
