"""OffsetCommit — key 8, v2–10 (KIP-98 leader epochs, KIP-345 static members, KIP-848 member
epochs, topic ids in v10).

Behaviour: per partition, an unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION (unknown
topic id → UNKNOWN_TOPIC_ID in v10). The remaining partitions share one group verdict: not the
coordinator → NOT_COORDINATOR; no such group → accepted with generation -1 (a "simple" commit
creates an empty classic group), else ILLEGAL_GENERATION (v9+: GROUP_ID_NOT_FOUND). Classic
groups: an unknown member → UNKNOWN_MEMBER_ID, a fenced static instance → FENCED_INSTANCE_ID,
a stale generation → ILLEGAL_GENERATION, CompletingRebalance → REBALANCE_IN_PROGRESS;
generation -1 without a member is accepted only while the group is Empty. KIP-848 groups: the
member must exist (UNKNOWN_MEMBER_ID), use v9+ (UNSUPPORTED_VERSION) and send its current
member epoch (STALE_MEMBER_EPOCH). Metadata over 4096 bytes → OFFSET_METADATA_TOO_LARGE.
Committed: offset, leader epoch (v6+, else -1) and metadata (null stored as "").
Version notes: v2–4 RetentionTimeMs is ignored (as upstream does since 2.1); v7+
GroupInstanceId; v9+ GenerationIdOrMemberEpoch is a member epoch for KIP-848 groups; v10
names topics by id. Deviations: committed offsets never expire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.offsets import DEFAULT_OFFSET_METADATA_MAX_BYTES, CommittedOffset, offset_store
from kwire.broker.handlers._auth import AclOperation, authorize_topic
from kwire.broker.handlers._common import resolve_topic
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponse_OffsetCommitResponsePartition,
    OffsetCommitResponse_OffsetCommitResponseTopic,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = (2, 10)

_Topic = OffsetCommitResponse_OffsetCommitResponseTopic
_Partition = OffsetCommitResponse_OffsetCommitResponsePartition


@fitted
def handle(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    v = ctx.api_version
    by_id = v >= 10
    group_code: int = ErrorCode.NONE
    if not is_coordinator(ctx, req.group_id):
        group_code = ErrorCode.NOT_COORDINATOR
    else:
        try:
            coordinator(ctx).validate_offset_commit(
                req.group_id, req.member_id, req.group_instance_id if v >= 7 else None,
                req.generation_id_or_member_epoch, v)
        except KafkaError as exc:
            group_code = exc.code
    store = offset_store(ctx.core)
    now = ctx.now_ms
    topics = []
    for rt in req.topics:
        t, topic_code = resolve_topic(ctx, rt.name, rt.topic_id, by_id)
        t, topic_code = authorize_topic(ctx, AclOperation.READ, None if by_id else rt.name, t, topic_code)
        parts = []
        for rp in rt.partitions:
            code: int
            if t is None:
                code = topic_code
            elif not 0 <= rp.partition_index < len(t.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif group_code:
                code = group_code
            elif rp.committed_metadata is not None and len(rp.committed_metadata) > DEFAULT_OFFSET_METADATA_MAX_BYTES:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                try:
                    store.commit(req.group_id, t.name, rp.partition_index, CommittedOffset(
                        rp.committed_offset, rp.committed_leader_epoch if v >= 6 else -1,
                        rp.committed_metadata or "", now))
                    code = ErrorCode.NONE
                except KafkaError as exc:  # not persisted: never acknowledged
                    code = exc.code
            parts.append(_Partition(partition_index=rp.partition_index, error_code=code))
        topics.append(_Topic(name=rt.name, topic_id=rt.topic_id, partitions=parts))
    return OffsetCommitResponse(topics=topics)


@fitted
def error_response(ctx: RequestContext, req: OffsetCommitRequest, code: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[
        _Topic(name=rt.name, topic_id=rt.topic_id,
               partitions=[_Partition(partition_index=p.partition_index, error_code=code) for p in rt.partitions])
        for rt in req.topics])
