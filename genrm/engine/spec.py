"""Which judge, in one spelling, and how its engine behaves.

Every command, the server, the teachers and the policy's reward functions name a judge the same way
(:meth:`JudgeSpec.parse`), by the backends of :mod:`genrm.engine.backends`, one row each:

- ``rule``: no model; the reward method reads responses by fixed rules (the rubric method's verifiable criteria);
- ``scripted``: no model; the reward method's own scripted judge answers, by rules over the scenes its example
  images carry, so that a method can be tried offline (made by ``genrm.methods.method_judge``, which knows methods);
- ``transformers:PATH``: a checkpoint (directory or hub id) run in this process;
- ``openai:MODEL@URL[,URL...]``: a model behind OpenAI-compatible endpoints (a hosted API, or any engine), one URL
  per replica, each ending in ``/v1``; ``MODEL@URL[,URL...]`` is the same (a model whose name holds a colon needs
  the ``openai:`` prefix: any other word before a colon is an unknown backend, refused with the ones there are);
- ``sglang:MODEL@URL[,URL...]`` and ``vllm:MODEL@URL[,URL...]``: the same protocol, with the engine's own health
  probe (``/health``).

How the engine behaves (sampling, time limits, batching, device) is :class:`EngineOptions`;
:func:`genrm.engine.judge.make_engine` builds it. Value objects only: this module imports no engine, so any module
may name a judge without pulling one in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from genrm.choices import Device, Dtype
from genrm.engine.backends import BACKENDS, DEFAULT_BACKEND, UNPREFIXED_BACKEND, backend, backend_names, spec_forms
from genrm.engine.images import DEFAULT_IMAGE_BUDGET
from genrm.engine.types import SamplingSettings

_URL_SCHEMES = ("http://", "https://")
_PREFIX = re.compile(r"[A-Za-z][\w.-]*")  # what reads as a backend's name before a colon


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: its backend (a name in :data:`genrm.engine.backends.BACKENDS`), its model (checkpoint path or served
    name) and, behind HTTP, its replicas' URLs.

    Construct with :meth:`parse` or directly; either way the fields are checked (ValueError says what is wrong).
    """

    backend: str = DEFAULT_BACKEND
    model: str | None = None
    urls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kind = backend(self.backend).model
        if kind == "none":
            if self.model or self.urls:
                raise ValueError(f"the {self.backend} judge takes no model and no URL")
            return
        if not self.model or not self.model.strip():
            what = "a checkpoint path" if kind == "checkpoint" else "the served model's name"
            raise ValueError(f"the {self.backend} judge needs {what}")
        if kind == "checkpoint":
            if self.urls:
                raise ValueError(f"the {self.backend} judge runs in process and takes no URL")
            return
        if not self.urls:
            raise ValueError(f"the {self.backend} judge needs at least one base URL (ending in /v1)")
        bad = [url for url in self.urls if not url.startswith(_URL_SCHEMES)]
        if bad:
            raise ValueError(f"judge URLs must start with http:// or https://, got {bad[0]!r:.80}")

    @classmethod
    def spelled_out(
        cls,
        name: str,
        model: str | None,
        urls: Sequence[str] = (),
        model_field: str = "a model",
        urls_field: str = "a base URL",
        backend_field: str = "a backend",
    ) -> JudgeSpec:
        """The judge of backend ``name`` from its model and URLs given apart (command-line options, settings fields),
        what is missing or not taken said in the caller's names for them (``model_field``, ``urls_field``,
        ``backend_field``). Raises ValueError (an unknown backend names the backends there are)."""
        kind = backend(name).model
        given_model = bool(model and model.strip())
        if kind == "none" and (given_model or urls):
            models = ", ".join(backend_names("checkpoint") + backend_names("served"))
            raise ValueError(f"{model_field} and {urls_field} name a model judge: add {backend_field} ({models}); the "
                             f"{name} judge takes neither")  # fmt: skip
        if kind != "none" and not given_model:
            raise ValueError(f"the {name} backend needs {model_field}")
        if kind == "checkpoint" and urls:
            raise ValueError(f"the {name} backend runs in process and takes no {urls_field}")
        if kind == "served" and not urls:
            raise ValueError(f"the {name} backend needs {urls_field}")
        return cls(name, model if kind != "none" else None, tuple(urls) if kind == "served" else ())

    @classmethod
    def parse(cls, text: str) -> JudgeSpec:
        """The judge ``text`` names (module docstring); raises ValueError naming the valid forms."""
        text = text.strip()
        if text in BACKENDS and BACKENDS[text].model == "none":
            return cls(text)
        prefix, colon, rest = text.partition(":")
        row = BACKENDS.get(prefix) if colon and not rest.startswith("//") else None
        if row is not None and row.model == "checkpoint":
            return cls(prefix, rest.strip())
        if row is not None and row.model == "served":
            body = rest
        elif colon and not rest.startswith("//") and _PREFIX.fullmatch(prefix):
            # an unknown word before a colon is refused, not read as part of a served name: "vlm:judge@URL" would
            # otherwise be an openai judge whose model is "vlm:judge", and every call a 404
            raise ValueError(f"unknown judge backend {prefix!r} in {text!r:.80}: a judge is {spec_forms()} (a model "
                             f"whose name holds a colon: {UNPREFIXED_BACKEND}:NAME:TAG@URL)")  # fmt: skip
        else:
            prefix, body = UNPREFIXED_BACKEND, text
        model, at, urls = body.rpartition("@")
        if not at or not model.strip() or not urls.strip():
            raise ValueError(f"a judge is {spec_forms()}; got {text!r:.80}")
        return cls(prefix, model.strip(), tuple(url.strip() for url in urls.split(",") if url.strip()))

    def __str__(self) -> str:
        kind = BACKENDS[self.backend].model
        if kind == "none":
            return self.backend
        if kind == "checkpoint":
            return f"{self.backend}:{self.model}"
        return f"{self.backend}:{self.model}@{','.join(self.urls)}"

    @property
    def needs_engine(self) -> bool:
        """Whether an engine answers (every backend but ``rule``)."""
        return self.backend != "rule"

    @property
    def takes_model(self) -> bool:
        """Whether a model answers, named by a checkpoint or a served name (every backend but ``rule`` and
        ``scripted``)."""
        return BACKENDS[self.backend].model != "none"

    @property
    def served(self) -> bool:
        """Whether the model is served behind HTTP (named by URLs), not run in this process."""
        return BACKENDS[self.backend].model == "served"


