"""What a response asserts: the one reading of a response that every reader of its answer shares.

An answer counts only where the response states it in its own voice. :func:`asserted_view` returns the response with
everything it does not assert blanked (each character replaced by a space, new lines kept, so positions and lines stay
where they were). The rule reader looks for final answers in that view
(``genrm.methods.rubric.answer_extraction``), a model judge's value is looked for in it (:mod:`verifiers.provenance`),
and ``expr_verify`` reads a sentence's answer phrase the same way. Not asserted:

- **reasoning**: ``<think>...</think>`` (also ``<thinking>``), an unclosed ``<think>`` to the end of the response, and
  everything before a closing tag left without its opening (the prompt template opened it);
- **code**: fenced blocks (```` ``` ```` or ``~~~``; an unclosed fence runs to the end) and inline code
  (```` `...` ````);
- **block quotes** (lines that start with ``>``) and HTML comments (``<!-- ... -->``);
- **a quoted passage that holds an answer marker**: ``"Answer: 12"``, ``“\\boxed{12}”`` (double quotes, curly quotes
  or guillemets, paired on one line) is an echo, not the response's answer; a quoted value (``The answer is
  "Paris".``) stays;
- **an instruction** that shows the answer's format (``put your final answer in \\boxed{...}``): its clause;
- **a question**: a sentence that ends with ``?``;
- **a negation** (``not``, ``n't``, ``never``, ``nor``, ``cannot``, ``no longer``, ``anything but``, ``anywhere
  except``, ``except``, ``other than``, ``rather than``, ``instead of``), **a condition** (``if``, ``suppose``,
  ``assume``, ``whether``, ``unless``) and **reported speech** (``some would say``, ``they claim``, ``you wrote``,
  ``according to``, ``I thought``): from the phrase to the end of its clause. A negation right after a verb that
  judges what came before (``12 is not correct``, ``B isn't right``) disowns the whole clause. A statement that a thing
  is absent (``it is not in the image``, ``there isn't one``) is an assertion, and stays (:func:`states_absence`);
- **a disowned clause**: one that says its own content is wrong (``12 is wrong``, ``(B) is incorrect``, ``18:15
  (wrong)``), blanked whole;
- **a retracted sentence**: the sentence before ``actually no``, ``no wait``, ``wait, no``, ``scratch that``, ``I take
  that back``, with the retraction.

A clause ends at a sentence's end (``.``, ``!`` or ``?`` before white space), a new line, a semicolon, and, outside
brackets, a comma, ``but`` and the words that draw a conclusion (``so``, ``thus``, ``hence``, ``therefore``, ``we
get``, ``we have``, ``which gives``): ``Since 5 is not a factor, the answer is 12`` and ``x is not negative, so
\\boxed{12}`` assert 12; ``I don't think the answer is 12`` and ``It is not true that the final answer is 12`` do not.

**Refusals** (:func:`is_refusal`): ``no idea``, ``I don't know``, ``it is not possible to determine``, ``that's not
something I can answer`` state no value. They never say that a thing is absent, which is what an empty target
(``bbox_verify(target=[])``) is met by.

Every pass is linear in the response's length (bounded patterns and ``str.find``).
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

_FLAGS = re.IGNORECASE

# reasoning blocks: the opening and closing tags, any case
_THINK_OPEN = re.compile(r"<(think|thinking)>", _FLAGS)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", _FLAGS)
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_BLOCK_QUOTE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|„[^“”\n]*[“”]")
#: What opens an answer: a box, or a phrase that says the answer follows.
ANSWER_MARKER = re.compile(r"\\(?:boxed|fbox)\b|\banswer\b", _FLAGS)
_INSTRUCTION = re.compile(
    r"\b(?:put|write|place|enclose|wrap|present|format|give|mark|show)\b[^.\n]{0,80}?\\(?:boxed|fbox)\b", _FLAGS
)

#: Where a clause ends. Boundaries of a scope (a negation, a condition, a report) and of a disowned clause.
_CLAUSE_END = re.compile(
    r"[.!?](?=\s|$)|\n|;|,(?=\s)|\s(?:but|so|thus|hence|therefore|whereas|while|although|though|then|"
    r"we\s+(?:get|have|obtain|find)|which\s+(?:gives|means|yields)|giving|yielding|this\s+gives)\b",
    _FLAGS,
)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")

_NEGATOR = (
    r"n['\u2019]t\b|\b(?:not|never|nor|cannot|no\s+longer|anything\s+(?:but|except|other\s+than)|"
    r"anywhere\s+(?:but|except)|except|excluding|other\s+than|rather\s+than|instead\s+of)\b"
)
_CONDITION = r"\b(?:if|suppose|supposing|assume|assuming|whether|unless|were\s+it)\b"
_REPORTER = (
    r"\b(?:some(?:one|body)?|others?|people|many|they|you|he|she|critics|experts|the\s+(?:user|prompt|question|"
    r"student|teacher|book|textbook|author|original|reference|previous\s+\w+|other\s+\w+))\s+"
    r"(?:would\s+|might\s+|may\s+|could\s+|often\s+|sometimes\s+|usually\s+|probably\s+|have\s+|has\s+|had\s+)?"
    r"(?:say|says|said|claim|claims|claimed|think|thinks|thought|believe|believes|believed|argue|argues|argued|"
    r"suggest|suggests|suggested|wrote|write|writes|written|assert|asserts|asserted|guess|guessed|answered|"
    r"expect|expects|expected|propose|proposes|proposed|state|states|stated)\b"
    r"|\baccording\s+to\b|\bit\s+(?:is|was|has\s+been)\s+(?:said|claimed|suggested|argued|thought|believed)\b"
    r"|\bI\s+(?:first\s+|initially\s+|originally\s+|previously\s+|once\s+)?(?:thought|believed|guessed|assumed)\b"
)
_SCOPE = re.compile(f"(?P<negator>{_NEGATOR})|(?P<other>{_CONDITION}|{_REPORTER})", _FLAGS)
# a negation of a verdict on what came before: "12 is not correct", "B isn't right"
_DISOWNING_NEGATION = re.compile(
    r"(?:\b(?:is|are|was|were|be|seems?|looks?)\s*(?:not\b|n['\u2019]t\b)|\bnot\b)\s*"
    r"(?:(?:the\s+)?(?:correct|right|true|valid|accurate|so)\b|the\s+(?:right\s+|correct\s+|final\s+)?answer\b)",
    _FLAGS,
)
#: A clause that says its own content is wrong.
DISOWNING = re.compile(
    r"\b(?:is|are|was|were|seems?|looks?|sounds?)\s+(?:definitely\s+|clearly\s+|probably\s+)?"
    r"(?:wrong|incorrect|false|untrue|invalid|mistaken|a\s+mistake|an\s+error|not\s+(?:correct|right|true|valid))\b"
    r"|[(\[]\s*(?:wrong|incorrect|false|invalid|not\s+correct)\s*[)\]]|\b(?:wrong|incorrect)\s*[!.]*\s*$",
    _FLAGS | re.MULTILINE,
)
_RETRACTION = re.compile(
    r"\b(?:actually|wait|hmm|oops|sorry)\s*,?\s*no\b|\bno\s*,?\s*wait\b|\bscratch\s+that\b|\bstrike\s+that\b"
    r"|\bI\s+take\s+(?:that|it)\s+back\b|\bnever\s*mind\b|\bI\s+was\s+wrong\b|\bthat(?:'s|\s+is|\s+was)\s+wrong\b"
    # a sentence that opens by judging the one before: "The answer is 12. This is wrong."
    r"|(?:(?<=[.!?]\s)|^)(?:(?:this\s+|that\s+|it\s+)?(?:is|was)\s+(?:wrong|incorrect|false|not\s+(?:right|correct))\b"
    r"|[(\[]\s*(?:wrong|incorrect|false|invalid)\s*[)\]])",
    _FLAGS,
)

#: A statement that the thing asked for is absent: what meets an empty target. Matched against a whole final answer.
ABSENCE = re.compile(
    r"(?:\[\s*\]|\(\s*\)|\{\s*\}|none|nothing|empty|null|no\s+\w.*"
    r"|(?:there|it|they|this|that|the\s+\w+)(?:\s+is|\s+are|'s|'re)\s+(?:not\b|no\b|none\b|nothing\b|absent\b).*"
    r"|there\s+(?:isn't|aren't)\b.*|(?:not\s+(?:present|visible|shown|found|there|in\s+the\s+(?:image|picture|scene)))"
    r"\b.*|.*\b(?:does\s+not|doesn't|do\s+not|don't)\s+(?:appear|exist)\b.*)",
    _FLAGS | re.DOTALL,
)
# words that say a question cannot be answered, not that the thing is absent
_REFUSAL = re.compile(
    r"\b(?:idea|clue|comment|sure|unsure|know|knows|knew|tell|determine|determined|determinable|answer|answered|"
    r"answerable|say|possible|impossible|certain|uncertain|clear|unclear|unknown|unknowable|information|info|"
    r"enough|identify|decide|guess|cannot|can't|can\s+not|unable|sorry|refuse|decline|help|assist|insufficient|"
    r"ambiguous|unanswerable)\b",
    _FLAGS,
)
_MAX_ABSENCE_CHARS = 120
_DIGIT = re.compile(r"\d")


# what every blanking pass looks for, in one pattern each: a text that holds none of it is asserted whole
_ANY_STRUCTURE = re.compile(r"</?think|```|~~~|`|^[ \t]*>|<!--|[\"“«„]", _FLAGS | re.MULTILINE)
# every word the clause-level patterns below need (a text that holds none of them, no "?" and no "n't", has no clause
# to blank): one pass of a simple pattern instead of each pattern's own
_SCOPE_WORDS = frozenset(
    "not never nor cannot longer anything anywhere except excluding other rather instead if suppose supposing assume "
    "assuming assumed whether unless were according say says said claim claims claimed think thinks thought believe "
    "believes believed argue argues argued suggest suggests suggested wrote write writes written assert asserts "
    "asserted guess guessed answered expect expects expected propose proposes proposed state states stated wrong "
    "incorrect false untrue invalid mistaken mistake error actually wait hmm oops sorry scratch strike take mind "
    "nevermind".split()
)
_INSTRUCTION_WORDS = frozenset("put write place enclose wrap present format give mark show".split())
_LOWER_WORD = re.compile(r"[a-z]+")


def _may_scope(text: str) -> bool:
    """Whether ``text`` holds anything a clause-level pattern looks for (a negation, a condition, a report, a
    disowning or retracting word, an instruction beside a box, a question mark)."""
    lower = text.lower()
    if "?" in lower or "n't" in lower or "n\u2019t" in lower:
        return True
    words = set(_LOWER_WORD.findall(lower))
    return not _SCOPE_WORDS.isdisjoint(words) or (
        ("\\boxed" in lower or "\\fbox" in lower) and not _INSTRUCTION_WORDS.isdisjoint(words)
    )


def is_refusal(text: str) -> bool:
    """Whether ``text`` (a final answer) declines to answer (``no idea``, ``I can't tell``, ``it is not possible to
    determine``): no value is stated, and nothing is said to be absent."""
    return _REFUSAL.search(text) is not None


def states_absence(text: str) -> bool:
    """Whether ``text`` (a final answer, at most 120 characters) says the thing asked for is absent (``none``,
    ``[]``, ``no such object``, ``it is not in the image``); a refusal (:func:`is_refusal`) never does."""
    text = text.strip().rstrip(".!")
    if len(text) > _MAX_ABSENCE_CHARS or _DIGIT.search(text):
        return False  # a value ("it is not [[1, 2, 3, 4]]") is no statement of absence
    return ABSENCE.fullmatch(text) is not None and not is_refusal(text)


def _blanked(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` with the union of ``ranges`` blanked (new lines kept), in one pass over the merged ranges."""
    if not ranges:
        return text
    pieces, at = [], 0
    for start, end in sorted(ranges):
        start, end = max(start, at), min(end, len(text))
        if end <= start:
            continue
        pieces += [text[at:start], re.sub(r"[^\n]", " ", text[start:end])]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


