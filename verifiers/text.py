"""text_verify: normalized edit similarity between an extracted string and a target (or the best of candidates).

Score: ``rapidfuzz.distance.Levenshtein.normalized_similarity`` of the normalized strings, ``1 - d / max(len)``,
where ``d`` is the edit distance. One edit on a 100-character string gives 0.99, ten edits give 0.90. With
``candidates`` the score is the maximum over candidates. Two empty strings score 1; an empty prediction against a
non-empty target scores 0.

Normalization, applied to both sides in this order:

0. Lone surrogates (code points U+D800-U+DFFF outside a pair: not text, but JSON's ``\\ud800`` escape can carry
   them) become U+FFFD, the replacement character.
1. Unicode NFKC (full-width letters and digits become ASCII, ligatures are split); always on.
2. ``use_latex``: LaTeX text markup is removed: math delimiters (``$``, ``$$``, ``\\(``, ``\\)``, ``\\[``, ``\\]``),
   text and font wrappers (``\\text{x}``, ``\\textbf``, ``\\mathrm``, ``\\mathbf``, ``\\operatorname``, ...) keep
   their content, ``\\left``/``\\right`` go, spacing commands (``\\,`` ``\\;`` ``\\quad`` ``~``) become a space,
   escaped characters (``\\%`` ``\\$`` ``\\&`` ``\\_`` ``\\#`` ``\\{`` ``\\}``) become the character, and
   ``\\dfrac``/``\\tfrac`` become ``\\frac``. Other commands (``\\frac``, ``\\sqrt``, ...) are kept as written.
3. ``ignore_st``: Traditional Chinese is converted to Simplified with OpenCC's ``t2s`` table (the maintained
   converter of the OpenCC project), so the two scripts compare equal.
4. ``ignore_case``: Unicode case folding.
5. ``ignore_punc``: every Unicode punctuation character (categories ``P*``) is removed.
6. White space: with ``ignore_space`` all white space is removed; otherwise runs of white space become one space and
   the ends are stripped (so spacing never costs more than it must).

``char_edits`` is no normalization: it lets a target of one or two words score by edit similarity as longer text
does (:func:`similarity`).

Not accepted: texts longer than ``VerifyConfig.max_text_chars``, before or after normalization (NFKC can expand a
character up to 18 times: U+FDFA is one character and 18 letters), so the edit distance is always computed on
bounded strings; such a prediction scores 0 as unparseable, and such a target is a rubric error. Semantic equivalence
(synonyms, paraphrases) is out of scope: this verifier is for extractive text such as OCR and transcriptions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz.distance import Levenshtein

from verifiers.config import VerifyConfig
from verifiers.result import PredictionError, TargetError, VerifyResult


@dataclass(frozen=True, slots=True)
class TextOptions:
    """The normalization switches of text_verify and list_verify."""

    use_latex: bool = False
    ignore_space: bool = False
    ignore_punc: bool = False
    ignore_case: bool = False
    ignore_st: bool = False
    char_edits: bool = False

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> TextOptions:
        """Pick the option keywords out of validated rubric-side keywords (absent ones default to False)."""
        return cls(**{name: bool(kwargs.get(name, False)) for name in cls.__slots__})


_DELIMITERS = re.compile(r"\$\$|\$|\\\(|\\\)|\\\[|\\\]")
_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|textrm|textsf|texttt|textnormal|emph|underline|mbox|mathrm|mathbf|mathit|mathsf|"
    r"mathtt|mathcal|mathbb|boldsymbol|operatorname)\s*\{([^{}]*)\}"
)
_SIZING = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])")
_SPACING = re.compile(r"\\(?:,|;|:|!|quad|qquad|enspace|thinspace|medspace|thickspace)(?![a-zA-Z])|~|\\\\")
_ESCAPED = re.compile(r"\\([%$&_#{}])")
_FRAC = re.compile(r"\\[dt]frac(?![a-zA-Z])")
_WHITESPACE = re.compile(r"\s+")
# Wrappers can nest (\text{\textbf{x}}); each pass removes one level, and the depth of real markup is small.
_MAX_WRAPPER_PASSES = 8


def substitute_until_stable(pattern: re.Pattern[str], replacement: str, text: str, passes: int) -> str:
    """``pattern.sub(replacement, text)`` repeated until nothing changes or ``passes`` passes are made (nested
    wrappers unwrap from the inside out, one level a pass)."""
    for _ in range(passes):
        changed = pattern.sub(replacement, text)
        if changed == text:
            break
        text = changed
    return text


def _strip_latex(text: str) -> str:
    text = _DELIMITERS.sub(" ", text)
    text = substitute_until_stable(_WRAPPERS, r"\1", text, _MAX_WRAPPER_PASSES)
    text = _SIZING.sub("", text)
    text = _SPACING.sub(" ", text)
    text = _ESCAPED.sub(r"\1", text)
    return _FRAC.sub(r"\\frac", text)


@lru_cache(maxsize=1)
def _t2s_converter() -> Any:
    import opencc

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """``text`` with Traditional Chinese characters written in Simplified (OpenCC's ``t2s``)."""
    return _t2s_converter().convert(text)


def _remove_punctuation(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def normalize_text(text: str, options: TextOptions = TextOptions()) -> str:
    """Normalize ``text`` as described in the module docstring.

    Short texts are cached, since targets repeat across the responses of a group; long ones are not, so that hostile
    predictions cannot fill memory through the cache.
    """
    if len(text) <= _MAX_CACHED_CHARS:
        return _normalize_cached(text, options)
    return _normalize(text, options)


_SURROGATES = re.compile("[\ud800-\udfff]")


def bracket_depths(text: str) -> Iterator[int]:
    """The bracket depth at each character of ``text``: ``(``, ``[`` and ``{`` counted together, an opening bracket
    already inside its own level, a closing one still inside it; a stray closing bracket never takes it below 0."""
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
            yield depth
        elif char in ")]}":
            yield depth
            depth = max(0, depth - 1)
        else:
            yield depth


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (a code point UTF-8 cannot carry)."""
    return _SURROGATES.search(text) is not None


def without_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate (JSON's ``"\\ud800"`` decodes to one; UTF-8 cannot carry it) replaced by
    U+FFFD, the replacement character."""
    return _SURROGATES.sub("\ufffd", text)


def _normalize(text: str, options: TextOptions) -> str:
    text = unicodedata.normalize("NFKC", without_lone_surrogates(text))
    if options.use_latex:
        text = _strip_latex(text)
    if options.ignore_st:
        text = to_simplified(text)
    if options.ignore_case:
        text = text.casefold()
    if options.ignore_punc:
        text = _remove_punctuation(text)
    if options.ignore_space:
        return _WHITESPACE.sub("", text)
    return _WHITESPACE.sub(" ", text).strip()


_MAX_CACHED_CHARS = 1024
_normalize_cached = lru_cache(maxsize=16_384)(_normalize)


# words that negate what they stand with, also as ignore_punc writes them (isn't is isnt)
_NEGATION_WORD = re.compile(
    r"\b(?:not|no|never|none|neither|nor|nothing|nobody|nowhere|cannot|without|"
    r"(?:is|are|was|were|do|does|did|has|have|had|ca|can|could|would|should|wo|must|need)n['\u2019]?t)\b"
    r"|n['\u2019]t\b",
    re.IGNORECASE,
)
#: Prefixes that negate the word they are put before (true and untrue, possible and impossible, toxic and non-toxic).
NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non-", "non", "non ")
_WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")
#: A target of at most this many words, none longer than ``SHORT_WORD_CHARS``, is compared word by word.
SHORT_TARGET_WORDS = 2
SHORT_WORD_CHARS = 12
#: A word of at least this many characters may differ from the target's by one edit (an OCR-style misspelling).
MISSPELLING_MIN_CHARS = 8


def _negations(text: str) -> int:
    return len(_NEGATION_WORD.findall(text))


def _negates(word: str, other: str) -> bool:
    """Whether ``word`` is ``other`` with a negating prefix (``untrue`` of ``true``), either way round."""
    longer, shorter = (word, other) if len(word) > len(other) else (other, word)
    return any(longer == prefix + shorter for prefix in NEGATING_PREFIXES if len(shorter) >= 2)


def _near_word(word: str, target: str) -> bool:
    """Whether a predicted word meets a short target's word: equal, or a misspelling of a long word (one edit, at
    least ``MISSPELLING_MIN_CHARS`` characters)."""
    if word == target:
        return True
    return min(len(word), len(target)) >= MISSPELLING_MIN_CHARS and Levenshtein.distance(word, target) <= 1


def similarity(a: str, b: str, char_edits: bool = False) -> float:
    """How near the prediction ``a`` is to the target ``b`` (both already normalized), in [0, 1]; 1 for two empty
    strings.

    The normalized Levenshtein similarity, except where it would pay an answer for saying something else: a prediction
    that negates what the target does not (or the other way round: ``not Paris``, ``isn't`` against ``is``) or that
    holds a word of the target with a negating prefix (``untrue`` for ``true``, ``impossible`` for ``possible``,
    ``disproved`` for ``proved``) scores 0; and a short target (at most two words of at most 12 characters) is
    compared word by word: each word must be the target's, or, for a word of at least 8 characters, one edit away from
    it (``Pharmacv`` for ``Pharmacy``), else the score is 0 (``Parish`` is not ``Paris``, ``Lyon`` not ``Lycn``); a
    space lost or added between its words (``ExportVolume``) is still an edit, not another word.
    Longer texts keep the edit similarity's tolerance for OCR-style misspellings, and so does a short target with
    ``char_edits`` (a rubric that wants partial credit for near spellings, as a dense training signal); a negation is
    a miss either way."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    if _negations(a) != _negations(b):
        return 0.0
    words_a, words_b = _WORD.findall(a), _WORD.findall(b)
    target_words = set(words_b)
    if any(_negates(x, y) for x in set(words_a) - target_words for y in target_words - set(words_a)):
        return 0.0
    short = len(words_b) <= SHORT_TARGET_WORDS and all(len(word) <= SHORT_WORD_CHARS for word in words_b)
    if short and not char_edits:
        spacing_only = a.replace(" ", "") == b.replace(" ", "")  # ExportVolume: a space lost, not another word
        if not spacing_only and (len(words_a) != len(words_b) or not all(map(_near_word, words_a, words_b))):
            return 0.0
    return Levenshtein.normalized_similarity(a, b)


def targets_or_candidates(rubric: Mapping[str, Any], max_candidates: int) -> list[Any]:
    """The one target, or the candidates, of a validated rubric-side call; exactly one of the two must be given.

    Shared by text_verify (targets are strings) and list_verify (targets are lists).
    """
    has_target = rubric.get("target") is not None
    if has_target == (rubric.get("candidates") is not None):
        raise TargetError("give exactly one of target=... or candidates=[...]")
    targets = [rubric["target"]] if has_target else list(rubric["candidates"])
    if not targets:
        raise TargetError("candidates is empty; give at least one candidate")
    if len(targets) > max_candidates:
        raise TargetError(f"{len(targets)} candidates given; at most {max_candidates} are allowed")
    return targets


def bounded_normal_form(text: str, options: TextOptions, limit: int, error: type[Exception], what: str) -> str:
    """``text`` normalized, checked against ``limit`` characters before and after normalization; raises ``error``
    (``PredictionError`` or ``TargetError``) naming ``what`` when it is longer."""
    if len(text) > limit:
        raise error(f"{what} has {len(text)} characters; at most {limit} are read")
    normal = normalize_text(text, options)
    if len(normal) > limit:
        raise error(f"{what} has {len(normal)} characters once normalized (NFKC); at most {limit} are read")
    return normal


def check_text(rubric: Mapping[str, Any], scoring: Mapping[str, Any], config: VerifyConfig) -> VerifyResult:
    """Score a prediction string against the target or candidates (see the module docstring)."""
    options = TextOptions.from_kwargs(rubric)
    limit = config.max_text_chars
    targets = [bounded_normal_form(t, options, limit, TargetError, "a target text")
               for t in targets_or_candidates(rubric, config.max_candidates)]  # fmt: skip
    for raw, normal in zip(targets_or_candidates(rubric, config.max_candidates), targets, strict=True):
        if raw.strip() and not normal:
            raise TargetError(f"the target text {raw!r:.60} normalizes to nothing under its options; a prediction "
                              "that did too would meet it")  # fmt: skip
    pred = bounded_normal_form(scoring["predict"], options, limit, PredictionError, "the prediction")
    best = max(similarity(pred, t, options.char_edits) for t in targets)
    if not pred and best < 1.0:
        return VerifyResult(0.0, "ok", "the prediction is empty", "text_verify")
    which = "the target" if len(targets) == 1 else f"the best of {len(targets)} candidates"
    return VerifyResult(best, "ok", f"normalized edit similarity {best:.4f} to {which}", "text_verify")
