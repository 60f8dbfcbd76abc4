"""``POST /get_reward``: OpenRLHF's remote reward protocol, for any reward method.

Queries whose labels share an id are one group; with ``group_size`` set, a group is gathered across requests
(:mod:`serving.gathering`). The protocol has no place for an unknown reward, so a query whose reward is unknown is
refused: 503 (retry) when the judge or the server failed on it, 422 naming the label's field when its input is at
fault (the method says which: ``RewardMethod.unknown_reward``). A method set to subtract a penalty from the
normalized advantage (the balcap method's linear length rule) is refused (409): a reward cannot carry it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response

from genrm.methods.base import GroupInstance, GroupResult
from genrm.methods.columns import refuse_advantage_penalty
from serving.defences.bodies import body_openapi, json_body, request_tenant
from serving.defences.disconnect import watch_disconnect
from serving.defences.guard import note_groups
from serving.errors import RequestError
from serving.gathering import Gathered, GatherFull
from serving.group_checks import check_group_count, check_limits, prepare_groups
from serving.openrlhf import QueryError, openrlhf_groups
from serving.payloads import ErrorResponse, RewardRequest, RewardResponse, json_response
from serving.state import ServerState, State

logger = logging.getLogger("genrm.serving")
router = APIRouter()
_WHERE = ["body", "labels"]


async def judge_gathered(state: ServerState, instance: GroupInstance) -> GroupResult:
    """Score one gathered group (the gatherer's judge function); warns when it is short of the group size. The group
    is logged only when every reward of it is known: otherwise some of its clients are refused."""
    (result,) = await state.score([instance], _WHERE, images_read=True)
    if result.rewards is not None and all(reward is not None for reward in result.rewards):
        await state.record([instance], [result])
    settings = state.settings
    if len(instance.responses) < (settings.group_size or 0):
        logger.warning("group %r judged with %d of %d responses: the rest did not come within %g s", instance.id,
                       len(instance.responses), settings.group_size, settings.group_wait_s)  # fmt: skip
    return result


def mendable_failure(state: ServerState, result: GroupResult) -> bool:
    """Whether a gathered group's ``result`` holds a reward unknown for a reason a retry may mend (the judge or the
    server failed): the gatherer judges such a group again for a retry rather than replay the failure."""
    rewards = result.rewards
    places = range(len(rewards)) if rewards is not None else range(1)
    return any(state.method.unknown_reward(result, i).retry for i in places if rewards is None or rewards[i] is None)


async def _gathered(state: ServerState, groups: list[GroupInstance], request: Request) -> list[list[Gathered]]:
    check_limits(state.settings, groups, _WHERE)
    tenant = request_tenant(request)
    # a refused image is this request's error, not its group's
    groups = await state.resolve_images(groups, _WHERE, tenant)
    # a bad instance is this request's error, found before anything waits (off the loop: it reads every response)
    await state.cpu(tenant, prepare_groups, state.method, groups, _WHERE)
    empty = [group.model_copy(update={"responses": []}) for group in groups]
    # a client that leaves and sends the same query again is retrying: the gatherer answers it from the group it
    # first joined (serving.gathering), which it can tell only by knowing that this client has gone
    gone = asyncio.Event()
    watcher = asyncio.create_task(watch_disconnect(request, gone))
    try:
        shares = await asyncio.gather(*(state.gatherer.submit(bare, text, gone) for group, bare in zip(groups, empty,
                                        strict=True) for text in group.responses))  # fmt: skip
    except GatherFull as exc:
        raise RequestError(503, ["server"], str(exc), "busy", {"Retry-After": "1"}) from None
    finally:
        watcher.cancel()
    out, at = [], 0
    for group in groups:
        out.append(list(shares[at : at + len(group.responses)]))
        at += len(group.responses)
    return out


async def _together(state: ServerState, groups: list[GroupInstance], tenant: str) -> list[list[Gathered]]:
    results = await state.score(groups, _WHERE, tenant=tenant)
    # logged by the route once the request's answer is known to be rewards, not a refusal
    return [[Gathered(result, index, len(group.responses), False) for index in range(len(group.responses))]
            for group, result in zip(groups, results, strict=True)]  # fmt: skip


def _refuse_unknown(state: ServerState, by_query: list[Gathered]) -> None:
    """Raise the refusal of the first query whose reward is unknown: the first one the judge or the server failed on
    (503, retry), else the first whose input is at fault (422)."""
    unknown = [(i, state.method.unknown_reward(share.result, share.index)) for i, share in enumerate(by_query)
               if share.result.rewards[share.index] is None]  # fmt: skip
    if not unknown:
        return
    position, why = next(((i, why) for i, why in unknown if why.retry), unknown[0])
    if why.retry:
        raise RequestError(503, ["body", "query", position], why.message, why.kind, {"Retry-After": "1"})
    count = f" ({len(unknown)} rewards of this request are unknown)" if len(unknown) > 1 else ""
    raise RequestError(422, ["body", "labels", position, *why.loc], why.message + count, why.kind)


@router.post(
    "/get_reward",
    response_model=RewardResponse,
    responses={409: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
    openapi_extra=body_openapi(RewardRequest),
)
async def get_reward(
    body: Annotated[RewardRequest, json_body(RewardRequest)], state: State, request: Request
) -> Response:
    """OpenRLHF's remote reward protocol; queries whose labels share an id are one group (with ``group_size`` set,
    gathered across requests)."""
    try:  # a penalty on the advantage is not a reward: OpenRLHF would train without it
        refuse_advantage_penalty(state.method, "OpenRLHF's remote reward protocol", "serve the method without it")
    except ValueError as exc:
        raise RequestError(409, ["server", "method_options"], str(exc), "unsupported") from None
    try:  # linear, but in Python over up to max_body_bytes of text: off the event loop
        groups, positions, reads = await state.cpu(
            request_tenant(request), openrlhf_groups, body.query, body.prompts, body.labels, state.special_end,
            state.method.instance_model,
        )  # fmt: skip
    except QueryError as exc:
        raise RequestError(422, exc.loc, str(exc), exc.kind) from None
    check_group_count(state.settings, len(groups), _WHERE)
    note_groups(len(groups))
    shares = await (
        _gathered(state, groups, request)
        if state.gatherer is not None
        else _together(state, groups, request_tenant(request))
    )
    by_query: list[Any] = [None] * len(body.query)
    for group_positions, group_shares in zip(positions, shares, strict=True):
        for position, share in zip(group_positions, group_shares, strict=True):
            by_query[position] = share
    _refuse_unknown(state, by_query)
    if state.gatherer is None:
        answered = [(group, group_shares[0].result) for group, group_shares in zip(groups, shares, strict=True)
                    if group_shares]  # fmt: skip
        await state.record([group for group, _ in answered], [result for _, result in answered])
    per_query = [state.method.extra_logs(share.result, share.index) for share in by_query]
    logs: dict[str, list[float]] = {name: [row[name] for row in per_query] for name in (per_query[0] if per_query
                                                                                          else {})}  # fmt: skip
    logs |= {
        "group_size": [float(share.size) for share in by_query],
        "group_partial": [float(share.partial) for share in by_query],
        "prompt_fallback": [float(read.placed != "prefix") for read in reads],
        "special_tokens_cut": [float(bool(read.stripped)) for read in reads],
        "text_replaced": [float(share.index in (share.result.replaced_text or ())) for share in by_query],
    }
    final = [float(share.result.rewards[share.index]) for share in by_query]
    return json_response(RewardResponse(rewards=final, scores=final, extra_logs=logs))
