"""The data dir: restart a core on the same directory and get back what it acknowledged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.configs import ResourceType
from kwire.broker.core.log import AppendOrigin
from kwire.broker.core.offsets import CommittedOffset
from kwire.broker.core.storage import METADATA_FILE, OFFSETS_JOURNAL, Storage
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import (
    Compression,
    iter_batches,
)
from tests.broker.helpers import CoreClient, batch, make_core


def start(data_dir: Path, **kw: Any) -> tuple[BrokerCore, CoreClient, Storage]:
    core, _ = make_core(data_dir=str(data_dir), **kw)
    storage = core.subsystems.storage
    assert storage is not None
    return core, CoreClient(core), storage


def produce(c: CoreClient, topic: str, records: bytes, partition: int = 0) -> Any:
    resp = c.send(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])]), 9)
    return resp.responses[0].partition_responses[0]


def fetch_bytes(c: CoreClient, topic: str, partition: int = 0, offset: int = 0) -> tuple[int, bytes]:
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
            partition_max_bytes=1 << 24)])]), 11)
    p = resp.responses[0].partitions[0]
    return p.error_code, bytes(p.records or b"")


def values(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for b in iter_batches(data) for r in b]


def test_restart_serves_every_acknowledged_batch_byte_identical(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("t", 2, configs={"retention.ms": "60000"})
    for i in range(5):
        assert produce(c, "t", batch([b"v%d" % i, b"w%d" % i])).error_code == 0
    assert produce(c, "t", batch([b"z" * 500] * 3, compression=Compression.GZIP)).error_code == 0
    assert produce(c, "t", batch([b"p1"]), partition=1).error_code == 0
    before = [fetch_bytes(c, "t", p) for p in (0, 1)]
    tid = core.cluster.topics["t"].topic_id
    core.close()

    core2, c2, storage = start(tmp_path)
    assert storage.problems == []
    assert [fetch_bytes(c2, "t", p) for p in (0, 1)] == before
    t = core2.cluster.topics["t"]
    assert (t.topic_id, len(t.partitions)) == (tid, 2)
    assert core2.configs.get(ResourceType.TOPIC, "t", "retention.ms") == "60000"
    assert t.partitions[0].log.log_end_offset == 13
    # Appends continue after what was loaded, and survive the next restart too.
    assert produce(c2, "t", batch([b"after"])).base_offset == 13
    core2.close()
    _, c3, _ = start(tmp_path)
    assert values(fetch_bytes(c3, "t")[1])[-1] == (13, b"after")


def test_files_are_kafka_segments_and_written_before_the_answer(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("orders", 1)
    produce(c, "orders", batch([b"a"]))
    seg = tmp_path / "orders-0" / "00000000000000000000.log"
    # No close: a crashed broker leaves the same bytes behind.
    assert seg.read_bytes() == core.cluster.topics["orders"].partitions[0].log.batches[0].data
    assert json.loads((tmp_path / METADATA_FILE).read_text())["topics"]["orders"]["partitions"][0]["leader"] == 1


def test_torn_tail_is_reported_and_the_rest_is_served(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    produce(c, "t", batch([b"a", b"b"]))
    produce(c, "t", batch([b"c"] * 10))
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    size = seg.stat().st_size
    with open(seg, "r+b") as f:
        f.truncate(size - 7)  # the process died in the middle of the second batch
    core2, c2, storage = start(tmp_path)  # no close(): as after a crash
    assert len(storage.torn_tails) == 1 and storage.torn_tails[0].position > 0
    assert any("torn tail" in p for p in storage.problems)
    err, data = fetch_bytes(c2, "t")
    assert err == 0 and values(data) == [(0, b"a"), (1, b"b")]
    assert produce(c2, "t", batch([b"d"])).base_offset == 2
    core2.close()
    _, c3, storage3 = start(tmp_path)
    assert storage3.torn_tails == []
    assert values(fetch_bytes(c3, "t")[1]) == [(0, b"a"), (1, b"b"), (2, b"d")]


def test_a_corrupt_batch_after_the_recovery_point_is_cut_and_kept_aside(tmp_path: Path) -> None:
    """LogSegment.recover: past the recovery point (written since the last metadata save, as after
    a crash) the first invalid batch cuts the log; here the cut bytes are kept beside it."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    produce(c, "t", batch([b"a"]))
    produce(c, "t", batch([b"b"]))
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    raw[-1] ^= 0xFF  # flip a record byte: the CRC no longer matches
    seg.write_bytes(bytes(raw))
    _, c2, storage = start(tmp_path)  # no close(): the recovery point is still 0
    assert values(fetch_bytes(c2, "t")[1]) == [(0, b"a")]
    assert any("cut at byte" in p and "CRC" in p for p in storage.problems)
    cut = tmp_path / "t-0" / "00000000000000000000.log.kwire-cut-1"
    assert cut.read_bytes() == bytes(raw[len(raw) - cut.stat().st_size:])


