"""Heartbeat — key 12, v0–4 (classic groups).

Behaviour: empty group id → INVALID_GROUP_ID; not the coordinator → NOT_COORDINATOR; unknown
group or member → UNKNOWN_MEMBER_ID; fenced static instance → FENCED_INSTANCE_ID; generation
mismatch → ILLEGAL_GENERATION; an Empty group → UNKNOWN_MEMBER_ID. Otherwise the member's
session timer restarts and the answer is REBALANCE_IN_PROGRESS while the group prepares a
rebalance (the member must rejoin), NONE in CompletingRebalance and Stable.
A classic-protocol member of a KIP-848 group (GM-5): generation = its member epoch, else
ILLEGAL_GENERATION; REBALANCE_IN_PROGRESS when it must rejoin (a newer target assignment,
partitions to revoke, or awaited partitions now free), which arms its join timeout.
Version notes: v3+ GroupInstanceId; v4 is flexible. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)


@fitted
def handle(ctx: RequestContext, req: HeartbeatRequest) -> HeartbeatResponse:
    if not req.group_id:
        return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    if not is_coordinator(ctx, req.group_id):
        return HeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)
    instance_id = req.group_instance_id if ctx.api_version >= 3 else None
    code = coordinator(ctx).classic.heartbeat(req.group_id, req.generation_id, req.member_id, instance_id)
    return HeartbeatResponse(error_code=code)


@fitted
def error_response(ctx: RequestContext, req: HeartbeatRequest, code: int) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)
