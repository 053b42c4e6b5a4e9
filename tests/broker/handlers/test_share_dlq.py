"""Share-group dead-letter queues (KIP-1191) through the core: when records are written, where,
with which headers and content, what stops a write, retries, and persistence (DLQ- rules)."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC
from kwire.records import RecordBatch
from tests.broker.handlers.test_produce_fetch import produce
from tests.broker.helpers import START_MS, CoreClient, batch, make_core
from tests.broker.share_helpers import ShareClient

REJECT, RELEASE, ACCEPT, GAP = 3, 2, 1, 0


def setup(dlq: str | None = "dlq.g", *, opt_in: bool = True, partitions: int = 1, copy: bool = False,
          **kw: Any) -> Any:
    core, _ = make_core(**kw)
    core.create_topic("t", 3)
    if dlq is not None and opt_in:
        core.create_topic(dlq, partitions, configs={"errors.deadletterqueue.group.enable": "true"})
    c = core.configs
    c.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    if dlq is not None:
        c.set(ResourceType.GROUP, "sg", "errors.deadletterqueue.topic.name", dlq)
    if copy:
        c.set(ResourceType.GROUP, "sg", "errors.deadletterqueue.copy.record.enable", "true")
    return core


def put(core: Any, values: list[bytes], partition: int = 0) -> None:
    produce(CoreClient(core), "t", partition, batch(values, keys=[b"k" + v for v in values]))


def consumer(core: Any, partitions: list[int] | None = None) -> ShareClient:
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": partitions or [0]})
    return m


def dlq_records(core: Any, topic: str = "dlq.g") -> list[Any]:
    t = core.cluster.topics.get(topic)
    if t is None:
        return []
    return [(p.index, r) for p in t.partitions for b in p.log.batches for r in RecordBatch(bytes(b.data))]


def headers(r: Any) -> list[tuple[str, str]]:
    return [(k, bytes(v).decode()) for k, v in r.headers]


def state(core: Any, offset: int, partition: int = 0) -> str:
    """The record's state; a record gone from the window below the start offset was finished, and
    these tests accept nothing, so it was archived."""
    sp = core.subsystems.share_groups.partitions.get("sg", "t", partition)
    got = sp.record_state(offset)
    if got is None:
        assert offset < sp.start_offset, f"offset {offset} is not in flight and not finished"
        return "ARCHIVED"
    return got[0].name


@pytest.mark.rule("DLQ-3, DLQ-9, DLQ-11")
def test_reject_writes_one_record_with_the_headers_in_order() -> None:
    """DLQ-3: REJECT goes through ARCHIVING; DLQ-11: the acknowledgement succeeds at once; DLQ-9: the
    record carries topic, partition, offset, group, delivery count and message, in that order."""
    core = setup()
    put(core, [b"a", b"b"])
    m = consumer(core)
    r = m.acknowledge({("t", 0): [(1, 1, REJECT)]})
    assert r.responses[0].partitions[0].error_code == E.NONE
    assert state(core, 1) == "ARCHIVING"  # phase 2 runs after the answer
    core.advance(0)
    assert state(core, 1) == "ARCHIVED"
    ((part, rec),) = dlq_records(core)
    assert headers(rec) == [("__dlq.errors.topic", "t"), ("__dlq.errors.partition", "0"),
                            ("__dlq.errors.offset", "1"), ("__dlq.errors.group", "sg"),
                            ("__dlq.errors.delivery.count", "1"),
                            ("__dlq.errors.message", "Offset rejected by client.")]


@pytest.mark.rule("DLQ-3, DLQ-9")
def test_the_delivery_limit_writes_once_and_gap_never() -> None:
    """DLQ-3: a record released at the delivery limit lands in the DLQ once, with the limit's message;
    GAP archives without a DLQ record."""
    core = setup()
    core.configs.set(ResourceType.GROUP, "sg", "share.delivery.count.limit", "2")
    put(core, [b"a", b"b"])
    m = consumer(core)
    m.acknowledge({("t", 0): [(0, 0, RELEASE), (1, 1, GAP)]})
    m.fetch()
    m.acknowledge({("t", 0): [(0, 0, RELEASE)]})
    core.advance(0)
    ((_, rec),) = dlq_records(core)
    assert dict(headers(rec))["__dlq.errors.message"] == "Offset delivery count exceeded the threshold."
    assert dict(headers(rec))["__dlq.errors.delivery.count"] == "2"
    assert state(core, 1) == "ARCHIVED"


@pytest.mark.rule("DLQ-3, AQ-12")
def test_lock_expiry_at_the_limit_goes_to_the_dlq() -> None:
    """DLQ-3: the lock running out on a record at its limit archives it through the DLQ."""
    core = setup()
    core.configs.set(ResourceType.GROUP, "sg", "share.delivery.count.limit", "2")
    put(core, [b"a"])
    m = consumer(core)
    core.advance(30_000)
    m.fetch()
    core.advance(30_000)
    assert len(dlq_records(core)) == 1 and state(core, 0) == "ARCHIVED"


@pytest.mark.rule("DLQ-7, DLQ-8")
def test_one_record_per_offset_partition_modulo_and_content() -> None:
    """DLQ-7: one record per offset of a batch rejected whole, to partition (source % DLQ partitions),
    broker-clock timestamp, no producer id, no compression; DLQ-8: key and value only when copying is
    on, original headers never."""
    core = setup(partitions=2)
    put(core, [b"a", b"b", b"c"], partition=2)
    m = consumer(core, [2])
    m.acknowledge({("t", 2): [(0, 2, REJECT)]})
    core.advance(0)
    got = dlq_records(core)
    assert [p for p, _ in got] == [0, 0, 0]  # 2 % 2
    assert [(r.key, r.value) for _, r in got] == [(None, None)] * 3
    assert [dict(headers(r))["__dlq.errors.offset"] for _, r in got] == ["0", "1", "2"]
    b = core.cluster.topics["dlq.g"].partitions[0].log.batches[0]
    info = RecordBatch(bytes(b.data))
    assert info.producer_id == -1 and info.compression == 0
    assert all(r.timestamp == core.clock.now_ms() for _, r in got)
    copy = setup(copy=True)
    put(copy, [b"x"])
    consumer(copy).acknowledge({("t", 0): [(0, 0, REJECT)]})
    copy.advance(0)
    ((_, r),) = dlq_records(copy)
    assert (bytes(r.key), bytes(r.value)) == (b"kx", b"x")


@pytest.mark.rule("DLQ-7")
def test_a_write_past_max_message_bytes_goes_out_in_rounds() -> None:
    """DLQ-7: records that would pass the DLQ topic's max.message.bytes are split: each round is one
    produce request with one batch of as many records as fit, in offset order (DLQStateManager
    ``topicProduceData``: batch overhead plus DefaultRecord.sizeInBytes per record)."""
    core = setup(copy=True)
    core.configs.set(ResourceType.TOPIC, "dlq.g", "max.message.bytes", "1000")
    put(core, [b"v%02d" % i + b"x" * 100 for i in range(20)])
    consumer(core).acknowledge({("t", 0): [(0, 19, REJECT)]})
    core.advance(0)
    batches = core.cluster.topics["dlq.g"].partitions[0].log.batches
    assert len(batches) > 3
    assert all(len(b.data) <= 1000 for b in batches)
    got = dlq_records(core)
    assert [dict(headers(r))["__dlq.errors.offset"] for _, r in got] == [str(i) for i in range(20)]
    assert [bytes(r.value)[:3] for _, r in got] == [b"v%02d" % i for i in range(20)]
    stats = core.subsystems.share_groups.dlq.stats["sg"]
    assert (stats.records_written, stats.produce_requests) == (20, len(batches))
    # Each batch is as full as max.message.bytes allows: one record more would not have fitted.
    for b in batches[:-1]:
        n = len(list(RecordBatch(bytes(b.data))))
        assert len(b.data) + (len(b.data) - 61) // n > 1000


@pytest.mark.rule("DLQ-7, DLQ-10")
def test_a_record_too_large_on_its_own_fails_the_write() -> None:
    """DLQ-7, DLQ-10: a record whose headers alone pass max.message.bytes is sent alone and refused
    (MESSAGE_TOO_LARGE, not retried): nothing is written and the records are archived (DLQ-4)."""
    core = setup()
    core.configs.set(ResourceType.TOPIC, "dlq.g", "max.message.bytes", "150")
    put(core, [b"a", b"b"])
    consumer(core).acknowledge({("t", 0): [(0, 1, REJECT)]})
    core.advance(0)
    assert (state(core, 0), state(core, 1), dlq_records(core)) == ("ARCHIVED", "ARCHIVED", [])
    stats = core.subsystems.share_groups.dlq.stats["sg"]
    assert (stats.produce_requests, stats.failed_produce_requests) == (1, 1)


@pytest.mark.parametrize("value", [None, b"", b"v" * 200], ids=["null", "empty", "200-bytes"])
@pytest.mark.parametrize("count", [1, 3, 200])
def test_record_size_is_the_encoded_size(value: bytes | None, count: int) -> None:
    """DLQ-7's size sum: ``record_size`` per record plus the 61-byte header is the built batch's length."""
    from kwire.broker.core.share_dlq import RECORD_BATCH_OVERHEAD, record_size
    from kwire.records import BatchBuilder

    b = BatchBuilder()
    total = RECORD_BATCH_OVERHEAD
    for i in range(count):
        hs = [("__dlq.errors.offset", str(i * 1000).encode()), ("__dlq.errors.message", b"m" * i)]
        key = None if value is None else b"k%d" % i
        total += record_size(i, key, value, hs)
        b.append(value, key, hs, timestamp_ms=START_MS)
    assert len(b.build()) == total


@pytest.mark.rule("DLQ-1")
def test_share_version_one_or_no_topic_name_writes_nothing() -> None:
    """DLQ-1: share.version 1, or no errors.deadletterqueue.topic.name: REJECT archives, nothing is written."""
    core = setup(settings={"share.version": "1"})
    put(core, [b"a"])
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    assert state(core, 0) == "ARCHIVED" and dlq_records(core) == []
    plain = setup(dlq=None)
    put(plain, [b"a"])
    consumer(plain).acknowledge({("t", 0): [(0, 0, REJECT)]})
    assert state(plain, 0) == "ARCHIVED"


@pytest.mark.rule("DLQ-2")
def test_an_internal_topic_name_is_refused_when_set() -> None:
    """DLQ-2: errors.deadletterqueue.topic.name starting with "__" → INVALID_CONFIG at config time."""
    core = setup(dlq=None)
    req = IAC(resources=[IAC.AlterConfigsResource(resource_type=32, resource_name="sg", configs=[
        IAC.AlterableConfig(name="errors.deadletterqueue.topic.name", config_operation=0, value="__dlq")])])
    assert CoreClient(core).send(req, 1).responses[0].error_code == E.INVALID_CONFIG


@pytest.mark.rule("DLQ-5")
@pytest.mark.parametrize(("dlq", "opt_in", "why"), [
    ("dlq.g", False, "does not exist"),
    ("other", True, "prefix"),
])
def test_preconditions_fail_the_write_but_archive(dlq: str, opt_in: bool, why: str) -> None:
    """DLQ-5: a missing topic (auto-creation off), a name without the broker prefix: nothing written,
    the record archived, the failure counted by cause."""
    core = setup(dlq, opt_in=opt_in)
    put(core, [b"a"])
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    assert state(core, 0) == "ARCHIVED" and dlq_records(core, dlq) == []
    (cause,) = core.subsystems.share_groups.dlq.stats["sg"].failures
    assert why in cause


@pytest.mark.rule("DLQ-5")
def test_a_topic_that_did_not_opt_in_gets_nothing() -> None:
    """DLQ-5: an existing topic without errors.deadletterqueue.group.enable=true is not written to."""
    core = setup(opt_in=False)
    core.create_topic("dlq.g", 1)
    put(core, [b"a"])
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    assert dlq_records(core) == [] and state(core, 0) == "ARCHIVED"


@pytest.mark.rule("DLQ-6")
def test_auto_creation_with_its_topic_configs() -> None:
    """DLQ-6: with auto-creation on, the missing topic is created with group.enable=true and
    CreateTime timestamps, default partitions, and the record written."""
    core = setup(opt_in=False, settings={"errors.deadletterqueue.auto.create.topics.enable": "true"})
    put(core, [b"a"])
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    assert len(dlq_records(core)) == 1
    c = core.configs
    assert c.get(ResourceType.TOPIC, "dlq.g", "errors.deadletterqueue.group.enable") == "true"
    assert c.get(ResourceType.TOPIC, "dlq.g", "message.timestamp.type") == "CreateTime"


@pytest.mark.rule("DLQ-10, DLQ-4")
def test_retriable_failures_are_retried_with_backoff_then_given_up() -> None:
    """DLQ-10: NOT_LEADER_OR_FOLLOWER is retried after 2 s, 4 s, 8 s, 16 s on the broker clock
    (ShareGroupDLQStateManager: ExponentialBackoffManager(5 attempts, 1 s, base 2, 30 s), backOff()
    after the attempt count went up; its jitter left out), up to 5 attempts; DLQ-4: ARCHIVING holds
    the start offset back meanwhile; after the last attempt it is archived. Only a write given up
    counts as a failed produce request (recordDLQProduceFailed)."""
    core = setup()
    put(core, [b"a"])
    core.subsystems.share_groups.dlq.forced_failures["sg"] = [E.NOT_LEADER_OR_FOLLOWER, 2]
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    stats = core.subsystems.share_groups.dlq.stats["sg"]
    assert state(core, 0) == "ARCHIVING" and sp.start_offset == 0 and stats.produce_requests == 1
    core.advance(1999)
    assert stats.produce_requests == 1
    core.advance(1)  # attempt 2 fails too
    assert state(core, 0) == "ARCHIVING" and stats.produce_requests == 2
    core.advance(3999)
    assert state(core, 0) == "ARCHIVING"
    core.advance(1)  # attempt 3 writes
    assert state(core, 0) == "ARCHIVED" and len(dlq_records(core)) == 1 and sp.start_offset == 1
    assert (stats.records_written, stats.produce_requests, stats.failed_produce_requests) == (1, 3, 0)
    gone = setup()
    put(gone, [b"a"])
    gone.subsystems.share_groups.dlq.forced_failures["sg"] = [E.NOT_LEADER_OR_FOLLOWER, None]
    consumer(gone).acknowledge({("t", 0): [(0, 0, REJECT)]})
    gone.advance(0)
    t0 = gone.clock.now_ms()
    stats = gone.subsystems.share_groups.dlq.stats["sg"]
    for at, attempts in ((1_999, 1), (2_000, 2), (5_999, 2), (6_000, 3), (14_000, 4), (29_999, 4)):
        gone.advance(t0 + at - gone.clock.now_ms())
        assert stats.produce_requests == attempts, at
    assert state(gone, 0) == "ARCHIVING"
    gone.advance(1)  # attempt 5, the last: given up
    assert state(gone, 0) == "ARCHIVED" and dlq_records(gone) == []
    assert (stats.produce_requests, stats.failed_produce_requests) == (5, 1)
    gone.advance(60_000)
    assert stats.produce_requests == 5


@pytest.mark.rule("DLQ-10, DLQ-4")
@pytest.mark.parametrize(("code", "retried"), [
    (E.NOT_LEADER_OR_FOLLOWER, True), (E.NETWORK_EXCEPTION, True), (E.REQUEST_TIMED_OUT, True),
    (E.KAFKA_STORAGE_ERROR, False), (E.LEADER_NOT_AVAILABLE, False), (E.UNKNOWN_SERVER_ERROR, False),
    (E.MESSAGE_TOO_LARGE, False), (E.TOPIC_AUTHORIZATION_FAILED, False)], ids=lambda v: getattr(v, "name", str(v)))
def test_only_dlq10s_errors_are_retried(code: int, retried: bool) -> None:
    """DLQ-10: exactly NOT_LEADER_OR_FOLLOWER, a disconnect (NETWORK_EXCEPTION) and a timeout
    (REQUEST_TIMED_OUT) are retried (ShareGroupDLQStateManager ``handleProduceResponse``); any other
    error fails the write at once and the record is archived without a copy (DLQ-4)."""
    core = setup()
    put(core, [b"a"])
    core.subsystems.share_groups.dlq.forced_failures["sg"] = [code, 1]
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    stats = core.subsystems.share_groups.dlq.stats["sg"]
    if retried:
        assert state(core, 0) == "ARCHIVING"
        core.advance(2000)
        assert (state(core, 0), len(dlq_records(core))) == ("ARCHIVED", 1)
        assert (stats.produce_requests, stats.failed_produce_requests) == (2, 0)
    else:
        assert (state(core, 0), dlq_records(core)) == ("ARCHIVED", [])
        assert (stats.produce_requests, stats.failed_produce_requests) == (1, 1)


@pytest.mark.rule("DLQ-4")
def test_archiving_survives_a_restart_and_resumes_its_write(tmp_path: Any) -> None:
    """DLQ-4: ARCHIVING is persisted (before the REJECT's answer); a broker killed between the state
    change and the write (the write failing until then; the process never closes) resumes phase 2
    on restart and writes the record once."""
    core = setup(data_dir=str(tmp_path))
    core.metadata_changed()  # the group configs setup() set reach the data dir, as AlterConfigs' would
    put(core, [b"a", b"b"])
    core.subsystems.share_groups.dlq.forced_failures["sg"] = [E.NOT_LEADER_OR_FOLLOWER, None]
    consumer(core).acknowledge({("t", 0): [(1, 1, REJECT)]})
    core.advance(0)  # no metadata sync (SYNC_INTERVAL_MS) since: the share journal holds ARCHIVING
    assert state(core, 1) == "ARCHIVING"
    # kill -9: the first core is never closed; a new one starts on the same data dir.
    again, _ = make_core(data_dir=str(tmp_path))
    assert state(again, 1) == "ARCHIVING"
    again.advance(0)
    assert state(again, 1) == "ARCHIVED"
    ((_, rec),) = dlq_records(again)
    assert dict(headers(rec))["__dlq.errors.offset"] == "1"
    assert dict(headers(rec))["__dlq.errors.message"] == "Offset rejected by client."


@pytest.mark.rule("DLQ-5, DLQ-6")
def test_a_dead_letter_topic_name_with_a_trailing_newline_is_never_created() -> None:
    """DLQ-6: auto-creation validates the name as CreateTopics does (Topic.validate): "dlq.g\\n" is
    INVALID_TOPIC_EXCEPTION, so no topic is made, nothing written, and the record is archived."""
    core = setup(opt_in=False, settings={"errors.deadletterqueue.auto.create.topics.enable": "true"})
    core.configs.set(ResourceType.GROUP, "sg", "errors.deadletterqueue.topic.name", "dlq.g\n")
    put(core, [b"a"])
    consumer(core).acknowledge({("t", 0): [(0, 0, REJECT)]})
    core.advance(0)
    assert state(core, 0) == "ARCHIVED"
    assert [n for n in core.cluster.topics if n.startswith("dlq")] == []
    (cause,) = core.subsystems.share_groups.dlq.stats["sg"].failures
    assert "characters other than" in cause
