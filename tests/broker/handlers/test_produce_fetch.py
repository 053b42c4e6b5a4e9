"""Produce and Fetch through the core: offsets, errors, idempotence, sessions, long polls."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import BatchBuilder, Compression, LegacyMessageSetBuilder, iter_batches
from tests.broker.helpers import CoreClient, batch, make_core


def produce(c: CoreClient, topic: str, partition: int, records: bytes, version: int = 9, acks: int = -1) -> object:
    req = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    return c.send(req, version)


def pr(resp: object) -> object:
    return resp.responses[0].partition_responses[0]  # type: ignore[attr-defined]


def fetch_req(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1,
              session_id: int = 0, session_epoch: int = -1, isolation_level: int = 0) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                        isolation_level=isolation_level, session_id=session_id, session_epoch=session_epoch,
                        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                            partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                            log_start_offset=-1, partition_max_bytes=1 << 20)])])


def records_of(resp: object) -> list[tuple[int, bytes]]:
    out = []
    for tr in resp.responses:  # type: ignore[attr-defined]
        for p in tr.partitions:
            for b in iter_batches(p.records):
                out.extend((r.offset, r.value) for r in b)
    return out


def test_produce_assigns_consecutive_offsets_and_fetch_returns_them() -> None:
    core, _ = make_core()
    core.create_topic("t", 2)
    c = CoreClient(core)
    assert pr(produce(c, "t", 0, batch([b"a", b"b"]))).base_offset == 0
    assert pr(produce(c, "t", 0, batch([b"c"]))).base_offset == 2
    resp = c.send(fetch_req("t", 0, 0), 11)
    part = resp.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 3, 3)
    assert records_of(resp) == [(0, b"a"), (1, b"b"), (2, b"c")]
    # From the middle of a batch the whole batch comes back (the client skips what it has).
    assert records_of(c.send(fetch_req("t", 0, 1), 11))[0][0] == 0


def test_stored_batch_keeps_the_client_bytes_except_offset_and_epoch() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    raw = batch([b"x"] * 3, compression=Compression.GZIP)
    produce(c, "t", 0, raw)
    produce(c, "t", 0, raw)
    stored = core.cluster.topics["t"].partitions[0].log.batches[1].data
    # Only the base offset and the leader epoch (outside the CRC, RB-1) differ from what the client sent.
    assert stored[8:12] == raw[8:12] and stored[16:] == raw[16:]
    assert list(iter_batches(stored))[0].base_offset == 3


@pytest.mark.rule("TX-10")
def test_produce_errors_per_partition() -> None:
    """TX-10: one magic-2 batch per partition, CRC checked; failures are per partition and store nothing."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert pr(produce(c, "nope", 0, batch([b"a"]))).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert pr(produce(c, "t", 5, batch([b"a"]))).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    corrupt = bytearray(batch([b"a"]))
    corrupt[-1] ^= 0xFF
    assert pr(produce(c, "t", 0, bytes(corrupt))).error_code == ErrorCode.CORRUPT_MESSAGE
    assert pr(produce(c, "t", 0, b"")).error_code == ErrorCode.INVALID_RECORD
    two = batch([b"a"]) + batch([b"b"])
    assert pr(produce(c, "t", 0, two)).error_code == ErrorCode.INVALID_RECORD
    zstd = batch([b"a"], compression=Compression.ZSTD)
    assert pr(produce(c, "t", 0, zstd, version=6)).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 0  # nothing was stored
    resp = produce(c, "t", 0, batch([b"a"]), acks=2)
    assert pr(resp).error_code == ErrorCode.INVALID_REQUIRED_ACKS


@pytest.mark.rule("RB-5")
def test_legacy_message_set_is_invalid_record_unless_upconversion_is_on() -> None:
    """RB-5: produce v3+ must carry magic 2; kwire can up-convert old producers' sets on request."""
    b = LegacyMessageSetBuilder(magic=1)
    b.append(b"old", key=b"k", timestamp_ms=123)
    legacy = b.build()
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert pr(produce(c, "t", 0, legacy)).error_code == ErrorCode.INVALID_RECORD
    core2, _ = make_core(settings={"kwire.legacy.produce.upconvert": "true"})
    core2.create_topic("t", 1)
    c2 = CoreClient(core2)
    assert pr(produce(c2, "t", 0, legacy)).error_code == 0
    got = list(iter_batches(core2.cluster.topics["t"].partitions[0].log.batches[0].data))
    assert got[0].magic == 2 and [(r.key, r.value) for r in got[0]] == [(b"k", b"old")]


