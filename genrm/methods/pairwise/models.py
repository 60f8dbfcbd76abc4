"""The pairwise judge's data (MJ1), as pydantic models: a labelled pair, and the judge's tagged answer, read.

A pair is one prompt (text, and optionally an image), two responses, the task family whose criteria the judge
applies, and optionally the label (which response is better); one line of the pairs JSONL:

    {"id": str, "prompt": str, "image": str|null, "response_a": str, "response_b": str,
     "family": "text_to_image"|"image_editing"|"interleaved"|"reasoning", "label": "A"|"B"|null}

The image is the prompt's (a path next to the file, a URL or a data URI). Responses are text: a response that is
itself an image (text-to-image, editing) needs several images per request, which the judge engine does not send yet;
those families' criteria are there for text descriptions of the outputs meanwhile.

Sizes are bounded, and every model forbids unknown fields.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Family = Literal["text_to_image", "image_editing", "interleaved", "reasoning"]
FAMILIES: tuple[Family, ...] = get_args(Family)
Side = Literal["A", "B"]
_TEXT = 100_000


class PairExample(BaseModel):
    """One prompt, two responses, the task family and (when known) which response is better."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    prompt: str = Field(max_length=_TEXT)
    image: str | None = Field(default=None, max_length=10_000_000, description="the prompt's image")
    response_a: str = Field(max_length=_TEXT)
    response_b: str = Field(max_length=_TEXT)
    family: Family = "reasoning"
    label: Side | None = Field(default=None, description="the better response, when known")

    def swapped(self) -> PairExample:
        """The same pair with the responses in the other order (and the label with them)."""
        label = None if self.label is None else ("B" if self.label == "A" else "A")
        return self.model_copy(update={"response_a": self.response_b, "response_b": self.response_a, "label": label})
