"""ListOffsets — key 2, v1–11.

Behaviour (UnifiedLog.fetchOffsetByTimestamp, Partition/ReplicaManager.fetchOffsetForTimestamp):
timestamp -1 latest (the LSO for read_committed) with the current leader epoch; -2 earliest
with the earliest cached epoch when it covers the log start; -3 (v7+) the first record with
the largest timestamp, with that batch's timestamp and epoch; -4 earliest local (v8+, =
earliest without remote storage); -5 latest tiered (v9+, none here: offset -1, epoch -1); a
timestamp ≥ 0 gives the first record (not batch) whose timestamp is at or after it, with its
own timestamp and its batch's epoch. A found offset at or past the fetchable offset (high
watermark, or LSO under read_committed) is answered as not found (-1). Not the leader →
NOT_LEADER_OR_FOLLOWER; leader epoch checks (v4+). Duplicate partitions in one request →
INVALID_REQUEST for them.
Deviations: none known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.log import UNDEFINED_EPOCH
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import leader_epoch_error
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequest_ListOffsetsPartition,
    ListOffsetsResponse,
    ListOffsetsResponse_ListOffsetsPartitionResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = (1, 11)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
PR = ListOffsetsResponse_ListOffsetsPartitionResponse


def _one(ctx: RequestContext, topic: str, rp: ListOffsetsRequest_ListOffsetsPartition, committed: bool) -> PR:
    core = ctx.core
    r = PR(partition_index=rp.partition_index, timestamp=-1, offset=-1, leader_epoch=-1)
    p = core.cluster.partition(topic, rp.partition_index)
    if topic_denied(ctx, AclOperation.DESCRIBE, topic):
        r.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return r
    if p is None:
        r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return r
    injected = core.faults.partition_error(API_KEY, ctx.broker_id, topic, p.index) if core.faults.rules else None
    code = injected if injected is not None else leader_epoch_error(ctx, p, rp.current_leader_epoch)
    if code:
        r.error_code = code
        return r
    log = p.log
    ts = rp.timestamp
    # Partition.fetchOffsetForTimestamp: what a client may read (the LSO under read_committed).
    fetchable = log.last_stable_offset if committed else log.high_watermark
    epoch = UNDEFINED_EPOCH
    if ts == LATEST:
        r.offset, epoch = fetchable, p.leader_epoch
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        # The earliest cached epoch, when it covers the log start (UnifiedLog.fetchOffsetByTimestamp).
        r.offset = log.log_start_offset
        if log.epochs and log.epochs[0][1] <= log.log_start_offset:
            epoch = log.epochs[0][0]
    elif ts == LATEST_TIERED:
        r.offset = -1  # no remote storage
    elif ts == MAX_TIMESTAMP or ts >= 0:
        found = log.max_timestamp() if ts == MAX_TIMESTAMP else log.offset_for_timestamp(ts)
        # ReplicaManager.fetchOffset: a record at or past the fetchable offset is not answered.
        if found is not None and found[0] < fetchable:
            r.offset, r.timestamp, epoch = found
    else:
        r.error_code = ErrorCode.UNSUPPORTED_VERSION if ts > -10 else ErrorCode.INVALID_REQUEST
        return r
    if ctx.api_version >= 4:
        r.leader_epoch = epoch
    return r


def handle(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    committed = req.isolation_level == 1
    topics = []
    for rt in req.topics:
        seen: dict[int, int] = {}
        for rp in rt.partitions:
            seen[rp.partition_index] = seen.get(rp.partition_index, 0) + 1
        parts = []
        for rp in rt.partitions:
            if seen[rp.partition_index] > 1:
                parts.append(PR(partition_index=rp.partition_index, error_code=ErrorCode.INVALID_REQUEST,
                                timestamp=-1, offset=-1))
            else:
                parts.append(_one(ctx, rt.name, rp, committed))
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=rt.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def error_response(ctx: RequestContext, req: ListOffsetsRequest, code: int) -> ListOffsetsResponse:
    return ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name=rt.name, partitions=[
        PR(partition_index=rp.partition_index, error_code=code, timestamp=-1, offset=-1) for rp in rt.partitions])
        for rt in req.topics])
