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
4. The value is found when its tokens are a run of consecutive tokens of what the response asserts
   (:func:`verifiers.assertion.asserted_view`: not in reasoning, code or a quoted echo, nor under a negation, a
   condition or reported speech) that no neighbour binds into another value. A value cut out of a longer token is
   not found: ``12`` is not in ``123``, ``B`` not in ``Because``, ``3.5`` not in ``13.5``; nor one a neighbour binds:
   a fraction bar, exponent or relation before a number or lone letter (``1/12``, ``x^12``, ``x ≠ 12``), a fraction
   bar, exponent or factorial after it (``12/5``, ``12^2``, ``12!``), a sign glued to a number (``-12``), a letter or
   digit glued before it (``x1``, ``2x``) or a digit glued after a letter (``x2``). A superscript is an exponent
   (``10²`` is ``10^2``, never ``102``). Letters after a number are its suffix or unit (``12th``, ``10cm``).

Per kind of value (``verifiers.registry.ValueKind``):

- text and list items: as above (an item that holds its own negation, ``Do not enter``, is found as the response
  writes it, :func:`verifiers.assertion.written_view`); case is folded where the rubric ignores case
  (``ignore_case=True``), Traditional and Simplified Chinese are one where it sets ``ignore_st``, and tokens may be
  joined where it ignores white space (``NewYork`` is found in ``New York``). A list is found when each of its items
  is.
- expressions: as above; a single option letter is found whatever its case (the verifier reads letters so), and only
  where the response states it as an option (:func:`_option_statement`: ``(B)``, ``B.``, ``option B``, ``answer is
  B``, ``**B**``, a line of its own); a lone ``b`` elsewhere (``Let a and b be the roots``) is a symbol.
- dates and times: as above, case folded (``pm`` is ``PM``, as ``strptime`` reads it). The judge copies the value as
  written and names its format (``pformat``); it is never asked to rewrite one, so nothing more is allowed.
- boxes and points: each box's (point's) numbers, in order, are consecutive numbers of the response (numbers glued to
  a letter, as in ``x1``, are not read). Boxes may be listed in any order.

A value with no token at all (``':'``) is found when its characters, white space aside, are in the response. The empty
value (``''``, ``[]``) and ``predict=None`` state no value and are not looked for. Every step is a linear pass of a
compiled pattern or of ``str.find``; a response is read once per group (cached).

**Evidence** (:func:`find_evidence`): a quote a judge gives for its credit is found the same way, case folded, and it
must hold a content word (:func:`holds_content`, the definition the caption claims share): a token other than a lone
letter or digit, a function word of :data:`CLAIM_FILLER_WORDS` (contractions read whole: ``don't``) and a bare
opener's words (:data:`OPENER_WORDS`: "Solution", "Answer:", "Thought process:", "Let's solve this problem step by
step.", and their translations), or a formula of three numbers or more, so that punctuation, white space, an opener,
``of``, ``is not`` or a letter or digit alone (``X``, found in any response that writes ``10 x 7``; ``1``) is never
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

import bisect
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verifiers.assertion import asserted_view, written_view
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


_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")


def plain(text: str) -> str:
    """``text`` in the plain notation values are compared in (steps 1-2 of the module docstring)."""
    # a superscript is an exponent (10² is 10^2), which NFKC would glue on as a digit (102)
    text = _SUPERSCRIPT_RUN.sub(
        lambda m: "^" + m.group(0).translate(_SUPERSCRIPT) + " ", without_lone_surrogates(text)
    )
    text = unicodedata.normalize("NFKC", text)
    text = _DEGREE.sub("°", text)
    text = substitute_until_stable(_FRAC_BRACED, r" \1 / \2 ", text, _MAX_FRAC_DEPTH)
    text = _FRAC_SHORT.sub(r" \1 / \2 ", text)
    text = _COMMAND.sub(_command, text)
    text = _SYMBOL_WORDS.sub(lambda m: _SYMBOL_COMMANDS[m.group(1)], text)
    text = text.translate(_TRANSLATE)
    text = text.replace("**", "^").replace("<=", "≤").replace(">=", "≥").replace("!=", "≠")
    return _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), text)


def _plain_for(text: str, fold: bool, simplified: bool) -> str:
    text = plain(text)
    if simplified:
        text = to_simplified(text)
    return text.casefold() if fold else text


def _tokens(text: str, fold: bool, simplified: bool) -> list[str]:
    return _TOKEN.findall(_plain_for(text, fold, simplified))


