"""AlterShareGroupOffsets — key 91, v0 (KIP-932).

Behaviour: share.version below 1 → UNSUPPORTED_VERSION; not the coordinator → NOT_COORDINATOR;
the id held by another group type → GROUP_ID_NOT_FOUND; a share group with members →
NON_EMPTY_GROUP (offsets change only while the group is empty); an unknown id makes an empty
share group. Per partition: unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION; otherwise
the share partition forgets its in-flight records and starts at StartOffset (at least the log
start offset).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.share_coordinator import share_coordinator, share_enabled
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._groups import fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)
from kwire.protocol.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsResponse_AlterShareGroupOffsetsResponsePartition as Part,
)
from kwire.protocol.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsResponse_AlterShareGroupOffsetsResponseTopic as Topic,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


def _top(code: int, message: str | None = None) -> AlterShareGroupOffsetsResponse:
    return AlterShareGroupOffsetsResponse(error_code=code, error_message=message)


@fitted
def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    if not share_enabled(ctx.core):
        return _top(ErrorCode.UNSUPPORTED_VERSION)
    if not is_coordinator(ctx, req.group_id):
        return _top(ErrorCode.NOT_COORDINATOR)
    share = share_coordinator(ctx.core)
    try:
        group = share.group_for_offsets(req.group_id, create=True)
    except KafkaError as exc:
        return _top(exc.code, exc.message or None)
    if group.members:
        return _top(ErrorCode.NON_EMPTY_GROUP, f"Share group {req.group_id} has members; offsets change only "
                                               f"while it is empty.")
    topics = ctx.core.cluster.topics
    out = []
    for t in req.topics:
        topic = topics.get(t.topic_name)
        tr = Topic(topic_name=t.topic_name, topic_id=topic.topic_id if topic is not None else Topic().topic_id)
        for p in t.partitions:
            if topic_denied(ctx, AclOperation.READ, t.topic_name):
                tr.partitions.append(Part(partition_index=p.partition_index,
                                          error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                tr.partitions.append(Part(partition_index=p.partition_index,
                                          error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            share.alter_start_offset(req.group_id, t.topic_name, p.partition_index, p.start_offset)
            tr.partitions.append(Part(partition_index=p.partition_index))
        out.append(tr)
    return AlterShareGroupOffsetsResponse(responses=out)


@fitted
def error_response(ctx: RequestContext, req: AlterShareGroupOffsetsRequest, code: int) -> AlterShareGroupOffsetsResponse:
    return _top(code)
