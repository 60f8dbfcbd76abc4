"""The balcap method (BalCapRL) as a reward method: one judge call per caption decomposes it into atomic assertions
(each checked as pointable and true of the image), checks which of the reference's assertions it covers, and scores
its clarity, fluency and coherency; :mod:`.rewards` turns the answer into three rewards.

Options (``method_options``: :class:`.rewards.BalCapConfig`, listed by ``genrm methods``): ``w_prec`` (0.1),
``w_rec`` (0.3), ``w_ling`` (0.3), ``ling_scale`` (``affine``), ``empty_precision`` (0), ``length_rule`` (``mask``),
``length_low`` (0.5), ``length_high`` (2), ``length_lambda`` (1), ``length_tokenizer`` (none: words and punctuation),
``split_checks`` (false), ``prompt`` (``train``; ``eval`` for b-CapScore), ``grounded_claims`` (true).

Three reward columns (``precision``, ``recall``, ``linguistic``: :class:`genrm.methods.columns.HasRewardColumns`),
all from the same judge answer: a trainer normalizes them apart (c-GDPO) with the weights above. The scalar reward is
their weighted mean, for callers that take one number.

Choices this method makes where the source leaves room:

- **The judge sees the image** under every exposure it accepts (``minimal``, the default, and ``vlm``);
  ``unlimited`` and ``no_verifier`` are refused: the reference caption is part of the judge's task by design, and the
  arithmetic is ours, so they would change nothing. A judge that cannot see images fails each caption, with the
  reason.
- **A failed judgement is not a reward**: every column of the caption is null with the failure's class and reason.
- **Grounded claims** (``grounded_claims``, on; not in the source): an assertion not found in the caption it is said
  to come from is not counted, and a caption with no content word is not judged and earns nothing
  (:mod:`.grounding`).
- **The empty cases**, the mapping of 1-10 scores and the token counter are in :mod:`.rewards` and :mod:`.lengths`.
- **No group remap**: each caption is judged against the reference alone; the group matters only in the advantage.

Not here: the formulas (:mod:`.rewards`), the prompts (:mod:`.prompts`), reading answers (:mod:`.reading`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genrm.engine import Judge, ask
from genrm.engine.types import ChatRequest
from genrm.methods.balcap import rewards as formulas
from genrm.methods.balcap.grounding import grounded_answer
from genrm.methods.balcap.lengths import TokenCounter, make_counter
from genrm.methods.balcap.models import BalCapInstance, BalCapRecord, BalCapResult
from genrm.methods.balcap.prompts import caption_requests
from genrm.methods.balcap.reading import Reading, answer_reader
from genrm.methods.balcap.rewards import BalCapConfig
from genrm.methods.base import MethodInputError, ResponseAuditPlan, ResultTally, UnknownReward, judge_failed
from genrm.methods.captions import NO_CONTENT, answer_text, ask_with_content, caption_tally, check_caption_exposure
from genrm.methods.config import MethodConfig

#: The reward columns, in the order a trainer lists them.
COLUMNS = ("precision", "recall", "linguistic")


@dataclass(frozen=True)
class PreparedCaptions:
    """An instance ready to judge: the captions cut from its responses, and the token counts of each and of the
    reference."""

    instance: BalCapInstance
    captions: list[str]
    caption_tokens: list[int]
    reference_tokens: int


class BalCapMethod:
    """The balcap method (see the module docstring); registered as ``balcap``.

    Args:
        config: the common settings (only ``exposure`` applies: ``minimal`` or ``vlm``).
        options: this method's settings (see the module docstring).
    """

    name = "balcap"
    options_model = BalCapConfig
    instance_model = BalCapInstance
    result_model = BalCapResult
    reads_without_engine = False
    #: The caption audit: the attacks the source's design answers (meta-commentary that is not pointable, padding,
    #: repetition, hedging) and two it does not name; the default settings, the two tests asked apart, no length mask,
    #: the evaluation prompt, and the judge's assertions taken as given (no grounding, as the source).
    response_audit = ResponseAuditPlan(
        ("meta_commentary", "length_padding", "repetition", "hedged", "hallucinated_object", "self_praise"),
        {"default": {}, "split_checks": {"split_checks": True}, "no_length_mask": {"length_rule": "none"},
         "eval_prompt": {"prompt": "eval"}, "no_grounding": {"grounded_claims": False}},
    )  # fmt: skip

    def __init__(self, config: MethodConfig | None = None, options: BalCapConfig | None = None) -> None:
        config = config or MethodConfig()
        check_caption_exposure(self.name, config.exposure)
        self.config = config
        self.settings = options or BalCapConfig()
        self.reward_columns = dict(zip(COLUMNS, self.settings.weights, strict=True))
        try:  # at set-up, so that a server or a run with a tokenizer it cannot load stops at once, saying so
            self.counter: TokenCounter = make_counter(self.settings.length_tokenizer)
        except (OSError, ValueError, ImportError) as exc:
            raise ValueError(f"balcap option length_tokenizer: cannot load {self.settings.length_tokenizer!r:.200}: "
                             f"{exc}") from None  # fmt: skip

    def count_tokens_with(self, tokenizer: Any) -> None:
        """Count lengths with ``tokenizer`` (the policy's, which ``genrm rl`` hands over) unless the options name
        one."""
        if self.settings.length_tokenizer is None:
            self.counter = make_counter(tokenizer)

    def prepare(self, instance: BalCapInstance) -> PreparedCaptions:
        """Cut each response's caption and count tokens; raises :class:`MethodInputError` for a reference caption
        with no token."""
        reference_tokens = self.counter(instance.reference)
        if not instance.reference.strip() or reference_tokens == 0:
            raise MethodInputError("the reference caption is blank", ["reference"], kind="reference")
        captions = [answer_text(response) for response in instance.responses]
        return PreparedCaptions(instance, captions, [self.counter(c) for c in captions], reference_tokens)

    async def judge(self, prepared: PreparedCaptions, judge: Judge) -> list[Reading]:
        """One reading per caption: the judge asked once per caption (with the image), its answer read."""
        instance, settings, engine = prepared.instance, self.settings, judge.engine

        async def ask_about(captions: list[str]) -> list[Reading]:
            if engine is None or not judge.sees_images:
                reason = f"{judge.model} cannot see the image, and the balcap judge checks assertions against it"
                return [Reading(None, "backend_error", reason)] * len(captions)
            requests = caption_requests(instance.image, instance.reference, captions, settings.prompt,
                                        settings.split_checks)  # fmt: skip
            return await ask(engine, requests, answer_reader(), judge.parse_retries)

        not_asked = Reading(None, None, NO_CONTENT)
        return await ask_with_content(prepared.captions, settings.grounded_claims, ask_about, not_asked)

    def uses_workers(self, prepared: PreparedCaptions) -> bool:
        """Never: no verifier of this method runs in the expression workers."""
        return False

    def score(self, prepared: PreparedCaptions, readings: Sequence[Reading]) -> BalCapResult:
        """Each caption's rewards from its reading (null where the judge failed)."""
        reference = prepared.instance.reference
        records = [self._record(caption, tokens, reference, prepared.reference_tokens, reading)
                   for caption, tokens, reading in zip(prepared.captions, prepared.caption_tokens, readings,
                                                       strict=True)]  # fmt: skip
        return BalCapResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records,
                            precision=[r.precision for r in records], recall=[r.recall for r in records],
                            linguistic=[r.linguistic for r in records])  # fmt: skip

    def _record(self, caption: str, tokens: int, reference: str, reference_tokens: int,
                reading: Reading) -> BalCapRecord:  # fmt: skip
        settings = self.settings
        rho = formulas.length_ratio(tokens, reference_tokens)
        band = formulas.in_band(rho, settings.length_low, settings.length_high)
        penalty = 0.0
        if settings.length_rule == "linear":
            penalty = settings.length_lambda * formulas.band_deviation(rho, settings.length_low, settings.length_high)
        common: dict[str, Any] = {"length_ratio": rho, "length_in_band": band, "length_penalty": penalty,
                                  "caption_tokens": tokens, "reference_tokens": reference_tokens}  # fmt: skip
        answer = reading.answer
        if reading.failure is None and answer is None:  # not asked: the caption holds no content word
            return BalCapRecord(reward=0.0, precision=0.0, recall=0.0, linguistic=0.0,
                                linguistic_unmasked=0.0, no_content=True, **common)  # fmt: skip
        if answer is None:
            return BalCapRecord(reward=None, failure=reading.failure, failure_reason=reading.reason, **common)
        read = answer
        if settings.grounded_claims:
            answer, common["ungrounded"] = grounded_answer(answer, caption, reference)
            if not answer.gt_features.atomic_assertions:
                reason = "none of the judge's assertions of the reference is in the reference caption"
                return BalCapRecord(reward=None, failure="ungrounded", failure_reason=reason, answer=read, **common)
        prec = formulas.precision(answer, settings.empty_precision)
        rec = formulas.recall(answer)
        ling = formulas.linguistic(answer, settings.ling_scale)
        masked = 0.0 if settings.length_rule == "mask" and not band else ling
        assertions = answer.synthetic_features.atomic_assertions
        pointable = None
        if settings.split_checks:
            pointable = sum(a.is_pointable is True for a in assertions)
        found = answer.gt_features.atomic_assertions
        return BalCapRecord(
            reward=formulas.weighted_mean((prec, rec, masked), settings.weights), precision=prec, recall=rec,
            linguistic=masked, linguistic_unmasked=ling, assertions=len(assertions),
            verified=sum(a.is_verified for a in assertions), pointable=pointable,
            reference_assertions=len(found), covered=sum(a.is_covered for a in found), answer=read, **common,
        )  # fmt: skip

    def column_values(self, result: BalCapResult, index: int) -> dict[str, float | None]:
        """Response ``index``'s precision, recall and (masked) linguistic reward."""
        record = result.records[index]
        return {"precision": record.precision, "recall": record.recall, "linguistic": record.linguistic}

    def advantage_penalty(self, result: BalCapResult, index: int) -> float:
        """What the linear length rule subtracts from response ``index``'s advantage (0 under the other rules)."""
        return result.records[index].length_penalty

    def advantage_penalty_setting(self) -> str | None:
        """``length_rule linear`` when that rule is on with a positive lambda, else None."""
        settings = self.settings
        if settings.length_rule == "linear" and settings.length_lambda > 0:
            return f"length_rule linear (length_lambda {settings.length_lambda:g})"
        return None

    def unknown_reward(self, result: BalCapResult, index: int) -> UnknownReward:
        """Every unknown reward of this method is the judge's failure (retry)."""
        record = result.records[index]
        return judge_failed(record.failure, record.failure_reason, "this caption")

    def extra_logs(self, result: BalCapResult, index: int) -> dict[str, float]:
        """The caption's three rewards (when known), its length ratio, whether it is in the band, and the linear
        penalty."""
        record = result.records[index]
        logs = {"length_ratio": record.length_ratio, "length_in_band": float(record.length_in_band)}
        if self.settings.length_rule == "linear":
            logs["length_penalty"] = record.length_penalty
        for name in (*COLUMNS, "linguistic_unmasked", "assertions"):
            value = getattr(record, name)
            if value is not None:
                logs[name] = float(value)
        return logs

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The scripted scene judge (:mod:`.scene_judge`): ``--judge scripted``, to try the method offline.
        Relative image paths are read against ``image_dir``."""
        import functools

        from genrm.methods.balcap.scene_judge import scripted

        return functools.partial(scripted, base_dir=image_dir)

    def tally(self, result: BalCapResult) -> ResultTally:
        """The judge failures met, and one ``ungrounded`` status per assertion left out (this method runs no
        verifier)."""
        return caption_tally(result.records)