def test_acks_zero_gets_no_response_but_is_stored() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert produce(c, "t", 0, batch([b"a"]), acks=0) is None
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 1


@pytest.mark.rule("TX-6")
@pytest.mark.rule("TX-9")
def test_idempotent_retry_is_answered_with_the_original_offset() -> None:
    """TX-6, TX-9: a duplicate of one of the last five batches is answered with success and its
    original offset (never DUPLICATE_SEQUENCE_NUMBER), and is not appended again."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    first = batch([b"a", b"b"], producer_id=7, producer_epoch=0, base_sequence=0)
    assert pr(produce(c, "t", 0, first)).base_offset == 0
    assert pr(produce(c, "t", 0, batch([b"c"], producer_id=7, producer_epoch=0, base_sequence=2))).base_offset == 2
    assert pr(produce(c, "t", 0, first)).base_offset == 0
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 3


@pytest.mark.rule("TX-8")
def test_sequence_gap_is_out_of_order() -> None:
    """TX-8: with the same epoch the next batch must start at last sequence + 1."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 0, batch([b"a"], producer_id=7, producer_epoch=0, base_sequence=0))
    resp = produce(c, "t", 0, batch([b"b"], producer_id=7, producer_epoch=0, base_sequence=5))
    assert pr(resp).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.rule("TX-7")
def test_older_epoch_is_rejected() -> None:
    """TX-7: an epoch lower than the producer's current one is INVALID_PRODUCER_EPOCH."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 0, batch([b"a"], producer_id=7, producer_epoch=3, base_sequence=0))
    resp = produce(c, "t", 0, batch([b"b"], producer_id=7, producer_epoch=2, base_sequence=1))
    assert pr(resp).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_not_leader_names_the_leader_in_v10() -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 3)
    p = core.cluster.topics["t"].partitions[1]
    other = next(n for n in core.cluster.nodes if n != p.leader_id)
    c = CoreClient(core, broker_id=other)
    resp = produce(c, "t", 1, batch([b"a"]), version=10)
    part = pr(resp)
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part.current_leader.leader_id == p.leader_id
    assert [n.node_id for n in resp.node_endpoints] == [p.leader_id]


def test_fetch_offset_out_of_range_and_epochs() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 0, batch([b"a"]))
    assert c.send(fetch_req("t", 0, 5), 11).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    req = fetch_req("t", 0, 0)
    req.topics[0].partitions[0].current_leader_epoch = 9
    assert c.send(req, 11).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_fetch_waits_for_data_and_wakes_on_produce() -> None:
    core, clock = make_core()
    core.create_topic("t", 1)
    consumer, producer = CoreClient(core), CoreClient(core)
    assert consumer.send(fetch_req("t", 0, 0, max_wait_ms=500), 11) is None
    assert consumer.deferred() == []
    produce(producer, "t", 0, batch([b"late"]))
    [resp] = consumer.deferred()
    assert records_of(resp) == [(0, b"late")]


def test_fetch_long_poll_answers_empty_at_the_deadline() -> None:
    core, clock = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert c.send(fetch_req("t", 0, 0, max_wait_ms=500), 11) is None
    clock.advance(499)
    core.fire_due()
    assert c.deferred() == []
    clock.advance(1)
    core.fire_due()
    [resp] = c.deferred()
    assert resp.responses[0].partitions[0].records == b""


def test_incremental_fetch_session_sends_only_changes() -> None:
    core, _ = make_core()
    core.create_topic("t", 2)
    c = CoreClient(core)
    full = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0, session_epoch=0,
                        topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                            FetchRequest.FetchPartition(partition=i, fetch_offset=0, current_leader_epoch=-1,
                                                        log_start_offset=-1, partition_max_bytes=1 << 20)
                            for i in range(2)])])
    resp = c.send(full, 12)
    sid = resp.session_id
    assert sid > 0 and len(resp.responses[0].partitions) == 2
    empty = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=sid,
                         session_epoch=1)
    resp = c.send(empty, 12)
    assert resp.error_code == 0 and resp.responses == []  # nothing changed
    produce(CoreClient(core), "t", 1, batch([b"new"]))
    empty.session_epoch = 2
    resp = c.send(empty, 12)
    assert [p.partition_index for p in resp.responses[0].partitions] == [1]
    empty.session_epoch = 2  # replayed epoch
    assert c.send(empty, 12).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    empty.session_id, empty.session_epoch = sid + 100, 1
    assert c.send(empty, 12).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_fetch_by_topic_id_v13() -> None:
    core, _ = make_core()
    t = core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 0, batch([b"a"]))
    req = fetch_req("t", 0, 0)
    req.topics[0].topic, req.topics[0].topic_id = "", t.topic_id
    resp = c.send(req, 13)
    assert resp.responses[0].topic_id == t.topic_id and records_of(resp) == [(0, b"a")]
    req.topics[0].topic_id = core.cluster.new_uuid()
    assert c.send(req, 13).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_max_bytes_returns_at_least_one_batch() -> None:
    """KIP-74: a batch larger than the limits still comes back first, so consumers progress."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 0, batch([b"x" * 5000]))
    produce(c, "t", 0, batch([b"y" * 5000]))
    req = fetch_req("t", 0, 0)
    req.max_bytes = 100
    req.topics[0].partitions[0].partition_max_bytes = 100
    assert [o for o, _ in records_of(c.send(req, 11))] == [0]


