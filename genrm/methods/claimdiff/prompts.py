"""What the claimdiff judge is sent: the prompt (image, reference caption, the policy's caption) and the JSON schema of
its answer, for constrained decoding.

The judge must see the image: its rulings are about what the image shows, so the image is attached whatever the
server's exposure (the rubric method's exposures hide targets and images from a judge that extracts values; here
there is no hidden target: the reference caption is one side of the comparison by design, and the arithmetic that
turns rulings into a reward is ours, :mod:`.rewards`).

Layout for the prefix cache: the system message depends only on the mode and the answer form, and the user message
puts the image and the reference caption first and the policy's caption last, so the G captions of one image share
everything up to the last one.

Two answer forms (``answer_format``): ``json`` (the default: one object, constrained by :func:`answer_schema` where
the engine can) and ``blocks`` (the source's plain-text blocks, ``[DIFFERENCE n]`` with ``KEY: value`` lines, for a
judge that cannot be constrained or was trained on them; no schema is sent). :mod:`.reading` reads both whatever was
asked.
"""

from __future__ import annotations

from typing import Any, Literal

from genrm.engine.types import ChatPrompt, ChatRequest
from genrm.methods.claimdiff.models import MAX_DIFFERENCES

AnswerFormat = Literal["json", "blocks"]

_DIFF_TASK = """You judge two captions of the same image against the image itself.
Caption B is a reference caption; caption A is the caption under evaluation. Neither is assumed right.

1. List the concrete differences between caption A and caption B, one claim at a time: a fact one of them states and \
the other states differently or leaves out (objects, counts, attributes, colours, text, spatial relations, actions, \
style, lighting, camera angle). Give each caption's claim in that caption's own words, and leave it empty when the \
caption says nothing of it.
2. For each difference, look at the image and rule which caption it supports: A, B, both_wrong or both_supported.
3. For each caption, say whether it errs on that difference. A fact the image shows that a caption leaves out is an \
error of that caption. A claim the image clearly settles but the caption words as a hedge or an alternative \
("possibly", "A or B", "might be") is an error. Repeating the same content without new information is an error.
4. Name each error's type as <dimension>_<nature>, specific rather than generic: color_hallucination, \
count_mismatch, text_omission, spatial_relation_error, identity_hallucination, detail_omission, \
style_misinterpretation, context_overreach, repetition_error, and so on. Write none when the caption does not err.
5. Say which caption is better overall: A, B or tie."""

_SEVERITY = """6. Give each error a severity by how much it matters for describing this image: 3 when it concerns the \
main subject, a key object, the main action or an identity; 2 for a secondary but notable detail or context; 1 for a \
minor or stylistic detail; 0 when the caption does not err."""

_DIFF_JSON = """Answer with one JSON object: {"differences": [{"aspect", "caption_a_claim", "caption_b_claim", \
"judgment", "caption_a_error": {"error_type", "error_detail"%s}, "caption_b_error": {...}}, ...], \
"overall_winner"}. List no difference when the captions agree."""

_DIFF_BLOCKS = """Answer in plain text, with no markdown, exactly in this layout, one block per difference:

[DIFFERENCE 1]
ASPECT: <what the difference is about>
CAPTION_A_CLAIM: <caption A's words for it, or nothing>
CAPTION_B_CLAIM: <caption B's words for it, or nothing>
JUDGMENT: <A|B|both_wrong|both_supported>

CAPTION_A_ERROR:
ERROR_TYPE: <type, or NONE>
ERROR_DETAIL: <what is wrong>%s

CAPTION_B_ERROR:
ERROR_TYPE: <type, or NONE>
ERROR_DETAIL: <what is wrong>%s

[OVERALL_WINNER]
<A|B|Tie>"""

_HALL_TASK = """You check a predicted caption of an image for hallucinations, with a ground-truth caption as a guide.

1. Compare the two captions and list each difference with its type: contradiction (the prediction says otherwise \
than the ground truth), extra_info (the prediction says something the ground truth does not) or missing_fact (the \
ground truth says something the prediction leaves out). Give its content in the words of the caption that states \
it (the ground truth's for a missing fact, the prediction's otherwise).
2. Check the prediction's claim of each contradiction or extra_info against the image: verified (the image shows it), \
false (the image shows otherwise or shows nothing of it) or ambiguous (the image cannot tell). A missing_fact is \
verification missing.
3. A difference is a hallucination only when its verification is false; a missing fact is never one.
4. Give each difference a category: natural (objects, people, animals, scenes, actions, attributes, positions) or \
design (text, typography, layout, logos, interface and graphic elements)."""