def _structural(text: str) -> list[tuple[int, int]]:
    """The ranges of reasoning, code, block quotes and comments in ``text``."""
    ranges: list[tuple[int, int]] = []
    closes = [m.end() for m in _THINK_CLOSE.finditer(text)]
    covered = 0  # the end of the last reasoning block
    at = 0
    while (opening := _THINK_OPEN.search(text, at)) is not None:
        index = bisect.bisect_left(closes, opening.end() + len("</think>"))
        end = closes[index] if index < len(closes) else len(text)
        ranges.append((opening.start(), end))
        at = covered = end
    # a closing tag with no opening before it: the template opened the block, everything before it is reasoning
    lone = [end for end in closes if end > covered]
    if lone:
        ranges.append((0, lone[-1]))
    fences = list(_FENCE.finditer(text))
    index = 0
    while index < len(fences):
        opening = fences[index]
        following = next((n for n in range(index + 1, len(fences)) if fences[n].group(1) == opening.group(1)), None)
        if following is None:
            ranges.append((opening.start(), len(text)))
            break
        end = text.find("\n", fences[following].end())
        ranges.append((opening.start(), len(text) if end < 0 else end))
        index = following + 1
    ranges += [(m.start(), m.end()) for m in _INLINE_CODE.finditer(text)]
    ranges += [(m.start(), m.end()) for m in _BLOCK_QUOTE.finditer(text)]
    ranges += [(m.start(), m.end()) for m in _COMMENT.finditer(text)]
    return ranges


