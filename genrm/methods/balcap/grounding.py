"""Which of a balcap judge's atomic assertions come from the captions they are said to come from (``grounded_claims``,
on by default).

A judge can pay a caption for assertions it never made: a caption of one colon "asserted" ``a red car`` (verified),
and its precision is 1. Each of the caption's assertions is looked for in the caption, and each of the reference's in
the reference, with :func:`verifiers.provenance.find_claim` (content words, stemmed; more than half of them and every
number must be there). An assertion not found is **not counted**: it is left out of the caption's assertions
(precision) or the reference's (recall), and the record names it and says why. A judge answer none of whose reference
assertions is in the reference is a failed judgement (``ungrounded``): recall would have nothing to count.

A caption with no content word at all is not sent to the judge and earns nothing
(:func:`genrm.methods.captions.ask_with_content`).
"""

from __future__ import annotations

from genrm.methods.balcap.models import BalCapAnswer
from genrm.methods.captions import UngroundedClaim
from verifiers.provenance import find_claim


def grounded_answer(answer: BalCapAnswer, caption: str, reference: str) -> tuple[BalCapAnswer, list[UngroundedClaim]]:
    """``answer`` with only the assertions found in their captions, and those left out with why. The answer returned
    may have no reference assertion left (the caller fails it)."""
    dropped: list[UngroundedClaim] = []
    sides = {"caption": (answer.synthetic_features, caption), "reference": (answer.gt_features, reference)}
    kept: dict[str, list] = {}
    for side, (features, text) in sides.items():
        kept[side] = []
        for number, assertion in enumerate(features.atomic_assertions, 1):
            problem = find_claim(assertion.text, text)
            if problem is None:
                kept[side].append(assertion)
            else:
                dropped.append(UngroundedClaim(item=number, caption=side, reason=problem))  # type: ignore[arg-type]
    if not dropped:
        return answer, []
    synthetic = answer.synthetic_features.model_copy(update={"atomic_assertions": kept["caption"]})
    truth = answer.gt_features.model_copy(update={"atomic_assertions": kept["reference"]})
    return answer.model_copy(update={"synthetic_features": synthetic, "gt_features": truth}), dropped
