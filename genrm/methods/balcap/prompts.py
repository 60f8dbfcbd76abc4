"""What the balcap judge is sent: the source's evaluator prompt (BalCapRL A.2 for training, A.4 for evaluation), the
image, the reference caption and the caption under evaluation, and the JSON schema of its answer for constrained
decoding.

One call per caption answers all three rewards: the caption's atomic assertions with the two-part test, the
reference's atomic assertions with coverage, and the three linguistic scores.

Layout for the prefix cache: the instructions (the system message) depend only on the settings; the user message
puts the image and the reference caption first and the caption under evaluation last, so the G captions of one image
share everything up to the last one. The source's prompt names the caption first; the order is the only change, and
the instructions refer to each caption by its heading.

The ``eval`` prompt differs from ``train`` only in the verification rubric (A.4): an assertion also passes when the
image shows evidence that justifies it by ordinary world knowledge, and the image is the primary source of truth.
"""

from __future__ import annotations

from typing import Any

from genrm.engine.types import ChatPrompt, ChatRequest
from genrm.methods.balcap.models import MAX_ASSERTIONS

_INTRO = """You are an expert image caption evaluator. You will analyze a SYNTHETIC CAPTION and a GROUND TRUTH \
CAPTION of the image shown, to extract detailed features for quality assessment.

Extract the following features in JSON:
1. Atomic assertions: break each caption into the shortest possible factual claims. Extract ALL assertions from the \
caption, including meta-commentary and subjective statements. Do NOT filter out any assertion during extraction: the \
list must be complete.
2. Precision and recall. Verification requires BOTH conditions:"""

_TRAIN_RUBRIC = """
VERIFICATION RUBRIC: TWO-PART TEST
For EACH synthetic assertion, it is verified ONLY if BOTH conditions are met.
CONDITION 1 - THE "POINT TO IT" TEST: could a person physically POINT TO this thing in the image?
[PASS] physical objects, visible attributes, spatial locations, visible text: "a car", "a red door", "silver \
hubcap", "on the left", "sign reads STOP"
[FAIL] abstractions, effects, judgments, emotions, relationships, intentions: "adds depth", "contrasting nicely", \
"inviting the viewer", "happy", "family"
CONDITION 2 - VISUAL VERIFICATION: is this assertion actually TRUE in the image? Check against the ground truth \
caption OR examine the image directly.
[PASS] the described object, attribute or location is actually visible in the image
[FAIL] the assertion is a hallucination or factually incorrect
KEY PRINCIPLE: an assertion that fails EITHER test is not verified. Meta-commentary fails the point-to-it test; \
hallucinated objects fail the visual verification; only correct, pointable facts pass both."""

_EVAL_RUBRIC = """
VERIFICATION RUBRIC: TWO-PART TEST
For EACH synthetic assertion, it is verified ONLY if BOTH conditions are met.
CONDITION 1 - THE "POINT TO IT OR POINT TO EVIDENCE THAT JUSTIFIES IT" TEST: could a person either (1) physically \
POINT TO the asserted thing in the image, or (2) point to visible evidence that reasonably JUSTIFIES the assertion \
using ordinary world knowledge?
[PASS] directly visible facts: "a car", "a red door", "silver hubcap", "on the left", "sign reads STOP"
[PASS] visually justified inferences: "the road is wet" (puddles, reflections), "the building is under \
construction" (scaffolding), "the person is a bride" (wedding dress, veil, bouquet), "the people are waiting in \
line" (a queue toward a counter)
[FAIL] unsupported speculation: "adds depth to the composition", "contrasting nicely", "inviting the viewer", \
"creates a welcoming atmosphere", "the photographer intended to...", "the person feels proud", "they are a family" \
(unless the image gives unusually strong evidence)
World knowledge IS allowed for a normal, evidence-based visual inference; it is NOT allowed for mind-reading, \
storytelling, symbolism or weak social speculation.
CONDITION 2 - VISUAL VERIFICATION: is this assertion actually TRUE in the image? Use the image as the PRIMARY source \
of truth; the ground truth caption may help, but do not reject a claim only because it does not mention it.
[FAIL] the assertion is hallucinated, factually incorrect, or its evidence is too weak or ambiguous
KEY PRINCIPLE: an assertion is verified only if it is directly visible OR justified by visible evidence through \
ordinary world knowledge, AND it is actually true for this image."""

