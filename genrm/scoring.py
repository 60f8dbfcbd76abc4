"""From an instance to its rewards: plan the rubric, judge the group, execute, aggregate, and explain.

One :class:`InstanceResult` per instance (one output line of ``genrm score``): the reward of each response (``None``
when it depends on a criterion nobody scored) and a :class:`ResponseRecord` per response that says, criterion by
criterion and mask by mask, how the reward came about.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from genrm.aggregation import CriterionSlot, aggregate_group, check_tau
from genrm.engine import run_blocking
from genrm.execution import CriterionScore, execute
from genrm.format_checks import FormatConfig, format_violations
from genrm.judge import GroupRequest, Judge
from genrm.judge_output import ParsedJudgement
from genrm.prompts import Exposure, check_exposure, exposed_plans
from genrm.rubric import CriterionPlan, RubricPolicy, plan_rubric
from genrm.schemas import Instance, SectionName
from verifiers import VerifyConfig, expression_workers, uses_workers


@dataclass(frozen=True)
class ScoringConfig:
    """How rewards are computed.

    Attributes:
        tau: remapping threshold in (0, 1) (eq. 2-3).
        exposure: what the judge sees (``genrm.prompts``); ``minimal`` for training rewards.
        format: thresholds of the format detectors; ``check_format=False`` turns the format mask off.
        verify: the verifiers' deadline and bounds.
        policy: which verifiers each task type may use.
    """

    tau: float = 0.5
    exposure: Exposure = "minimal"
    format: FormatConfig = field(default_factory=FormatConfig)
    check_format: bool = True
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    policy: RubricPolicy = field(default_factory=RubricPolicy)

    def __post_init__(self) -> None:
        check_tau(self.tau)
        check_exposure(self.exposure)


class CriterionRecord(BaseModel):
    """One criterion on one response: raw score, remapped score, and where they came from."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="where the criterion sits in the rubric, e.g. essential[0]")
    section: SectionName = Field(description="the rubric section of the criterion")
    criterion: str
    weight: int
    verifier: str | None = Field(description="the verifier that decided it; null for a fuzzy criterion")
    score: float | None = Field(description="raw score in [0, 1]; null when unscored")
    remapped: float | None = Field(description="score after group-wise remapping; null when unscored")
    status: str = Field(description="ok, a verifier status, or a judge failure class (unscored, bad_call, ...)")
    reason: str
    extracted: str | float | None = Field(default=None, description="the judge's call string or credit")


class ResponseRecord(BaseModel):
    """How one response's reward came about."""

    model_config = ConfigDict(extra="forbid")

    index: int
    reward: float | None = Field(description="final reward in [0, 1]; null when it depends on unscored criteria")
    base: float | None = Field(description="weighted sum of remapped scores before the masks")
    content_mask: int | None
    format_mask: int
    length_ok: bool
    format_violations: list[str]
    judge_failure: str | None = Field(description="a failure of the whole judge output (not_json, schema, ...)")
    judge_reason: str
    criteria: list[CriterionRecord]
    explanation: list[str]


class InstanceResult(BaseModel):
    """One output line of ``genrm score``: an instance's rewards and records, or the error that stopped it."""

    model_config = ConfigDict(extra="forbid")

    id: str | None
    rewards: list[float | None] | None
    records: list[ResponseRecord] = Field(default_factory=list)
    error: str | None = None
    line: int | None = Field(default=None, description="1-based input line number, when read from a file")


def _references(instance: Instance) -> list[str]:
    # Scripts of the references are allowed in responses (a response may quote the text it was asked to read).
    texts = [c.reference for _, _, c in instance.rubric.criteria()]
    return texts + ([instance.reference_answer] if instance.reference_answer else [])


def _criterion_record(score: CriterionScore, remapped: float | None) -> CriterionRecord:
    plan = score.plan
    return CriterionRecord(
        path=plan.path,
        section=plan.section,
        criterion=plan.criterion.criterion,
        weight=plan.criterion.weight,
        verifier=plan.verifier,
        score=score.score,
        remapped=remapped,
        status=score.status,
        reason=score.reason,
        extracted=score.extracted,
    )


