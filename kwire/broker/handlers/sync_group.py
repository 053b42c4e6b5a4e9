"""SyncGroup — key 14, v0–5 (KIP-345 static membership, KIP-559 protocol type/name).

Behaviour: empty group id → INVALID_GROUP_ID; not the coordinator → NOT_COORDINATOR; unknown
group or member → UNKNOWN_MEMBER_ID; fenced static instance → FENCED_INSTANCE_ID; generation
mismatch → ILLEGAL_GENERATION; v5 protocol type/name differing from the group's →
INCONSISTENT_GROUP_PROTOCOL; a group preparing a rebalance → REBALANCE_IN_PROGRESS. During
CompletingRebalance every member's SyncGroup waits (deferred) for the leader's, whose
assignments (missing members get an empty one) answer them all and make the group Stable;
in Stable a SyncGroup gets the member's assignment at once. Members that never sync within
the rebalance timeout are removed and the group rebalances.
A classic-protocol member of a KIP-848 group (GM-4) gets its current assignment from the
group's server-side assignor at once (REBALANCE_IN_PROGRESS when a newer target is waiting).
Version notes: v3+ GroupInstanceId; v5 ProtocolType/ProtocolName in request and response.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.classic_groups import SyncResult
from kwire.broker.handlers._groups import Waiter, coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = (0, 5)


def _response(r: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=r.error_code, protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                             assignment=r.assignment)


@fitted
def handle(ctx: RequestContext, req: SyncGroupRequest) -> SyncGroupResponse | None:
    v = ctx.api_version
    if not req.group_id:
        return _response(SyncResult(ErrorCode.INVALID_GROUP_ID))
    if not is_coordinator(ctx, req.group_id):
        return _response(SyncResult(ErrorCode.NOT_COORDINATOR))
    waiter: Waiter[SyncResult] = Waiter(ctx, _response)
    coordinator(ctx).classic.sync(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id if v >= 3 else None,
        req.protocol_type if v >= 5 else None, req.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in req.assignments}, waiter)
    return waiter.outcome()


@fitted
def error_response(ctx: RequestContext, req: SyncGroupRequest, code: int) -> SyncGroupResponse:
    return _response(SyncResult(code))
