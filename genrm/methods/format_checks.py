"""Response-level format violations that zero a reward whatever its content: repetition loops and language mixing.

**Repetition loop.** The response is split into tokens (runs of Latin letters and digits; every other visible
character alone, with runs of one repeated punctuation character such as ``---`` kept as one token). A loop is a
unit of ``period`` tokens (1 to ``max_period``) repeated back to back at least ``min_repeats`` times and covering at
least ``min_loop_tokens`` tokens: ``I think the answer is B. I think the answer is B. ...``. Candidate periods are
found in one pass from the distance of each token to its previous occurrence; each candidate is then confirmed by
measuring the longest stretch where ``token[i] == token[i + period]``. Lists whose items differ (numbered steps,
table rows with different cells) do not trigger it; a table row of more than ``min_loop_tokens`` identical cells
would.

**Language mixing.** Letters are counted per script (Latin, Han, Kana, Hangul, Cyrillic, Arabic, Hebrew, Devanagari,
Thai) outside LaTeX math and code. The scripts allowed are those of the prompt and of any reference text passed in
(so a response may quote the Chinese text it was asked to read). A script that is not allowed and has at least
``min_foreign_letters`` letters and at least ``min_foreign_share`` of the response's letters is a violation; so is a
response written entirely in a script the prompt does not use. Greek is not counted (it is the alphabet of math).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

# the whole token is group 1, so that findall gives it (group 2 is the repeated punctuation character)
_TOKEN = re.compile(r"([0-9A-Za-z\u00c0-\u024f]+|([^\w\s])\2*|\S)")
# LaTeX math and code, as (opening, closing) in the order a match is tried at each position: what
# ``re.sub(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]", " ", text, flags=re.DOTALL)``
# removes, which took 4.6-5.3 s over 40,000 unclosed ``\(`` (and held the GIL): :func:`without_math_or_code` does it
# in one pass.
_MATH_OR_CODE = (("```", "```"), ("`", "`"), ("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_SCRIPTS: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("Latin", ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F))),
    ("Han", ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))),
    ("Kana", ((0x3040, 0x30FF), (0x31F0, 0x31FF))),
    ("Hangul", ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF))),
    ("Cyrillic", ((0x400, 0x4FF),)),
    ("Arabic", ((0x600, 0x6FF),)),
    ("Hebrew", ((0x590, 0x5FF),)),
    ("Devanagari", ((0x900, 0x97F),)),
    ("Thai", ((0xE00, 0xE7F),)),
)


@dataclass(frozen=True, slots=True)
class FormatConfig:
    """Thresholds of the two detectors. Set ``check_repetition`` or ``check_language`` to False to turn one off."""

    check_repetition: bool = True
    max_period: int = 64
    """Longest repeated unit looked for, in tokens."""
    min_repeats: int = 4
    """Fewest back-to-back copies of the unit that count as a loop."""
    min_loop_tokens: int = 40
    """Fewest tokens the repeated stretch must cover."""
    check_language: bool = True
    min_foreign_letters: int = 10
    """Fewest letters of a script foreign to the prompt that count as mixing."""
    min_foreign_share: float = 0.1
    """Smallest share of the response's letters that a foreign script must have to count as mixing."""


_LETTER = re.compile(r"[0-9A-Za-z\u00c0-\u024f]")
_CHUNK = 8192  # characters tokenised by one call: the regex holds the interpreter for all of it (20 ms per 100,000)


def _joined(left: str, right: str) -> bool:
    """Whether two adjacent characters can be in one token (both letters of a run, or one punctuation repeated)."""
    if left.isspace() or right.isspace():
        return False
    if _LETTER.match(left) and _LETTER.match(right):
        return True
    return left == right and not left.isalnum() and left != "_"


def tokens(text: str) -> list[str]:
    """The tokens the repetition detector works on (see the module docstring). Long text is tokenised in pieces of
    about 8,192 characters, each cut at the first place after that where no token can span the cut (a run of letters
    goes whole with its piece), so that other threads get the interpreter between them."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + _CHUNK)
        while end < len(text) and _joined(text[end - 1], text[end]):
            end += 1
        out += map(itemgetter(0), _TOKEN.findall(text, start, end))
        start = end
    return out


def _longest_run(same: np.ndarray) -> int:
    """The longest stretch of True in a boolean array."""
    if not same.any():
        return 0
    edges = np.flatnonzero(np.diff(np.concatenate(([0], same.view(np.int8), [0]))))
    return int((edges[1::2] - edges[::2]).max())


def find_repetition_loop(text: str, config: FormatConfig = FormatConfig()) -> str | None:
    """A description of the longest repetition loop in ``text``, or None when there is none.

    Array operations throughout (a 100,000-character response took 0.2 s token by token in Python): each token's
    distance to its previous occurrence comes from a stable sort of the token ids, and each candidate period's longest
    stretch from comparing the ids with themselves shifted by it. The candidates are the 8 most frequent distances,
    ties in the order they first occur, as a ``Counter`` filled token by token would give them."""
    toks = tokens(text)
    if len(toks) < config.min_loop_tokens:
        return None
    _, ids = np.unique(np.fromiter(map(hash, toks), dtype=np.int64, count=len(toks)), return_inverse=True)
    order = np.argsort(ids, kind="stable")  # positions grouped by token, in text order within each token
    follows = ids[order[1:]] == ids[order[:-1]]
    positions, distances = order[1:][follows], np.diff(order)[follows]
    near = distances <= config.max_period
    positions, distances = positions[near], distances[near]
    if not len(distances):
        return None
    by_position = np.argsort(positions, kind="stable")
    values, first, counts = np.unique(distances[by_position], return_index=True, return_counts=True)
    ranked = sorted(zip(values.tolist(), counts.tolist(), first.tolist(), strict=True), key=lambda v: (-v[1], v[2]))
    best: tuple[int, int] | None = None  # (covered tokens, period)
    for period, count, _ in ranked[:8]:
        if count < config.min_repeats - 1:
            break
        covered = _longest_run(ids[:-period] == ids[period:]) + period
        if covered // period >= config.min_repeats and covered >= config.min_loop_tokens:
            if best is None or covered > best[0]:
                best = (covered, period)
    if best is None:
        return None
    covered, period = best
    return f"a unit of {period} tokens repeats {covered // period} times in a row ({covered} of {len(ids)} tokens)"


def _script_class(ranges: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    return re.compile("[" + "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges) + "]")


_SCRIPT_CLASSES = tuple((name, _script_class(ranges)) for name, ranges in _SCRIPTS)
_NON_LETTERS = re.compile(r"[\W\d_]+")


def _openings(kinds: Iterable[int]) -> re.Pattern[str] | None:
    """A pattern that finds the next place where one of ``kinds``' openings starts (None for no kinds)."""
    alternatives = sorted({_MATH_OR_CODE[kind][0] for kind in kinds}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, alternatives))) if alternatives else None


