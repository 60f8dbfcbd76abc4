"""Teacher models for the judge-training data: who writes rubrics and who scores responses.

A teacher is any model the project can call: one behind OpenAI-compatible endpoints (SGLang, vLLM, a hosted API;
:class:`EndpointTeacher`) or a checkpoint loaded here (:class:`LocalTeacher`). It does two jobs: answer a chat prompt
with JSON of a given schema (rubric writing and aggregation), and act as a judge on a group of responses (scoring,
through the same prompt builders, schema and parser as the reward server).

On the command line a teacher is named by a spec:

- ``MODEL@URL[,URL...]``: an OpenAI-compatible endpoint, e.g. ``Qwen/Qwen3-235B-A22B@http://10.0.0.5:30000/v1``;
  the API key, if any, comes from the environment variable given to :func:`parse_teacher_spec`;
- ``transformers:PATH``: a checkpoint loaded in this process (greedy, XGrammar-constrained).
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Protocol

from genrm.chat_endpoint import CallFailed, ChatEndpoint
from genrm.judge import GroupRequest, SamplingSettings
from genrm.judge_output import ParsedJudgement
from genrm.prompts import ChatPrompt
from genrm.remote_judge import AsyncGroupJudge, RemoteJudge

__all__ = ["CallFailed", "EndpointTeacher", "LocalTeacher", "Teacher", "parse_teacher_spec"]


class Teacher(Protocol):
    """A model that writes JSON answers and judges groups."""

    name: str

    async def complete_json(self, prompt: ChatPrompt, schema: dict[str, Any], schema_name: str) -> str:
        """The model's answer to ``prompt``, constrained to ``schema`` where the model supports it.

        Raises CallFailed (this call failed) or genrm.judge.BackendUnavailable (the model cannot be reached).
        """
        ...

    def judge(self) -> AsyncGroupJudge:
        """The teacher as a judge of groups of responses."""
        ...

    async def aclose(self) -> None:
        """Release connections or memory."""
        ...


class EndpointTeacher:
    """A teacher behind OpenAI-compatible endpoints (greedy by default: labels should not be noisy)."""

    def __init__(self, endpoint: ChatEndpoint, sampling: SamplingSettings | None = None) -> None:
        self.endpoint, self.sampling = endpoint, sampling or SamplingSettings(max_tokens=4096)
        self.name = endpoint.model

    async def complete_json(self, prompt: ChatPrompt, schema: dict[str, Any], schema_name: str) -> str:
        """One chat completion with ``response_format`` of type ``json_schema``."""
        response_format = {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}}
        return (await self.endpoint.complete(prompt.messages(), self.sampling, response_format)).text

    def judge(self) -> AsyncGroupJudge:
        """A :class:`genrm.remote_judge.RemoteJudge` on the same endpoint (schema-constrained, one re-sample)."""
        judge = RemoteJudge(self.endpoint, self.sampling, constrained=True, parse_retries=1)
        judge.name = self.name
        return judge

    async def aclose(self) -> None:
        """Close the endpoint's connections."""
        await self.endpoint.aclose()


class _LocalJudge:
    def __init__(self, teacher: LocalTeacher) -> None:
        from genrm.model_judge import ModelJudge

        self.name = teacher.name
        self._judge, self._lock = ModelJudge(teacher.generator.generate, constrained=True), teacher.lock

    def _judge_locked(self, request: GroupRequest) -> list[ParsedJudgement]:
        with self._lock:
            return self._judge.judge_group(request)

    async def judge_group(self, request: GroupRequest) -> list[ParsedJudgement]:
        return await asyncio.to_thread(self._judge_locked, request)

    async def aclose(self) -> None:
        return None


class LocalTeacher:
    """A teacher loaded in this process (:class:`genrm.hf_generation.LocalGenerator`); calls run one at a time."""

    def __init__(self, generator: Any, name: str) -> None:
        self.generator, self.name, self.lock = generator, name, threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str, device: str = "auto", max_tokens: int = 2048) -> LocalTeacher:
        """Load the checkpoint at ``path`` (needs the ``local`` extra)."""
        from genrm.hf_generation import LocalGenerator

        sampling = SamplingSettings(max_tokens=max_tokens)
        return cls(LocalGenerator.from_pretrained(path, device=device, sampling=sampling), path)  # type: ignore[arg-type]

    def _complete(self, prompt: ChatPrompt, schema: dict[str, Any]) -> str:
        from genrm.hf_generation import GenerationItem

        with self.lock:
            (answer,) = self.generator.generate([GenerationItem(prompt, schema)])
        if answer.error is not None:
            raise CallFailed(answer.error)
        return answer.text

    async def complete_json(self, prompt: ChatPrompt, schema: dict[str, Any], schema_name: str) -> str:
        """The checkpoint's greedy answer, constrained to ``schema`` by XGrammar."""
        return await asyncio.to_thread(self._complete, prompt, schema)

    def judge(self) -> AsyncGroupJudge:
        """The checkpoint as a judge (:class:`genrm.model_judge.ModelJudge`), in a worker thread."""
        return _LocalJudge(self)

    async def aclose(self) -> None:
        """Nothing to close: the model is freed with the object."""


def parse_teacher_spec(
    spec: str, api_key_env: str | None = None, timeout_s: float = 300.0, max_in_flight: int = 32, device: str = "auto"
) -> Teacher:
    """The teacher a command-line spec names (see the module docstring); raises ValueError for a malformed spec."""
    spec = spec.strip()
    if spec.startswith("transformers:"):
        path = spec.removeprefix("transformers:")
        if not path:
            raise ValueError("a local teacher spec is transformers:PATH")
        return LocalTeacher.from_pretrained(path, device=device)
    model, at, urls = spec.rpartition("@")
    if not at or not model or not urls:
        raise ValueError(f"a teacher spec is MODEL@URL[,URL...] or transformers:PATH, got {spec!r:.80}")
    base_urls = [url.strip() for url in urls.split(",") if url.strip()]
    if not all(url.startswith(("http://", "https://")) for url in base_urls):
        raise ValueError(f"teacher URLs must start with http:// or https://, got {urls!r:.80}")
    api_key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not api_key:
        raise ValueError(f"the environment variable {api_key_env} (the teachers' API key) is not set")
    endpoint = ChatEndpoint(base_urls, model, api_key, timeout_s=timeout_s, max_in_flight=max_in_flight)
    return EndpointTeacher(endpoint)