def test_log_append_time_topic_stamps_broker_time() -> None:
    core, clock = make_core()
    core.create_topic("t", 1, configs={"message.timestamp.type": "LogAppendTime"})
    c = CoreClient(core)
    part = pr(produce(c, "t", 0, batch([b"a"])))
    assert part.log_append_time_ms == clock.now_ms()
    b = next(iter_batches(core.cluster.topics["t"].partitions[0].log.batches[0].data))
    assert b.timestamp_type == 1 and b.max_timestamp == clock.now_ms()
    b.validate()


def test_all_compression_codecs_are_stored_and_served() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    for codec in Compression:
        bb = BatchBuilder(0, compression=codec)
        bb.append(codec.name.encode(), key=b"k")
        assert pr(produce(c, "t", 0, bb.build())).error_code == 0
    assert [v for _, v in records_of(c.send(fetch_req("t", 0, 0), 11))] == [c.name.encode() for c in Compression]


@pytest.mark.rule("TX-10")
def test_client_control_batches_and_missing_sequences_are_invalid_record() -> None:
    """TX-10: clients may not write control batches; a batch with a producer id needs a sequence.
    A marker (transactional) in a Produce without TransactionalId is refused before that, as
    KafkaApis.handleProduceRequest refuses transactional records: TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    from kwire.records import ControlRecordType, build_control_batch
    from kwire.records.control import control_key

    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, coordinator_epoch=0)
    assert pr(produce(c, "t", 0, marker)).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    bare = BatchBuilder(0, producer_id=5, producer_epoch=0, base_sequence=0, is_control=True)
    bare.append(b"\x00\x00\x00\x00\x00\x00", control_key(ControlRecordType.COMMIT), ())
    assert pr(produce(c, "t", 0, bare.build())).error_code == ErrorCode.INVALID_RECORD
    no_seq = batch([b"a"], producer_id=5, producer_epoch=0, base_sequence=-1)
    assert pr(produce(c, "t", 0, no_seq)).error_code == ErrorCode.INVALID_RECORD
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 0


def test_a_follower_checks_the_leader_epoch_before_leadership() -> None:
    """Partition.getLocalLog at d79bd502: checkCurrentLeaderEpoch comes before the isLeader check, so
    a fetch with a stale epoch sent to a follower (a replica) is FENCED_LEADER_EPOCH, with a newer
    epoch UNKNOWN_LEADER_EPOCH, with the current epoch NOT_LEADER_OR_FOLLOWER; a broker holding no
    replica answers NOT_LEADER_OR_FOLLOWER whatever the epoch (ReplicaManager.getPartitionOrError)."""
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1, replication_factor=2)
    p = core.cluster.topics["t"].partitions[0]
    p.leader_epoch = 3
    follower = next(n for n in p.replicas if n != p.leader_id)
    outsider = next(n for n in core.cluster.nodes if n not in p.replicas)

    def error(broker: int, epoch: int) -> int:
        req = fetch_req("t", 0, 0)
        req.topics[0].partitions[0].current_leader_epoch = epoch
        return int(CoreClient(core, broker_id=broker).send(req, 12).responses[0].partitions[0].error_code)

    assert error(follower, 2) == ErrorCode.FENCED_LEADER_EPOCH
    assert error(follower, 4) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert error(follower, 3) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error(follower, -1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error(outsider, 2) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error(p.leader_id, 2) == ErrorCode.FENCED_LEADER_EPOCH
