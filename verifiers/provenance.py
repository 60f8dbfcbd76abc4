"""Is a prediction in the response? The check that a model judge's extracted value was read, not invented.

Minimal exposure keeps the targets from the judge, but a judge can still write a value the response never states (a
response of one colon "answered" ``predict='12'``). :func:`find_prediction` says whether the value of a scoring-side
call is found in the response it was extracted from, under the normalisation below; callers score a value that is
not found as no value stated (``genrm.methods.rubric.execution``, status ``ungrounded``).

**How a value is found.** Both the value and the response are read the same way, then compared:

1. Unicode NFKC (full-width digits, ligatures), the minus sign and the multiplication and division signs as ``-``,
   ``*`` and ``/``, ``**`` as ``^``, ``<=``/``>=``/``!=`` as ``≤``/``≥``/``≠``, Greek letters by their names (``π``
   and ``\\pi`` are both ``pi``), thousands separators dropped (``1,000`` is ``1000``).
2. LaTeX as the judge is asked to write it in plain notation: ``\\frac{3}{4}`` (also ``\\dfrac``, ``\\tfrac``,
   ``\\frac34``) is ``3/4``; ``\\sqrt`` and ``√`` are ``sqrt``; ``\\cdot``, ``\\times`` are ``*``; ``\\le``, ``\\ge``,
   ``\\ne``, ``\\pm``, ``\\infty``, ``^\\circ`` their symbols, with or without the backslash (``times`` is
   ``*``); ``\\%`` is ``%``; every other command (``\\text``,
   ``\\mathrm``, ``\\left``, ``\\boxed``...) and every ``$``, ``\\(``, brace and bracket is markup and is dropped.
3. What is left is cut into tokens: numbers (``12``, ``3.5``), runs of letters (``Fresh``), each CJK, kana or hangul
   character on its own, and the operators ``+ - * / = ^ < > ≤ ≥ ≠ % ± ∞ ° ! |``. White space, quotes, commas,
   colons, periods and brackets separate tokens and are not tokens themselves.
4. The value is found when its tokens are a run of consecutive tokens of the response. A value cut out of a longer
   token is not found: ``12`` is not in ``123``, ``B`` not in ``Because``, ``3.5`` not in ``13.5``.

Per kind of value (``verifiers.registry.ValueKind``):

- text and list items: as above; case is folded where the rubric ignores case (``ignore_case=True``), Traditional and
  Simplified Chinese are one where it sets ``ignore_st``, and tokens may be joined where it ignores white space
  (``NewYork`` is found in ``New York``). A list is found when each of its items is.
- expressions: as above; a single option letter is found whatever its case (the verifier reads letters so).
- dates and times: as above, case folded (``pm`` is ``PM``, as ``strptime`` reads it). The judge copies the value as
  written and names its format (``pformat``); it is never asked to rewrite one, so nothing more is allowed.
- boxes and points: each box's (point's) numbers, in order, are consecutive numbers of the response (numbers glued to
  a letter, as in ``x1``, are not read). Boxes may be listed in any order.

A value with no token at all (``':'``) is found when its characters, white space aside, are in the response. The empty
value (``''``, ``[]``) and ``predict=None`` state no value and are not looked for. Every step is a linear pass of a
compiled pattern or of ``str.find``; a response is read once per group (cached).

**Evidence** (:func:`find_evidence`): a quote a judge gives for its credit is found the same way, case folded, and it
must hold content: a token other than a lone letter and a bare opener's words (:data:`OPENER_WORDS`: "Solution",
"Answer:", "Thought process:", "Let's solve this problem step by step.", and their translations), so that
punctuation, white space, an opener or a letter alone (``X``, found in any response that writes ``10 x 7``) is never
evidence.

**Claims** (:func:`find_claim`): what a caption judge says a caption claims is a paraphrase, not a copy, so it is
checked by its content words rather than as a run: the claim's tokens, case folded, with English function words and
the words judges use to talk about captions left out (:data:`CLAIM_FILLER_WORDS`), number words as digits (``three``
is ``3``), and the other words by their Snowball stems (``dogs`` is ``dog``, ``parked`` is ``park``). A claim is found
when every number it holds is in the text and more than half of its content words are; a claim with no content word is
not found (it says nothing of the caption). A text with no content word at all (punctuation, an opener, lone
letters) holds no content (:func:`holds_content`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from verifiers.text import TextOptions, substitute_until_stable, to_simplified, without_lone_surrogates

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|\d+(?:\.\d+)?|(?:(?![{_CJK}])[^\W\d_])+|[+\-*/=<>≤≥≠^%±∞°!|]")
_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+)(?![\d,]|\.\d)")
_FRAC_BRACED = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*([0-9A-Za-z])\s*([0-9A-Za-z])")
_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?")
_COMMAND = re.compile(r"\\([A-Za-z]+)|\\(.)", re.DOTALL)
# the symbol commands' names written without their backslash (a judge told to write no backslashes drops it)
_SYMBOL_WORDS = re.compile(r"(?<![A-Za-z])(cdot|times|div|leq|geq|neq|infty)(?![A-Za-z])")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
_OPERATOR = re.compile(r"[+\-*/=<>≤≥≠^%±∞°!|]")
_SPACE = re.compile(r"\s+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_MAX_FRAC_DEPTH = 6
#: Occurrences of a value examined when the rubric ignores white space (the tokens may then be joined anywhere).
_MAX_JOINED_OCCURRENCES = 10_000
_SEPARATOR = "\x00"

_SYMBOL_COMMANDS: dict[str, str] = {
    "cdot": "*", "times": "*", "ast": "*", "div": "/", "le": "≤", "leq": "≤", "leqslant": "≤", "ge": "≥",
    "geq": "≥", "geqslant": "≥", "ne": "≠", "neq": "≠", "pm": "±", "infty": "∞", "circ": "°", "degree": "°",
    "sqrt": " sqrt ", "lt": "<", "gt": ">",
}  # fmt: skip
_GREEK_NAMES = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
                "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "varpi", "rho", "varrho", "sigma",
                "varsigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega"}  # fmt: skip
_ESCAPED = {"%": "%", "$": " ", "{": " ", "}": " ", "&": "&", "#": "#", "_": "_", ",": " ", ";": " ", "!": " ",
            ":": " ", " ": " ", "(": " ", ")": " ", "[": " ", "]": " ", "\\": " "}  # fmt: skip


def _greek_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x0391, 0x03CA):
        name = unicodedata.name(chr(code), "")
        if "LETTER" in name:
            letter = name.rsplit(" ", 1)[-1].lower()
            table[code] = f" {letter if 'SMALL' in name else letter.capitalize()} "
    table[0x03C2] = " sigma "  # final sigma
    return table


_TRANSLATE = {ord("\u2212"): "-", ord("\u2013"): "-", ord("×"): "*", ord("·"): "*", ord("⋅"): "*", ord("÷"): "/",
              ord("√"): " sqrt ", ord("$"): " ", **_greek_table()}  # fmt: skip


def _command(match: re.Match[str]) -> str:
    name, symbol = match.group(1), match.group(2)
    if name is None:
        return _ESCAPED.get(symbol, " ")
    if name in _SYMBOL_COMMANDS:
        return _SYMBOL_COMMANDS[name]
    if name.lower() in _GREEK_NAMES:
        return f" {name} "
    return " "


def plain(text: str) -> str:
    """``text`` in the plain notation values are compared in (steps 1-2 of the module docstring)."""
    text = unicodedata.normalize("NFKC", without_lone_surrogates(text))
    text = _DEGREE.sub("°", text)
    text = substitute_until_stable(_FRAC_BRACED, r" \1 / \2 ", text, _MAX_FRAC_DEPTH)
    text = _FRAC_SHORT.sub(r" \1 / \2 ", text)
    text = _COMMAND.sub(_command, text)
    text = _SYMBOL_WORDS.sub(lambda m: _SYMBOL_COMMANDS[m.group(1)], text)
    text = text.translate(_TRANSLATE)
    text = text.replace("**", "^").replace("<=", "≤").replace(">=", "≥").replace("!=", "≠")
    return _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), text)


def _tokens(text: str, fold: bool, simplified: bool) -> list[str]:
    text = plain(text)
    if simplified:
        text = to_simplified(text)
    if fold:
        text = text.casefold()
    return _TOKEN.findall(text)


# A group's criteria are read response by response, so a few entries serve a whole group; few, since a response may
# be megabytes long.
@lru_cache(maxsize=8)
def _response_tokens(response: str, fold: bool, simplified: bool) -> str:
    """The response's tokens, each between separators."""
    return _SEPARATOR + _SEPARATOR.join(_tokens(response, fold, simplified)) + _SEPARATOR


