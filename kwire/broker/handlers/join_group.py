"""JoinGroup — key 11, v0–9 (KIP-62 rebalance timeout, KIP-394 member id first, KIP-345 static
membership, KIP-559 protocol type/name, KIP-800 reason, KIP-814 skip assignment).

Behaviour: pre-checks in upstream's order: empty group id → INVALID_GROUP_ID; session timeout
outside [group.min.session.timeout.ms, group.max.session.timeout.ms] → INVALID_SESSION_TIMEOUT;
not this group's coordinator → NOT_COORDINATOR. Then the classic group state machine
(``core.classic_groups``): an unknown protocol type or no common protocol → INCONSISTENT_GROUP_PROTOCOL;
a member id the group does not know → UNKNOWN_MEMBER_ID; a static member id that is no longer
its instance's → FENCED_INSTANCE_ID; a full group → GROUP_MAX_SIZE_REACHED. The answer waits
(deferred) until the join phase completes: all known members rejoined, or the rebalance
timeout passed (``group.initial.rebalance.delay.ms`` first for a group that was empty). The
leader gets every member's metadata for the chosen protocol; followers get an empty list.
Version notes: v0 has no rebalance timeout (the session timeout serves); v4+ dynamic members
first get MEMBER_ID_REQUIRED with their generated id (``<client.id>-<uuid>``); v5+ carries
``group.instance.id`` (static members skip MEMBER_ID_REQUIRED; a static rejoin of a Stable
group answers at once); v7+ answers ProtocolType and a nullable ProtocolName; v9 sets
SkipAssignment for a static leader rejoining without a rebalance.
A JoinGroup for a non-empty KIP-848 group joins it as a classic-protocol member
(``core.group_migration``, docs/group-migration.md GM-3): answered at once with the member epoch
as generation and no leader work; refused with INCONSISTENT_GROUP_PROTOCOL when
``group.consumer.migration.policy`` is DISABLED, the protocol type is not "consumer", no protocol
is shared with the group's classic members, or the subscription is malformed.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.classic_groups import JoinRequest, JoinResult
from kwire.broker.handlers._groups import Waiter, client_host, coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.JOIN_GROUP
VERSIONS = (0, 9)


def _response(version: int, r: JoinResult) -> JoinGroupResponse:
    ok = r.error_code == ErrorCode.NONE
    name = r.protocol_name if ok else None
    return JoinGroupResponse(
        error_code=r.error_code, generation_id=r.generation_id,
        protocol_type=r.protocol_type if ok else None,
        protocol_name=name if version >= 7 else (name or ""),
        leader=r.leader, skip_assignment=r.skip_assignment, member_id=r.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=iid, metadata=meta)
                 for mid, iid, meta in r.members],
    )


@fitted
def handle(ctx: RequestContext, req: JoinGroupRequest) -> JoinGroupResponse | None:
    v = ctx.api_version
    if not req.group_id:
        return _response(v, JoinResult(ErrorCode.INVALID_GROUP_ID, req.member_id))
    groups = coordinator(ctx).classic
    code = groups.session_timeout_error(req.session_timeout_ms)
    if code:
        return _response(v, JoinResult(code, req.member_id))
    if not is_coordinator(ctx, req.group_id):
        return _response(v, JoinResult(ErrorCode.NOT_COORDINATOR, req.member_id))
    instance_id = req.group_instance_id if v >= 5 else None
    join = JoinRequest(
        group_id=req.group_id, member_id=req.member_id, instance_id=instance_id, client_id=ctx.client_id or "",
        client_host=client_host(ctx), session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms,
        protocol_type=req.protocol_type, protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=v >= 4 and instance_id is None, reason=req.reason,
    )
    waiter: Waiter[JoinResult] = Waiter(ctx, lambda r: _response(v, r))
    groups.join(join, waiter)
    return waiter.outcome()


@fitted
def error_response(ctx: RequestContext, req: JoinGroupRequest, code: int) -> JoinGroupResponse:
    return _response(ctx.api_version, JoinResult(code, req.member_id))
