"""DeleteRecords through the core: the log start offset moves, -1 means the high watermark, refusals."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_records import DeleteRecordsRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.list_offsets import ListOffsetsRequest
from kwire.protocol.messages.produce import ProduceRequest
from tests.broker.helpers import CoreClient, batch, make_core


def produce(c: CoreClient, topic: str, values: list[bytes], partition: int = 0) -> None:
    resp = c.send(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=partition, records=batch(values, keys=[b"k"] * len(values)))])]), 9)
    assert resp.responses[0].partition_responses[0].error_code == 0


def delete(c: CoreClient, topic: str, offsets: dict[int, int], version: int = 2) -> dict[int, tuple[int, int]]:
    resp = c.send(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=topic, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
                                for p, o in offsets.items()])], timeout_ms=1000), version)
    assert resp.topics[0].name == topic
    return {p.partition_index: (p.error_code, p.low_watermark) for p in resp.topics[0].partitions}


def earliest(c: CoreClient, topic: str) -> int:
    resp = c.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)])]), 7)
    return resp.topics[0].partitions[0].offset


def fetch_error(c: CoreClient, topic: str, offset: int) -> int:
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
            partition_max_bytes=1 << 20)])]), 11)
    return resp.responses[0].partitions[0].error_code


@pytest.mark.parametrize("version", [0, 1, 2])
def test_log_start_offset_moves_and_is_the_low_watermark(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", [b"a", b"b", b"c"])
    produce(c, "t", [b"d"])
    assert delete(c, "t", {0: 2}, version) == {0: (ErrorCode.NONE, 2)}
    assert earliest(c, "t") == 2
    assert fetch_error(c, "t", 1) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch_error(c, "t", 2) == ErrorCode.NONE


def test_minus_one_deletes_up_to_the_high_watermark() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", [b"a", b"b"])
    assert delete(c, "t", {0: -1}) == {0: (ErrorCode.NONE, 2)}
    assert core.cluster.topics["t"].partitions[0].log.batches == []


def test_beyond_the_high_watermark_or_negative_is_offset_out_of_range() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", [b"a"])
    assert delete(c, "t", {0: 2}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert delete(c, "t", {0: -5}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert core.cluster.topics["t"].partitions[0].log.log_start_offset == 0


def test_the_log_start_offset_never_moves_back() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", [b"a", b"b", b"c"])
    delete(c, "t", {0: 2})
    assert delete(c, "t", {0: 1}) == {0: (ErrorCode.NONE, 2)}


def test_unknown_topic_partition_and_not_leader() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 2)
    c = CoreClient(core, broker_id=1)
    led_by_2 = next(p.index for p in core.cluster.topics["t"].partitions if p.leader_id == 2)
    assert delete(c, "nope", {0: 0}) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert delete(c, "t", {7: 0}) == {7: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert delete(c, "t", {led_by_2: 0})[led_by_2][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_compacted_topics_refuse_with_policy_violation() -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"cleanup.policy": "compact"})
    core.create_topic("both", 1, configs={"cleanup.policy": "compact,delete"})
    c = CoreClient(core)
    produce(c, "t", [b"a"])
    produce(c, "both", [b"a"])
    assert delete(c, "t", {0: 1})[0][0] == ErrorCode.POLICY_VIOLATION
    assert delete(c, "both", {0: 1}) == {0: (ErrorCode.NONE, 1)}