@lru_cache(maxsize=8)
def _bare(response: str) -> str:
    return _SPACE.sub("", plain(response))


def _joined_found(tokens: list[str], response: str, fold: bool, simplified: bool) -> bool:
    """Whether the value's tokens, joined, are a run of the response's tokens, joined (the rubric ignores white space:
    ``NewYork`` and ``New York`` are one)."""
    response_tokens = _tokens(response, fold, simplified)
    concatenated = "".join(response_tokens)
    boundaries, offset = {0}, 0
    for token in response_tokens:
        offset += len(token)
        boundaries.add(offset)
    wanted = "".join(tokens)
    position = concatenated.find(wanted)
    for _ in range(_MAX_JOINED_OCCURRENCES):
        if position < 0:
            return False
        if position in boundaries and position + len(wanted) in boundaries:
            return True
        position = concatenated.find(wanted, position + 1)
    return False


def _text_found(value: str, response: str, fold: bool, simplified: bool, joined: bool) -> bool:
    tokens = _tokens(value, fold, simplified)
    if not tokens:
        bare = _SPACE.sub("", plain(value))
        return not bare or bare in _bare(response)
    if (_SEPARATOR + _SEPARATOR.join(tokens) + _SEPARATOR) in _response_tokens(response, fold, simplified):
        return True
    return joined and _joined_found(tokens, response, fold, simplified)


