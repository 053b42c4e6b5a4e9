"""DescribeTopicPartitions — key 75, v0 (KIP-966).

Behaviour (DescribeTopicPartitionsRequestHandler, KRaftMetadataCache): an empty topic list
describes every topic; topics are answered by name order from the cursor's topic on (a cursor
naming a topic missing from a non-empty list, or a negative cursor partition → INVALID_REQUEST
for the whole request); at most min(ResponsePartitionLimit, max.request.partition.size.limit
= 2000), at least 1, partitions are answered, and NextCursor names where the next request
continues (the next partition of a cut topic, or partition 0 of the next topic). A named topic
that does not exist → UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal
name), left out when all topics were asked for. Partitions carry leader (-1 when its broker is
down), leader epoch, replicas, ISR and offline replicas as Metadata does, and empty
eligible-leader lists (no ELR without replication). Topic authorized operations: Kafka's
topic set.
Deviations: ISR = the live replicas (single-replica storage, as in Metadata).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.handlers._auth import AclOperation, ResourceType, authorized_operations, topic_denied
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponse_DescribeTopicPartitionsResponsePartition,
)
from kwire.protocol.primitives import ZERO_UUID
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.cluster import Topic

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
VERSIONS = (0, 0)

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # max.request.partition.size.limit's default

Resp = DescribeTopicPartitionsResponse
TopicResp = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
PartResp = DescribeTopicPartitionsResponse_DescribeTopicPartitionsResponsePartition


def _partitions(ctx: RequestContext, t: Topic, start: int, count: int) -> list[PartResp]:
    nodes = ctx.core.cluster.nodes
    out = []
    for p in t.partitions[start:start + count]:
        offline_log = p.log.offline is not None
        live = [r for r in p.replicas if r in nodes and nodes[r].up and not offline_log]
        leader = p.leader_id if p.leader_id in nodes and nodes[p.leader_id].up and not offline_log else -1
        out.append(PartResp(error_code=ErrorCode.NONE, partition_index=p.index, leader_id=leader,
                            leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas), isr_nodes=live,
                            eligible_leader_replicas=[], last_known_elr=[],
                            offline_replicas=[r for r in p.replicas if r not in live]))
    return out


def handle(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    try:
        return _describe(ctx, req)
    except KafkaError as exc:  # a bad cursor refuses the whole request (getErrorResponse)
        return error_response(ctx, req, exc.code)


def _describe(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    cluster = ctx.core.cluster
    everything = not req.topics
    cursor = req.cursor
    first = cursor.topic_name if cursor is not None else ""
    names = set(cluster.topics) if everything else {t.name for t in req.topics}
    names = {n for n in names if n >= first}
    if cursor is not None and not everything and cursor.topic_name not in names:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "DescribeTopicPartitionsRequest topic list should contain the "
                                                    f"cursor topic: {cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "DescribeTopicPartitionsRequest cursor partition must be valid")
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, req.response_partition_limit), 1)
    resp = Resp(topics=[], next_cursor=None)
    # ACL-3: topics it may not describe are not looked up (named ones answer TOPIC_AUTHORIZATION_FAILED, last)
    denied = sorted(n for n in names if topic_denied(ctx, AclOperation.DESCRIBE, n))
    for name in sorted(names.difference(denied)):
        if remaining == 0:
            resp.next_cursor = Resp.Cursor(topic_name=name, partition_index=0)
            break
        t = cluster.topics.get(name)
        if t is None:
            if not everything:
                try:
                    validate_topic_name(name)
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                except KafkaError:
                    code = ErrorCode.INVALID_TOPIC_EXCEPTION
                resp.topics.append(TopicResp(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=False,
                                             partitions=[], topic_authorized_operations=authorized_operations(
                                                 ctx, ResourceType.TOPIC, name)))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        parts = _partitions(ctx, t, start, remaining)
        resp.topics.append(TopicResp(error_code=ErrorCode.NONE, name=name, topic_id=t.topic_id, is_internal=t.internal,
                                     partitions=parts,
                                     topic_authorized_operations=authorized_operations(ctx, ResourceType.TOPIC, name)))
        end = start + len(parts)
        if end < len(t.partitions):
            resp.next_cursor = Resp.Cursor(topic_name=name, partition_index=end)
            break
        remaining -= len(parts)
    if not everything:
        resp.topics.extend(TopicResp(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, topic_id=ZERO_UUID,
                                     is_internal=False, partitions=[]) for n in denied)
    return resp


def error_response(ctx: RequestContext, req: DescribeTopicPartitionsRequest,
                   code: int) -> DescribeTopicPartitionsResponse:
    return Resp(topics=[TopicResp(error_code=code, name=t.name, topic_id=ZERO_UUID, partitions=[])
                        for t in req.topics])
