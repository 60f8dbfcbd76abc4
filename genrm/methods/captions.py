"""What every caption reward method shares: the instance (an image, a reference caption, the policy's captions) and
the caption cut from a policy's response.

An instance is one line of the instance JSONL that ``genrm score`` and ``/v1/score`` read for a caption method:

    {"id": str, "image": str, "reference": str, "prompt": str, "responses": [str]}

``prompt`` is what the policy is asked (:data:`DEFAULT_CAPTION_PROMPT` when left out); the judge is not shown it.
A method's own instance model derives from :class:`CaptionInstance` (the claimdiff and balcap methods), so that the
response audit (:mod:`genrm.evaluation.response_audit`) reads any of them; the method says which abnormal captions and
which of its settings that audit compares (:class:`genrm.methods.base.ResponseAuditPlan`, its ``response_audit``
attribute).

**Grounding** (the ``grounded_claims`` option of claimdiff and balcap, on by default): what a judge says a caption
claims is looked for in that caption (:func:`verifiers.provenance.find_claim`), and a claim not found is not counted
(:class:`UngroundedClaim` in the records says which and why); a caption with no content word (punctuation, white
space, a bare opener, lone letters: :func:`verifiers.provenance.holds_content`) is not sent to the judge and earns
nothing (:func:`ask_with_content`).

Not here: what a method asks its judge, or how it turns answers into rewards.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from genrm.methods.base import MAX_RESPONSES, UNGROUNDED, ResultTally
from genrm.methods.config import check_open_exposure
from verifiers.provenance import holds_content

_Reading = TypeVar("_Reading")

#: Why a caption was not sent to the judge (the reason of its record).
NO_CONTENT = (
    "the caption holds no content word (punctuation, white space, an opener or lone letters): it describes nothing"
)

#: The captioning prompt of an instance that gives none.
DEFAULT_CAPTION_PROMPT = "Describe this image in detail."

_ANSWER_OPEN, _ANSWER_CLOSE = re.compile("<answer>", re.I), re.compile("</answer>", re.I)


class CaptionInstance(BaseModel):
    """One image, its reference caption, and the policy's captions of it (one line of the instance JSONL)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    image: str = Field(min_length=1, max_length=10_000_000, description="path, URL or data URI of the image")
    reference: str = Field(min_length=1, max_length=100_000, description="the reference caption")
    prompt: str = Field(default=DEFAULT_CAPTION_PROMPT, max_length=100_000, description="what the policy is asked")
    responses: list[str] = Field(default_factory=list, max_length=MAX_RESPONSES)


def check_caption_exposure(method: str, exposure: str) -> None:
    """Raise ValueError for an exposure that means nothing to a caption method: its judge always sees the image and
    both captions (:func:`genrm.methods.config.check_open_exposure`)."""
    check_open_exposure(method, exposure, "the image and both captions")


def chat_body_parts(body: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """The image URL (empty when there is none), the user text and the JSON schema of an OpenAI chat-completions
    body whose last message is a text, or an image and a text (what a caption method sends), for scripted judges
    behind an endpoint."""
    content = body["messages"][-1]["content"]
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if isinstance(content, str):
        return "", content, schema
    image_part, text_part = content
    return image_part["image_url"]["url"], text_part["text"], schema


def answer_text(response: str) -> str:
    """The caption in a response: the text of its first ``<answer>...</answer>`` block, else the whole response,
    stripped."""
    opening = _ANSWER_OPEN.search(response)
    if opening is not None:
        closing = _ANSWER_CLOSE.search(response, opening.end())
        if closing is not None:
            return response[opening.end() : closing.start()].strip()
    return response.strip()


class UngroundedClaim(BaseModel):
    """A claim the judge attributed to a caption and that caption does not make: left out of the reward."""

    model_config = ConfigDict(extra="forbid")

    item: int = Field(ge=1, description="the difference's or assertion's number in the judge's answer, from 1")
    caption: Literal["caption", "reference"] = Field(description="the caption the claim was attributed to")
    reason: str


async def ask_with_content(
    captions: Sequence[str], grounded: bool, ask_about: Callable[[list[str]], Awaitable[list[_Reading]]],
    not_asked: _Reading,
) -> list[_Reading]:  # fmt: skip
    """The judge's readings of ``captions``: with ``grounded``, a caption that holds no content word is not sent
    (its reading is ``not_asked``), since it earns the floor whatever the judge says; ``ask_about`` asks about a list
    of captions and returns one reading each."""
    asked = [index for index, caption in enumerate(captions) if not grounded or holds_content(caption)]
    readings = await ask_about([captions[index] for index in asked]) if asked else []
    out = [not_asked] * len(captions)
    for index, reading in zip(asked, readings, strict=True):
        out[index] = reading
    return out


def caption_tally(records: Sequence[Any]) -> ResultTally:
    """What a server counts of a caption method's records (each with ``failure`` and ``ungrounded``): the judge
    failures, and one ``ungrounded`` status per claim left out."""
    return ResultTally(judge_failures=[r.failure for r in records if r.failure],
                       verifier_statuses=[UNGROUNDED for r in records for _ in r.ungrounded])  # fmt: skip
