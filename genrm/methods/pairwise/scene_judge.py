"""Scripted pairwise judges, for tests, benchmarks and demonstrations: they answer in the full tagged chain and decide
by a rule known in advance. No model.

- :func:`colour_judge`, for pairs whose responses are text, reads the prompt image (its centre pixel, named among
  :data:`COLOURS`) and prefers the response that names that colour (8 against 3); for pairs whose responses have
  images (text-to-image, editing, interleaved), it reads the colour the prompt's text asks for and prefers the
  response whose first image has it. When neither response matches, or both do (a blank grey image, a colour
  neither names), it has nothing to go on and prefers the first position (6 against 5): the behaviour the
  image-condition diagnostic is there to expose.
- :func:`position_judge` prefers the first position whatever it is shown (7 against 4).

Both write every section, mentioning "response A" and "response B" the way a judge does. Run them with
:class:`genrm.engine.scripted.ScriptedEngine` (``functools.partial`` for the folder relative image paths are read
from), or behind an OpenAI-compatible endpoint with :func:`responder`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from genrm.engine.types import ChatPrompt, ChatRequest

#: The colours the colour judge can name, by RGB.
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30), "green": (30, 170, 60), "blue": (30, 60, 220), "yellow": (240, 220, 30),
    "grey": (128, 128, 128), "black": (0, 0, 0), "white": (255, 255, 255),
}  # fmt: skip


def colour_of(image: str | None, base_dir: Path | None = None) -> str | None:
    """The named colour nearest the centre pixel of ``image`` (None when there is no image or it cannot be read)."""
    from genrm.engine.images import ImageError, load_image

    if not image:
        return None
    try:
        picture = load_image(image, base_dir)
    except ImageError:
        return None
    pixel = picture.getpixel((picture.width // 2, picture.height // 2))
    return min(COLOURS, key=lambda name: sum((a - b) ** 2 for a, b in zip(COLOURS[name], pixel, strict=True)))


_LABELS = ("PROMPT:\n", "\n\nRESPONSE A:\n", "\n\nRESPONSE B:\n")


def sections(prompt: ChatPrompt) -> list[tuple[str, list[str]]]:
    """The prompt, response A and response B as the pairwise prompt shows them: each one's text and images."""
    user = prompt.user
    starts = [user.index(_LABELS[0])]
    for label in _LABELS[1:]:
        starts.append(user.index(label, starts[-1]))
    ends = [start + len(label) for start, label in zip(starts, _LABELS, strict=True)]
    texts = [user[end:following] for end, following in zip(ends, [*starts[1:], len(user)], strict=False)]
    images: list[list[str]] = [[prompt.image] if prompt.image else [], [], []]
    for offset, reference in prompt.inline_images:  # a section's images start where its label ends
        images[sum(end <= offset for end in ends[1:])].append(reference)
    return list(zip(texts, images, strict=True))


def pair_responses(user: str) -> tuple[str, str]:
    """Response A and response B as the pairwise prompt shows them (their text)."""
    _, (a, _), (b, _) = sections(ChatPrompt("", user))
    return a, b


def _named(text: str) -> str | None:
    """The first colour of :data:`COLOURS` that ``text`` names."""
    found = [(match.start(), name) for name in COLOURS if (match := re.search(rf"\b{name}\b", text.lower()))]
    return min(found)[1] if found else None


def tagged_answer(seen: str, a: str, b: str, scores: tuple[int, int], seen_a: str = "None", seen_b: str = "None"
                  ) -> str:  # fmt: skip
    """A full tagged answer with the given scores (``seen_a``/``seen_b``: what each response's image shows)."""
    return (f"<prompt_img_understanding>The image is {seen}.</prompt_img_understanding>\n"
            f"<response_a_img_understanding>{seen_a}</response_a_img_understanding>\n"
            f"<response_b_img_understanding>{seen_b}</response_b_img_understanding>\n"
            f"<response_claims>\n<response_a_claims>Response A says: {a}</response_a_claims>\n"
            f"<response_b_claims>Response B says: {b}</response_b_claims>\n</response_claims>\n"
            f"<consistency_verification>\n<response_a_verification>Response A checked against {seen}."
            f"</response_a_verification>\n<response_b_verification>Response B checked against {seen}."
            "</response_b_verification>\n</consistency_verification>\n"
            "<evaluate_criteria>accuracy decides: the scores follow.</evaluate_criteria>\n"
            f"<scores>\\boxed{{{scores[0]}, {scores[1]}}}</scores>")  # fmt: skip


def colour_judge(request: ChatRequest, base_dir: Path | None = None) -> str:
    """The colour judge's answer (see the module docstring)."""
    (prompt, prompt_images), (a, images_a), (b, images_b) = sections(request.prompt)
    if images_a or images_b:
        colour = _named(prompt)
        shown = [colour_of(images[0], base_dir) if images else None for images in (images_a, images_b)]
        matches_a, matches_b = (colour is not None and seen == colour for seen in shown)
        seen_a, seen_b = (f"The image is {seen or 'not clear'}." if images else "None"
                          for seen, images in zip(shown, (images_a, images_b), strict=True))  # fmt: skip
    else:
        colour = colour_of(prompt_images[0], base_dir) if prompt_images else None
        matches_a, matches_b = (colour is not None and colour in text.lower() for text in (a, b))
        seen_a = seen_b = "None"
    if matches_a != matches_b:
        scores = (8, 3) if matches_a else (3, 8)
    else:
        scores = (6, 5)  # nothing to go on: the first position
    return tagged_answer(colour or "not clear", a, b, scores, seen_a, seen_b)


def position_judge(request: ChatRequest) -> str:
    """The position judge's answer: the first response wins."""
    a, b = pair_responses(request.prompt.user)
    return tagged_answer("not looked at", a, b, (7, 4))


def responder(judge: Callable[..., str], base_dir: Path | None = None) -> Callable[[dict[str, Any]], str]:
    """``judge`` for an OpenAI-compatible chat-completions server (relative image paths read from ``base_dir``)."""

    def answer(body: dict[str, Any]) -> str:
        request = ChatRequest(ChatPrompt.from_messages(body["messages"]))
        return judge(request, base_dir) if judge is colour_judge else judge(request)

    return answer
