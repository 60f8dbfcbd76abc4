"""The one factory that builds a judge's engine from its spec and options.

Light on purpose: the HTTP client and the model libraries are imported only when an engine of theirs is built.
"""

from __future__ import annotations

from genrm.engine.spec import EngineOptions, JudgeSpec
from genrm.engine.types import Engine


def make_engine(spec: JudgeSpec, options: EngineOptions | None = None) -> Engine:
    """The engine of ``spec``, configured by ``options``.

    Raises:
        ValueError: ``spec`` is the rule judge (no model to run), or a checkpoint that cannot be loaded.
        OSError: a checkpoint that cannot be read.
    """
    options = options or EngineOptions()
    if spec.backend == "transformers":
        from genrm.engine.generation import LocalGenerator
        from genrm.engine.local import LocalEngine

        generator = LocalGenerator.from_pretrained(
            str(spec.model), device=options.device, dtype=options.dtype, trust_remote_code=options.trust_remote_code,
            sampling=options.sampling, constrained=options.constrained, name=options.name or str(spec.model),
            chat_template_kwargs=options.chat_template_kwargs, prefix_cache=options.prefix_cache,
            image_dir=options.image_dir, continuous=options.continuous_batching, image_budget=options.image_budget,
        )  # fmt: skip
        return LocalEngine(generator, options.max_batch_size, options.batch_wait_s)
    if spec.backend in ("openai", "sglang"):
        from genrm.engine.endpoint import ChatEndpoint
        from genrm.engine.http import HttpEngine

        endpoint = ChatEndpoint(
            list(spec.urls), str(spec.model), options.api_key, timeout_s=options.timeout_s, retries=options.retries,
            max_in_flight=options.max_in_flight, budget_s=options.budget_s,
        )  # fmt: skip
        return HttpEngine(endpoint, options.sampling, options.constrained, flavor=spec.backend,  # type: ignore[arg-type]
                          image_dir=options.image_dir, image_budget=options.image_budget)  # fmt: skip
    if spec.backend == "scripted":
        raise ValueError("the scripted judge is a reward method's own: make it with genrm.methods.method_judge")
    raise ValueError(f"the {spec.backend} judge runs no model, so it has no engine")