_BRACKET_OR_COMMA = re.compile(r"[()\[\]{},]")


def _clause_bounds(text: str) -> list[int]:
    """The sorted positions where clauses end (each boundary's start), with 0 and the length of ``text``; a comma
    inside brackets ends none."""
    inside, depth = set(), 0
    for match in _BRACKET_OR_COMMA.finditer(text):
        char = match.group(0)
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif depth:
            inside.add(match.start())
    bounds = [0]
    bounds += [m.start() for m in _CLAUSE_END.finditer(text) if m.start() not in inside]
    bounds.append(len(text))
    return bounds


def _enclosing(bounds: list[int], start: int, end: int) -> tuple[int, int]:
    """The clause around ``start``..``end``: from the last boundary at or before ``start`` to the first at or after
    ``end`` (``bounds`` is sorted)."""
    before = bounds[max(0, bisect.bisect_right(bounds, start) - 1)]
    after = bounds[min(len(bounds) - 1, bisect.bisect_left(bounds, end))]
    return before, after


def _sentence_start(ends: list[int], position: int) -> int:
    """Where the sentence holding ``position`` starts, given the sorted ends of the text's sentences."""
    index = bisect.bisect_right(ends, position) - 1
    return ends[index] if index >= 0 else 0


@lru_cache(maxsize=16)
def written_view(text: str) -> str:
    """``text`` with its reasoning, code, block quotes, comments and quoted answer markers blanked (same length, same
    lines): what the response writes as its own, words of negation included. A text value (``Do not enter``) is read
    from here, since its words are the value; where an answer is and what else it asserts come from
    :func:`asserted_view`."""
    if _ANY_STRUCTURE.search(text) is None:
        return text  # no reasoning tag, code, block quote, comment or quote: nothing to blank
    view = _blanked(text, _structural(text))
    return _blanked(view, [(m.start(), m.end()) for m in _QUOTED.finditer(view) if ANSWER_MARKER.search(m.group(0))])


