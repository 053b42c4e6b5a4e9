"""OffsetDelete — key 47, v0 (KIP-496).

Behaviour: not the coordinator → NOT_COORDINATOR; no such group → GROUP_ID_NOT_FOUND; a
non-empty classic group that does not use the consumer protocol → NON_EMPTY_GROUP (all top
level). Per partition: an unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION; a topic the
group subscribes to (classic consumer-protocol subscriptions, KIP-848 names and regexes) →
GROUP_SUBSCRIBED_TO_TOPIC; otherwise the committed offset (if any) is deleted and NONE.
Version notes: one version. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.offsets import offset_store
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponse_OffsetDeleteResponsePartition,
    OffsetDeleteResponse_OffsetDeleteResponseTopic,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.OFFSET_DELETE
VERSIONS = (0, 0)


@fitted
def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not is_coordinator(ctx, req.group_id):
        return OffsetDeleteResponse(error_code=ErrorCode.NOT_COORDINATOR)
    try:
        subscribed = coordinator(ctx).offset_delete_subscriptions(req.group_id)
    except KafkaError as exc:
        return OffsetDeleteResponse(error_code=exc.code)
    store = offset_store(ctx.core)
    topics = []
    for rt in req.topics:
        t = ctx.core.cluster.topics.get(rt.name)
        parts = []
        for rp in rt.partitions:
            if topic_denied(ctx, AclOperation.READ, rt.name):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif t is None or not 0 <= rp.partition_index < len(t.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif rt.name in subscribed:
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                store.delete(req.group_id, rt.name, rp.partition_index)
                code = ErrorCode.NONE
            parts.append(OffsetDeleteResponse_OffsetDeleteResponsePartition(partition_index=rp.partition_index,
                                                                            error_code=code))
        topics.append(OffsetDeleteResponse_OffsetDeleteResponseTopic(name=rt.name, partitions=parts))
    return OffsetDeleteResponse(topics=topics)


@fitted
def error_response(ctx: RequestContext, req: OffsetDeleteRequest, code: int) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code)
