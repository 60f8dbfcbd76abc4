"""What goes into the judge engine and what comes out: chat requests, replies, sampling, and the engine protocol.

An engine knows nothing of rubrics or any other reward method: it answers conversations (a system and a user
message, with images or none), optionally constrained to a JSON schema, with text, token usage and a failure reason.
Reward methods build the requests and read the replies (:mod:`genrm.engine.asking` re-samples what they could not
read). Light on purpose: nothing here imports a model library or an HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from verifiers.text import without_lone_surrogates

UsageCallback = Callable[[int, int], None]
"""Called with (prompt tokens, completion tokens) of every answered request."""


@dataclass(frozen=True, slots=True)
class ChatPrompt:
    """A system and a user message, with images for the user turn (each a path, URL or data URI).

    ``image`` goes before the user text (a caption's or a rubric's image). ``inline_images`` are more, each at a
    character offset of ``user`` (0 to ``len(user)``, in order), for a turn that interleaves text and images: a
    pairwise judge shown the prompt's images and each response's images where they belong. Offsets rather than a
    marker in the text, because the text holds a policy's output, and a marker it wrote must not become an image.

    The messages are made safe to send on creation (lone surrogates, which a policy can emit and UTF-8 cannot carry,
    become U+FFFD, one character for one, so offsets keep their place), so that no engine, HTTP or in-process, is
    handed text it cannot encode.
    """

    system: str
    user: str
    image: str | None = None
    inline_images: tuple[tuple[int, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "system", without_lone_surrogates(self.system))
        object.__setattr__(self, "user", without_lone_surrogates(self.user))
        offsets = [offset for offset, _ in self.inline_images]
        if offsets != sorted(offsets) or any(not 0 <= offset <= len(self.user) for offset in offsets):
            raise ValueError("inline image offsets must be in order and within the user text")

    @property
    def images(self) -> tuple[str, ...]:
        """Every image of the user turn, in the order the judge sees them."""
        lead = () if self.image is None else (self.image,)
        return lead + tuple(reference for _, reference in self.inline_images)

    def with_images(self, sent: Callable[[str], str]) -> ChatPrompt:
        """The same prompt with every image reference replaced by ``sent(reference)`` (what a backend sends)."""
        return ChatPrompt(self.system, self.user, None if self.image is None else sent(self.image),
                          tuple((offset, sent(reference)) for offset, reference in self.inline_images))  # fmt: skip

    def user_parts(self) -> list[tuple[str, str]]:
        """The user turn as ``("image", reference)`` and ``("text", text)`` parts, in order (no empty text part)."""
        parts: list[tuple[str, str]] = [] if self.image is None else [("image", self.image)]
        start = 0
        for offset, reference in self.inline_images:
            if offset > start:
                parts.append(("text", self.user[start:offset]))
            parts.append(("image", reference))
            start = offset
        if start < len(self.user) or not parts:
            parts.append(("text", self.user[start:]))
        return parts

    @classmethod
    def from_messages(cls, messages: Sequence[dict[str, Any]]) -> ChatPrompt:
        """The prompt of an OpenAI chat conversation (a system message, then the user's; a scripted judge behind an
        endpoint reads what it was sent): the inverse of :meth:`messages`, an image before any text being the lead
        image. Raises ValueError for any other shape."""
        if len(messages) != 2 or [m.get("role") for m in messages] != ["system", "user"]:
            raise ValueError("expected a system message and a user message")
        system, content = messages[0]["content"], messages[1]["content"]
        if isinstance(content, str):
            return cls(system, content)
        user, lead, inline = "", None, []
        for part in content:
            if part.get("type") == "text":
                user += part["text"]
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                if not user and not inline and lead is None:
                    lead = url
                else:
                    inline.append((len(user), url))
            else:
                raise ValueError(f"unknown content part {part.get('type')!r:.40}")
        return cls(system, user, lead, tuple(inline))

    def messages(self, image_placeholders: bool = False) -> list[dict[str, Any]]:
        """The conversation in OpenAI chat format; a turn with images is a list of parts in order (an image, when
        the only one, before the text). With ``image_placeholders``, each image is ``{"type": "image"}``: the layout
        chat templates and TRL's vision collators take, with the images handed to the processor in
        :attr:`images`' order."""
        if not self.images:
            user: Any = self.user
        else:
            user = [
                ({"type": "image"} if image_placeholders else {"type": "image_url", "image_url": {"url": value}})
                if kind == "image"
                else {"type": "text", "text": value}
                for kind, value in self.user_parts()
            ]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class SamplingSettings:
    """How an engine samples answers (greedy by default: rewards should not be noisy).

    Attributes:
        max_tokens: output token budget of one answer (> 0).
        temperature: 0 for greedy decoding, else the sampling temperature (0-2).
        top_p: nucleus sampling mass (0-1], used when sampling.
        seed: seed of the sampler, or None.
    """

    max_tokens: int = 1024
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One conversation to answer.

    Attributes:
        prompt: the conversation.
        schema: a JSON schema the answer must follow (constrained decoding where the engine can), or None.
        schema_name: the schema's name in an OpenAI ``response_format`` (letters, digits, ``_`` and ``-``).
        temperature: this request's sampling temperature; None takes the engine's (re-samples of an unreadable
            answer set one, since a greedy decoder would only repeat itself).
    """

    prompt: ChatPrompt
    schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    temperature: float | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer, or why there is none (``error``); token counts are of this request alone (0 when unknown).

    ``finished``: the model ended the answer itself (False when it hit the token budget, or nobody said).
    """

    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finished: bool = False
    error: str | None = None

    @classmethod
    def failed(cls, exc: BaseException) -> Reply:
        """The reply of a request whose generation raised ``exc`` (out of memory, a library error)."""
        return cls(error=f"generation failed: {type(exc).__name__}: {exc}")


class BackendUnavailable(RuntimeError):
    """The judge model cannot be reached now; the request may be retried after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CallFailed(Exception):
    """One call failed (after its retries), while the model as a whole is reachable."""


@runtime_checkable
class Engine(Protocol):
    """Answers chat requests: an OpenAI-compatible endpoint, a checkpoint in process, or a scripted fake.

    Attributes:
        name: the kind of engine (``openai``, ``sglang``, ``transformers``, ``scripted``), as health reports say it.
        model: the model's name (served name or checkpoint path).
        sees_images: whether the model is shown a prompt's image (False for a text-only model run in process).
        constrained: whether a request's schema constrains decoding (else the answer is only asked for).
        usage_callback: called with the token usage of every answered request, or None.
    """

    name: str
    model: str
    sees_images: bool
    constrained: bool
    usage_callback: UsageCallback | None

    async def complete(self, requests: Sequence[ChatRequest]) -> list[Reply]:
        """One reply per request, in order. A request that fails is a reply with ``error`` set; raises
        :class:`BackendUnavailable` when the model cannot be reached at all."""
        ...

    async def health(self) -> tuple[bool, str]:
        """Whether the engine can answer now, and a short detail."""
        ...

    async def aclose(self) -> None:
        """Release connections, threads and memory."""
        ...