@lru_cache(maxsize=8)
def _response_numbers(response: str) -> tuple[tuple[float, ...], dict[float, tuple[int, ...]]]:
    text = unicodedata.normalize("NFKC", without_lone_surrogates(response)).translate({ord("\u2212"): "-"})
    numbers = tuple(float(m) for m in _NUMBER.findall(text))
    where: dict[float, list[int]] = {}
    for index, number in enumerate(numbers):
        where.setdefault(number, []).append(index)
    return numbers, {number: tuple(indices) for number, indices in where.items()}


def _shape_found(shape: Sequence[Any], response: str) -> bool:
    try:
        wanted = [float(v) for v in shape]
    except (TypeError, ValueError, OverflowError):
        return True  # not a shape: the verifier counts it as a miss, which earns nothing to invent
    if not wanted:
        return True
    numbers, where = _response_numbers(response)
    size = len(wanted)
    return any(list(numbers[start : start + size]) == wanted for start in where.get(wanted[0], ()))


def _shapes(value: Any, arity: int) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        return []
    if len(value) == arity and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [value]
    return [shape for shape in value if isinstance(shape, (list, tuple))]


#: The words of bare openers (the master keys of "One Token to Fool LLM-as-a-Judge" and their kin): a quote made of
#: these alone, with punctuation and white space, holds no content.
OPENER_WORDS: frozenset[str] = frozenset(
    "solution solutions answer answers final thought thoughts process reasoning let lets s us solve this problem step "
    "by the is a an here so therefore thus response reply solución solucion respuesta lösung loesung antwort réponse "
    "reponse решение ответ 解 答 案 解答 回 答案 题 步 骤".split()
)


def _lone_letter(token: str) -> bool:
    """Whether ``token`` is one letter, which nearly every text holds (``x`` written for times, ``I``, a variable's
    name), so it ties nothing to the text; a lone CJK character is a word and is not one."""
    return len(token) == 1 and token.isalpha() and not _CJK_CHAR.fullmatch(token)


def _evidence_token(token: str) -> bool:
    """Whether ``token`` (case folded) can carry a quote: not an operator, not a bare opener's word, and not a lone
    letter."""
    if token in OPENER_WORDS or _OPERATOR.fullmatch(token):
        return False
    return not _lone_letter(token)


def find_evidence(quote: str | None, response: str) -> str | None:
    """None when ``quote`` is evidence for a credit: found in ``response`` (tokens in a run, case folded; see the
    module docstring) and holding content beyond a bare opener's words and lone letters; else a sentence saying what
    is wrong."""
    if not quote or not quote.strip():
        return "no quote from the response is given for the credit"
    if not any(map(_evidence_token, _tokens(quote, True, False))):
        return f"the quote {quote!r:.80} holds no content (punctuation, a lone letter, white space or an opener)"
    if not _text_found(quote, response, True, False, False):
        return f"the quote {quote!r:.80} is not in the response"
    return None


def _option_letter(value: str) -> bool:
    stripped = value.strip().strip("()[].")
    return len(stripped) == 1 and stripped.isalpha()