@dataclass(frozen=True)
class EngineOptions:
    """How an engine behaves; each field applies to the backends its description names.

    Attributes:
        sampling: token budget, temperature, top-p and seed of answers (all).
        constrained: constrain answers to the request's JSON schema (all: ``response_format`` behind HTTP,
            XGrammar in process).
        api_key: bearer token of the endpoints (openai, sglang).
        timeout_s: time limit of one HTTP attempt, s (openai, sglang).
        budget_s: time limit of one call over all its attempts, s; None: ``timeout_s`` each (openai, sglang).
        retries: further attempts after a time-out, 429 or 5xx (openai, sglang).
        max_in_flight: calls in flight at once over all replicas (openai, sglang).
        device: where the model runs (transformers).
        dtype: weight dtype; ``auto`` is bfloat16 on CUDA, float32 on CPU (transformers).
        trust_remote_code: run the checkpoint's own code (transformers).
        chat_template_kwargs: chat-template variables, e.g. ``{"enable_thinking": False}`` (transformers).
        prefix_cache: compute a batch's common prefix once (transformers).
        continuous_batching: decode concurrent prompts in one loop that answers leave as they end and prompts join
            as they arrive; False runs ``model.generate`` batch by batch (transformers).
        image_dir: the folder image paths are read from, only inside it; None reads data URIs only (transformers in
            process; openai and sglang read them here and send their bytes, never the path).
        image_budget: most pixels of an image the judge sees; a larger one is scaled down to it, aspect ratio kept,
            before it is sent or encoded (:data:`genrm.engine.images.DEFAULT_IMAGE_BUDGET`, 1280 tokens of 28 x 28
            pixels); None shows every image at its own size.
        max_batch_size: most prompts in one batch (transformers).
        batch_wait_s: longest wait to fill a batch, s (transformers).
        name: the model's name in logs and records, instead of its path (transformers).
    """

    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    constrained: bool = True
    api_key: str | None = None
    timeout_s: float = 120.0
    budget_s: float | None = None
    retries: int = 2
    max_in_flight: int = 64
    device: Device = "auto"
    dtype: Dtype = "auto"
    trust_remote_code: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    prefix_cache: bool = True
    continuous_batching: bool = True
    image_dir: str | None = None
    image_budget: int | None = DEFAULT_IMAGE_BUDGET
    max_batch_size: int = 16
    batch_wait_s: float = 0.005
    name: str | None = None
