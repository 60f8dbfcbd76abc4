"""The judge backends, one row each: how a judge of it is written, what names its model, how its engine is made and
how its health is probed.

Everything that names a judge reads this table: :meth:`genrm.engine.spec.JudgeSpec.parse` and its checks, the
engine factory, the CLI's ``--backend`` choices and the server's settings. A new backend is a module that makes its
engine (a function of a :class:`~genrm.engine.spec.JudgeSpec` and :class:`~genrm.engine.spec.EngineOptions`) and one
row in :data:`BACKENDS`. Light on purpose: an engine's module is imported only when an engine of it is made.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

ModelKind = Literal["none", "checkpoint", "served"]
"""What names a backend's model: nothing (no model answers), a checkpoint (a folder or hub id run in this process),
or a served model's name behind one or more base URLs."""


@dataclass(frozen=True)
class Backend:
    """One judge backend.

    Attributes:
        name: its name, and the prefix of a judge spec of it (``name:...``).
        model: what names its model (:data:`ModelKind`).
        summary: what it is, in a few words (help texts).
        engine: ``"module:function"`` making its engine from ``(spec, options)``; None when it has none of its own.
        no_engine: why it has none, when ``engine`` is None (the error of making one).
        health: behind HTTP, the path probed for health: relative to a base URL (``models``, under ``/v1``), or to
            its root when it starts with ``/`` (``/health``).
        grammar_field: behind HTTP, where in a chat-completion request the answer's exact grammar goes
            (:mod:`genrm.engine.answer_grammar`, XGrammar's EBNF), as the keys down to it: ``("ebnf",)`` for
            SGLang, ``("structured_outputs", "grammar")`` for vLLM. None: the schema goes as OpenAI's
            ``response_format``, and the engine's own rules decide the white space.
    """

    name: str
    model: ModelKind
    summary: str
    engine: str | None = None
    health: str | None = None
    grammar_field: tuple[str, ...] | None = None
    no_engine: str = "it runs no model, so it has no engine"

    @property
    def form(self) -> str:
        """How a judge of this backend is written."""
        if self.model == "none":
            return self.name
        if self.model == "checkpoint":
            return f"{self.name}:PATH"
        return f"{self.name}:MODEL@URL[,URL...]"

    def make_engine(self, spec: Any, options: Any) -> Any:
        """The engine (:class:`~genrm.engine.types.Engine`) of ``spec`` (a :class:`~genrm.engine.spec.JudgeSpec` of
        this backend), configured by ``options`` (:class:`~genrm.engine.spec.EngineOptions`, which names this module:
        hence no types here); ValueError when the backend has no engine of its own."""
        if self.engine is None:
            raise ValueError(f"the {self.name} judge has no engine of its own: {self.no_engine}")
        module, _, function = self.engine.partition(":")
        return getattr(importlib.import_module(module), function)(spec, options)

    def health_url(self, base_url: str) -> str:
        """Where a replica at ``base_url`` (ending in ``/v1``) is probed for health."""
        path = self.health or "models"
        if not path.startswith("/"):
            return f"{base_url}/{path}"
        root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
        return f"{root}{path}"


_HTTP_ENGINE = "genrm.engine.http:make_http_engine"

#: Every backend, by name. ``openai`` is the backend of a spec without a prefix (``MODEL@URL``).
BACKENDS: dict[str, Backend] = {
    row.name: row
    for row in (
        Backend("rule", "none", "no model: the reward method reads responses by fixed rules"),
        Backend(
            "scripted",
            "none",
            "no model: the reward method's own scripted judge, to try a method offline",
            no_engine="it is a reward method's own: make it with genrm.methods.method_judge",
        ),  # fmt: skip
        Backend(
            "transformers",
            "checkpoint",
            "a checkpoint run in this process",
            engine="genrm.engine.local:make_local_engine",
        ),  # fmt: skip
        Backend(
            "openai",
            "served",
            "a model behind OpenAI-compatible endpoints (a hosted API, or any engine)",
            engine=_HTTP_ENGINE,
            health="models",
        ),  # fmt: skip
        Backend(
            "sglang",
            "served",
            "a model served by SGLang",
            engine=_HTTP_ENGINE,
            health="/health",
            grammar_field=("ebnf",),
        ),  # fmt: skip
        Backend(
            "vllm",
            "served",
            "a model served by vLLM",
            engine=_HTTP_ENGINE,
            health="/health",
            grammar_field=("structured_outputs", "grammar"),
        ),  # fmt: skip
    )
}
DEFAULT_BACKEND = "rule"
#: The backend of a judge spec written without a prefix.
UNPREFIXED_BACKEND = "openai"


def backend_names(model: ModelKind | None = None) -> tuple[str, ...]:
    """The names of every backend (whose model is named as ``model`` says, when given), in the table's order."""
    return tuple(name for name, row in BACKENDS.items() if model is None or row.model == model)


def backend(name: str) -> Backend:
    """The backend called ``name``; ValueError naming the backends there are."""
    try:
        return BACKENDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown judge backend {name!r:.40}; valid: {', '.join(BACKENDS)}") from None


def spec_forms() -> str:
    """Every way a judge is written, for messages and help texts."""
    forms = [row.form for row in BACKENDS.values()]
    unprefixed = BACKENDS[UNPREFIXED_BACKEND].form.split(":", 1)[1]
    return f"{', '.join(forms)} or {unprefixed}"