def find_prediction(kind: str, prediction: Any, response: str, rubric: Mapping[str, Any]) -> str | None:
    """None when ``prediction`` (a scoring-side ``predict`` value, already read for its ``kind``: a string, a list of
    strings, or a list of boxes or points) is found in ``response``; else a sentence naming what is not there.

    ``kind`` is the verifier's :data:`verifiers.registry.ValueKind`; ``rubric`` its rubric-side keywords (whether it
    ignores case, white space, Traditional/Simplified Chinese). The empty value and None are never looked for.
    """
    if prediction is None or prediction in ("", [], ()):
        return None
    options = TextOptions.from_kwargs(rubric) if kind in ("text", "list") else TextOptions()
    if kind in ("boxes", "points"):
        arity = 4 if kind == "boxes" else 2
        for shape in _shapes(prediction, arity):
            if not _shape_found(shape, response):
                return f"the numbers {list(shape)!r:.80} are not in the response in that order"
        return None
    items = [prediction] if isinstance(prediction, str) else [str(item) for item in prediction]
    for item in items:
        fold = options.ignore_case or kind == "time" or (kind == "expression" and _option_letter(item))
        if not _text_found(item, response, fold, options.ignore_st, options.ignore_space):
            return f"{item!r:.80} is not in the response"
    return None


#: Words a claim about a caption holds without saying what the caption states: English function words, and the words
#: a judge uses to talk about captions and images. Compared case folded, before stemming.
CLAIM_FILLER_WORDS: frozenset[str] = OPENER_WORDS | frozenset(
    "a an the this that these those there here it its it's they them their he him his she her we our you your i me "
    "my is are was were be been being am has have had do does did will would can could may might shall should must "
    "of in on at to from by with without for about into onto over under near next beside besides behind above below "
    "between among around across through along against toward towards up down out off and or but nor so yet as than "
    "then also too very just only some any each every all both either neither other another such same which who whom "
    "whose what when where why how not no none nothing n t s caption captions image images picture photo photograph "
    "scene shown shows show showing depicted depicts depict depicting visible appears appear mention mentions "
    "mentioned mentioning state states stated stating say says said describe describes described describing "
    "claim claims claimed".split()
)
_NUMBER_WORDS = {word: str(value) for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty".split())}  # fmt: skip
#: The share of a claim's content words that the text it is said to come from must exceed.
CLAIM_SHARE = 0.5


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # imported at first use: it loads every language's stemmer (tens of milliseconds)

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _term(token: str) -> str | None:
    """A claim's or text's token as the term it is compared by (None: filler, not content)."""
    if token in CLAIM_FILLER_WORDS or _OPERATOR.fullmatch(token):
        return None
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    if token[0].isdigit() or len(token) == 1:
        return token
    return _stemmer().stemWord(token)


def _terms(text: str) -> list[str]:
    return [term for term in map(_term, _tokens(text, True, False)) if term is not None]


@lru_cache(maxsize=8)
def _text_terms(text: str) -> frozenset[str]:
    return frozenset(_terms(text))


def holds_content(text: str, *, lone_letters: bool = False) -> bool:
    """Whether ``text`` holds a content word: a token other than punctuation, an operator, a bare opener's words,
    the function words of :data:`CLAIM_FILLER_WORDS` and, unless ``lone_letters``, a lone letter (a caption ``X.``
    describes nothing; a claim ``X`` is still something to look for in its caption)."""
    return any(lone_letters or not _lone_letter(term) for term in _text_terms(text))


def find_claim(claim: str, text: str) -> str | None:
    """None when ``claim`` (a judge's paraphrase of what ``text`` states) is found in ``text``: every number it holds
    is there and more than :data:`CLAIM_SHARE` of its content words are (stems, case folded; see the module
    docstring); else a sentence saying what is wrong."""
    terms = _terms(claim)
    if not terms:
        return f"the claim {claim!r:.60} holds no content word"
    present = _text_terms(text)
    numbers = [term for term in terms if term[0].isdigit() and term not in present]
    if numbers:
        return f"the claim {claim!r:.60} holds the number {numbers[0]}, which the text does not"
    found = sum(term in present for term in terms)
    if found <= CLAIM_SHARE * len(terms):
        return f"the claim {claim!r:.60} is not in the text ({found} of its {len(terms)} content words are)"
    return None