def test_a_flipped_byte_below_the_recovery_point_loses_nothing_after_it(tmp_path: Path) -> None:
    """Issue 12.6: a flipped byte in acknowledged, flushed data used to cut everything after it
    (and new writes reused those offsets). As Kafka keeps flushed data, the corrupt batch stays
    (reported), every later batch is served, and new writes continue after the log end."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    for v in (b"a", b"b", b"c"):
        produce(c, "t", batch([v]))
    core.close()  # the metadata save records the recovery point (3)
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    second = len(raw) // 3
    raw[second + second // 2] ^= 0xFF  # inside the second batch's records
    seg.write_bytes(bytes(raw))
    core2, c2, storage = start(tmp_path)
    assert any("fails its CRC; kept" in p for p in storage.problems)
    plog = core2.cluster.topics["t"].partitions[0].log
    assert [b.base_offset for b in plog.batches] == [0, 1, 2] and plog.log_end_offset == 3
    assert produce(c2, "t", batch([b"d"])).base_offset == 3  # no offset is reused
    assert not list((tmp_path / "t-0").glob("*.kwire-cut*"))


def test_a_zero_filled_tail_is_cut_and_named_as_such(tmp_path: Path) -> None:
    """A preallocated or never-flushed tail reads as zeros: cut, reported as a zero-filled tail,
    and the batches before it served; appends continue at the log end."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    produce(c, "t", batch([b"a"]))
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    with open(seg, "ab") as f:
        f.write(b"\0" * 4096)
    core2, c2, storage = start(tmp_path)
    assert any("zero-filled tail" in p for p in storage.problems)
    assert values(fetch_bytes(c2, "t")[1]) == [(0, b"a")]
    assert produce(c2, "t", batch([b"b"])).base_offset == 1
    assert seg.stat().st_size < 4096


