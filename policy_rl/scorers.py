"""Where the policy's completions are judged: a judge in this process, or the reward server over HTTP.

Both are :class:`policy_rl.method_reward.GroupScorer` s: a list of instances of a reward method (each with the
completions of one group as its responses) in, one result of that method per instance out (for the rubric method,
``genrm.methods.rubric.scoring.InstanceResult``). :func:`make_scorer` reads a ``judge`` setting (``genrm rl``, the
TRL reward functions, the verl adapter):

- a reward server URL, ``http://HOST:PORT``: a running ``genrm serve`` (any judge behind it: SGLang in production);
- else a judge in the one spelling of :class:`genrm.engine.JudgeSpec`, judged in this process: ``rule`` (verifiable
  criteria only; a fuzzy criterion leaves the reward unknown), ``transformers:PATH`` (a checkpoint run here,
  XGrammar-constrained), ``sglang:MODEL@URL`` or ``openai:MODEL@URL`` (a judge endpoint called from here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from genrm.choices import Device
from genrm.engine.images import DEFAULT_IMAGE_BUDGET
from genrm.engine.judge import Judge
from genrm.methods import MethodInputError, RewardMethod, method_judge, score_instance
from genrm.methods.base import GroupResult, failed_result


def _default_method() -> RewardMethod:
    from genrm.methods import DEFAULT_METHOD, make_method

    return make_method(DEFAULT_METHOD)


@dataclass(frozen=True)
class JudgeScorer:
    """Scores in this process: ``method`` (the default method, rubric, when not given) with ``judge``
    (:func:`genrm.engine.make_judge`)."""

    judge: Judge
    method: RewardMethod = field(default_factory=_default_method)

    def __call__(self, instances: Sequence[BaseModel]) -> list[GroupResult]:
        """Each instance's result; an instance the method refuses (a rubric that fails its checks) is a result with
        ``error`` set."""
        results = []
        for instance in instances:
            try:
                results.append(score_instance(self.method, instance, self.judge))
            except MethodInputError as exc:
                results.append(failed_result(self.method, getattr(instance, "id", None), str(exc)))
        return results


class ServerScorer:
    """Scores through a reward server (``serving.client.RewardClient``: retries, backoff, API key) that serves
    ``result_model``'s method.

    The results are the server's, rewards included (:class:`policy_rl.method_reward.MethodReward` uses them as they
    are); for a method with rewards over groups, ``genrm rl`` takes from them what does not depend on how a group was
    split across processes and computes the rewards over whole groups itself (:mod:`genrm.methods.group_rewards`).
    """

    def __init__(
        self, url: str, result_model: type[GroupResult], api_key: str | None = None, timeout_s: float = 300.0
    ) -> None:
        from serving.client import RewardClient

        self.client = RewardClient(url, api_key=api_key, timeout_s=timeout_s, result_model=result_model)

    def __call__(self, instances: Sequence[BaseModel]) -> list[GroupResult]:
        """The server's results, in order (raises ``serving.client.RewardServerError`` when it cannot answer)."""
        return self.client.score(list(instances))

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()


def make_scorer(
    spec: str,
    method: RewardMethod | None = None,
    api_key: str | None = None,
    device: Device = "auto",
    image_dir: str | None = None,
    image_budget: int | None = DEFAULT_IMAGE_BUDGET,
) -> JudgeScorer | ServerScorer:
    """The scorer a ``judge`` setting names for ``method`` (default: the default method, rubric): a reward server URL
    (which must serve that method), or a judge spec (module docstring).

    ``api_key``: the reward server's or the judge endpoint's bearer token. ``image_dir``: the folder the instances'
    image paths are read from by a judge run here (the training file's), which sends their bytes. ``image_budget``:
    the most pixels of an image that judge is shown (a larger one is scaled down; None: as it is); a reward server
    applies its own.

    Raises ValueError for a setting of neither form, a checkpoint that cannot be loaded, or a judge that cannot judge
    for the method (``rule`` for a method without a fixed-rule reader).
    """
    from genrm.engine import EngineOptions, JudgeSpec
    from genrm.engine.backends import spec_forms

    method = method or _default_method()
    if spec.startswith(("http://", "https://")):
        return ServerScorer(spec, method.result_model, api_key=api_key)
    try:
        parsed = JudgeSpec.parse(spec)
    except ValueError:
        raise ValueError(f"judge {spec!r:.80}: expected a reward server URL (http://...) or {spec_forms()}") from None
    options = EngineOptions(api_key=api_key, device=device, image_dir=image_dir, image_budget=image_budget)
    judge = method_judge(method, parsed, options)
    return JudgeScorer(judge, method)
