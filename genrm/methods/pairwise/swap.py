"""The counterfactual swap of MJ1's consistency reward: the pair with its responses exchanged, and the judge's
reasoning cut before its evaluation with every reference to response A and response B exchanged, so that the judge
can resume from there on the swapped pair and its preference can be checked to invert.

What is exchanged, in one pass (so that swapping twice gives back the text it started from):

- the tags of each response's sections (``<response_a_claims>`` and ``<response_b_claims>``, and so on), which moves
  each response's observations, claims and verification to the other's place;
- the words ``response A`` / ``response B`` in any case (``Response A's`` included), in the prose of every section.

A bare letter ("A is better") is left as it is: it cannot be told from the article "a" by rule. The cut is before
``<evaluate_criteria>`` (or before ``<scores>`` when the evaluation tag is missing); the evaluation and the scores are
what the judge regenerates.

Not here: asking the judge to resume (a training loop's job), reading its answer (:mod:`.reading`).
"""

from __future__ import annotations

import re

_REFERENCE = re.compile(r"\b(response|Response|RESPONSE)(\s+)([AB])\b|\b(response_)([ab])(_)")
_CUTS = ("<evaluate_criteria>", "<scores>")


def _exchange(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return match.group(1) + match.group(2) + ("B" if match.group(3) == "A" else "A")
    return match.group(4) + ("b" if match.group(5) == "a" else "a") + match.group(6)


def swap_references(text: str) -> str:
    """``text`` with response A and response B exchanged (tags and prose); applying it twice gives ``text`` back."""
    return _REFERENCE.sub(_exchange, text)


def reasoning_prefix(answer: str) -> str:
    """The part of ``answer`` before its evaluation (the observations, claims and verification)."""
    cut = min((answer.index(tag) for tag in _CUTS if tag in answer), default=len(answer))
    return answer[:cut]


def swapped_prefix(answer: str) -> str:
    """The judge's reasoning cut before its evaluation, with response A and response B exchanged: where a judge
    resumes on the swapped pair."""
    return swap_references(reasoning_prefix(answer))