# Tokens that bind a number next to them into another value: a fraction bar, an exponent, a relation (1/12, 12^2,
# x ≠ 12 do not state 12), and after it a factorial; a sign or a letter glued to it (-12, x1) makes it another too.
_BINDS_BEFORE = frozenset("/^<>≤≥≠")
_BINDS_AFTER = frozenset("/^!")
_SIGNS = frozenset("+-±")


@dataclass(frozen=True, slots=True)
class _Reading:
    """A response's tokens, each between separators, with where each token starts in that string and whether each
    is glued to the one before it (no white space between)."""

    joined: str
    starts: tuple[int, ...]
    tokens: tuple[str, ...]
    glued: tuple[bool, ...]


# A group's criteria are read response by response, so a few entries serve a whole group; few, since a response may
# be megabytes long.
@lru_cache(maxsize=8)
def _reading(response: str, fold: bool, simplified: bool) -> _Reading:
    text = _plain_for(response, fold, simplified)
    matches = list(_TOKEN.finditer(text))
    tokens = tuple(m.group(0) for m in matches)
    glued = tuple(n > 0 and matches[n - 1].end() == m.start() for n, m in enumerate(matches))
    starts, at = [], 1
    for token in tokens:
        starts.append(at)
        at += len(token) + 1
    return _Reading(_SEPARATOR + _SEPARATOR.join(tokens) + _SEPARATOR, tuple(starts), tokens, glued)


def _ascii_word(token: str) -> bool:
    """A number or a run of letters outside CJK (whose characters are each a token, glued as the script writes)."""
    return token[0].isalnum() and not _CJK_CHAR.match(token)


def _mathematical(token: str) -> bool:
    """A number or a lone letter: what an operator next to it binds (``**Fresh Bakery**`` is bold, not a power)."""
    return token[0].isdigit() or _lone_letter(token)


def _bound(reading: _Reading, first: int, last: int) -> bool:
    """Whether the run of tokens ``first``..``last`` is bound into a larger value by its neighbours (see
    ``_BINDS_BEFORE``): then it is not the value the verifier would read there."""
    tokens, glued = reading.tokens, reading.glued
    if first > 0:
        before = tokens[first - 1]
        if before in _BINDS_BEFORE and _mathematical(tokens[first]):
            return True
        if glued[first] and _ascii_word(tokens[first]):
            # a sign on a number (-12), a letter before a number (x1), a coefficient before a symbol (2x)
            if (before in _SIGNS and tokens[first][0].isdigit()) or _ascii_word(before):
                return True
    if last + 1 < len(tokens):
        after = tokens[last + 1]
        if after in _BINDS_AFTER and _mathematical(tokens[last]):
            return True
        if glued[last + 1] and after[0].isdigit() and _ascii_word(tokens[last]) and tokens[last][0].isalpha():
            return True  # x2 is not x; letters after a number (12th, 10cm) are its unit or suffix
    return False


def _run_found(tokens: list[str], reading: _Reading) -> bool:
    """Whether ``tokens`` are a run of the response's tokens that no neighbour binds into another value."""
    wanted = _SEPARATOR + _SEPARATOR.join(tokens) + _SEPARATOR
    position = reading.joined.find(wanted)
    while position >= 0:
        first = bisect.bisect_left(reading.starts, position + 1)
        if not _bound(reading, first, first + len(tokens) - 1):
            return True
        position = reading.joined.find(wanted, position + 1)
    return False


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
    if _run_found(tokens, _reading(response, fold, simplified)):
        return True
    return joined and _joined_found(tokens, response, fold, simplified)


@lru_cache(maxsize=8)
def _response_numbers(response: str) -> tuple[tuple[float, ...], dict[float, tuple[int, ...]]]:
    text = unicodedata.normalize("NFKC", without_lone_surrogates(asserted_view(response)))
    text = text.translate({ord("\u2212"): "-"})
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


def _lone_symbol(term: str) -> bool:
    """A lone letter or a lone digit: in almost every text (``1``, ``x``), so it ties nothing to one."""
    return _lone_letter(term) or (len(term) == 1 and term.isdigit())


def find_evidence(quote: str | None, response: str) -> str | None:
    """None when ``quote`` is evidence for a credit: found in ``response`` (tokens in a run, case folded; see the
    module docstring) and holding a content word (:func:`holds_content`: not punctuation, an opener's or a function
    word, a lone letter or a lone digit); else a sentence saying what is wrong."""
    if not quote or not quote.strip():
        return "no quote from the response is given for the credit"
    if not holds_content(quote):
        return (f"the quote {quote!r:.80} holds no content word (only punctuation, function words, lone letters or "
                "digits, white space or an opener)")  # fmt: skip
    if not _text_found(quote, response, True, False, False):
        return f"the quote {quote!r:.80} is not in the response"
    return None


