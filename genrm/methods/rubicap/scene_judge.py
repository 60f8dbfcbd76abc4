"""Scripted rubicap models over synthetic scenes, for tests, benchmarks and demonstrations: captioners, a student, a
rubric writer, the rubric judge and the two Likert judges, each answering from the scene (a set of atomic facts) and
the request alone, so that every figure downstream is known in advance. No model, no real image.

One function answers every request (:func:`answer`; :func:`scripted` for a
:class:`genrm.engine.scripted.ScriptedEngine`, :func:`responder` behind an OpenAI-compatible endpoint, where the
request's ``model`` names the captioner). Captions are sentences, one fact each (``Possibly <fact>`` hedged).

- **Captioner** ``captioner-k``: every fact of the scene in order, but those whose position j has ``(j + k) % 4 == 0``.
  **Student** ``student``: the scene's first fact, and a blue boat that is not there.
- **Writer** (a sloppy one, so that every check has work): one criterion per fact some teacher states ("States <fact>",
  weight 3 when every teacher states it, else 2), with the teachers that state it and whether the student does; one
  per fact the student made up that no teacher states ("Does not state <fact>", weight 3, every teacher in support);
  and a polish criterion of weight 1.5.
- **Rubric judge**: ``Pass if the caption states [that] <fact>.`` passes when the caption states it plainly (a hedge
  does not convey it); ``Pass if the caption does not state <fact>.`` when it does not state it at all.
- **Blind ranking judge** (RubiCap's prompt 7): per caption, accuracy (share of plain claims in the scene),
  completeness (share of the scene stated), clarity (10 less 3 per hedge), hallucination penalty (3 per made-up
  claim), ranked by their total.
- **Arena judge** (CapArena's pairwise question): the caption with more of the scene's facts stated, less the
  made-up ones, wins; equal is a tie.
- **Likert judges**, modelling the failure the source reports: they score coverage (of the scene, or of the reference
  caption for Reference-Likert) out of 10, less 3 per made-up fact for Direct-Likert, and are swayed by praise: a
  sentence that vouches for the caption adds 3 and is not counted as a claim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from genrm.engine.types import ChatRequest
from genrm.methods.captions import chat_body_parts
from genrm.methods.scene_images import SCENES, scene_of

_HEDGE = "possibly "
_PRAISE = ("accurate", "complete", "excellent", "perfect")
_RULE = re.compile(r"Pass if the caption (states|does not state) (?:that )?(.+?)\.$", re.MULTILINE)
_MADE_UP = "a blue boat"


def claims(caption: str) -> dict[str, str]:
    """fact -> ``stated`` or ``hedged``, for each sentence of ``caption`` that is not praise of the caption."""
    out = {}
    for sentence in caption.split("."):
        text = sentence.strip().lower()
        if text and not any(word in text.split() for word in _PRAISE) and "caption" not in text:
            hedged = text.startswith(_HEDGE)
            out[text.removeprefix(_HEDGE)] = "hedged" if hedged else out.get(text, "stated")
    return out


def _praised(caption: str) -> bool:
    return any(word in caption.lower() for word in _PRAISE)


def caption_of(scene: frozenset[str], who: str) -> str:
    """The caption captioner ``who`` (``captioner-k`` or ``student``) writes of ``scene``."""
    facts = sorted(scene)
    if who == "student":
        chosen = [facts[0], _MADE_UP]
    else:
        k = int(who.rsplit("-", 1)[-1])
        chosen = [fact for j, fact in enumerate(facts) if (j + k) % 4]
    return " ".join(f"{fact[0].upper()}{fact[1:]}." for fact in chosen)


def writer_answer(user: str) -> dict[str, Any]:
    """The sloppy writer's rubric for the student and teacher captions in ``user``."""
    student = claims(user.split("WEAK STUDENT CAPTION:\n", 1)[1].split("\n\nTEACHER CAPTIONS:", 1)[0])
    teachers = re.findall(r"^\d+\. Model (\d+): (.*)$", user, re.MULTILINE)
    stated = {int(k): {f for f, how in claims(text).items() if how == "stated"} for k, text in teachers}
    items = []
    for fact in sorted(set().union(*stated.values())):
        support = [f"Model {k}" for k in sorted(stated) if fact in stated[k]]
        items.append(_item(f"States {fact}", f"Pass if the caption states {fact}.",
                           3 if len(support) == len(stated) else 2, fact in student, support))  # fmt: skip
    for fact in sorted(set(student) - set().union(*stated.values())):
        items.append(_item(f"Does not state {fact}", f"Pass if the caption does not state {fact}.", 3, False,
                           [f"Model {k}" for k in sorted(stated)]))  # fmt: skip
    items.append(_item("Reads fluently", "Pass if the caption reads fluently.", 1.5, False, ["Model 1"]))
    return {"rubrics": items}


def _item(criterion: str, rule: str, weight: float, met: bool, support: list[str]) -> dict[str, Any]:
    return {"criterion": criterion, "description": criterion, "evaluation_rule": rule, "weight": weight,
            "justification": "seen", "student_already_met": met, "reference_teachers": support,
            "teacher_consensus": criterion}  # fmt: skip


