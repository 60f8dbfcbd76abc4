"""The claimdiff judge's F1 reward with its predictions checked by a second judge that sees the image (ClaimDiff-RL's
``caption_judge``), the option ``f1_judge`` of the claimdiff method's judge training.

The default F1 (:func:`genrm.methods.claimdiff.judge_training.diff_f1`) matches predicted differences to the
teacher's by their claims' wording, and counts a prediction that matches none as wrong. With ``f1_judge`` set (any
judge spec that sees images), that judge is shown the image, the two captions, the teacher's differences (numbered)
and the predicted ones, and says of each prediction whether the image bears it out (``real``) and which teacher
difference it is the same as (``covers``: its number, 0 for none). Then, over the differences where a caption errs:

- precision = the share of predictions that are real (a real difference the teacher missed counts: the image, not
  the teacher's list, decides);
- recall = the share of teacher differences covered by a real prediction, one prediction covering one difference
  (the first that claims it);
- F1 their harmonic mean. No prediction and no teacher difference: 1 (nothing asked). No prediction alone: 0.

A check that fails (the judge is unreachable, its answer unreadable, or not one check per prediction) is no reward
(None: TRL leaves the completion out of its group's statistics), never a 0 or a 1.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from genrm.engine import ChatPrompt, ChatRequest
from genrm.methods.answer_json import model_reader
from genrm.methods.claimdiff.models import MAX_DIFFERENCES, DiffAnswer, Difference

logger = logging.getLogger(__name__)

#: The schema name of a check request.
CHECK_SCHEMA_NAME = "claimdiff_check"


class DifferenceCheck(BaseModel):
    """The checking judge's verdict on one predicted difference."""

    model_config = ConfigDict(extra="ignore")

    real: bool
    covers: int = Field(ge=0, le=MAX_DIFFERENCES)


class CheckAnswer(BaseModel):
    """One verdict per predicted difference, in their order."""

    model_config = ConfigDict(extra="ignore")

    checks: list[DifferenceCheck] = Field(max_length=MAX_DIFFERENCES)


_SYSTEM = (
    "You check another judge's work on two captions of one image: caption A (under evaluation) and caption B (the "
    "reference). You are given a list of known differences between them and a list of predicted differences, each "
    "saying which caption errs. Look at the image. For each predicted difference, in order, say whether the image "
    "bears it out (real: the caption it blames does err as it says) and which known difference it is the same as "
    "(covers: its number; 0 when it is none of them). Answer with one JSON object: "
    '{"checks": [{"real": true, "covers": 1}, ...]}, one check per predicted difference.'
)


def _described(difference: Difference) -> str:
    errs = [side for side, error in (("A", difference.caption_a_error), ("B", difference.caption_b_error))
            if error.error_type.strip().lower() != "none"]  # fmt: skip
    return (f"aspect: {difference.aspect}; caption A says: {difference.caption_a_claim or '(nothing)'}; caption B "
            f"says: {difference.caption_b_claim or '(nothing)'}; errs: {' and '.join(errs) or 'neither'}")  # fmt: skip


def check_request(
    image: str, reference: str, caption: str, predicted: Sequence[Difference], known: Sequence[Difference]
) -> ChatRequest:
    """The request checking ``predicted`` against ``known`` with the image."""
    listed = "\n".join(f"{n}. {_described(d)}" for n, d in enumerate(known, 1)) or "(none)"
    asked = "\n".join(f"{n}. {_described(d)}" for n, d in enumerate(predicted, 1))
    user = (f"Caption B (reference):\n{reference}\n\nCaption A (under evaluation):\n{caption}\n\n"
            f"KNOWN DIFFERENCES:\n{listed}\n\nPREDICTED DIFFERENCES:\n{asked}")  # fmt: skip
    one = {"type": "object", "properties": {"real": {"type": "boolean"},
                                            "covers": {"type": "integer", "minimum": 0, "maximum": len(known)}},
           "required": ["real", "covers"], "additionalProperties": False}  # fmt: skip
    schema = {"type": "object", "properties": {"checks": {"type": "array", "items": one, "minItems": len(predicted),
                                                          "maxItems": len(predicted)}},
              "required": ["checks"], "additionalProperties": False}  # fmt: skip
    return ChatRequest(ChatPrompt(_SYSTEM, user, image), schema, CHECK_SCHEMA_NAME)


_READER = model_reader(CheckAnswer)


