"""Log retention (cleanup.policy=delete): segments roll on append, whole segments leave the front
when the clock passes a retention check, and clients see the log start move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kwire.broker.core.log import PartitionLog
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.list_offsets import ListOffsetsRequest
from tests.broker.handlers.test_produce_fetch import fetch_req, pr, produce, records_of
from tests.broker.helpers import START_MS, CoreClient, batch, make_core

CHECK_MS = 300_000  # log.retention.check.interval.ms default


def _earliest(c: CoreClient, topic: str) -> int:
    r = c.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2, current_leader_epoch=-1)])]), 7)
    return r.topics[0].partitions[0].offset  # type: ignore[no-any-return]


def _three_batches_then_a_check(core: Any, clock: Any) -> None:
    c = CoreClient(core)
    for _ in range(3):
        produce(c, "t", 0, batch([b"x"], timestamp_ms=START_MS))
    clock.advance(CHECK_MS)
    core.fire_due()


def _setup(**configs: str) -> tuple[Any, Any, CoreClient, PartitionLog]:
    core, clock = make_core()
    core.create_topic("t", 1, configs=configs)
    return core, clock, CoreClient(core), core.cluster.topics["t"].partitions[0].log


def test_segments_roll_at_segment_bytes() -> None:
    one = len(batch([b"x" * 300]))
    _, _, c, log = _setup(**{"segment.bytes": str(2 * one)})
    for i in range(5):
        produce(c, "t", 0, batch([b"x" * 300], timestamp_ms=START_MS + i))
    assert [(s.base_offset, s.size) for s in log.segments] == [(0, 2 * one), (2, 2 * one), (4, one)]


def test_size_retention_deletes_whole_segments_from_the_front_at_the_check() -> None:
    one = len(batch([b"x" * 300]))
    core, clock, c, log = _setup(**{"segment.bytes": str(2 * one), "retention.bytes": str(3 * one)})
    for i in range(7):
        produce(c, "t", 0, batch([b"x" * 300], timestamp_ms=START_MS + i))
    assert log.log_start_offset == 0
    clock.advance(CHECK_MS - 1)
    core.fire_due()
    assert log.log_start_offset == 0  # nothing before the check interval
    clock.advance(1)
    core.fire_due()
    # 7 batches in segments of 2: [0,1] [2,3] [4,5] [6]; keeping >= 3 batches drops the first two.
    assert log.log_start_offset == 4 and log.size_bytes == 3 * one
    assert _earliest(c, "t") == 4
    part = c.send(fetch_req("t", 0, 0), 11).responses[0].partitions[0]
    assert (part.error_code, part.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, 4)
    assert [o for o, _ in records_of(c.send(fetch_req("t", 0, 4), 11))] == [4, 5, 6]
    assert core.subsystems.retention.deleted_segments == 2


def test_time_retention_uses_the_newest_record_of_each_segment() -> None:
    one = len(batch([b"x"]))
    core, clock, c, log = _setup(**{"segment.bytes": str(2 * one), "retention.ms": "360000"})
    now = clock.now_ms()
    for ts in (now - 200_000, now - 100_000, now - 90_000, now + 0):
        produce(c, "t", 0, batch([b"x"], timestamp_ms=ts))
    clock.advance(CHECK_MS)
    core.fire_due()
    # At the check (5 min on) [-200 s, -100 s] has its newest record 400 s old, past 6 min;
    # [-90 s, now] has its newest 300 s old and stays.
    assert log.log_start_offset == 2
    clock.advance(CHECK_MS)
    core.fire_due()
    # Now every record is older than 6 min: the active segment is rolled and everything goes.
    assert (log.log_start_offset, log.log_end_offset, log.batches) == (4, 4, [])
    assert [(s.base_offset, s.size) for s in log.segments] == [(4, 0)]
    assert pr(produce(c, "t", 0, batch([b"new"], timestamp_ms=clock.now_ms()))).base_offset == 4
    assert records_of(c.send(fetch_req("t", 0, 4), 11)) == [(4, b"new")]


def test_compacted_topics_and_default_retention_keep_everything() -> None:
    one = len(batch([b"x"]))
    core, clock = make_core()
    core.create_topic("compact", 1, configs={"cleanup.policy": "compact", "retention.ms": "1",
                                             "segment.bytes": str(one)})
    core.create_topic("plain", 1, configs={"segment.bytes": str(one)})
    c = CoreClient(core)
    for topic in ("compact", "plain"):
        for _ in range(3):
            produce(c, topic, 0, batch([b"x"], timestamp_ms=START_MS))
    clock.advance(CHECK_MS)
    core.fire_due()
    assert [core.cluster.topics[t].partitions[0].log.log_start_offset for t in ("compact", "plain")] == [0, 0]


def test_broker_wide_retention_applies_to_topics_without_their_own() -> None:
    one = len(batch([b"x"]))
    core, clock = make_core(settings={"log.retention.bytes": str(one), "log.segment.bytes": str(one)})
    core.create_topic("t", 1)
    _three_batches_then_a_check(core, clock)
    assert core.cluster.topics["t"].partitions[0].log.log_start_offset == 2


def test_delete_records_inside_a_segment_keeps_the_segment_accounting() -> None:
    one = len(batch([b"x"]))
    _, _, c, log = _setup(**{"segment.bytes": str(3 * one)})
    for _ in range(5):
        produce(c, "t", 0, batch([b"x"], timestamp_ms=START_MS))
    log.truncate_before(1)
    assert [(s.base_offset, s.size) for s in log.segments] == [(0, 2 * one), (3, 2 * one)]
    log.truncate_before(4)
    assert [(s.base_offset, s.size) for s in log.segments] == [(3, one)]
    assert log.size_bytes == sum(s.size for s in log.segments)


def test_retention_survives_a_restart(tmp_path: Path) -> None:
    one = len(batch([b"x"]))
    core, clock = make_core(data_dir=str(tmp_path))
    core.create_topic("t", 1, configs={"segment.bytes": str(one), "retention.bytes": str(one)})
    _three_batches_then_a_check(core, clock)
    assert core.cluster.topics["t"].partitions[0].log.log_start_offset == 2
    core.close()
    core2, _ = make_core(data_dir=str(tmp_path))
    log2 = core2.cluster.topics["t"].partitions[0].log
    assert (log2.log_start_offset, log2.log_end_offset) == (2, 3)
    assert records_of(CoreClient(core2).send(fetch_req("t", 0, 2), 11)) == [(2, b"x")]


def test_the_control_api_runs_retention_now_and_a_real_consumer_sees_the_new_start() -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kwire.control import Broker, BrokerConfig

    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("r", 1, configs={"segment.bytes": "14", "retention.bytes": "0"})
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(3):
            p.produce("r", b"v%d" % i, partition=0)
            assert p.flush(10) == 0  # one batch, one segment each
        assert b.run_retention() >= 2
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        low, high = c.get_watermark_offsets(TopicPartition("r", 0), timeout=10)
        assert (low, high) == (3, 3)
        c.close()


def test_segments_without_record_timestamps_are_not_expired_by_time() -> None:
    one = len(batch([b"x"]))
    core, clock, c, log = _setup(**{"segment.bytes": str(one), "retention.ms": "0"})
    produce(c, "t", 0, batch([b"x"], timestamp_ms=-1))
    produce(c, "t", 0, batch([b"x"], timestamp_ms=START_MS))
    produce(c, "t", 0, batch([b"x"], timestamp_ms=START_MS))
    clock.advance(CHECK_MS)
    core.fire_due()
    # The first segment has no timestamps: it stops time-based deletion at the front, as a
    # segment that is not yet expired would.
    assert log.log_start_offset == 0