@lru_cache(maxsize=16)
def asserted_view(text: str) -> str:
    """``text`` with everything it does not assert blanked (module docstring): same length, same lines."""
    view = written_view(text)
    if not _may_scope(view):
        return view  # nothing negates, conditions, reports, disowns, retracts or asks: the common case, in one pass
    bounds = _clause_bounds(view)
    ends = [match.end() for match in _SENTENCE_END.finditer(view)]
    ranges = [_enclosing(bounds, m.start(), m.end()) for m in _INSTRUCTION.finditer(view)]
    ranges += [(_sentence_start(ends, m.start()), m.end()) for m in _SENTENCE_END.finditer(view) if m.group(0) == "?"]
    ranges += [_enclosing(bounds, m.start(), m.end()) for m in DISOWNING.finditer(view)]
    for match in _RETRACTION.finditer(view):
        sentence = _sentence_start(ends, match.start())
        back = max(0, sentence - _LOOK_BACK)
        last = back + len(view[back:sentence].rstrip()) - 1  # the previous sentence's end, past blank lines
        previous = _sentence_start(ends, last - 1) if last > 0 else 0
        ranges.append((previous, _enclosing(bounds, match.start(), match.end())[1]))
    for match in _SCOPE.finditer(view):
        if match.group("other") and _IN_FORMULA_TEXT.search(view, max(0, match.start() - 12), match.start()):
            continue  # "x \text{ if } x > 0" is a piecewise formula's condition, not the response's
        start, end = _enclosing(bounds, match.start(), match.end())
        if match.group("negator") and end - start <= _MAX_ABSENCE_CLAUSE:
            if states_absence(_ANSWER_LEAD.sub("", view[start:end]).strip(" ,")):
                continue  # "it is not in the image" says the thing is absent: an assertion
        if match.group("negator") and _DISOWNING_NEGATION.match(view, _verb_start(view, match.start(), start)):
            ranges.append((start, end))  # "12 is not correct": the verdict disowns what came before it
        else:
            # "not 10, which is 12" and "it's not 10 it's 12": a value restated after the negated one is asserted
            restated = _RESTATEMENT.search(view, match.end(), min(end, match.end() + _RESTATEMENT_WINDOW))
            ranges.append((match.start(), restated.start() if restated else end))
    return _blanked(view, ranges)