def score_group(
    instance: Instance,
    plans: Sequence[CriterionPlan],
    judgements: Sequence[ParsedJudgement],
    config: ScoringConfig | None = None,
) -> InstanceResult:
    """Execute and aggregate the judge's judgements of an instance's responses (one per response, in order).

    ``plans`` are the plans the judgements were read against (``genrm.prompts.exposed_plans``).
    """
    config = config or ScoringConfig()
    responses = instance.responses
    if len(judgements) != len(responses):
        raise ValueError(f"{len(judgements)} judgements for {len(responses)} responses")
    scores = _execute_all(judgements, plans, config.verify)
    references = _references(instance)
    violations = [
        format_violations(r, instance.prompt, references, config.format) if config.check_format else []
        for r in responses
    ]
    limit = instance.max_response_chars
    length_ok = [limit is None or len(r) <= limit for r in responses]
    slots = [CriterionSlot(p.section, p.criterion.weight) for p in plans]
    aggregates = aggregate_group(slots, [[s.score for s in row] for row in scores], violations, length_ok, config.tau)
    records = [
        ResponseRecord(
            index=i,
            reward=agg.reward,
            base=agg.base,
            content_mask=agg.content_mask,
            format_mask=agg.format_mask,
            length_ok=agg.length_ok,
            format_violations=violations[i],
            judge_failure=parsed.failure,
            judge_reason=parsed.reason,
            criteria=[_criterion_record(s, r) for s, r in zip(scores[i], agg.remapped, strict=True)],
            explanation=agg.explanation,
        )
        for i, (parsed, agg) in enumerate(zip(judgements, aggregates, strict=True))
    ]
    return InstanceResult(id=instance.id, rewards=[agg.reward for agg in aggregates], records=records)


def _execute_all(
    judgements: Sequence[ParsedJudgement], plans: Sequence[CriterionPlan], verify: VerifyConfig
) -> list[list[CriterionScore]]:
    # Checks that wait for expression workers run concurrently, one thread per worker, so that a group's hostile
    # expressions cost its slowest check per worker rather than their sum; each thread keeps the caller's context
    # (the server's tenant and budget). In-process checks are fast and stay in this thread.
    if len(judgements) < 2 or not any(uses_workers(plan.verifier) for plan in plans):
        return [execute(parsed, plans, verify) for parsed in judgements]
    with ThreadPoolExecutor(max_workers=min(len(judgements), expression_workers())) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, execute, parsed, plans, verify) for parsed in judgements
        ]
        return [future.result() for future in futures]


def plan_instance(instance: Instance, config: ScoringConfig) -> list[CriterionPlan]:
    """The plans an instance's judgements are read against: its rubric planned for its task type, as exposed.

    Raises ``genrm.rubric.RubricError`` when the rubric fails its checks.
    """
    return exposed_plans(plan_rubric(instance.rubric, instance.task_type, config.policy), config.exposure)


def group_request(instance: Instance, plans: Sequence[CriterionPlan], config: ScoringConfig) -> GroupRequest:
    """What the judge is asked about ``instance``'s responses."""
    return GroupRequest(instance.prompt, plans, instance.responses, instance.image, config.exposure)


def score_instance(instance: Instance, judge: Judge, config: ScoringConfig | None = None) -> InstanceResult:
    """Plan the instance's rubric, have ``judge`` judge its responses, and compute the rewards. The judge runs on the
    engine loop (:func:`genrm.engine.run_blocking`), the verifiers in this thread.

    Raises ``genrm.rubric.RubricError`` when the rubric fails its checks (the caller reports it; nothing is scored).
    """
    config = config or ScoringConfig()
    plans = plan_instance(instance, config)
    if not instance.responses:
        return InstanceResult(id=instance.id, rewards=[], records=[])
    judgements = run_blocking(judge.judge_group(group_request(instance, plans, config)))
    return score_group(instance, plans, judgements, config)
