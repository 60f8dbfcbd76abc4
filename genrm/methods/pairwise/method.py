"""The pairwise judge (MJ1) as a reward method: each of the policy's responses is compared with a reference response
by the pairwise judge, in both orders, and its reward is its share of wins.

An instance is one prompt, a reference response and the policy's responses:

    {"id": str, "prompt": str, "image": str|null, "reference": str, "family": "reasoning"|..., "responses": [str]}

Options (``method_options``): ``swap`` (true by default): judge each comparison in both orders and average, so that a
judge's preference for a position cancels out (reward 0, 0.5 or 1); false judges once, the response in position A
(reward 0 or 1), which a position-biased judge fools (the audit, ``genrm audit run --method pairwise``, compares
the two). ``prompt``: ``grounded`` (MJ1's chain, the default) or ``open`` (the same criteria and scores without the
chain, MJ1 table 1's open-ended baseline).

**Why against a reference, not round-robin within the group.** A reference costs 2G calls per group (G without the
swap) where round-robin costs G(G-1) (twice that with the swap): 112 against 16 for G = 8. And a reference anchors the
reward: a response that beats the reference earns the same wherever its group stands, while round-robin win rates are
relative to the group, which GRPO's normalization already makes them. Round-robin is left out on purpose.

A judgement that fails in either order (no readable scores, a tie) leaves the response's reward null with the reason;
it is never counted as a loss or half a win.

Not here: the prompt (:mod:`.prompts`), reading answers (:mod:`.reading`), the judge's own training rewards
(:mod:`.rewards`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from genrm.choices import PairPromptMode
from genrm.engine import Judge, ask
from genrm.engine.types import ChatRequest
from genrm.methods.base import (
    MAX_RESPONSES,
    GroupResult,
    JudgeTraining,
    ResponseAuditPlan,
    ResultTally,
    UnknownReward,
    judge_failed,
)
from genrm.methods.config import MethodConfig, check_open_exposure
from genrm.methods.options import MethodOptions
from genrm.methods.pairwise.models import Family, PairExample
from genrm.methods.pairwise.prompts import pair_request
from genrm.methods.pairwise.reading import PairJudgement, judgement_reader


class PairwiseInstance(BaseModel):
    """One prompt, its reference response, and the policy's responses to compare with it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    prompt: str = Field(max_length=100_000)
    image: str | None = Field(default=None, max_length=10_000_000, description="the prompt's image")
    reference: str = Field(min_length=1, max_length=100_000, description="the response each one is compared with")
    family: Family = "reasoning"
    responses: list[str] = Field(default_factory=list, max_length=MAX_RESPONSES)


class PairwiseRecord(BaseModel):
    """How one response's reward came about (or why it has none)."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="the share of its comparisons the response won; null when one failed")
    wins: int | None = None
    comparisons: int
    consistent: bool | None = Field(default=None, description="with the swap: both orders chose the same response")
    scores: list[tuple[int, int] | None] = Field(default_factory=list, description="(response, reference) per order")
    failure: str | None = None
    failure_reason: str | None = None


class PairwiseResult(GroupResult):
    """One scored group."""

    records: list[PairwiseRecord] = Field(default_factory=list)


@dataclass(frozen=True)
class PreparedPairs:
    """An instance ready to judge."""

    instance: PairwiseInstance


class PairwiseOptions(MethodOptions):
    """The pairwise method's own settings (its ``method_options``; the module docstring says what each does)."""

    swap: bool = Field(True, description="judge each comparison in both orders and average (position bias cancels)")
    prompt: PairPromptMode = Field("grounded", description="grounded (MJ1's chain) or open (the open-ended baseline)")


