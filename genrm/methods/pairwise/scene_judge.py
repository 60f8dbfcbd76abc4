"""Scripted pairwise judges, for tests, benchmarks and demonstrations: they answer in the full tagged chain and decide
by a rule known in advance. No model.

- :func:`colour_judge` reads the prompt image (its centre pixel, named among :data:`COLOURS`) and prefers the
  response that names that colour (8 against 3). When neither does (a blank grey image, or a colour neither names),
  it has nothing to go on and prefers the first position (6 against 5): the behaviour the image-condition diagnostic
  is there to expose.
- :func:`position_judge` prefers the first position whatever it is shown (7 against 4).

Both write every section, mentioning "response A" and "response B" the way a judge does. Run them with
:class:`genrm.engine.scripted.ScriptedEngine` (``functools.partial`` for the folder relative image paths are read
from), or behind an OpenAI-compatible endpoint with :func:`responder`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from genrm.engine.types import ChatRequest
from genrm.methods.captions import chat_body_parts

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


def pair_responses(user: str) -> tuple[str, str]:
    """Response A and response B as the pairwise prompt shows them."""
    a = user.split("RESPONSE A:\n", 1)[1].split("\n\nRESPONSE B:\n", 1)[0]
    return a, user.split("\n\nRESPONSE B:\n", 1)[1]


def tagged_answer(seen: str, a: str, b: str, scores: tuple[int, int]) -> str:
    """A full tagged answer with the given scores."""
    return (f"<prompt_img_understanding>The image is {seen}.</prompt_img_understanding>\n"
            "<response_a_img_understanding>None</response_a_img_understanding>\n"
            "<response_b_img_understanding>None</response_b_img_understanding>\n"
            f"<response_claims>\n<response_a_claims>Response A says: {a}</response_a_claims>\n"
            f"<response_b_claims>Response B says: {b}</response_b_claims>\n</response_claims>\n"
            f"<consistency_verification>\n<response_a_verification>Response A checked against {seen}."
            f"</response_a_verification>\n<response_b_verification>Response B checked against {seen}."
            "</response_b_verification>\n</consistency_verification>\n"
            "<evaluate_criteria>accuracy decides: the scores follow.</evaluate_criteria>\n"
            f"<scores>\\boxed{{{scores[0]}, {scores[1]}}}</scores>")  # fmt: skip


def colour_judge(request: ChatRequest, base_dir: Path | None = None) -> str:
    """The colour judge's answer (see the module docstring)."""
    a, b = pair_responses(request.prompt.user)
    colour = colour_of(request.prompt.image, base_dir)
    names_a, names_b = (colour is not None and colour in text.lower() for text in (a, b))
    if names_a != names_b:
        scores = (8, 3) if names_a else (3, 8)
    else:
        scores = (6, 5)  # nothing to go on: the first position
    return tagged_answer(colour or "not clear", a, b, scores)


def position_judge(request: ChatRequest) -> str:
    """The position judge's answer: the first response wins."""
    a, b = pair_responses(request.prompt.user)
    return tagged_answer("not looked at", a, b, (7, 4))


def responder(judge: Callable[..., str], base_dir: Path | None = None) -> Callable[[dict[str, Any]], str]:
    """``judge`` for an OpenAI-compatible chat-completions server (relative image paths read from ``base_dir``)."""
    from genrm.engine.types import ChatPrompt

    def answer(body: dict[str, Any]) -> str:
        image, user, _ = chat_body_parts(body)
        request = ChatRequest(ChatPrompt(body["messages"][0]["content"], user, image or None))
        return judge(request, base_dir) if judge is colour_judge else judge(request)

    return answer