_RECALL_AND_LANGUAGE = """
For RECALL: for each ground truth assertion, say whether the synthetic caption covers it (exact wording not needed).
3. Evaluate the linguistic quality of the synthetic caption, independent of its accuracy to the image:
- Clarity: how easily can a human reader understand it? Penalize ambiguous or overly complex phrasing, overloaded \
sentences that pack too many ideas or modifiers into one, and repetition or redundant wording that adds no \
information.
- Fluency: how natural and well-formed is the writing? Correct grammar, punctuation and spelling, natural flow, \
human-like phrasing rather than a list of facts; penalize unnatural compound words, adjective stacking, run-on \
sentences.
- Coherency: how well do the parts connect into one unified description? Logical order, smooth transitions, \
consistent perspective, no abrupt topic shifts.
Rate each of clarity, fluency and coherency from 1 (very poor, confusing or unnatural) to 10 (excellent, natural, \
easy to read), then explain the scores briefly, noting problems such as convoluted syntax, excessive modifiers, \
disjointed structure, robotic phrasing, invented or overly technical compound words.

Rules: extract ALL assertions, even meta-commentary and subjective statements; both tests are required; be strict: \
when in doubt about either condition, the assertion is not verified."""

_JSON = """
Answer with one JSON object, and nothing else: {"synthetic_features": {"atomic_assertions": [{"text": str, %s}, \
...], "clarity_score": int, "fluency_score": int, "coherency_score": int, "linguistic_scores_explanation": str}, \
"gt_features": {"atomic_assertions": [{"text": str, "is_covered": bool}, ...]}}."""

_VERIFIED = '"is_verified": bool'
_SPLIT = '"is_pointable": bool (condition 1), "is_visible": bool (condition 2)'


def system_message(prompt: str = "train", split_checks: bool = False) -> str:
    """The judge's instructions for one setting (the same for every image and caption): ``prompt`` is ``train``
    (A.2) or ``eval`` (A.4)."""
    rubric = _EVAL_RUBRIC if prompt == "eval" else _TRAIN_RUBRIC
    return _INTRO + rubric + _RECALL_AND_LANGUAGE + _JSON % (_SPLIT if split_checks else _VERIFIED)


def user_message(reference: str, caption: str) -> str:
    """The reference caption, then the caption under evaluation (last, so that a group shares the prefix)."""
    return f"GROUND TRUTH CAPTION (reference):\n{reference}\n\nSYNTHETIC CAPTION (to evaluate):\n{caption}"


def _string(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def answer_schema(split_checks: bool = False) -> dict[str, Any]:
    """The JSON schema of one answer (inline, no references, so that any constrained decoder takes it)."""
    checks = ["is_pointable", "is_visible"] if split_checks else ["is_verified"]
    assertion = {"type": "object", "additionalProperties": False, "required": ["text", *checks],
                 "properties": {"text": _string(2000), **{name: {"type": "boolean"} for name in checks}}}  # fmt: skip
    score = {"enum": list(range(1, 11))}
    synthetic = {"type": "object", "additionalProperties": False,
                 "required": ["atomic_assertions", "clarity_score", "fluency_score", "coherency_score",
                              "linguistic_scores_explanation"],
                 "properties": {"atomic_assertions": {"type": "array", "maxItems": MAX_ASSERTIONS, "items": assertion},
                                "clarity_score": score, "fluency_score": score, "coherency_score": score,
                                "linguistic_scores_explanation": _string(2000)}}  # fmt: skip
    covered = {"type": "object", "additionalProperties": False, "required": ["text", "is_covered"],
               "properties": {"text": _string(2000), "is_covered": {"type": "boolean"}}}  # fmt: skip
    reference = {"type": "object", "additionalProperties": False, "required": ["atomic_assertions"],
                 "properties": {"atomic_assertions": {"type": "array", "minItems": 1, "maxItems": MAX_ASSERTIONS,
                                                      "items": covered}}}  # fmt: skip
    return {"type": "object", "additionalProperties": False, "required": ["synthetic_features", "gt_features"],
            "properties": {"synthetic_features": synthetic, "gt_features": reference}}  # fmt: skip


def caption_requests(
    image: str, reference: str, captions: list[str], prompt: str = "train", split_checks: bool = False
) -> list[ChatRequest]:
    """One request per caption, each with the image and the answer's schema."""
    system, schema = system_message(prompt, split_checks), answer_schema(split_checks)
    return [ChatRequest(ChatPrompt(system, user_message(reference, caption), image), schema, "balcap")
            for caption in captions]  # fmt: skip
