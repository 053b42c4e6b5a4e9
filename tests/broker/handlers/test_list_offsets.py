"""ListOffsets through the core: exact records by timestamp, MAX_TIMESTAMP, and the epochs answered.

What these tests rely on (Apache Kafka, read through the search tools):
- ``UnifiedLog.searchOffsetInLocalLog`` picks the first segment whose largest timestamp is at or
  after the target, and ``FileRecords.searchForTimestamp`` walks *into* the first batch whose max
  timestamp is, returning the first record whose own timestamp is and whose offset is at or
  above the log start, with that record's timestamp and the batch's partition leader epoch.
- ``UnifiedLog.fetchOffsetByTimestamp`` for MAX_TIMESTAMP: the segment with the largest
  timestamp, its first batch with that max timestamp, ``RecordBatch.offsetOfMaxTimestamp`` (the
  first record carrying it), the batch's max timestamp and leader epoch.
- EARLIEST answers the earliest cached epoch when it starts at or before the log start offset;
  LATEST answers the current leader epoch (``Partition.fetchOffsetForTimestamp``).
"""

from __future__ import annotations

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_records import DeleteRecordsRequest
from kwire.protocol.messages.list_offsets import ListOffsetsRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import BatchBuilder, Compression
from tests.broker.helpers import START_MS, CoreClient, make_core

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _batch(timestamps: list[int], *, compression: Compression = Compression.NONE) -> bytes:
    b = BatchBuilder(0, compression=compression)
    for i, ts in enumerate(timestamps):
        b.append(b"v%d" % i, timestamp_ms=ts)
    return b.build()


def _produce(c: CoreClient, records: bytes, topic: str = "t") -> None:
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    resp = c.send(req, 9)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def _lookup(c: CoreClient, ts: int, topic: str = "t", version: int = 8) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) answered for ``ts``."""
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts,
                                                                         current_leader_epoch=-1)])])
    p = c.send(req, version).topics[0].partitions[0]
    assert p.error_code == ErrorCode.NONE
    return p.offset, p.timestamp, p.leader_epoch


def _client() -> CoreClient:
    core, _ = make_core()
    core.create_topic("t", 1)
    return CoreClient(core)


def test_timestamp_inside_a_batch_finds_the_exact_record_not_the_batch_start() -> None:
    c = _client()
    _produce(c, _batch([START_MS, START_MS + 10, START_MS + 20]))
    assert _lookup(c, START_MS + 10)[:2] == (1, START_MS + 10)
    assert _lookup(c, START_MS + 11)[:2] == (2, START_MS + 20)
    assert _lookup(c, START_MS)[:2] == (0, START_MS)
    assert _lookup(c, START_MS + 21)[:2] == (-1, -1)


def test_timestamp_search_returns_the_first_record_at_or_after_the_target_in_offset_order() -> None:
    """Out-of-order CreateTime timestamps: the first record in offset order that qualifies wins."""
    c = _client()
    _produce(c, _batch([START_MS + 5, START_MS + 1, START_MS + 3]))
    assert _lookup(c, START_MS + 2)[:2] == (0, START_MS + 5)
    assert _lookup(c, START_MS + 1)[:2] == (0, START_MS + 5)
    _produce(c, _batch([START_MS + 1, START_MS + 9]))
    assert _lookup(c, START_MS + 6)[:2] == (4, START_MS + 9)


def test_timestamp_search_walks_into_compressed_batches() -> None:
    c = _client()
    _produce(c, _batch([START_MS + i for i in range(50)], compression=Compression.LZ4))
    assert _lookup(c, START_MS + 37)[:2] == (37, START_MS + 37)


def test_max_timestamp_is_the_first_record_carrying_it_with_the_batch_timestamp() -> None:
    c = _client()
    _produce(c, _batch([START_MS, START_MS + 1]))
    _produce(c, _batch([START_MS + 2, START_MS + 50, START_MS + 3, START_MS + 50]))
    _produce(c, _batch([START_MS + 10, START_MS + 11]))
    # Not the batch's last offset (5): the first record with the largest timestamp.
    assert _lookup(c, MAX_TIMESTAMP, version=7)[:2] == (3, START_MS + 50)


def test_max_timestamp_on_an_empty_partition_is_not_found() -> None:
    c = _client()
    assert _lookup(c, MAX_TIMESTAMP, version=7)[:2] == (-1, -1)


def test_log_append_time_answers_the_broker_time() -> None:
    core, clock = make_core()
    core.create_topic("t", 1, configs={"message.timestamp.type": "LogAppendTime"})
    c = CoreClient(core)
    _produce(c, _batch([START_MS - 1000, START_MS - 999]))
    first = clock.now_ms()
    clock.advance(500)
    _produce(c, _batch([START_MS - 5000]))
    assert _lookup(c, first + 1)[:2] == (2, first + 500)
    assert _lookup(c, MAX_TIMESTAMP, version=7)[:2] == (2, first + 500)
    assert _lookup(c, first)[:2] == (0, first)


def test_records_below_the_log_start_offset_are_never_answered() -> None:
    c = _client()
    _produce(c, _batch([START_MS, START_MS + 10, START_MS + 20]))
    req = DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)])])
    assert c.send(req, 2).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert _lookup(c, START_MS)[:2] == (2, START_MS + 20)
    assert _lookup(c, EARLIEST)[:2] == (2, -1)


def test_epochs_answered_are_the_batch_epoch_for_lookups_and_current_for_latest() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1, replication_factor=2)
    p = core.cluster.partition("t", 0)
    assert p is not None
    c = CoreClient(core, p.leader_id)
    _produce(c, _batch([START_MS, START_MS + 1]))
    old_epoch = p.leader_epoch
    other = next(n for n in p.replicas if n != p.leader_id)
    core.cluster.move_leader("t", 0, other)
    c = CoreClient(core, other)
    _produce(c, _batch([START_MS + 2]))
    assert p.leader_epoch > old_epoch
    assert _lookup(c, START_MS + 1) == (1, START_MS + 1, old_epoch)
    assert _lookup(c, START_MS + 2) == (2, START_MS + 2, p.leader_epoch)
    assert _lookup(c, MAX_TIMESTAMP, version=7) == (2, START_MS + 2, p.leader_epoch)
    assert _lookup(c, LATEST) == (3, -1, p.leader_epoch)
    assert _lookup(c, EARLIEST) == (0, -1, old_epoch)
    # Before v4 there is no leader epoch in the answer.
    assert _lookup(c, START_MS + 1, version=3)[2] == -1
