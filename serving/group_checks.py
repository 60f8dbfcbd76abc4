"""The checks and steps every way of scoring a request shares, in the server's process or a worker's: how many groups
and responses a request may have, responses made safe to send, and groups prepared by the method."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genrm.methods.base import GroupInstance, MethodInputError, RewardMethod
from serving.errors import RequestError
from serving.settings import ServerSettings
from verifiers.text import has_lone_surrogates, without_lone_surrogates

#: Where a ``/v1/score`` request's groups are, for the errors that name a field.
WHERE = ["body", "groups"]


def check_group_count(settings: ServerSettings, count: int, where: list[Any]) -> None:
    """Refuse (422) a request of more groups than the settings allow."""
    if count > settings.max_groups:
        raise RequestError(422, where, f"{count} groups; at most {settings.max_groups}", "limit")


def check_limits(settings: ServerSettings, groups: Sequence[GroupInstance], where: list[Any]) -> None:
    """Refuse (422) a group with more responses, or a response longer, than the settings allow."""
    for i, group in enumerate(groups):
        if len(group.responses) > settings.max_responses:
            raise RequestError(422, [*where, i, "responses"],
                               f"{len(group.responses)} responses; at most {settings.max_responses}",
                               "limit")  # fmt: skip
        for j, response in enumerate(group.responses):
            if len(response) > settings.max_response_chars:
                raise RequestError(422, [*where, i, "responses", j],
                                   f"response of {len(response)} characters; at most "
                                   f"{settings.max_response_chars}", "limit")  # fmt: skip


def prepare_groups(method: RewardMethod, groups: Sequence[GroupInstance], where: list[Any]) -> list[Any]:
    """Each group prepared by the method; the first that cannot be is this request's 422, located."""
    prepared = []
    for i, group in enumerate(groups):
        try:
            prepared.append(method.prepare(group))
        except MethodInputError as exc:
            raise RequestError(422, [*where, i, *exc.loc], str(exc), exc.kind) from None
    return prepared


def safe_responses(groups: Sequence[GroupInstance]) -> tuple[list[GroupInstance], list[list[int]]]:
    """The groups with every lone surrogate in a response (a policy can emit any code point; UTF-8 cannot carry this
    one) replaced by U+FFFD, and the indices of the responses of each group that held one."""
    out, replaced = [], []
    for group in groups:
        indices = [i for i, response in enumerate(group.responses) if has_lone_surrogates(response)]
        if indices:
            group = group.model_copy(update={"responses": [without_lone_surrogates(r) for r in group.responses]})
        out.append(group)
        replaced.append(indices)
    return out, replaced


def prepare_safely(
    method: RewardMethod, groups: Sequence[GroupInstance], where: list[Any]
) -> tuple[list[Any], list[list[int]]]:
    """:func:`safe_responses`, then :func:`prepare_groups`: the prepared groups, and the indices of each group's
    responses whose text was replaced (blocking: both read every response)."""
    safe, replaced = safe_responses(groups)
    return prepare_groups(method, safe, where), replaced


def mark_replaced(results: Sequence[Any], replaced: Sequence[list[int]]) -> None:
    """Say in each group's result which of its responses had text replaced (:func:`safe_responses`)."""
    for result, indices in zip(results, replaced, strict=True):
        if indices:
            result.replaced_text = indices
