"""A scripted claimdiff judge over synthetic scenes, for tests, benchmarks and demonstrations: each image is a set of
atomic facts, a caption is a list of sentences (one claim each; ``Possibly <fact>`` is the fact, hedged), and the
differences and verdicts follow from the captions and the scene alone, the way a careful judge would rule. It is no
model and judges no real image: it gives the method's arithmetic, prompts, reader and plumbing a judge whose answers
are known in advance (run it with :class:`genrm.engine.scripted.ScriptedEngine` and :func:`scripted`, or behind an
OpenAI-compatible endpoint with :func:`responder`).

Rules, per fact that either caption states: the same fact stated plainly by both is no difference; otherwise a
caption errs when it states a fact the scene does not hold (``object_hallucination``), hedges a fact the scene holds
(``detail_hedging_error``) or leaves out a fact the scene holds that the other caption states
(``detail_omission``). The judgment goes to the caption that does not err (``both_supported`` / ``both_wrong``
otherwise); the overall winner has fewer errors. For ``hall_vs_miss``: a fact only the prediction states is
``extra_info``, one only the ground truth states ``missing_fact``, a fact one of them hedges a ``contradiction``;
verified when the scene holds it.

It answers the JSON object when the request carries a schema, and the plain-text blocks when it does not. Scenes are
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

_HEDGE = "possibly "
_SEVERITY = {"object_hallucination": 3, "detail_hedging_error": 2, "detail_omission": 2}


def claims(caption: str) -> dict[str, str]:
    """fact -> ``stated`` or ``hedged``, for each sentence of ``caption``."""
    out = {}
    for sentence in caption.split("."):
        text = sentence.strip().lower()
        if text:
            hedged = text.startswith(_HEDGE)
            out[text.removeprefix(_HEDGE) if hedged else text] = "hedged" if hedged else "stated"
    return out


def _error(state: str | None, other: str | None, in_scene: bool) -> str:
    if state == "stated":
        return "none" if in_scene else "object_hallucination"
    if state == "hedged":
        return "detail_hedging_error" if in_scene else "object_hallucination"
    return "detail_omission" if in_scene and other is not None else "none"


def diff_answer(scene: frozenset[str], reference: str, caption: str, severity: bool) -> dict[str, Any]:
    """The judge's diff answer (the JSON form) for caption A = ``caption`` against caption B = ``reference``."""
    a, b = claims(caption), claims(reference)
    differences, errors = [], {"A": 0, "B": 0}
    for fact in sorted(set(a) | set(b)):
        if a.get(fact) == b.get(fact) == "stated":
            continue
        in_scene = fact in scene
        error_a, error_b = _error(a.get(fact), b.get(fact), in_scene), _error(b.get(fact), a.get(fact), in_scene)
        errors["A"] += error_a != "none"
        errors["B"] += error_b != "none"
        ok_a, ok_b = error_a == "none", error_b == "none"
        rulings = {(True, True): "both_supported", (True, False): "A", (False, True): "B"}
        judgment = rulings.get((ok_a, ok_b), "both_wrong")
        item = {"aspect": "object", "caption_a_claim": fact if fact in a else "", "caption_b_claim": fact if fact in
                b else "", "judgment": judgment}  # fmt: skip
        for side, error in (("caption_a_error", error_a), ("caption_b_error", error_b)):
            item[side] = {"error_type": error, "error_detail": "" if error == "none" else f"{error} on {fact}"}
            if severity:
                item[side]["severity"] = _SEVERITY.get(error, 0)
        differences.append(item)
    winner = "A" if errors["A"] < errors["B"] else "B" if errors["B"] < errors["A"] else "tie"
    return {"differences": differences, "overall_winner": winner}


def hall_answer(scene: frozenset[str], reference: str, caption: str) -> dict[str, Any]:
    """The judge's ``hall_vs_miss`` answer (the JSON form)."""
    a, b = claims(caption), claims(reference)
    differences = []
    for fact in sorted(set(a) | set(b)):
        if a.get(fact) == b.get(fact) == "stated":
            continue
        if fact not in a:
            kind, verification = "missing_fact", "missing"
        else:
            kind = "extra_info" if fact not in b else "contradiction"
            verification = "verified" if fact in scene else "false"
        differences.append({"type": kind, "content": fact, "category": "natural", "verification": verification,
                            "reason": "seen", "is_hallucination": verification == "false"})  # fmt: skip
    return {"differences": differences}