def checked_f1(checks: Sequence[DifferenceCheck], predicted: int, known: int) -> float:
    """The F1 of ``predicted`` differences given the checks of them against ``known`` ones (module docstring).
    Raises ValueError when there is not one check per prediction."""
    if len(checks) != predicted:
        raise ValueError(f"{len(checks)} checks for {predicted} predicted differences")
    if predicted == 0:
        return 1.0 if known == 0 else 0.0
    real = [c for c in checks if c.real]
    covered = {c.covers for c in real if 1 <= c.covers <= known}
    precision = len(real) / predicted
    recall = len(covered) / known if known else 1.0
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _image_reference(image: Any) -> str | None:
    # What the reward function gets in TRL's images column: a decoded image (the dataset holds pixels), or a
    # datasets Image dict; sent as a data URI, never a path.
    from genrm.engine.images import checked_image_data_uri, png_data_uri

    if isinstance(image, list | tuple):
        image = image[0] if image else None
    if image is None:
        return None
    if isinstance(image, dict) and image.get("bytes"):
        return checked_image_data_uri(image["bytes"])
    if hasattr(image, "save"):
        return png_data_uri(image.convert("RGB"))
    return None


class CheckedF1Reward:
    """TRL reward function: the checked F1 of each completion's differences (module docstring), the checking judge
    named by a judge spec (made at the first call: a connection pool or a loaded model, kept for the run)."""

    def __init__(self, spec: str, parse_retries: int = 1) -> None:
        self.spec, self.parse_retries = spec, parse_retries
        self.__name__ = "checked_f1_reward_func"
        self._judge: Any = None

    def judge(self) -> Any:
        """The checking judge (made once)."""
        if self._judge is None:
            from genrm.methods import make_method, method_judge

            self._judge = method_judge(make_method("claimdiff"), self.spec, parse_retries=self.parse_retries)
            if not self._judge.sees_images:
                raise ValueError(f"f1_judge {self.spec!r:.80}: the checking judge must see the image")
        return self._judge

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        """One reward per completion (None where the check failed)."""
        from genrm.engine import ask, run_blocking
        from genrm.methods.base import judge_labels
        from genrm.methods.claimdiff.judge_training import kept_differences
        from genrm.methods.claimdiff.reading import read_answer
        from genrm.methods.completions import completion_text

        labels, images = judge_labels(columns, "the checked F1 reward", len(completions)), columns.get("images")
        prompts = columns.get("prompts") or columns.get("prompt")
        rewards: list[float | None] = [None] * len(completions)
        asked: list[tuple[int, int, int, ChatRequest]] = []
        for row, (completion, label) in enumerate(zip(completions, labels, strict=True)):
            reading = read_answer(completion_text(completion))
            known = kept_differences(DiffAnswer.model_validate_json(label))
            if not isinstance(reading.answer, DiffAnswer):
                rewards[row] = 0.0  # an answer that does not read earns nothing, as the plain F1 gives it
                continue
            predicted = kept_differences(reading.answer)
            if not predicted:
                rewards[row] = checked_f1([], 0, len(known))
                continue
            image = _image_reference(images[row] if images is not None else None)
            reference, caption = _captions(prompts[row] if prompts is not None else None)
            if image is None or reference is None:  # nothing to check against: no reward, and said
                logger.warning("checked F1: row %d has no %s to show the checking judge; it gets no reward", row,
                               "image" if image is None else "reference caption in its prompt")  # fmt: skip
                continue
            asked.append((row, len(predicted), len(known), check_request(image, reference, caption, predicted,
                                                                          known)))  # fmt: skip
        if asked:
            judge = self.judge()
            reads = run_blocking(ask(judge.engine, [request for *_, request in asked], _READER, self.parse_retries))
            for (row, predicted, known, _), read in zip(asked, reads, strict=True):
                if read.answer is not None and len(read.answer.checks) == predicted:
                    rewards[row] = checked_f1(read.answer.checks, predicted, known)
        return rewards


def _captions(prompt: Any) -> tuple[str | None, str]:
    # The reference and the caption, from the RLVR record's prompt (the method's own request text).
    text = prompt if isinstance(prompt, str) else ""
    if isinstance(prompt, list):
        text = next((m.get("content") for m in reversed(prompt) if m.get("role") == "user"), "") or ""
        if isinstance(text, list):
            text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    head, marker, caption = text.partition("\n\nCaption A (under evaluation):\n")
    if not marker or "Caption B (reference):\n" not in head:
        return None, ""
    return head.split("Caption B (reference):\n", 1)[1], caption


def check_answer_text(checks: Sequence[dict[str, Any]]) -> str:
    """A check answer as a judge writes it (for scripted judges)."""
    return json.dumps({"checks": list(checks)})