class PairwiseMethod:
    """The pairwise judge as a reward (see the module docstring); registered as ``pairwise``.

    Args:
        config: the common settings (``exposure``: ``minimal`` or ``vlm``, the same here: the judge sees the
            prompt's image when there is one).
        options: ``swap`` (see the module docstring).
    """

    name = "pairwise"
    options_model = PairwiseOptions
    instance_model = PairwiseInstance
    result_model = PairwiseResult
    reads_without_engine = False
    #: The response audit: an answer to another prompt, instructions to the judge, the first sentence dropped, a
    #: repetition loop, and the master keys around another prompt's answer; with the swap and without.
    response_audit = ResponseAuditPlan(
        ("irrelevant", "injection", "missing_salient_fact", "repetition"),
        {"swap": {}, "no_swap": {"swap": False}}, wrong=("irrelevant",),
    )  # fmt: skip

    def __init__(self, config: MethodConfig | None = None, options: PairwiseOptions | None = None) -> None:
        config = config or MethodConfig()
        check_open_exposure(self.name, config.exposure, "the prompt, its image and both responses")
        options = options or PairwiseOptions()
        self.config, self.swap, self.prompt = config, options.swap, options.prompt

    def prepare(self, instance: PairwiseInstance) -> PreparedPairs:
        """Nothing to check beyond the instance model."""
        return PreparedPairs(instance)

    def _pairs(self, instance: PairwiseInstance) -> list[PairExample]:
        # Per response: the response in position A, then (with the swap) in position B.
        pairs = []
        for n, response in enumerate(instance.responses):
            given = PairExample(id=str(n), prompt=instance.prompt, image=instance.image, response_a=response,
                                response_b=instance.reference, family=instance.family)  # fmt: skip
            pairs += [given, given.swapped()] if self.swap else [given]
        return pairs

    async def judge(self, prepared: PreparedPairs, judge: Judge) -> list[tuple[PairJudgement, ...]]:
        """Per response, its judgements (one per order)."""
        instance = prepared.instance
        per = 2 if self.swap else 1
        if judge.engine is None or (instance.image and not judge.sees_images):
            reason = f"{judge.model} cannot see the prompt's image, and the pairwise judge observes it first"
            return [(PairJudgement(failure="backend_error", reason=reason),) * per] * len(instance.responses)
        requests = [pair_request(p, mode=self.prompt) for p in self._pairs(instance)]
        read = await ask(judge.engine, requests, judgement_reader(), judge.parse_retries)
        return [tuple(read[i * per : (i + 1) * per]) for i in range(len(instance.responses))]

    def uses_workers(self, prepared: PreparedPairs) -> bool:
        """Never."""
        return False

    def score(self, prepared: PreparedPairs, readings: Sequence[tuple[PairJudgement, ...]]) -> PairwiseResult:
        """Each response's share of wins (null where a judgement failed)."""
        records = [self._record(judgements) for judgements in readings]
        return PairwiseResult(id=prepared.instance.id, rewards=[r.reward for r in records], records=records)

    def _record(self, judgements: tuple[PairJudgement, ...]) -> PairwiseRecord:
        # Order 0 has the response in position A; order 1 (the swap) in position B.
        scores = [None if j.scores is None else (j.scores if k == 0 else (j.scores[1], j.scores[0]))
                  for k, j in enumerate(judgements)]  # fmt: skip
        failed = next((j for j in judgements if j.scores is None), None)
        if failed is not None:
            return PairwiseRecord(reward=None, comparisons=len(judgements), scores=scores, failure=failed.failure,
                                  failure_reason=failed.reason)  # fmt: skip
        wins = [int(s[0] > s[1]) for s in scores]  # type: ignore[index]
        consistent = wins[0] == wins[1] if len(wins) == 2 else None
        return PairwiseRecord(reward=sum(wins) / len(wins), wins=sum(wins), comparisons=len(wins),
                              consistent=consistent, scores=scores)  # fmt: skip

    def unknown_reward(self, result: PairwiseResult, index: int) -> UnknownReward:
        """Every unknown reward of this method is the judge's failure (retry)."""
        record = result.records[index]
        return judge_failed(record.failure, record.failure_reason, "a comparison")

    def extra_logs(self, result: PairwiseResult, index: int) -> dict[str, float]:
        """Whether both orders agreed (with the swap), for a judged response."""
        record = result.records[index]
        return {} if record.consistent is None else {"swap_consistent": float(record.consistent)}

    def judge_training(self) -> JudgeTraining:
        """The pairwise judge's training: teacher traces that prefer the label, the format and correctness rewards
        (:mod:`.judge_training`); every record shows the prompt's image; ``genrm data labels`` reads labelled
        pairs (a pairs JSONL or MMRB2's ``.json``)."""
        from genrm.methods.pairwise import judge_training as training
        from genrm.methods.pairwise.mmrb2 import read_pairs

        rewards = (training.format_reward_func, training.correctness_reward_func)
        return JudgeTraining(training.PairTrace, training.sft_record, training.rlvr_record, rewards, True,
                             training.label_pairs, input_model=PairExample, read_input=read_pairs)  # fmt: skip

    def scripted_judge(self, image_dir: Path | None) -> Callable[[ChatRequest], str]:
        """The scripted colour judge (:mod:`.scene_judge`: it prefers the response that names the prompt image's
        colour, or whose image has the colour the prompt asks for): ``--judge scripted``, to try the method offline.
        Relative image paths are read against ``image_dir``. An image it cannot read fails that judgement (ValueError),
        rather than leaving the judge nothing to go on and a first-position preference scored as a reward."""
        from genrm.methods.pairwise.scene_judge import colour_judge, colour_of

        def judge(request: ChatRequest) -> str:
            for image in request.prompt.images:
                if colour_of(image, image_dir) is None:
                    raise ValueError(f"the scripted judge cannot read the image {image[:120]!r}")
            return colour_judge(request, image_dir)

        return judge

    def tally(self, result: PairwiseResult) -> ResultTally:
        """The judge failures met."""
        return ResultTally(judge_failures=[r.failure for r in result.records if r.failure])
