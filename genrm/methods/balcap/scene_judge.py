"""A scripted balcap judge over synthetic scenes, for tests, benchmarks and demonstrations: each image is a set of
atomic facts (a scene graph flattened to its facts), a caption is a list of sentences (one assertion each), and the
answer follows from the captions and the scene alone, the way a careful judge would rule. It is no model and judges
no real image; it gives the method's arithmetic, prompts, reader and plumbing a judge whose answers are known in
advance (run it with :class:`genrm.engine.scripted.ScriptedEngine` and :func:`scripted`, or behind an
OpenAI-compatible endpoint with :func:`responder`).

Rules:

- each sentence of the caption is one assertion; ``Possibly <fact>`` is the fact, hedged;
- an assertion is **pointable** unless it is meta-commentary (it speaks of the image, the viewer, the mood or the
  caption: :data:`META_WORDS`), and **visible** when the scene holds its fact; verified when both;
- a reference assertion is **covered** when the caption states or hedges its fact;
- the three linguistic scores start at 9; each repeated sentence costs clarity 2 and coherency 1, each hedge costs
  clarity 1; each is at least 1.

It answers the split checks (``is_pointable``, ``is_visible``) when the request's schema asks for them. Scenes are
:data:`SCENES` unless a caller passes its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from genrm.engine.types import ChatRequest
from genrm.methods.captions import chat_body_parts
from genrm.methods.scene_images import SCENES, scene_of

#: Words that make a sentence meta-commentary (not pointable).
META_WORDS = ("image", "viewer", "scene", "atmosphere", "caption", "evokes", "depth", "mood", "composition")
_HEDGE = "possibly "


def assertions(caption: str) -> list[tuple[str, bool]]:
    """``(fact, hedged)`` for each sentence of ``caption``, in order (repeats kept)."""
    out = []
    for sentence in caption.split("."):
        text = sentence.strip().lower()
        if text:
            hedged = text.startswith(_HEDGE)
            out.append((text.removeprefix(_HEDGE) if hedged else text, hedged))
    return out


def is_meta(fact: str) -> bool:
    """Whether a sentence is meta-commentary (speaks of the image or the viewer rather than of a thing in it)."""
    return any(word in fact.split() for word in META_WORDS)


def judge_answer(scene: frozenset[str], reference: str, caption: str, split: bool) -> dict[str, Any]:
    """The judge's answer (the JSON form) about ``caption`` against ``reference`` for an image of ``scene``."""
    said = assertions(caption)
    items = []
    for fact, hedged in said:
        pointable, visible = not is_meta(fact), fact in scene
        text = ("possibly " if hedged else "") + fact
        if split:
            items.append({"text": text, "is_pointable": pointable, "is_visible": visible})
        else:
            items.append({"text": text, "is_verified": pointable and visible})
    facts = [fact for fact, _ in said]
    repeats = len(facts) - len(set(facts))
    hedges = sum(hedged for _, hedged in said)
    reference_items = [{"text": fact, "is_covered": fact in facts} for fact, _ in assertions(reference)]
    return {
        "synthetic_features": {
            "atomic_assertions": items, "clarity_score": max(1, 9 - 2 * repeats - hedges),
            "fluency_score": 9, "coherency_score": max(1, 9 - repeats),
            "linguistic_scores_explanation": f"{repeats} repeated sentences, {hedges} hedges",
        },
        "gt_features": {"atomic_assertions": reference_items},
    }  # fmt: skip


def _split(user: str) -> tuple[str, str]:
    reference, caption = user.removeprefix("GROUND TRUTH CAPTION (reference):\n").split(
        "\n\nSYNTHETIC CAPTION (to evaluate):\n", 1
    )
    return reference, caption


def answer(image: str, user: str, schema: dict[str, Any] | None, scenes: Mapping[str, frozenset[str]] = SCENES,
           base_dir: Path | None = None) -> str:  # fmt: skip
    """The judge's answer to one balcap request about an image of ``scenes``."""
    reference, caption = _split(user)
    split = schema is not None and "is_pointable" in json.dumps(schema)
    return json.dumps(judge_answer(scene_of(image, scenes, base_dir), reference, caption, split))


def scripted(request: ChatRequest, scenes: Mapping[str, frozenset[str]] = SCENES, base_dir: Path | None = None) -> str:
    """For a :class:`genrm.engine.scripted.ScriptedEngine` (``functools.partial`` for other scenes, or the folder
    relative image paths are read from). Raises :class:`genrm.methods.scene_images.UnknownScene` for an image of no
    scene it knows."""
    return answer(request.prompt.image or "", request.prompt.user, request.schema, scenes, base_dir)


def responder(body: dict[str, Any], scenes: Mapping[str, frozenset[str]] = SCENES) -> str:
    """For an OpenAI-compatible chat-completions server: the answer to a request body."""
    return answer(*chat_body_parts(body), scenes)
