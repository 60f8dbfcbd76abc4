"""Prometheus metrics of one server instance (its own registry, so several apps can live in one process)."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from genrm.methods.base import UNGROUNDED, GroupResult, ResultTally

# Verifier statuses that judged nothing: the server's or the rubric's failures, never the response's.
_UNJUDGED = frozenset({"busy", "unparseable_target", "error"})
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class ServerMetrics:
    """Requests, latency, scored responses, judge failures by class, judge tokens and verifier timeouts."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "genrm_requests", "HTTP requests by endpoint and status code", ["endpoint", "code"], registry=self.registry
        )
        self.latency = Histogram(
            "genrm_request_seconds", "request latency by endpoint", ["endpoint"], buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        self.responses = Counter("genrm_responses_scored", "responses scored", registry=self.registry)
        self.unknown_rewards = Counter(
            "genrm_rewards_unknown", "responses whose reward depends on unscored criteria", registry=self.registry
        )
        self.judge_failures = Counter(
            "genrm_judge_failures", "judge failures by class (whole output or one criterion)", ["failure"],
            registry=self.registry,
        )  # fmt: skip
        self.judge_tokens = Counter(
            "genrm_judge_tokens", "tokens the judge model read and wrote", ["kind"], registry=self.registry
        )
        self.verifier_timeouts = Counter(
            "genrm_verifier_timeouts", "verifier checks stopped at the deadline", registry=self.registry
        )
        self.values_ungrounded = Counter(
            "genrm_values_ungrounded", "values a model judge extracted, and claims it attributed to a caption, that "
            "the response does not state (scored as not stated, not counted)", registry=self.registry,
        )  # fmt: skip
        self.verifier_unjudged = Counter(
            "genrm_verifier_unjudged", "verifier checks that judged nothing, by status (busy: no worker free in "
            "time; unparseable_target: a rubric target that cannot be checked; error: an internal failure)",
            ["status"], registry=self.registry,
        )  # fmt: skip

    def observe_result(self, result: GroupResult, tally: ResultTally) -> None:
        """Count the responses and unknown rewards of a scored group, and the judge failures and verifier statuses
        its method found in it (``RewardMethod.tally``)."""
        self.observe_group(result.rewards or [], tally)

    def observe_group(self, rewards: Sequence[float | None], tally: ResultTally) -> None:
        """:meth:`observe_result` of a group scored elsewhere (a worker process), from its rewards and tally."""
        self.responses.inc(len(rewards))
        self.unknown_rewards.inc(sum(reward is None for reward in rewards))
        for failure in tally.judge_failures:
            self.judge_failures.labels(failure).inc()
        for status in tally.verifier_statuses:
            self.observe_verification(status)

    def observe_verification(self, status: str) -> None:
        """Count one verifier check's status when it is a timeout, an ungrounded value or judged nothing."""
        if status == "timeout":
            self.verifier_timeouts.inc()
        elif status == UNGROUNDED:
            self.values_ungrounded.inc()
        elif status in _UNJUDGED:
            self.verifier_unjudged.labels(status).inc()

    def count_tokens(self, prompt_tokens: int, completion_tokens: int) -> None:
        """Add one judge call's token usage."""
        self.judge_tokens.labels("prompt").inc(max(0, prompt_tokens))
        self.judge_tokens.labels("completion").inc(max(0, completion_tokens))

    def render(self) -> bytes:
        """The exposition text for ``GET /metrics``."""
        return generate_latest(self.registry)
