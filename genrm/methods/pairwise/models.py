"""The pairwise judge's data (MJ1), as pydantic models: a labelled pair, and the judge's tagged answer, read.

A pair is one prompt, two responses, the task family whose criteria the judge applies, and optionally the label
(which response is better); one line of the pairs JSONL:

    {"id": str, "prompt": CONTENT, "image": str|null, "response_a": CONTENT, "response_b": CONTENT,
     "family": "text_to_image"|"image_editing"|"interleaved"|"reasoning", "label": "A"|"B"|null,
     "source": str|null}

A CONTENT is a text, or a list of parts in order, each ``["text", str]`` or ``["image", reference]`` (MMRB2's
notation): a text-to-image response is ``[["image", "a.png"]]``, an interleaved one alternates text and images, an
editing prompt is its input image then its instruction. ``image`` is a prompt image shown before everything else (the
older single-image form; both may be given). An image reference is a path next to the file, a URL or a data URI.
``source`` says where a pair comes from (a benchmark's prompt source), for breakdowns.

Sizes are bounded (text, parts, images per pair), and every model forbids unknown fields.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Family = Literal["text_to_image", "image_editing", "interleaved", "reasoning"]
FAMILIES: tuple[Family, ...] = get_args(Family)
Side = Literal["A", "B"]
PartKind = Literal["text", "image"]
#: One part of a prompt or response: ``("text", text)`` or ``("image", reference)``.
Part = tuple[PartKind, str]
_TEXT = 100_000
_IMAGE = 10_000_000  # a data URI of a few megabytes
#: Most parts of one prompt or response, and most images one pair shows the judge.
MAX_PARTS = 64
MAX_IMAGES = 16

Content = str | list[Part]


def content_parts(content: Content) -> list[Part]:
    """``content`` as parts (a text is one text part; an empty text, none)."""
    if isinstance(content, str):
        return [("text", content)] if content else []
    return list(content)


def content_images(content: Content) -> list[str]:
    """The image references of ``content``, in order."""
    return [value for kind, value in content_parts(content) if kind == "image"]


class PairExample(BaseModel):
    """One prompt, two responses, the task family and (when known) which response is better."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    prompt: str | list[Part] = Field(max_length=_TEXT)
    image: str | None = Field(default=None, max_length=_IMAGE, description="a prompt image shown first")
    response_a: str | list[Part] = Field(max_length=_TEXT)
    response_b: str | list[Part] = Field(max_length=_TEXT)
    family: Family = "reasoning"
    label: Side | None = Field(default=None, description="the better response, when known")
    source: str | None = Field(default=None, max_length=128, description="where the pair comes from")

    @model_validator(mode="after")
    def _bounded(self) -> PairExample:
        for name in ("prompt", "response_a", "response_b"):
            content = getattr(self, name)
            if isinstance(content, str):
                continue
            if len(content) > MAX_PARTS:
                raise ValueError(f"{name} has {len(content)} parts; at most {MAX_PARTS}")
            for kind, value in content:
                limit = _TEXT if kind == "text" else _IMAGE
                if len(value) > limit or (kind == "image" and not value):
                    raise ValueError(f"{name}: an {kind} part is empty or longer than {limit} characters")
        if len(self.images()) > MAX_IMAGES:
            raise ValueError(f"the pair shows {len(self.images())} images; at most {MAX_IMAGES}")
        return self

    def prompt_images(self) -> list[str]:
        """The prompt's images, in the order shown: ``image`` first, then those of ``prompt``."""
        return ([self.image] if self.image else []) + content_images(self.prompt)

    def response_images(self) -> list[str]:
        """The responses' images, A's then B's."""
        return content_images(self.response_a) + content_images(self.response_b)

    def images(self) -> list[str]:
        """Every image the judge is shown for this pair."""
        return self.prompt_images() + self.response_images()

    def with_prompt_images(self, shown: list[str]) -> PairExample:
        """The same pair with its prompt's images, wherever they were, replaced by ``shown`` placed before the
        prompt's text (the image-condition diagnostic: another pair's images, or blank ones)."""
        texts = [part for part in content_parts(self.prompt) if part[0] == "text"]
        if isinstance(self.prompt, str) and len(shown) <= 1:
            return self.model_copy(update={"image": shown[0] if shown else None})
        return self.model_copy(update={"image": None, "prompt": [("image", ref) for ref in shown] + texts})

    def swapped(self) -> PairExample:
        """The same pair with the responses in the other order, their images with them (and the label)."""
        label = None if self.label is None else ("B" if self.label == "A" else "A")
        return self.model_copy(update={"response_a": self.response_b, "response_b": self.response_a, "label": label})
