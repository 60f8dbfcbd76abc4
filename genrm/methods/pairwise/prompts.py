"""What the pairwise judge (MJ1) is sent: the grounded verification chain as its answer's structure, the criteria of
the pair's task family, the prompt (with its image) and the two responses.

The chain (MJ1 eq. 1, figure 7): observations of each image, the claims of each response, the verification of every
claim against the observations, the evaluation by criteria, then two distinct integer scores from 1 to 10 in
``\\boxed{a, b}``. The answer is tagged text, eleven tags (:data:`TAGS`): five sections on their own and two parents
(claims, verification) holding one section per response. No JSON schema is sent: the chain is free text that a
grammar would only constrain in its tags, and :mod:`.reading` checks them strictly.

The criteria per family follow the source's figures 8-11, in this project's words. The user turn interleaves text
and images as MMRB2's judges are shown a pair: the prompt's parts, then response A's, then response B's, each under
its label; the swap of :mod:`.swap` exchanges the responses with their images. The open-ended mode (MJ1 table
1's baseline) asks for the same criteria and scores without the chain, so that what the chain adds can be measured.

Not here: reading the answer (:mod:`.reading`), swapping it (:mod:`.swap`).
"""

from __future__ import annotations

from genrm.choices import PAIR_PROMPT_MODES
from genrm.choices import PairPromptMode as PromptMode
from genrm.engine.types import ChatPrompt, ChatRequest
from genrm.methods.pairwise.models import Content, Family, PairExample, content_parts

#: The eleven tags of an answer, in order: (tag, parent or None).
TAGS: tuple[tuple[str, str | None], ...] = (
    ("prompt_img_understanding", None),
    ("response_a_img_understanding", None),
    ("response_b_img_understanding", None),
    ("response_claims", None),
    ("response_a_claims", "response_claims"),
    ("response_b_claims", "response_claims"),
    ("consistency_verification", None),
    ("response_a_verification", "consistency_verification"),
    ("response_b_verification", "consistency_verification"),
    ("evaluate_criteria", None),
    ("scores", None),
)

CRITERIA: dict[Family, tuple[str, ...]] = {
    "text_to_image": (
        "faithfulness_to_prompt: which response better follows the composition, objects, attributes and spatial "
        "relations the prompt describes?",
        "text_rendering: if either response renders text, which renders it better (spelling, legibility, "
        "integration)? Otherwise write Not Applicable.",
        "input_faithfulness: if an input image is given, which response better keeps its key elements and style? "
        "Otherwise write Not Applicable.",
        "image_consistency: if several images are produced, which are more consistent with each other? Otherwise "
        "write Not Applicable.",
        "text_image_alignment: which response better aligns its text with its visual content?",
        "text_quality: if text was produced, which is better written (correct, coherent, grammatical, in tone)?",
        "overall_quality: which response is better technically and aesthetically, more realistic and coherent, with "
        "fewer artifacts?",
    ),
    "image_editing": (
        "text_faithfulness: which response better follows the editing instruction (objects added, colours changed, "
        "scenes modified)?",
        "image_faithfulness: which response better keeps what should not change in the original image "
        "(composition, lighting, style, background)?",
        "overall_image_quality: which response is better technically and aesthetically, with fewer artifacts or "
        "inconsistencies from the edit?",
        "text_rendering: if either response renders text, which renders it better? Otherwise write Not Applicable.",
    ),
    "interleaved": (
        "text_faithfulness: which response better follows the text instruction?",
        "image_faithfulness: which response better keeps the key elements of the input image? If there is none, "
        "write Not Applicable.",
        "overall_image_quality: which response's images are better overall?",
        "congruence: if several images are produced, which are more consistent with each other? Otherwise write Not "
        "Applicable.",
        "text_image_alignment: which response better aligns the text it produced with its images?",
        "text_quality: if text was produced, which is better written? Otherwise write Not Applicable.",
        "text_rendering: if either response renders text inside images, which renders it more correctly? Otherwise "
        "write Not Applicable.",
    ),
    "reasoning": (
        "visual_understanding: which response understands the visual content better (objects, spatial relations, "
        "colours, quantities, details)?",
        "reasoning_quality: which response reasons more soundly (coherent arguments, valid inferences, observations "
        "tied to conclusions)?",
        "accuracy: which response is more accurate and factually correct given the images and the context?",
        "completeness: which response addresses every part of the question more thoroughly?",
        "clarity: which response communicates its analysis more clearly?",
        "depth: which response gives deeper insight than surface observations?",
        "helpfulness: which response would help more someone trying to understand the image or solve the problem?",
    ),
}

