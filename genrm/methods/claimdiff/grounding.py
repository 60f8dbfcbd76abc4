"""Which of a claimdiff judge's differences rest on what the captions say (``grounded_claims``, on by default).

A judge can credit or blame a caption for a claim it never made: "caption A says a red frisbee" of a caption that
names no frisbee, ruled supported by the image, pays caption A for the judge's invention. Each claim the judge
attributes to a caption is looked for in that caption with :func:`verifiers.provenance.find_claim` (content words,
stemmed; more than half of them and every number must be there), and a difference with a claim not found is **not
counted**: it is left out of the differences, errors, judgments and hallucinations the reward is computed from, and the
record names it and says why.

Not looked for, because they state what a caption leaves out rather than what it says:

- a claim with no content word (empty, ``none``, ``not mentioned``);
- a claim that says the caption is silent on something (``does not mention the cat``, ``omits the sign``, ``no
  mention of ...``);
- the claim of a caption the judge charges with an omission (an error type naming an omission, missing or incomplete
  content), which describes what it lacks;
- in ``hall_vs_miss``, a ``missing_fact`` is looked for in the reference (it is the reference's fact), every other
  difference in the caption.

A caption with no content word at all (punctuation, white space, a bare opener, lone letters) describes nothing: it
gets the floor of the reward range whatever the judge says (:func:`verifiers.provenance.holds_content`). A claim of
a lone letter is still looked for, as any claim with content is.
"""

from __future__ import annotations

import re

from genrm.methods.captions import UngroundedClaim
from genrm.methods.claimdiff.models import DiffAnswer, Difference, HallMissAnswer, HallMissDifference
from verifiers.provenance import find_claim, holds_content

_SAYING = r"(?:mention|state|say|said|describe|specif|include|refer|note|cover|address|identif)\w*"
_SILENCE = re.compile(
    rf"\b(?:not?|never|nothing|without)\b[^.;\n]{{0,40}}?\b{_SAYING}|\b{_SAYING}\s+(?:nothing|no)\b"
    r"|\b(?:omit\w*|omission|unmentioned|unspecified|absent|silent)\b",
    re.IGNORECASE,
)
_OMISSION = re.compile(r"omi(?:t|ssion)|missing|incomplete|truncat", re.IGNORECASE)


def _states_silence(claim: str) -> bool:
    return _SILENCE.search(claim) is not None


def _claim_problem(claim: str, text: str, charged_with_omission: bool) -> str | None:
    if charged_with_omission or _states_silence(claim) or not holds_content(claim, lone_letters=True):
        return None
    return find_claim(claim, text)


def _diff_problems(number: int, difference: Difference, caption: str, reference: str) -> list[UngroundedClaim]:
    found = []
    sides = (("caption", difference.caption_a_claim, caption, difference.caption_a_error.error_type),
             ("reference", difference.caption_b_claim, reference, difference.caption_b_error.error_type))  # fmt: skip
    for side, claim, text, error_type in sides:
        problem = _claim_problem(claim, text, _OMISSION.search(error_type) is not None)
        if problem is not None:
            found.append(UngroundedClaim(item=number, caption=side, reason=problem))
    return found


def _hall_problem(number: int, difference: HallMissDifference, caption: str, reference: str) -> list[UngroundedClaim]:
    side, text = ("reference", reference) if difference.type == "missing_fact" else ("caption", caption)
    problem = _claim_problem(difference.content, text, False)
    return [] if problem is None else [UngroundedClaim(item=number, caption=side, reason=problem)]


def grounded_differences(
    answer: DiffAnswer | HallMissAnswer, caption: str, reference: str
) -> tuple[list[Difference] | list[HallMissDifference], list[UngroundedClaim]]:
    """The differences of ``answer`` whose claims are found in their captions, and those left out with why."""
    kept: list = []
    dropped: list[UngroundedClaim] = []
    for number, difference in enumerate(answer.differences, 1):
        if isinstance(difference, Difference):
            problems = _diff_problems(number, difference, caption, reference)
        else:
            problems = _hall_problem(number, difference, caption, reference)
        if problems:
            dropped.extend(problems)
        else:
            kept.append(difference)
    return kept, dropped
