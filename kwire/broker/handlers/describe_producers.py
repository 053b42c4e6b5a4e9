"""DescribeProducers — key 61, v0 (KIP-664).

Behaviour, per partition: unknown topic or partition → UNKNOWN_TOPIC_OR_PARTITION; this broker
not its leader → NOT_LEADER_OR_FOLLOWER; otherwise every producer the partition's producer
state holds: id, epoch, last sequence and timestamp (-1 with no batch retained), coordinator
epoch, and the first offset of its open transaction (-1 when none).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.txn_coordinator import describe_producers
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import error_message, leader_error
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_producers import DescribeProducersRequest, DescribeProducersResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_PRODUCERS
VERSIONS = (0, 0)

R = DescribeProducersResponse


def handle(ctx: RequestContext, req: DescribeProducersRequest) -> DescribeProducersResponse:
    topics = ctx.core.cluster.topics
    out = []
    for t in req.topics:
        rows = []
        topic = topics.get(t.name)
        for index in t.partition_indexes:
            if topic_denied(ctx, AclOperation.READ, t.name):
                code: int = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= index < len(topic.partitions):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = leader_error(ctx, topic.partitions[index])
            if code or topic is None:
                rows.append(R.PartitionResponse(partition_index=index, error_code=code,
                                                error_message=error_message(code), active_producers=[]))
                continue
            rows.append(R.PartitionResponse(partition_index=index, active_producers=[
                R.ProducerState(producer_id=p.producer_id, producer_epoch=p.producer_epoch,
                                last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                                coordinator_epoch=p.coordinator_epoch,
                                current_txn_start_offset=p.current_txn_start_offset)
                for p in describe_producers(topic.partitions[index])]))
        out.append(R.TopicResponse(name=t.name, partitions=rows))
    return R(topics=out)


def error_response(ctx: RequestContext, req: DescribeProducersRequest, code: int) -> DescribeProducersResponse:
    return R(topics=[R.TopicResponse(name=t.name, partitions=[
        R.PartitionResponse(partition_index=i, error_code=code, active_producers=[]) for i in t.partition_indexes])
        for t in req.topics])
