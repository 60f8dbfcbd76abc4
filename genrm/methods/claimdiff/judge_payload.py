"""ClaimDiff-RL's own reward-server protocol, answered by the claimdiff method: one payload per response in, its
rewards out, so that the method's verl remote reward manager works against our server unchanged.

The payload (``POST /judge``) is the source's: ``data_source``, ``query``, ``prompt``, ``answer``, ``solution`` (the
reference caption), ``response`` (the policy's), ``reward_verifier`` (``gemini_caption_diff``, the claim-difference
verifier; the judge is whichever the server was started with), ``reward_verifier_parm`` (a JSON object as a string;
its ``image_path`` names the image), ``fmt_ratio`` (the format part's weight for this payload), ``len_ratio``,
``iter``, ``data_index`` and ``image_path``. The reply is the source's ``{"rewards": {"format_reward",
"accuracy_reward", "final_reward", ...}}``, with the source's figures as ``<figure>_reward`` keys
(``caption_a_error_count_reward``, ``total_differences_reward``, ...) and ``judge_failed_reward``.

Where the source answers 0.0 for a judgement that failed, this answers ``accuracy_reward`` and ``final_reward`` null
and says why in ``error`` beside ``rewards``; a server that must answer a number sets ``judge_payload_failure_reward``
(then ``judge_failed_reward`` is 1 and the error is still given). A payload this method cannot score (another
verifier, no image or several, a ``reward_verifier_parm`` that is not a JSON object) is refused with 422 naming the
field, not scored 0.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.methods.base import MethodInputError
from genrm.methods.claimdiff.models import ClaimDiffInstance, ClaimDiffRecord, ClaimDiffResult
from genrm.methods.claimdiff.rewards import final_reward

#: The verifier names of the source's registry this method answers for.
PAYLOAD_VERIFIERS = ("gemini_caption_diff",)

_TEXT = 100_000
#: Longest image reference a payload may hold: a data URI of an image within the server's limits (as an instance's).
MAX_IMAGE_REFERENCE = 10_000_000
_Reference = Annotated[str, Field(max_length=MAX_IMAGE_REFERENCE)]


class JudgePayload(BaseModel):
    """One payload of the source's ``/judge`` route (its ``Payload`` fields and types)."""

    model_config = ConfigDict(extra="ignore")

    data_source: str = Field(max_length=1_000)
    query: str = Field(max_length=_TEXT)
    prompt: str = Field(max_length=_TEXT)
    answer: str = Field(max_length=_TEXT)
    solution: str = Field(max_length=_TEXT, description="the reference caption (caption B)")
    response: str = Field(max_length=_TEXT, description="the policy's response (caption A, or its <answer> block)")
    reward_verifier: str = Field(max_length=200)
    reward_verifier_parm: str = Field(max_length=1_000_000, description="a JSON object, as a string")
    fmt_ratio: float | None = Field(default=None, ge=0.0, le=1e6)
    len_ratio: float | None = None
    iter: int | None = None
    data_index: int | None = None
    image_path: _Reference | Annotated[list[_Reference], Field(max_length=16)] | None = None


def _images(payload: JudgePayload) -> tuple[list[str], list[str]]:
    """The payload's image references and where they were found (``image_path``, else the verifier parameters')."""
    if payload.image_path:
        found: Any = payload.image_path
        where = ["image_path"]
    else:
        try:
            params = json.loads(payload.reward_verifier_parm)
        except (ValueError, RecursionError) as exc:
            raise MethodInputError(f"not JSON: {exc}", ["reward_verifier_parm"], kind="payload") from None
        if not isinstance(params, dict):
            raise MethodInputError("must be a JSON object", ["reward_verifier_parm"], kind="payload")
        found, where = params.get("image_path"), ["reward_verifier_parm", "image_path"]
    images = [found] if isinstance(found, str) else found
    if not isinstance(images, list) or not all(isinstance(i, str) and i for i in images):
        raise MethodInputError("must name the image, as a path or a list of one path", where, kind="payload")
    if any(len(i) > MAX_IMAGE_REFERENCE for i in images):
        raise MethodInputError(f"an image reference holds at most {MAX_IMAGE_REFERENCE} characters", where,
                               kind="payload")  # fmt: skip
    return images, where


def instance_from_payload(payload: JudgePayload) -> ClaimDiffInstance:
    """The one-caption instance a payload asks about; raises :class:`MethodInputError` naming the field at fault."""
    if payload.reward_verifier not in PAYLOAD_VERIFIERS:
        raise MethodInputError(f"this server answers {', '.join(PAYLOAD_VERIFIERS)} (claim-level caption "
                               f"differences); got {payload.reward_verifier!r:.60}", ["reward_verifier"],
                               kind="verifier")  # fmt: skip
    images, where = _images(payload)
    if len(images) != 1:
        raise MethodInputError(f"names {len(images)} images; the claimdiff judge compares captions of one image",
                               where, kind="payload")  # fmt: skip
    if not payload.solution.strip():
        raise MethodInputError("the reference caption is blank", ["solution"], kind="payload")
    ident = f"{payload.data_source}:{payload.data_index}" if payload.data_index is not None else payload.data_source
    asked = {"prompt": payload.query} if payload.query else {}
    return ClaimDiffInstance(id=ident[:256] or "payload", image=images[0], reference=payload.solution,
                             responses=[payload.response], **asked)  # fmt: skip


# The source's names of the figures it logs with each reward.
_FIGURES = {"caption_a_error_count": "caption_a_errors", "caption_b_error_count": "caption_b_errors",
            "total_differences": "differences", "normalized_error_difference": "error_difference",
            "hallucination_count": "hallucinations", "missing_fact_count": "missing_facts",
            "extra_info_count": "extra_info", "ambiguity_count": "hedges",
            "ambiguity_penalty": "hedging_penalty"}  # fmt: skip


def payload_reply(
    payload: JudgePayload, result: ClaimDiffResult, failure_reward: float | None, format_ratio: float
) -> dict[str, Any]:
    """The source's reply for the one caption of ``result``; ``format_ratio`` is used when the payload gives none."""
    record: ClaimDiffRecord = result.records[0]
    ratio = payload.fmt_ratio if payload.fmt_ratio is not None else format_ratio
    failed = record.accuracy is None
    accuracy = failure_reward if failed else record.accuracy
    final = None if accuracy is None else final_reward(accuracy, record.format, ratio)
    rewards: dict[str, Any] = {"format_reward": record.format, "accuracy_reward": accuracy, "final_reward": final,
                               "judge_failed_reward": float(failed)}  # fmt: skip
    for name, field in _FIGURES.items():
        value = getattr(record, field)
        rewards[f"{name}_reward"] = None if value is None else float(value)
    reply: dict[str, Any] = {"rewards": rewards}
    if failed:
        reply["error"] = f"the judge failed on this caption ({record.failure}: {record.failure_reason})"
    return reply
