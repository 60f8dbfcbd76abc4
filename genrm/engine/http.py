"""The engine behind OpenAI-compatible chat-completions endpoints: SGLang, vLLM, a hosted teacher.

Each request becomes one chat completion with explicit sampling and, where the engine is constrained and the request
has a schema, a constraint where its backend's row says (:mod:`genrm.engine.backends`): for SGLang and vLLM the
answer's exact grammar (:mod:`genrm.engine.answer_grammar`: the text the judge was trained to write, whatever the
engine's own white-space rules); for any other OpenAI-compatible endpoint ``response_format`` of type
``json_schema``. Requests of one call go out concurrently; requests that share their first messages (the G
responses of a group) let a server with a prefix cache (SGLang's radix cache) compute the shared part once.

Why chat completions rather than SGLang's native ``/generate``: the server applies the model's own chat template
(image parts included), accepts the schema as ``response_format``, returns token usage, and the same request serves
SGLang, vLLM and hosted teachers.

Images go as data URIs only: a request whose image is a path is read here, inside ``image_dir``
(:func:`genrm.engine.images.sendable_image`), so the judge's host is never handed a path or a URL to open; an image
that cannot be sent fails that request.

The transport (:class:`genrm.engine.endpoint.ChatEndpoint`) retries across replicas; a request that still fails is
a reply with ``error`` set; when no replica can be reached at all, :class:`genrm.engine.types.BackendUnavailable` is
raised. Health: ``/models`` of an OpenAI-compatible endpoint, the engine's own ``/health`` for SGLang and vLLM.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genrm.engine import backends
from genrm.engine.answer_grammar import answer_ebnf, require_xgrammar
from genrm.engine.endpoint import CallFailed, ChatEndpoint
from genrm.engine.images import DEFAULT_IMAGE_BUDGET, ImageError, is_data_uri, sendable_image
from genrm.engine.types import ChatRequest, Reply, SamplingSettings, UsageCallback

if TYPE_CHECKING:
    from genrm.engine.spec import EngineOptions, JudgeSpec


def response_format(request: ChatRequest) -> dict[str, Any] | None:
    """The OpenAI ``response_format`` that constrains ``request``'s answer to its schema (None without one)."""
    if request.schema is None:
        return None
    return {"type": "json_schema", "json_schema": {"name": request.schema_name, "schema": request.schema}}


def constraint(backend: str, request: ChatRequest) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What constrains ``request``'s answer on a ``backend`` engine: its ``response_format``, or the further fields
    of the request body that hold the answer's grammar, where the backend's row puts it (one of them, or neither
    without a schema). Raises ValueError when the grammar is needed and XGrammar is not installed."""
    if request.schema is None:
        return None, None
    field = backends.backend(backend).grammar_field
    if field is None:
        return response_format(request), None
    fields: Any = answer_ebnf(request.schema)
    for key in reversed(field):
        fields = {key: fields}
    return None, fields


class HttpEngine:
    """Answers chat requests through a :class:`~genrm.engine.endpoint.ChatEndpoint` (see the module docstring)."""

    sees_images = True  # the server decides what its model is shown; a text-only model answers with an error

    def __init__(
        self,
        endpoint: ChatEndpoint,
        sampling: SamplingSettings | None = None,
        constrained: bool = True,
        backend: str = "openai",
        image_dir: str | Path | None = None,
        image_budget: int | None = DEFAULT_IMAGE_BUDGET,
    ) -> None:
        """Configure the engine.

        Args:
            endpoint: where the model answers.
            sampling: how answers are sampled (greedy by default); a request may set its own temperature.
            constrained: constrain each answer to its request's schema (:func:`constraint`).
            backend: the backend's name (:mod:`genrm.engine.backends`), which says how its health is probed.
            image_dir: the folder image paths are read from (only inside it) and sent as bytes; None sends data URIs
                only.
            image_budget: most pixels of an image sent; a larger one is scaled down to it first (None: as it is).
        """
        self.endpoint, self.sampling, self.constrained = endpoint, sampling or SamplingSettings(), constrained
        self.image_dir = Path(image_dir) if image_dir is not None else None
        self.image_budget = image_budget
        self.name: str = backend
        self._backend = backends.backend(backend)
        if constrained and self._backend.grammar_field is not None:
            require_xgrammar()  # refused now, naming the install, not at the first answer
        self.model = endpoint.model

    @property
    def base_urls(self) -> list[str]:
        """The replicas' base URLs."""
        return self.endpoint.base_urls

    @property
    def usage_callback(self) -> UsageCallback | None:
        """Called with (prompt tokens, completion tokens) of every answered call."""
        return self.endpoint.usage_callback

    @usage_callback.setter
    def usage_callback(self, callback: UsageCallback | None) -> None:
        self.endpoint.usage_callback = callback

    async def _one(self, request: ChatRequest, images: dict[str, str | ImageError]) -> Reply:
        sampling = (
            self.sampling if request.temperature is None else replace(self.sampling, temperature=request.temperature)
        )
        shape, fields = constraint(self.name, request) if self.constrained else (None, None)
        prompt = request.prompt
        refused = next((sent for ref in prompt.images if isinstance(sent := images.get(ref), ImageError)), None)
        if refused is not None:
            return Reply(error=f"image not sent: {refused}")
        prompt = prompt.with_images(lambda ref: str(images.get(ref, ref)))  # none is an ImageError by now
        try:
            return await self.endpoint.complete(prompt.messages(), sampling, shape, fields)
        except CallFailed as exc:
            return Reply(error=str(exc))

    def _sendable(self, reference: str) -> str | ImageError:
        try:
            return sendable_image(reference, self.image_dir, self.image_budget)
        except ImageError as exc:
            return exc

    async def complete(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        """One reply per request; the calls go out concurrently (bounded by the endpoint's ``max_in_flight``). Each
        image among them is made sendable once (a group's requests share their image; a request may have several), off
        the event loop: a path read, an image over the budget scaled down."""
        references = {reference for r in requests for reference in r.prompt.images}
        if self.image_budget is None:  # a data URI then goes as it is
            references = {reference for reference in references if not is_data_uri(reference)}
        images = {ref: await asyncio.to_thread(self._sendable, ref) for ref in sorted(references)}
        return list(await asyncio.gather(*(self._one(request, images) for request in requests)))

    async def health(self) -> tuple[bool, str]:
        """Reachable when at least one replica answers its health probe and the recent calls did not all fail
        (:meth:`genrm.engine.endpoint.ChatEndpoint.probe`)."""
        return await self.endpoint.probe([self._backend.health_url(url) for url in self.base_urls])

    async def aclose(self) -> None:
        """Close the endpoint's connections."""
        await self.endpoint.aclose()


def make_http_engine(spec: JudgeSpec, options: EngineOptions) -> HttpEngine:
    """The engine of a judge served behind HTTP (``openai``, ``sglang`` and the like), configured by ``options``."""
    endpoint = ChatEndpoint(
        list(spec.urls), str(spec.model), options.api_key, timeout_s=options.timeout_s, retries=options.retries,
        max_in_flight=options.max_in_flight, budget_s=options.budget_s,
    )  # fmt: skip
    return HttpEngine(endpoint, options.sampling, options.constrained, backend=spec.backend,
                      image_dir=options.image_dir, image_budget=options.image_budget)  # fmt: skip
