"""OffsetForLeaderEpoch — key 23, v2–4 (KIP-101, KIP-279, KIP-320).

Behaviour, per partition in the leader's order: unknown topic or partition →
UNKNOWN_TOPIC_OR_PARTITION; a current leader epoch newer than the partition's →
UNKNOWN_LEADER_EPOCH, older → FENCED_LEADER_EPOCH (-1 skips the check); not the leader →
NOT_LEADER_OR_FOLLOWER. Otherwise the answer comes from the partition's leader-epoch history
(LeaderEpochFileCache.endOffsetFor): the latest epoch ends at the log end offset; an older one
ends where the next known epoch starts, reported with the largest known epoch not above it; an
epoch newer than any known, or -1, → leader epoch -1 and end offset -1 (UNDEFINED_EPOCH_OFFSET).
The history grows when the leader changes (a leader move, a broker stopping) and when a batch
of a newer epoch is appended; DeleteRecords trims its front.
Version notes: v3+ carries the replica id (consumers send -1, followers their id: kwire has no
followers, so both are answered alike); v4 is the flexible version.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import epoch_error, leader_error
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponse_EpochEndOffset,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
VERSIONS = (2, 4)

EpochEndOffset = OffsetForLeaderEpochResponse_EpochEndOffset


def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    core = ctx.core
    topics = []
    for t in req.topics:
        topic = core.cluster.topics.get(t.topic)
        parts = []
        for rp in t.partitions:
            r = EpochEndOffset(error_code=ErrorCode.NONE, partition=rp.partition, leader_epoch=-1, end_offset=-1)
            parts.append(r)
            if topic_denied(ctx, AclOperation.DESCRIBE, t.topic):
                r.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if topic is None or not 0 <= rp.partition < len(topic.partitions):
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            p = topic.partitions[rp.partition]
            injected = core.faults.partition_error(API_KEY, ctx.broker_id, topic.name, p.index) \
                if core.faults.rules else None
            code = injected if injected is not None else (epoch_error(p, rp.current_leader_epoch)
                                                          or leader_error(ctx, p))
            if code:
                r.error_code = code
                continue
            r.leader_epoch, r.end_offset = p.log.end_offset_for_epoch(rp.leader_epoch)
        topics.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(topics=topics)


def error_response(ctx: RequestContext, req: OffsetForLeaderEpochRequest, code: int) -> OffsetForLeaderEpochResponse:
    return OffsetForLeaderEpochResponse(topics=[
        OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            EpochEndOffset(error_code=code, partition=p.partition, leader_epoch=-1, end_offset=-1)
            for p in t.partitions])
        for t in req.topics
    ])