def without_math_or_code(text: str) -> str:
    """``text`` with each span of LaTeX math or code (:data:`_MATH_OR_CODE`: the leftmost span first, the first kind
    that closes at a position, closed at its nearest closing) replaced by a space; time linear in the length, since
    where each closing comes next is looked up once and kept until the scan passes it, and the scan jumps (in C) from
    one opening to the next, leaving out the kinds found never to close."""
    out: list[str] = []
    kept = 0  # text[kept:index] is copied out unchanged when a span starts at index
    closing_at = [-1] * len(_MATH_OR_CODE)  # where the next closing of each kind is (-2: none up to the end)
    live = [kind for kind in range(len(_MATH_OR_CODE))]
    openings = _openings(live)
    index = 0
    while openings is not None:
        found = openings.search(text, index)
        if found is None:
            break
        index = found.start()
        for kind in live:
            opening, closing = _MATH_OR_CODE[kind]
            if not text.startswith(opening, index):
                continue
            after = index + len(opening)
            if closing_at[kind] < after and closing_at[kind] != -2:
                where = text.find(closing, after)
                closing_at[kind] = where if where >= 0 else -2
            if closing_at[kind] >= after:
                out += [text[kept:index], " "]
                index = kept = closing_at[kind] + len(closing)
                break
        else:
            index += 1
        if any(closing_at[kind] == -2 for kind in live):  # a kind that never closes again is looked for no more
            live = [kind for kind in live if closing_at[kind] != -2]
            openings = _openings(live)
    return "".join(out) + text[kept:]


def script_counts(text: str) -> Counter[str]:
    """Letters per script in ``text``, outside LaTeX math and code (counted in C, one pass per script; text of Latin
    letters alone, the usual case, takes one)."""
    letters = _NON_LETTERS.sub("", without_math_or_code(text))
    counts: Counter[str] = Counter()
    remaining = len(letters)
    for name, pattern in _SCRIPT_CLASSES:
        found = len(pattern.findall(letters))
        if found:
            counts[name] = found
            remaining -= found
        if remaining == 0:  # every letter is counted: no other script can have any
            break
    return counts


@functools.lru_cache(maxsize=256)
def _allowed_scripts(prompt: str, references: tuple[str, ...]) -> frozenset[str]:
    """The scripts of a prompt and its references, counted once for a group's responses."""
    allowed = set(script_counts(prompt))
    for reference in references:
        allowed.update(script_counts(reference))
    return frozenset(allowed)


def find_language_mixing(
    response: str, prompt: str, references: Iterable[str] = (), config: FormatConfig = FormatConfig()
) -> str | None:
    """A description of the language mixing in ``response``, or None when there is none (see module docstring)."""
    allowed = _allowed_scripts(prompt, tuple(references))
    counts = script_counts(response)
    total = sum(counts.values())
    if not total or not allowed:
        return None
    foreign = {s: n for s, n in counts.items() if s not in allowed}
    if foreign and sum(foreign.values()) == total and total >= config.min_foreign_letters:
        written, expected = ", ".join(sorted(foreign)), ", ".join(sorted(allowed))
        return f"the response is written in {written} while the prompt uses {expected}"
    mixed = [
        s for s, n in foreign.items() if n >= config.min_foreign_letters and n / total >= config.min_foreign_share
    ]
    if mixed:
        shares = ", ".join(f"{s} {foreign[s] / total:.0%}" for s in sorted(mixed))
        return f"letters of scripts the prompt does not use: {shares}"
    return None


def format_violations(
    response: str, prompt: str, references: Iterable[str] = (), config: FormatConfig = FormatConfig()
) -> list[str]:
    """Every response-level format violation found in ``response`` (empty when none)."""
    found = []
    if config.check_repetition and (loop := find_repetition_loop(response, config)):
        found.append(f"repetition loop: {loop}")
    if config.check_language and (mixing := find_language_mixing(response, prompt, references, config)):
        found.append(f"language mixing: {mixing}")
    return found