# what opens a final answer before the statement it makes ("Final answer: it is not in the image")
_ANSWER_LEAD = re.compile(r"^[^\n]*?\banswer\b[\s*_:=-]*(?:is\b)?[\s*_:]*", _FLAGS)
# a value restated after a negated one: the negation's scope ends where it starts
_RESTATEMENT = re.compile(r"(?<=\d)\s+(?:which(?:\s+is)?|it['\u2019]s|it\s+is|that\s+is|that['\u2019]s)\b", _FLAGS)
_RESTATEMENT_WINDOW = 80
_LOOK_BACK = 2_000
_IN_FORMULA_TEXT = re.compile(r"(?:\\(?:text|mathrm|textrm|mbox|quad)\s*\{?|&)\s*$")
_SPACE_RUN = re.compile(r"[ \t]{2,}")


def asserted_text(text: str) -> str:
    """``text`` as it asserts it (:func:`asserted_view`), with the runs of blanks a blanked part leaves made one
    space; ``text`` itself when it asserts all of it."""
    view = asserted_view(text)
    return text if view == text else _SPACE_RUN.sub(" ", view).strip()


# how far before a negator its verb is looked for, and how long a clause may be to state an absence (with an answer's
# opening before it): bounds that keep each negator's look at its clause constant, whatever the clause's length
_VERB_WINDOW = 24
_MAX_ABSENCE_CLAUSE = 200
_VERB_BEFORE = re.compile(r"\b(?:is|are|was|were|be|seems?|looks?)\s*$", _FLAGS)


def _verb_start(text: str, negator: int, clause: int) -> int:
    """Where the verb right before a negator starts (``is not``, ``isn't``), else the negator's own start."""
    if text[negator] in "n'\u2019" and text[negator - 2 : negator + 1].lower().endswith(("sn", "en", "re")):
        # "isn't", "weren't", "aren't": the contraction's verb is the word the negator is glued to
        word = negator
        while word > max(clause, negator - _VERB_WINDOW) and text[word - 1].isalpha():
            word -= 1
        return word
    found = _VERB_BEFORE.search(text, max(clause, negator - _VERB_WINDOW), negator)
    return found.start() if found else negator