def verdict(rule: str, caption: str) -> int:
    """The rubric judge's verdict (1 or 0) on one evaluation rule."""
    match = _RULE.search(rule)
    if match is None:
        return 0
    kind, fact = match.group(1), match.group(2).lower()
    said = claims(caption)
    return int(said.get(fact) == "stated") if kind == "states" else int(fact not in said)


def likert(scene: frozenset[str], caption: str, reference: str | None) -> int:
    """A Likert judge's 0-10 score (see the module docstring)."""
    stated = {f for f, how in claims(caption).items() if how == "stated"}
    if reference is None:
        score = round(10 * len(stated & scene) / len(scene)) - 3 * len(stated - scene)
    else:
        wanted = set(claims(reference))
        score = round(10 * len(stated & wanted) / max(len(wanted), 1))
    return max(0, min(10, score + 3 * _praised(caption)))


def ranking_scores(scene: frozenset[str], caption: str) -> dict[str, int]:
    """The blind ranking judge's four scores of a caption: accuracy is the share of its plain claims that are in the
    scene, completeness the share of the scene it states, clarity 10 less 3 per hedge, and the hallucination penalty
    3 per made-up claim (each 0-10)."""
    said = claims(caption)
    stated = {f for f, how in said.items() if how == "stated"}
    hedges = sum(how == "hedged" for how in said.values())
    return {"accuracy": round(10 * len(stated & scene) / max(len(stated), 1)),
            "completeness": round(10 * len(stated & scene) / len(scene)), "clarity": max(0, 10 - 3 * hedges),
            "hallucination_penalty": min(10, 3 * len(stated - scene))}  # fmt: skip


def answer(image: str, system: str, user: str, schema_name: str | None, who: str,
           scenes: Mapping[str, frozenset[str]] = SCENES, base_dir: Path | None = None) -> str:  # fmt: skip
    """The answer of model ``who`` to one request about an image of ``scenes`` (relative paths read against
    ``base_dir``). The writer and the rubric judge answer from the request alone; the others raise
    :class:`genrm.methods.scene_images.UnknownScene` for an image of no scene they know."""
    if schema_name == "rubicap_writer":
        return json.dumps(writer_answer(user))
    caption = user.rsplit("GENERATED CAPTION TO EVALUATE:\n", 1)[-1]
    if schema_name == "rubicap_criterion":
        return json.dumps({"reasoning": "checked", "score": verdict(user, caption)})
    if schema_name == "rubicap_rubric":
        rules = [m.group(0) for m in _RULE.finditer(user)]
        return json.dumps({"verdicts": [{"reasoning": "checked", "score": verdict(r, caption)} for r in rules]})
    if schema_name == "rubicap_likert":
        caption = user.rsplit("GENERATED CAPTION:\n", 1)[-1]
        reference = (
            user.split("REFERENCE CAPTION:\n", 1)[1].split("\n\nGENERATED", 1)[0] if "REFERENCE" in user else None
        )
        return json.dumps({"score": likert(scene_of(image, scenes, base_dir), caption, reference)})
    scene = scene_of(image, scenes, base_dir)
    from genrm.methods.rubicap.blind_ranking import RANKING_SCHEMA_NAME, answer_text

    if schema_name == RANKING_SCHEMA_NAME:
        shown = re.findall(r"^(Caption [A-Z]):\n(.*)$", user, re.MULTILINE)
        return answer_text({label: ranking_scores(scene, caption) for label, caption in shown})
    if schema_name == "caparena":
        a, b = user.removeprefix("Caption A: ").split("\n\nCaption B: ", 1)
        worth = [len(stated & scene) - len(stated - scene) for stated in
                 ({f for f, how in claims(c).items() if how == "stated"} for c in (a, b))]  # fmt: skip
        judgment = "A" if worth[0] > worth[1] else "B" if worth[1] > worth[0] else "Tie"
        return json.dumps({"reason": f"{worth[0]} against {worth[1]}", "judgment": judgment})
    return caption_of(scene, who)  # a captioning request


def scripted(request: ChatRequest, who: str = "judge", scenes: Mapping[str, frozenset[str]] = SCENES,
             base_dir: Path | None = None) -> str:  # fmt: skip
    """For a :class:`genrm.engine.scripted.ScriptedEngine` (``functools.partial`` for a captioner, other scenes, or
    the folder relative image paths are read from)."""
    prompt = request.prompt
    return answer(prompt.image or "", prompt.system, prompt.user, request.schema_name, who, scenes, base_dir)


def responder(body: dict[str, Any], scenes: Mapping[str, frozenset[str]] = SCENES) -> str:
    """For an OpenAI-compatible chat-completions server: the answer to a request body (its ``model`` names the
    captioner; the schema's name, the request kind)."""
    image, user, _ = chat_body_parts(body)
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    return answer(image, system, user, name, body.get("model", "judge"), scenes)
