"""DeleteRecords — key 21, v0–2 (KIP-107).

Behaviour, per partition in the leader's order: unknown topic or partition →
UNKNOWN_TOPIC_OR_PARTITION; not the leader → NOT_LEADER_OR_FOLLOWER; a topic whose
``cleanup.policy`` lacks "delete" → POLICY_VIOLATION; offset -1 means the high watermark;
another negative offset, or one beyond the high watermark → OFFSET_OUT_OF_RANGE. Otherwise the
log start offset moves forward to the offset (never back) and the answer's low watermark is
the new log start offset; whole batches below it are dropped, and fetches below it are out of
range from then on. With a data dir, the new log start offset is persisted.
Version notes: v2 is the flexible version only.
Deviations: none (with one replica the answer does not wait for followers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import leader_error
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponse_DeleteRecordsPartitionResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DELETE_RECORDS
VERSIONS = (0, 2)

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
PartitionResult = DeleteRecordsResponse_DeleteRecordsPartitionResult


def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    core = ctx.core
    moved = False
    topics = []
    for t in req.topics:
        topic = core.cluster.topics.get(t.name)
        parts = []
        for rp in t.partitions:
            r = PartitionResult(partition_index=rp.partition_index, low_watermark=-1, error_code=ErrorCode.NONE)
            parts.append(r)
            if topic_denied(ctx, AclOperation.DELETE, t.name):
                r.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if topic is None or not 0 <= rp.partition_index < len(topic.partitions):
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            p = topic.partitions[rp.partition_index]
            injected = core.faults.partition_error(API_KEY, ctx.broker_id, topic.name, p.index) \
                if core.faults.rules else None
            code = injected if injected is not None else leader_error(ctx, p)
            if code:
                r.error_code = code
                continue
            policy = core.configs.get(ResourceType.TOPIC, topic.name, "cleanup.policy") or ""
            if "delete" not in [x.strip() for x in policy.split(",")]:
                r.error_code = ErrorCode.POLICY_VIOLATION
                continue
            log = p.log
            offset = log.high_watermark if rp.offset == HIGH_WATERMARK else rp.offset
            if offset < 0 or offset > log.high_watermark:
                r.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                continue
            if offset > log.log_start_offset:
                log.truncate_before(offset)
                moved = True
            r.low_watermark = log.log_start_offset
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    if moved:
        core.metadata_changed()
    return DeleteRecordsResponse(topics=topics)


def error_response(ctx: RequestContext, req: DeleteRecordsRequest, code: int) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(topics=[
        DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=[
            PartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=code)
            for p in t.partitions])
        for t in req.topics
    ])
