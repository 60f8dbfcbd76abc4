"""Where the policy's completions are judged: a judge in this process, or the reward server over HTTP.

Both are :class:`policy_rl.rubric_reward.InstanceScorer` s: a list of instances (each with the completions of one
group as its responses) in, one ``genrm.methods.rubric.scoring.InstanceResult`` per instance out. :func:`make_scorer`
reads the ``judge`` setting of ``genrm rl``:

- a reward server URL, ``http://HOST:PORT``: a running ``genrm serve`` (any judge behind it: SGLang in production);
- else a judge in the one spelling of :class:`genrm.engine.JudgeSpec`, judged in this process: ``rule`` (verifiable
  criteria only; a fuzzy criterion leaves the reward unknown), ``transformers:PATH`` (a checkpoint run here,
  XGrammar-constrained), ``sglang:MODEL@URL`` or ``openai:MODEL@URL`` (a judge endpoint called from here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from genrm.choices import Device
from genrm.engine.judge import Judge
from genrm.methods import MethodInputError, RewardMethod, score_instance
from genrm.methods.base import failed_result
from genrm.methods.rubric.method import RubricMethod
from genrm.methods.rubric.models import Instance
from genrm.methods.rubric.scoring import InstanceResult, ScoringConfig


@dataclass(frozen=True)
class JudgeScorer:
    """Scores in this process: ``method`` (the rubric method by default) with ``judge``
    (:func:`genrm.engine.make_judge`)."""

    judge: Judge
    method: RewardMethod = field(default_factory=RubricMethod)

    def __call__(self, instances: Sequence[Instance]) -> list[InstanceResult]:
        """Each instance's result; an instance the method refuses (a rubric that fails its checks) is a result with
        ``error`` set."""
        results = []
        for instance in instances:
            try:
                results.append(score_instance(self.method, instance, self.judge))
            except MethodInputError as exc:
                results.append(failed_result(self.method, instance.id, str(exc)))
        return results  # type: ignore[return-value]


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
    spec: str, config: ScoringConfig | None = None, api_key: str | None = None, device: Device = "auto"
) -> JudgeScorer | ServerScorer:
    """The scorer a ``judge`` setting names: a reward server URL, or a judge spec (module docstring).

    ``api_key``: the reward server's or the judge endpoint's bearer token. Raises ValueError for a setting of neither
    form, or a checkpoint that cannot be loaded.
    """
    from genrm.engine import EngineOptions, JudgeSpec, make_judge
    from genrm.engine.spec import SPEC_FORMS

    if spec.startswith(("http://", "https://")):
        return ServerScorer(spec, api_key=api_key)
    try:
        parsed = JudgeSpec.parse(spec)
    except ValueError:
        raise ValueError(f"judge {spec!r:.80}: expected a reward server URL (http://...) or {SPEC_FORMS}") from None
    return JudgeScorer(make_judge(parsed, EngineOptions(api_key=api_key, device=device)), RubricMethod(config))
