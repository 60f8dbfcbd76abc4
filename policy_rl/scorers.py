"""Where the policy's completions are judged: a judge in this process, or the reward server over HTTP.

Both are :class:`policy_rl.rubric_reward.InstanceScorer` s: a list of instances (each with the completions of one
group as its responses) in, one ``genrm.scoring.InstanceResult`` per instance out. :func:`make_scorer` reads the
``judge`` setting of ``genrm rl``:

- ``rule``: the non-parametric backend (verifiable criteria only; a fuzzy criterion leaves the reward unknown);
- ``transformers:PATH``: a judge checkpoint run here (``genrm.model_judge.ModelJudge``, XGrammar-constrained);
- ``http://HOST:PORT``: a running ``genrm serve`` (any backend behind it: SGLang in production).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from genrm.schemas import Instance
from genrm.scoring import InstanceResult, ScoringConfig, score_instance


@dataclass(frozen=True)
class JudgeScorer:
    """Scores in this process with a judge (``genrm.judge.RuleJudge``, ``genrm.model_judge.ModelJudge`` ...)."""

    judge: Any
    config: ScoringConfig = field(default_factory=ScoringConfig)

    def __call__(self, instances: Sequence[Instance]) -> list[InstanceResult]:
        """Each instance's result; a rubric that fails its checks is a result with ``error`` set."""
        results = []
        for instance in instances:
            try:
                results.append(score_instance(instance, self.judge, self.config))
            except ValueError as exc:  # RubricError and bad rubrics: reported per instance
                results.append(InstanceResult(id=instance.id, rewards=None, error=str(exc)))
        return results


class ServerScorer:
    """Scores through a reward server (``serving.client.RewardClient``: retries, backoff, API key).

    The server's own remapped rewards are not used: only the raw criterion scores, which do not depend on how the
    group was split, so the remap is done over whole groups by the caller.
    """

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        from serving.client import RewardClient

        self.client = RewardClient(url, api_key=api_key, timeout_s=timeout_s)

    def __call__(self, instances: Sequence[Instance]) -> list[InstanceResult]:
        """The server's results, in order (raises ``serving.client.RewardServerError`` when it cannot answer)."""
        return self.client.score(list(instances))

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()


def make_scorer(
    spec: str, config: ScoringConfig | None = None, api_key: str | None = None, device: str = "auto"
) -> Any:
    """The scorer a ``judge`` setting names: ``rule``, ``transformers:PATH`` or a reward server URL.

    Raises:
        ValueError: a setting of none of these forms.
    """
    config = config or ScoringConfig()
    if spec == "rule":
        from genrm.judge import RuleJudge

        return JudgeScorer(RuleJudge(), config)
    if spec.startswith("transformers:"):
        from genrm.model_judge import ModelJudge

        return JudgeScorer(ModelJudge.from_pretrained(spec.split(":", 1)[1], device=device), config)
    if spec.startswith(("http://", "https://")):
        return ServerScorer(spec, api_key=api_key)
    raise ValueError(f"judge {spec!r}: expected 'rule', 'transformers:PATH' or a reward server URL (http://...)")