def test_a_batch_with_a_bad_length_cuts_the_log_there_keeping_the_rest_aside(tmp_path: Path) -> None:
    """A corrupt length field cannot be skipped over (Kafka cannot either): past the recovery
    point the log is cut at that batch, and the bytes from it on are kept in a cut file."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    for v in (b"a", b"b", b"c"):
        produce(c, "t", batch([v]))
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    size = len(raw) // 3
    raw[size + 8: size + 12] = (10**9).to_bytes(4, "big")  # the second batch claims a gigabyte
    seg.write_bytes(bytes(raw))
    _, c2, storage = start(tmp_path)  # no close: everything is past the recovery point
    assert values(fetch_bytes(c2, "t")[1]) == [(0, b"a")]
    cut = tmp_path / "t-0" / "00000000000000000000.log.kwire-cut-1"
    assert cut.read_bytes() == bytes(raw[size:])
    assert any("cut at byte" in p for p in storage.problems)


def test_a_lost_metadata_file_is_rebuilt_from_the_partition_dirs(tmp_path: Path) -> None:
    """Issue 12.5: without kwire-metadata.json the topics come back from their partition
    directories, so a new write is never acknowledged at offsets the old segments hold."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 2)
    produce(c, "t", batch([b"a", b"b"]), partition=1)
    core.close()
    (tmp_path / METADATA_FILE).unlink()
    core2, c2, storage = start(tmp_path)
    assert any("rebuilding topic 't' (2 partitions)" in p for p in storage.problems)
    assert produce(c2, "t", batch([b"c"]), partition=1).base_offset == 2
    assert values(fetch_bytes(c2, "t", partition=1)[1]) == [(0, b"a"), (1, b"b"), (2, b"c")]
    core2.close()
    _, c3, _ = start(tmp_path)
    assert values(fetch_bytes(c3, "t", partition=1)[1]) == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_a_torn_metadata_file_is_set_aside_and_the_topics_rebuilt(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    produce(c, "t", batch([b"a"]))
    core.close()
    meta = tmp_path / METADATA_FILE
    meta.write_text(meta.read_text()[:40])  # the write was torn
    core2, c2, storage = start(tmp_path)
    assert any("unreadable" in p for p in storage.problems)
    assert list(tmp_path.glob(f"{METADATA_FILE}.unreadable-*"))
    assert produce(c2, "t", batch([b"b"])).base_offset == 1


def test_idempotent_duplicate_after_restart_is_recognised(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    sent = [batch([b"x%d" % i], producer_id=42, producer_epoch=0, base_sequence=i) for i in range(7)]
    offsets = [produce(c, "t", b).base_offset for b in sent]
    core.close()
    core2, c2, _ = start(tmp_path)
    # The last five batches per producer are remembered (TX-6): a retry gets its original offset.
    for i in range(2, 7):
        r = produce(c2, "t", sent[i])
        assert (r.error_code, r.base_offset) == (0, offsets[i])
    assert core2.cluster.topics["t"].partitions[0].log.log_end_offset == 7
    assert produce(c2, "t", batch([b"gap"], producer_id=42, producer_epoch=0, base_sequence=9)).error_code == \
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(c2, "t", batch([b"next"], producer_id=42, producer_epoch=0, base_sequence=7)).base_offset == 7


def test_partitions_deletion_and_recreation_persist(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("grow", 1)
    core.create_topic("gone", 1)
    produce(c, "gone", batch([b"x"]))
    core.create_partitions("grow", 3)
    core.delete_topic("gone")
    assert not (tmp_path / "gone-0").exists()
    core.create_topic("gone", 2)
    core.close()
    core2, c2, storage = start(tmp_path)
    assert len(core2.cluster.topics["grow"].partitions) == 3
    assert len(core2.cluster.topics["gone"].partitions) == 2
    assert fetch_bytes(c2, "gone")[1] == b""
    assert storage.problems == []


def test_log_start_offset_leader_epochs_and_configs_persist(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path, brokers=2, settings={"num.partitions": "2"})
    core.create_topic("t", 1)
    p = core.cluster.topics["t"].partitions[0]
    c_leader = CoreClient(core, p.leader_id)
    for _ in range(3):
        produce(c_leader, "t", batch([b"a", b"b"]))
    p.log.truncate_before(3)
    core.cluster.move_leader("t", 0, 2 if p.leader_id == 1 else 1)  # a new epoch with no data yet
    core.configs.set(ResourceType.BROKER, "", "auto.create.topics.enable", "false")
    core.configs.set(ResourceType.GROUP, "g", "share.delivery.count.limit", "3")
    core.configs.set(ResourceType.BROKER, "2", "sasl.kerberos.min.time.before.relogin", "120000")  # per broker id
    core.metadata_changed()
    epochs, leader = list(p.log.epochs), p.leader_id
    core.close()
    core2, _, _ = start(tmp_path, brokers=2, settings={"num.partitions": "2"})
    p2 = core2.cluster.topics["t"].partitions[0]
    assert (p2.log.log_start_offset, p2.log.log_end_offset) == (3, 6)
    assert (p2.leader_id, p2.leader_epoch, p2.log.epochs) == (leader, 1, epochs)
    assert p2.log.end_offset_for_epoch(0) == (0, 6)
    assert not core2.auto_create_enabled()
    assert core2.configs.get_int(ResourceType.GROUP, "g", "share.delivery.count.limit") == 3
    assert core2.configs.get(ResourceType.BROKER, "2", "sasl.kerberos.min.time.before.relogin") == "120000"
    assert core2.configs.get(ResourceType.BROKER, "1", "sasl.kerberos.min.time.before.relogin") != "120000"
    # Static settings come from the config, not the data dir.
    assert "num.partitions" not in json.loads((tmp_path / METADATA_FILE).read_text())["broker_configs"]


def test_cluster_id_is_kept(tmp_path: Path) -> None:
    core, _, _ = start(tmp_path)
    cid = core.cluster.cluster_id
    core.close()
    assert start(tmp_path, seed=99)[0].cluster.cluster_id == cid


def test_committed_offsets_survive_a_clean_stop(tmp_path: Path) -> None:
    core, _, _ = start(tmp_path)
    core.create_topic("t", 1)
    core.subsystems.offsets.commit("g", "t", 0, CommittedOffset(5, 0, "meta", 123))
    core.close()
    core2, _, _ = start(tmp_path)
    assert core2.subsystems.offsets.get("g", "t", 0) == CommittedOffset(5, 0, "meta", 123)


def test_open_and_aborted_transactions_are_rebuilt(tmp_path: Path) -> None:
    """TX-20, TX-21: a restart rebuilds the open transactions (LSO) and the aborted ones, through
    the same append path the live broker used."""
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    p = core.cluster.topics["t"].partitions[0]
    produce(c, "t", batch([b"plain"]))
    txn = batch([b"t1", b"t2"], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    p.log.append(bytearray(txn), AppendOrigin.CLIENT, now_ms=core.clock.now_ms(), leader_epoch=p.leader_epoch)
    core.close()
    core2, _, _ = start(tmp_path)
    p2 = core2.cluster.topics["t"].partitions[0]
    assert p2.log.open_txn_first_offsets == {7: 1}
    assert (p2.log.last_stable_offset, p2.log.high_watermark) == (1, 3)
    assert p2.producers.entries[7].txn_first_offset == 1
    p2.log.append_marker(7, 0, False, coordinator_epoch=0, now_ms=core2.clock.now_ms(), transaction_version=1)
    core2.close()
    core3, _, _ = start(tmp_path)
    p3 = core3.cluster.topics["t"].partitions[0]
    assert p3.log.open_txn_first_offsets == {}
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in p3.log.aborted_txns] == [(7, 1, 3)]
    assert p3.log.last_stable_offset == 4
    assert p3.producers.entries[7].txn_first_offset is None


def test_unreadable_metadata_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_text("{not json")
    (tmp_path / "stray-0").mkdir()
    core, _, storage = start(tmp_path)
    assert core.cluster.topics == {}
    assert any(METADATA_FILE in p for p in storage.problems)
    assert any("stray-0" in p for p in storage.problems)


@pytest.mark.skipif(os.name != "posix", reason="permissions")
def test_a_failed_write_is_never_acknowledged_and_takes_the_data_dir_offline(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's LogDirFailureChannel: the failed append answers KAFKA_STORAGE_ERROR, every
    partition of the dir refuses reads and writes from then on, Metadata shows them leaderless,
    the rest of the broker keeps serving; after a restart nothing acknowledged is missing."""
    from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
    from kwire.protocol.messages.metadata import MetadataRequest

    core, c, storage = start(tmp_path)
    core.create_topic("t", 1)
    core.create_topic("other", 1)
    assert produce(c, "t", batch([b"kept"])).error_code == 0
    core.subsystems.storage._writers.clear()  # type: ignore[union-attr]
    seg = next((tmp_path / "t-0").glob("*.log"))
    seg.rename(tmp_path / "kept.log")
    seg.mkdir()  # the segment cannot be opened for writing now
    assert produce(c, "t", batch([b"lost"])).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert produce(c, "other", batch([b"x"])).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 1  # nothing unwritten was taken
    assert storage.offline is not None and any("offline" in r.getMessage() for r in caplog.records)
    meta = c.send(MetadataRequest(topics=None), 12)
    assert {(t.name, p.leader_id, p.error_code) for t in meta.topics for p in t.partitions} == {
        ("t", -1, ErrorCode.LEADER_NOT_AVAILABLE), ("other", -1, ErrorCode.LEADER_NOT_AVAILABLE)}
    assert c.send(FindCoordinatorRequest(key="g", key_type=0), 3).error_code == ErrorCode.NONE
    core.close()
    seg.rmdir()
    (tmp_path / "kept.log").rename(seg)  # the disk is fixed
    core2, c2, storage2 = start(tmp_path)
    assert storage2.offline is None
    assert [r.value for b in iter_batches(c2.core.cluster.topics["t"].partitions[0].log.batches[0].data)
            for r in b] == [b"kept"]


def test_producer_ids_are_not_handed_out_again_after_a_restart(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    pid = core.subsystems.producer_ids.allocate()
    produce(c, "t", batch([b"x"], producer_id=pid, producer_epoch=0, base_sequence=0))
    core.close()
    core2, _, _ = start(tmp_path)
    fresh = core2.subsystems.producer_ids.allocate()
    assert fresh > pid and fresh % 1000 == 0


def test_a_topic_that_exists_at_start_gets_its_data_back(tmp_path: Path) -> None:
    core, c, _ = start(tmp_path)
    core.create_topic("__internal", 1)
    produce(c, "__internal", batch([b"kept"]))
    core.close()

    core2, _ = make_core(seed=5)  # another seed: another id for the topic made at start
    core2.create_topic("__internal", 1)
    storage = Storage(core2, tmp_path)
    core2.subsystems.storage = storage
    storage.restore()
    assert values(fetch_bytes(CoreClient(core2), "__internal")[1]) == [(0, b"kept")]
    assert any("another id" in p for p in storage.problems)


def test_committed_offsets_survive_a_crash_right_after_the_commit(tmp_path: Path) -> None:
    """Each change is in the offsets journal before the OffsetCommit is answered."""
    core, _ = make_core(data_dir=str(tmp_path))
    core.create_topic("t", 2)
    store = core.subsystems.offsets
    store.commit("g", "t", 0, CommittedOffset(9, 0, "m", 1))
    store.commit("g", "t", 1, CommittedOffset(4))
    store.commit("g", "t", 0, CommittedOffset(11))
    store.delete("g", "t", 1)
    store.commit("h", "t", 1, CommittedOffset(2))
    assert store.delete_group("h") == 1
    # No close() and no time passed: as after a crash.
    core2, _, _ = start(tmp_path)
    store2 = core2.subsystems.offsets
    assert store2.get("g", "t", 0) == CommittedOffset(11)
    assert store2.get("g", "t", 1) is None and store2.groups() == ["g"]
    # The replayed journal is folded into the metadata; the periodic rewrite empties it.
    assert json.loads((tmp_path / METADATA_FILE).read_text())["offsets"]["g"][0][:2] == ["t", 0]
    assert not (tmp_path / OFFSETS_JOURNAL).exists()
    store2.commit("g", "t", 1, CommittedOffset(6))
    assert (tmp_path / OFFSETS_JOURNAL).read_text().count("\n") == 1
    core2.clock.advance(1000)  # type: ignore[attr-defined]
    core2.fire_due()
    assert (tmp_path / OFFSETS_JOURNAL).read_text() == ""


def test_a_torn_journal_line_is_reported_and_the_lines_before_it_kept(tmp_path: Path) -> None:
    core, _ = make_core(data_dir=str(tmp_path))
    core.create_topic("t", 1)
    core.subsystems.offsets.commit("g", "t", 0, CommittedOffset(3))
    with open(tmp_path / OFFSETS_JOURNAL, "a") as f:
        f.write('["g", "t", 0, {"offset": 7, "lea')  # the process died mid-write
    core2, _, storage = start(tmp_path)
    assert core2.subsystems.offsets.get("g", "t", 0) == CommittedOffset(3)
    assert any("line 2 unreadable" in p for p in storage.problems)


@pytest.mark.skipif(os.name != "posix", reason="permissions")
def test_an_offset_commit_that_cannot_be_journalled_is_not_acknowledged(tmp_path: Path) -> None:
    """GroupMetadataManager answers a failed __consumer_offsets append (KAFKA_STORAGE_ERROR)
    with NOT_COORDINATOR; the commit is not kept, so nothing acknowledged is lost on a crash."""
    from kwire.protocol.messages.offset_commit import OffsetCommitRequest

    core, c, _ = start(tmp_path)
    core.create_topic("t", 1)
    (tmp_path / OFFSETS_JOURNAL).mkdir()  # the journal cannot be opened for appending
    req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])])
    assert c.send(req, 8).topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    assert core.subsystems.offsets.get("g", "t", 0) is None
    (tmp_path / OFFSETS_JOURNAL).rmdir()
    assert c.send(req, 8).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert core.subsystems.offsets.get("g", "t", 0).offset == 5  # type: ignore[union-attr]