_HALL_JSON = """Answer with one JSON object: {"differences": [{"type", "content", "category", "verification", \
"reason", "is_hallucination"}, ...]}. List no difference when the captions agree."""

_HALL_BLOCKS = """Answer in plain text, with no markdown, exactly in this layout, one block per difference:

[DIFFERENCE 1]
TYPE: <contradiction|extra_info|missing_fact>
CONTENT: <the prediction's words for its claim, or the ground truth's for the missing fact>
CATEGORY: <natural|design>
VERIFICATION: <verified|false|ambiguous|missing>
REASON: <why>
IS_HALLUCINATION: <true|false>"""


def system_message(hall_vs_miss: bool, judge_severity: bool, answer_format: AnswerFormat) -> str:
    """The judge's instructions for one setting of the method (the same for every image and caption)."""
    if hall_vs_miss:
        return _HALL_TASK + "\n\n" + (_HALL_JSON if answer_format == "json" else _HALL_BLOCKS)
    task = _DIFF_TASK + ("\n" + _SEVERITY if judge_severity else "")
    if answer_format == "json":
        return task + "\n\n" + _DIFF_JSON % (', "severity"' if judge_severity else "")
    severity_line = "\nSEVERITY_LEVEL: <1|2|3|NA>" if judge_severity else ""
    return task + "\n\n" + _DIFF_BLOCKS % (severity_line, severity_line)


def user_message(reference: str, caption: str, hall_vs_miss: bool) -> str:
    """The reference caption, then the caption judged (last, so that a group shares the prefix)."""
    if hall_vs_miss:
        return f"Ground-truth caption:\n{reference}\n\nPredicted caption:\n{caption}"
    return f"Caption B (reference):\n{reference}\n\nCaption A (under evaluation):\n{caption}"


def _string(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def answer_schema(hall_vs_miss: bool, judge_severity: bool) -> dict[str, Any]:
    """The JSON schema of one answer (inline, no references, so that any constrained decoder takes it)."""
    if hall_vs_miss:
        item = {"type": "object", "additionalProperties": False,
                "required": ["type", "content", "category", "verification", "reason", "is_hallucination"],
                "properties": {"type": {"enum": ["contradiction", "extra_info", "missing_fact"]},
                               "content": _string(2000), "category": {"enum": ["natural", "design"]},
                               "verification": {"enum": ["verified", "false", "ambiguous", "missing"]},
                               "reason": _string(2000), "is_hallucination": {"type": "boolean"}}}  # fmt: skip
        listing = {"type": "array", "maxItems": MAX_DIFFERENCES, "items": item}
        return {"type": "object", "additionalProperties": False, "required": ["differences"],
                "properties": {"differences": listing}}  # fmt: skip
    error: dict[str, Any] = {"type": "object", "additionalProperties": False,
                             "required": ["error_type", "error_detail"],
                             "properties": {"error_type": _string(200), "error_detail": _string(2000)}}  # fmt: skip
    if judge_severity:
        error["required"].append("severity")
        error["properties"]["severity"] = {"enum": [0, 1, 2, 3]}
    item = {"type": "object", "additionalProperties": False,
            "required": ["aspect", "caption_a_claim", "caption_b_claim", "judgment", "caption_a_error",
                         "caption_b_error"],
            "properties": {"aspect": _string(200), "caption_a_claim": _string(2000), "caption_b_claim": _string(2000),
                           "judgment": {"enum": ["A", "B", "both_wrong", "both_supported"]},
                           "caption_a_error": error, "caption_b_error": error}}  # fmt: skip
    return {"type": "object", "additionalProperties": False, "required": ["differences", "overall_winner"],
            "properties": {"differences": {"type": "array", "maxItems": MAX_DIFFERENCES, "items": item},
                           "overall_winner": {"enum": ["A", "B", "tie"]}}}  # fmt: skip


def caption_requests(
    image: str, reference: str, captions: list[str], hall_vs_miss: bool, judge_severity: bool,
    answer_format: AnswerFormat,
) -> list[ChatRequest]:  # fmt: skip
    """One request per caption; the schema is attached for the ``json`` form only."""
    system = system_message(hall_vs_miss, judge_severity, answer_format)
    schema = answer_schema(hall_vs_miss, judge_severity) if answer_format == "json" else None
    name = "claimdiff_hall_vs_miss" if hall_vs_miss else "claimdiff"
    return [ChatRequest(ChatPrompt(system, user_message(reference, caption, hall_vs_miss), image), schema, name)
            for caption in captions]  # fmt: skip
