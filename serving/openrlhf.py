"""OpenRLHF's remote reward protocol, read into our groups: the response of each query, and the groups they form.

OpenRLHF sends ``query`` (prompt and response, as its tokenizer decoded them), ``prompts`` and ``labels`` (here, one
JSON instance per query). What the judge sees of a response is cut from the query in two steps:

1. **Where the response starts.** The query normally starts with its prompt (OpenRLHF's own examples take
   ``query[len(prompt):]``). When it does not (a tokenizer that does not give back the prompt's text exactly: spaces
   around special tokens, normalised characters, a BOS text in front), the prompt's last 64 characters are looked
   for in the query, where they first occur (as examples that split on the assistant marker do); failing that, the
   query must start with the prompt once all white space is left out of both (the response then starts after the
   prompt's last character, its leading spaces dropped). A query none of these place is refused (422, and logged);
   a fallback is reported per query in ``extra_logs`` (``prompt_fallback``).
2. **Where it ends.** OpenRLHF decodes with special tokens kept, so a response ends with the end-of-sequence text of
   the policy's chat template (``<|im_end|>``, ``<|eot_id|>``, ``</s>``, ...), which would make ``B<|im_end|>`` an
   unreadable option letter. Special-token texts at the end of a response, with the spaces between them, are cut:
   any ``<|name|>`` (the form ChatML, Qwen, Llama 3, Phi and GPT-OSS templates give their special tokens), the
   literal tokens of other templates (:data:`END_TOKENS`), and those the server is told of
   (``ServerSettings.special_tokens``). Text inside a response is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from genrm.methods.base import GroupInstance

END_TOKENS = ("</s>", "<eos>", "<end_of_turn>", "<pad>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "[EOS]")
"""End-of-sequence texts of common chat templates that do not have the ``<|name|>`` form (Llama 2 and Mistral,
Gemma, DeepSeek)."""

_PIPE_AT_END = re.compile(r"<\|[A-Za-z0-9_\-.:]{1,64}\|>\Z")
_PIPE_MAX_CHARS = 68
_TAIL_CHARS = 64


class QueryError(ValueError):
    """A query of the request cannot be read; ``loc`` names it, ``kind`` classifies it."""

    def __init__(self, loc: list, message: str, kind: str) -> None:
        super().__init__(message)
        self.loc, self.kind = loc, kind


@dataclass(frozen=True)
class Query:
    """The response cut from one query, and how: ``placed`` is ``prefix``, ``prompt_tail`` or ``spacing``;
    ``stripped`` is the special-token text cut from its end."""

    response: str
    placed: str
    stripped: str


class SpecialTail:
    """Cuts special-token text from the end of a response (see the module docstring), in time linear in the
    response: it walks back from the end token by token, never letting a pattern scan the whole text (a regular
    expression anchored at the end is tried from every position, quadratic on a response of many spaces).

    Args:
        extra: further literal tokens to cut, besides :data:`END_TOKENS` and any ``<|name|>``.
    """

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.literals = sorted({*END_TOKENS, *(t for t in extra if t)}, key=len, reverse=True)

    def _token_start(self, text: str, end: int) -> int | None:
        """Where a special token ending at ``end`` starts, or None when none ends there."""
        for literal in self.literals:
            if text.endswith(literal, 0, end):
                return end - len(literal)
        found = _PIPE_AT_END.search(text, max(0, end - _PIPE_MAX_CHARS), end)
        return found.start() if found else None

    def cut(self, response: str) -> tuple[str, str]:
        """``(response without its trailing special tokens, the text cut)``; white space is cut only around them."""
        cut, end = len(response), _before_spaces(response, len(response))
        while (start := self._token_start(response, end)) is not None:
            cut = end = _before_spaces(response, start)
        return response[:cut], response[cut:]


def _before_spaces(text: str, end: int) -> int:
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def read_query(query: str, prompt: str, tail: SpecialTail) -> Query | None:
    """The response of one OpenRLHF query, or None when the prompt cannot be placed in it."""
    if query.startswith(prompt):
        response, placed = query[len(prompt) :], "prefix"
    else:
        key = prompt[-_TAIL_CHARS:]
        at = query.find(key) if key else -1
        if at >= 0:
            response, placed = query[at + len(key) :], "prompt_tail"
        else:
            end = _end_ignoring_spaces(query, prompt)
            if end is None:
                return None
            response, placed = query[end:].lstrip(), "spacing"
    kept, stripped = tail.cut(response)
    return Query(kept, placed, stripped)


def _end_ignoring_spaces(query: str, prompt: str) -> int | None:
    """Where the prompt ends in the query when white space is left out of both, or None when it is not there."""
    wanted = [c for c in prompt if not c.isspace()]
    if not wanted:
        return None
    matched = 0
    for at, char in enumerate(query):
        if char.isspace():
            continue
        if char != wanted[matched]:
            return None
        matched += 1
        if matched == len(wanted):
            return at + 1
    return None


def openrlhf_groups(
    query: list[str], prompts: list[str], labels: list[str], tail: SpecialTail, instance_model: type[BaseModel]
) -> tuple[list[GroupInstance], list[list[int]], list[Query]]:
    """The groups of an OpenRLHF request: the responses of queries whose labels share an instance id, the query
    positions of each group, and how each query was read. Each label is an instance of the method's
    ``instance_model`` (its responses ignored). Raises QueryError naming the field at fault."""
    if not (len(query) == len(prompts) == len(labels)):
        raise QueryError(["body"], f"query, prompts and labels differ in length ({len(query)}, {len(prompts)}, "
                         f"{len(labels)})", "length")  # fmt: skip
    groups: dict[str, tuple[GroupInstance, list[int], list[str]]] = {}
    reads: list[Query] = []
    for i, (text, prompt, label) in enumerate(zip(query, prompts, labels, strict=True)):
        read = read_query(text, prompt, tail)
        if read is None:
            message = "the prompt cannot be found in the query (not at its start, not its last characters, not with "
            raise QueryError(["body", "query", i], message + "white space left out)", "prefix")
        reads.append(read)
        try:
            instance: GroupInstance = instance_model.model_validate_json(label)  # type: ignore[assignment]
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            raise QueryError(["body", "labels", i, *error["loc"]], f"label is not an instance: {error['msg']}",
                             "label") from None  # fmt: skip
        known = groups.get(instance.id)
        if known is None:
            groups[instance.id] = (instance, [i], [read.response])
            continue
        if known[0].model_copy(update={"responses": []}) != instance.model_copy(update={"responses": []}):
            raise QueryError(["body", "labels", i], f"label id {instance.id!r} is used with another instance (its "
                             "prompt, rubric or another field differs)", "label")  # fmt: skip
        known[1].append(i)
        known[2].append(read.response)
    instances = [instance.model_copy(update={"responses": responses}) for instance, _, responses in groups.values()]
    return instances, [positions for _, positions, _ in groups.values()], reads