def _option_letter(value: str) -> bool:
    stripped = value.strip().strip("()[].")
    return len(stripped) == 1 and stripped.isalpha()


def _option_statement(letter: str) -> re.Pattern[str]:
    """Where a response states ``letter`` as an option: in brackets (``(B)``, ``[B]``, ``{B}`` as in ``\\boxed{B}``),
    before a period, bracket or colon (``B.``, ``B)``, ``B:``), after a word that picks one (``option B``, ``answer
    is B``, ``choose B``), in bold, or alone on its line. A lone letter elsewhere (``Let a and b be the roots``, ``a
    b c d``) is a symbol or a word."""
    x = re.escape(letter)
    return re.compile(
        rf"[(\[{{]\s*{x}\s*[)\]}}]|(?<![\w'.-]){x}\s*[.):](?!\w)|\*\*\s*{x}\s*\*\*|^[ \t]*{x}[ \t]*$"
        rf"|\b(?:option|choice|answer|choose|chose|pick|select|is|letter|respuesta|antwort|réponse)\s*(?:is\s*)?:?\s*"
        rf"\(?{x}(?![\w'-])",
        re.IGNORECASE | re.MULTILINE,
    )


def _option_found(value: str, response: str) -> bool:
    letter = value.strip().strip("()[].")
    return _option_statement(letter).search(asserted_view(response)) is not None


def _negating(value: str) -> bool:
    return re.search(r"\b(?:not|no|never|nor|none)\b|n['\u2019]t\b", value, re.IGNORECASE) is not None


def find_prediction(kind: str, prediction: Any, response: str, rubric: Mapping[str, Any]) -> str | None:
    """None when ``prediction`` (a scoring-side ``predict`` value, already read for its ``kind``: a string, a list of
    strings, or a list of boxes or points) is found where ``response`` asserts it (:mod:`verifiers.assertion`); else a
    sentence naming what is not there.

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
                return f"the numbers {list(shape)!r:.80} are not asserted in the response in that order"
        return None
    items = [prediction] if isinstance(prediction, str) else [str(item) for item in prediction]
    asserted = asserted_view(response)
    for item in items:
        if kind == "expression" and _option_letter(item):
            if not _option_found(item, response):
                return f"{item!r:.80} is not stated as an option in the response"
            continue
        fold = options.ignore_case or kind == "time"
        if _text_found(item, asserted, fold, options.ignore_st, options.ignore_space):
            continue
        # a text value's own words of negation are the value's ("Do not enter"), read as the response writes them
        if kind in ("text", "list") and _negating(item):
            if _text_found(item, written_view(response), fold, options.ignore_st, options.ignore_space):
                continue
        return f"{item!r:.80} is not asserted in the response"
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
    "claim claims claimed wo ca sha don doesn didn isn aren wasn weren haven hasn hadn wouldn couldn shouldn mustn "
    "needn ain".split()
)
# a contraction's pieces are function words: don't is "do not", it's is "it"
_CONTRACTION = re.compile(r"n['\u2019]t\b|['\u2019](?:s|re|ve|ll|d|m)\b", re.IGNORECASE)
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
    text = _CONTRACTION.sub(lambda m: " not" if m.group(0)[0] in "nN" else " ", text)
    return [term for term in map(_term, _tokens(text, True, False)) if term is not None]


@lru_cache(maxsize=8)
def _text_terms(text: str) -> frozenset[str]:
    return frozenset(_terms(text))


_FORMULA_NUMBERS = 3


def holds_content(text: str, *, lone_letters: bool = False) -> bool:
    """Whether ``text`` holds a content word: a token other than punctuation, an operator, a bare opener's words,
    the function words of :data:`CLAIM_FILLER_WORDS` (contractions read whole: ``don't`` is two of them) and, unless
    ``lone_letters``, a lone letter or digit (a caption ``X.`` describes nothing, and a quote ``1`` or ``of`` is in
    almost every response; a claim ``X`` is still something to look for in its caption); or three numbers or more,
    a formula (``2 x 4 = 8``). The one definition of content
    for evidence quotes, captions and claims."""
    terms = _text_terms(text)
    if any(lone_letters or not _lone_symbol(term) for term in terms):
        return True
    # a formula of three numbers or more ("2 x 4 = 8") is a passage of its own, where one digit is in any response
    return sum(token[0].isdigit() for token in _tokens(text, True, False)) >= _FORMULA_NUMBERS


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
