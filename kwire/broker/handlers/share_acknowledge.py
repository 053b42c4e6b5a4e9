"""ShareAcknowledge — key 79, v1–2 (KIP-932; v2 IsRenewAck and AcquisitionLockTimeoutMs, KIP-1222).

Behaviour: SG-3's pre-checks at the top level; the share session of this broker (SS-1, SS-5:
epoch 0 → INVALID_SHARE_SESSION_EPOCH, no session → SHARE_SESSION_NOT_FOUND, a wrong epoch →
INVALID_SHARE_SESSION_EPOCH; -1 acknowledges and then closes the session, releasing what the
member still holds; group membership is not asked, SS-9). Per partition: SG-4's errors, then
the acknowledgement batches applied all or nothing (AK-1..AK-13, RN-4..RN-6) with the result in the partition ErrorCode (AK-14).
v2 answers carry the group's lock duration in AcquisitionLockTimeoutMs (RN-7).
Version notes: v1 knows acknowledge types 0–3 only (AK-5). Deviations: none.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kwire.broker.handlers._common import node_endpoints
from kwire.broker.handlers._share import (
    ack_batches,
    acknowledge_partition,
    coordinator,
    dropped,
    precheck,
    resolve,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponse_LeaderIdAndEpoch,
    ShareAcknowledgeResponse_NodeEndpoint,
    ShareAcknowledgeResponse_PartitionData,
    ShareAcknowledgeResponse_ShareAcknowledgeTopicResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
VERSIONS = (1, 2)


def _top(code: int, message: str | None = None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(error_code=code, error_message=message, acquisition_lock_timeout_ms=0)


def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    code, message = precheck(ctx, req.group_id, req.member_id)
    if code:
        return _top(code, message)
    assert req.group_id is not None and req.member_id is not None
    v = ctx.api_version
    renew = v >= 2 and req.is_renew_ack
    share = coordinator(ctx)
    try:
        sctx = share.sessions.acknowledge_context(req.group_id, req.member_id, req.share_session_epoch,
                                                  broker_id=ctx.broker_id)
    except KafkaError as exc:
        return _top(exc.code, exc.message or None)
    topics: dict[uuid.UUID, ShareAcknowledgeResponse_ShareAcknowledgeTopicResponse] = {}
    leaders: set[int] = set()
    for at in req.topics:
        tr = topics.get(at.topic_id)
        if tr is None:
            tr = topics[at.topic_id] = ShareAcknowledgeResponse_ShareAcknowledgeTopicResponse(topic_id=at.topic_id)
        for ap in at.partitions:
            t = resolve(ctx, at.topic_id, ap.partition_index)
            code, message = acknowledge_partition(share, req.group_id, req.member_id, t,
                                                  ack_batches(ap.acknowledgement_batches), version=v,
                                                  is_renew_ack=renew, broker_id=ctx.broker_id)
            if dropped(ctx, API_KEY, t):
                continue  # fault injection: applied, but the answer never says so
            pd = ShareAcknowledgeResponse_PartitionData(
                partition_index=ap.partition_index, error_code=code, error_message=message,
                current_leader=ShareAcknowledgeResponse_LeaderIdAndEpoch(leader_id=t.leader_id,
                                                                         leader_epoch=t.leader_epoch))
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and t.leader_id >= 0:
                leaders.add(t.leader_id)
            tr.partitions.append(pd)
    share.sessions.finish(sctx)  # SS-5: a final request closes the session after its acknowledgements
    resp = ShareAcknowledgeResponse(responses=list(topics.values()))
    if v >= 2:
        resp.acquisition_lock_timeout_ms = share.config(req.group_id).record_lock_duration_ms  # RN-7
    if leaders:
        resp.node_endpoints = node_endpoints(ctx, leaders, ShareAcknowledgeResponse_NodeEndpoint)
    return resp


def error_response(ctx: RequestContext, req: ShareAcknowledgeRequest, code: int) -> ShareAcknowledgeResponse:
    return _top(code)
