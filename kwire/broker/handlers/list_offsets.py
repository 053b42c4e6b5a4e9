"""ListOffsets — key 2, v1–11.

Behaviour: timestamp -1 latest (the LSO for read_committed), -2 earliest, -3 the offset of
the largest timestamp (v7+), -4 earliest local (v8+, = earliest here), -5 latest tiered (v9+,
none here: offset -1); a timestamp ≥ 0 gives the first offset whose batch has a timestamp at
or after it (offset -1 if none). Not the leader → NOT_LEADER_OR_FOLLOWER; leader epoch
checks (v4+). Duplicate partitions in one request → INVALID_REQUEST for them.
Deviations: timestamp search is at batch granularity (as Kafka's time index).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._common import epoch_error, leader_error
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
    if p is None:
        r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return r
    injected = core.faults.partition_error(API_KEY, ctx.broker_id, topic, p.index) if core.faults.rules else None
    code = injected if injected is not None else (leader_error(ctx, p) or epoch_error(p, rp.current_leader_epoch))
    if code:
        r.error_code = code
        return r
    log = p.log
    ts = rp.timestamp
    if ts == LATEST:
        r.offset = log.last_stable_offset if committed else log.high_watermark
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        r.offset = log.log_start_offset
    elif ts == LATEST_TIERED:
        r.offset = -1
    elif ts == MAX_TIMESTAMP:
        found = log.max_timestamp()
        if found is not None:
            r.offset, r.timestamp = found
    elif ts >= 0:
        hit = log.offset_for_timestamp(ts)
        if hit is not None:
            r.offset, r.timestamp = hit
    else:
        r.error_code = ErrorCode.UNSUPPORTED_VERSION if ts > -10 else ErrorCode.INVALID_REQUEST
        return r
    if ctx.api_version >= 4:
        r.leader_epoch = p.leader_epoch
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