_SYSTEM = """You are an objective judge of two AI responses to the same prompt, in multimodal quality analysis. \
Decide which response is better, reasoning in this order:
1. Write down the key observations of every image given.
2. Extract the verifiable claims of each response.
3. Check each claim against your observations.
4. Using that verification, evaluate both responses on each criterion below and say which does better.
5. Give the final scores: integers from 1 to 10, higher is better, and never equal.
Higher accuracy and consistency earn a higher score; look for errors, hallucinations and missed requirements.

Evaluation criteria:
%(criteria)s

Answer exactly in this format:
<prompt_img_understanding>what the prompt's image shows (write None if there is no image)</prompt_img_understanding>
<response_a_img_understanding>what response A's image shows (None if it has none)</response_a_img_understanding>
<response_b_img_understanding>what response B's image shows (None if it has none)</response_b_img_understanding>
<response_claims>
<response_a_claims>the verifiable claims of response A</response_a_claims>
<response_b_claims>the verifiable claims of response B</response_b_claims>
</response_claims>
<consistency_verification>
<response_a_verification>each claim of response A checked against the observations</response_a_verification>
<response_b_verification>each claim of response B checked against the observations</response_b_verification>
</consistency_verification>
<evaluate_criteria>for each criterion, which response does better and why</evaluate_criteria>
<scores>\\boxed{score of response A, score of response B}</scores>"""


_OPEN = """You are an objective judge of two AI responses to the same prompt, in multimodal quality analysis. \
Decide which response is better, using the criteria below. Reason in whatever form you find useful, then give the \
final scores: integers from 1 to 10, higher is better, and never equal.

Evaluation criteria:
%(criteria)s

End your answer with the scores in this format:
<scores>\\boxed{score of response A, score of response B}</scores>"""


def system_message(family: Family, mode: PromptMode = "grounded") -> str:
    """The judge's instructions with the criteria of ``family``: the grounded chain, or open-ended."""
    criteria = "\n".join(f"{n}. {c}" for n, c in enumerate(CRITERIA[family], 1))
    return (_SYSTEM if mode == "grounded" else _OPEN) % {"criteria": criteria}


def _labelled(sections: list[tuple[str, Content]]) -> tuple[str, tuple[tuple[int, str], ...]]:
    """The user text of labelled sections and where each image goes in it (character offsets)."""
    text, images = "", []
    for n, (label, content) in enumerate(sections):
        text += ("\n\n" if n else "") + f"{label}:\n"
        for kind, value in content_parts(content):
            if kind == "image":
                images.append((len(text), value))
            else:
                text += value
    return text, tuple(images)


def user_message(pair: PairExample) -> str:
    """The prompt and the two responses, A then B, as text (each image's place is known to :func:`pair_request`)."""
    return _labelled([("PROMPT", pair.prompt), ("RESPONSE A", pair.response_a), ("RESPONSE B", pair.response_b)])[0]


def pair_request(pair: PairExample, prompt_images: list[str] | None = None, mode: PromptMode = "grounded"
                 ) -> ChatRequest:  # fmt: skip
    """The judge's request for ``pair``: the prompt, then response A, then response B, each image where its part
    is (the pair's ``image`` before everything). ``prompt_images`` replace the prompt's own when given (the
    image-condition diagnostic shows shuffled or blank images); asked with the grounded chain or open-ended
    (``mode``)."""
    shown = pair if prompt_images is None else pair.with_prompt_images(prompt_images)
    text, inline = _labelled([("PROMPT", shown.prompt), ("RESPONSE A", shown.response_a),
                              ("RESPONSE B", shown.response_b)])  # fmt: skip
    return ChatRequest(ChatPrompt(system_message(pair.family, mode), text, shown.image, inline), None, "pairwise")


def check_prompt_mode(mode: object) -> PromptMode:
    """``mode`` when it is a prompt mode; ValueError naming the choices otherwise."""
    if mode not in PAIR_PROMPT_MODES:
        raise ValueError(f"prompt must be one of {', '.join(PAIR_PROMPT_MODES)}; got {mode!r:.40}")
    return mode  # type: ignore[return-value]