def as_blocks(answer: dict[str, Any], hall: bool) -> str:
    """The same answer in the source's plain-text block layout."""
    lines: list[str] = []
    for number, item in enumerate(answer["differences"], 1):
        lines.append(f"[DIFFERENCE {number}]")
        if hall:
            for key in ("type", "content", "category", "verification", "reason"):
                lines.append(f"{key.upper()}: {item[key]}")
            lines.append(f"IS_HALLUCINATION: {str(item['is_hallucination']).lower()}")
            continue
        lines += [f"ASPECT: {item['aspect']}", f"CAPTION_A_CLAIM: {item['caption_a_claim']}",
                  f"CAPTION_B_CLAIM: {item['caption_b_claim']}", f"JUDGMENT: {item['judgment']}", ""]  # fmt: skip
        for side in ("caption_a_error", "caption_b_error"):
            error = item[side]
            lines += [f"{side.upper()}:", f"ERROR_TYPE: {error['error_type'].upper()}",
                      f"ERROR_DETAIL: {error['error_detail'] or 'No error.'}"]  # fmt: skip
            if "severity" in error:
                lines.append(f"SEVERITY_LEVEL: {error['severity'] or 'NA'}")
            lines.append("")
    if not hall:
        lines += ["[OVERALL_WINNER]", {"tie": "Tie"}.get(answer["overall_winner"], answer["overall_winner"])]
    return "\n".join(lines)


def _split(user: str) -> tuple[bool, str, str]:
    if user.startswith("Ground-truth caption:\n"):
        reference, caption = user.removeprefix("Ground-truth caption:\n").split("\n\nPredicted caption:\n", 1)
        return True, reference, caption
    reference, caption = user.removeprefix("Caption B (reference):\n").split("\n\nCaption A (under evaluation):\n", 1)
    return False, reference, caption


def check_answer(scene: frozenset[str], user: str) -> str:
    """The checking judge's answer (``f1_judge``): a predicted difference is real when the caption it blames does
    err on the scene (states a fact the scene does not hold, or hedges or leaves out one it holds), and covers the
    known difference with the same claims."""
    import re

    from genrm.methods.claimdiff.checked_f1 import check_answer_text

    line = re.compile(r"^\d+\. aspect: .*?; caption A says: (.*?); caption B says: (.*?); errs: (.*)$")
    known_text, predicted_text = user.split("KNOWN DIFFERENCES:\n", 1)[1].split("\n\nPREDICTED DIFFERENCES:\n", 1)
    known = [m.groups() for m in map(line.match, known_text.splitlines()) if m]
    checks = []
    for a_says, b_says, errs in (m.groups() for m in map(line.match, predicted_text.splitlines()) if m):
        real = True
        for side, says, other in (("A", a_says, b_says), ("B", b_says, a_says)):
            if side not in errs:
                continue
            if says == "(nothing)":  # an omission: real when the other caption's fact is there
                real &= other.lower().removeprefix(_HEDGE) in scene
            elif says.lower().startswith(_HEDGE):  # a hedge: real when the fact is there
                real &= says.lower().removeprefix(_HEDGE) in scene
            else:  # a plain claim: real when the fact is not there
                real &= says.lower() not in scene
        covers = next((n for n, (ka, kb, _) in enumerate(known, 1) if (ka, kb) == (a_says, b_says)), 0)
        checks.append({"real": real, "covers": covers})
    return check_answer_text(checks)


def answer(image: str, user: str, schema: dict[str, Any] | None, scenes: Mapping[str, frozenset[str]] = SCENES,
           base_dir: Path | None = None) -> str:  # fmt: skip
    """The judge's answer to one claimdiff request (JSON with a schema, blocks without) about an image of
    ``scenes``."""
    if "PREDICTED DIFFERENCES:\n" in user:
        return check_answer(scene_of(image, scenes, base_dir), user)
    hall, reference, caption = _split(user)
    scene = scene_of(image, scenes, base_dir)
    if hall:
        found = hall_answer(scene, reference, caption)
    else:
        severity = schema is None or "severity" in json.dumps(schema)
        found = diff_answer(scene, reference, caption, severity)
    return json.dumps(found) if schema is not None else as_blocks(found, hall)


def scripted(request: ChatRequest, scenes: Mapping[str, frozenset[str]] = SCENES, base_dir: Path | None = None) -> str:
    """For a :class:`genrm.engine.scripted.ScriptedEngine` (``functools.partial`` for other scenes, or the folder
    relative image paths are read from). Raises :class:`genrm.methods.scene_images.UnknownScene` for an image of no
    scene it knows."""
    return answer(request.prompt.image or "", request.prompt.user, request.schema, scenes, base_dir)


def responder(body: dict[str, Any], scenes: Mapping[str, frozenset[str]] = SCENES) -> str:
    """For an OpenAI-compatible chat-completions server: the answer to a request body."""
    return answer(*chat_body_parts(body), scenes)
