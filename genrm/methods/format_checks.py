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

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+|([^\w\s])\1*|\S")
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


def tokens(text: str) -> list[str]:
    """The tokens the repetition detector works on (see the module docstring)."""
    return [m.group(0) for m in _TOKEN.finditer(text)]


def find_repetition_loop(text: str, config: FormatConfig = FormatConfig()) -> str | None:
    """A description of the longest repetition loop in ``text``, or None when there is none."""
    toks = tokens(text)
    if len(toks) < config.min_loop_tokens:
        return None
    ids = [hash(t) for t in toks]
    last: dict[int, int] = {}
    distances: Counter[int] = Counter()
    for i, token in enumerate(ids):
        previous = last.get(token)
        if previous is not None and i - previous <= config.max_period:
            distances[i - previous] += 1
        last[token] = i
    best: tuple[int, int] | None = None  # (covered tokens, period)
    for period, count in distances.most_common(8):
        if count < config.min_repeats - 1:
            break
        run = longest = 0
        for i in range(len(ids) - period):
            run = run + 1 if ids[i] == ids[i + period] else 0
            longest = max(longest, run)
        covered = longest + period
        if covered // period >= config.min_repeats and covered >= config.min_loop_tokens:
            if best is None or covered > best[0]:
                best = (covered, period)
    if best is None:
        return None
    covered, period = best
    return f"a unit of {period} tokens repeats {covered // period} times in a row ({covered} of {len(ids)} tokens)"


def _script(code: int) -> str | None:
    for name, ranges in _SCRIPTS:
        for low, high in ranges:
            if low <= code <= high:
                return name
    return None


def without_math_or_code(text: str) -> str:
    """``text`` with each span of LaTeX math or code (:data:`_MATH_OR_CODE`: the leftmost span first, the first kind
    that closes at a position, closed at its nearest closing) replaced by a space; time linear in the length, since
    where each closing comes next is looked up once and kept until the scan passes it."""
    out: list[str] = []
    kept = 0  # text[kept:index] is copied out unchanged when a span starts at index
    index = 0
    closing_at = [-1] * len(_MATH_OR_CODE)  # where the next closing of each kind is (-2: none up to the end)
    while index < len(text):
        for kind, (opening, closing) in enumerate(_MATH_OR_CODE):
            if not text.startswith(opening, index) or closing_at[kind] == -2:
                continue
            after = index + len(opening)
            if closing_at[kind] < after:
                found = text.find(closing, after)
                closing_at[kind] = found if found >= 0 else -2
            if closing_at[kind] >= after:
                out += [text[kept:index], " "]
                index = kept = closing_at[kind] + len(closing)
                break
        else:
            index += 1
    return "".join(out) + text[kept:]


def script_counts(text: str) -> Counter[str]:
    """Letters per script in ``text``, outside LaTeX math and code."""
    counts: Counter[str] = Counter()
    for ch in without_math_or_code(text):
        if ch.isalpha():
            script = _script(ord(ch))
            if script is not None:
                counts[script] += 1
    return counts


def find_language_mixing(
    response: str, prompt: str, references: Iterable[str] = (), config: FormatConfig = FormatConfig()
) -> str | None:
    """A description of the language mixing in ``response``, or None when there is none (see module docstring)."""
    allowed = set(script_counts(prompt))
    for reference in references:
        allowed.update(script_counts(reference))
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
