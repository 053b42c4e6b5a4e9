"""ShareGroupHeartbeat — key 76, v1 (KIP-932).

Behaviour: share.version below 1 → UNSUPPORTED_VERSION (SG-2); "share" missing from
``group.coordinator.rebalance.protocols`` → UNSUPPORTED_VERSION; not the coordinator →
NOT_COORDINATOR; then the share-group coordinator (``core/share_groups.py``): HB-1's request
checks (INVALID_REQUEST), epoch 0 joins (and creates the group), -1 leaves; GROUP_ID_NOT_FOUND
for an unknown group or one of another type, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
GROUP_MAX_SIZE_REACHED (HB-3). The answer carries the member epoch, HeartbeatIntervalMs and the
assignment (topic ids) when the request was full or the assignment changed, compared by topic id
(HB-5). Only partitions whose share state is initialised are assigned, so a new group's first
answer has an empty assignment (HB-6; the initialisation completes on the broker clock).
Version notes: v0 was never released (KIP-932 early access). Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_coordinator import share_coordinator, share_enabled
from kwire.broker.core.share_groups import ShareHeartbeat
from kwire.broker.handlers._groups import client_host, fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatResponse_Assignment,
    ShareGroupHeartbeatResponse_TopicPartitions,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT
VERSIONS = (1, 1)


def _error(code: int, message: str | None = None) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(error_code=code, error_message=message)


@fitted
def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    core = ctx.core
    if not share_enabled(core):  # SG-2
        return _error(ErrorCode.UNSUPPORTED_VERSION, "The share group protocol is not enabled.")
    protocols = core.configs.get(ResourceType.BROKER, "", "group.coordinator.rebalance.protocols") or ""
    if "share" not in {p.strip() for p in protocols.split(",")}:
        return _error(ErrorCode.UNSUPPORTED_VERSION, "The share group protocol is not enabled.")
    if not is_coordinator(ctx, req.group_id):
        return _error(ErrorCode.NOT_COORDINATOR)
    share = share_coordinator(core)
    try:
        result = share.groups.heartbeat(ShareHeartbeat(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch, rack_id=req.rack_id,
            subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
            client_id=ctx.client_id or "", client_host=client_host(ctx)))
    except KafkaError as exc:
        return _error(exc.code, exc.message or None)
    share.heartbeat_accepted(req.group_id)
    assignment = None
    if result.assignment is not None:
        assignment = ShareGroupHeartbeatResponse_Assignment(topic_partitions=[
            ShareGroupHeartbeatResponse_TopicPartitions(topic_id=tid, partitions=sorted(ps))
            for tid, ps in sorted(result.assignment.items(), key=lambda kv: str(kv[0])) if ps])
    return ShareGroupHeartbeatResponse(member_id=result.member_id, member_epoch=result.member_epoch,
                                       heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


@fitted
def error_response(ctx: RequestContext, req: ShareGroupHeartbeatRequest, code: int) -> ShareGroupHeartbeatResponse:
    return _error(code)
