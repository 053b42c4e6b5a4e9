"""Log compaction (cleanup.policy=compact) as Kafka's log cleaner does it: LogCleanerManager's
cleanable range and dirty ratio, Cleaner.doClean / cleanInto / MemoryRecords.filterTo for what a
cleaned batch keeps (kafka core/src/main/scala/kafka/log/LogCleaner.scala, LogCleanerManager.scala,
clients/.../record/MemoryRecords.java; LogValidator.validateKey for keyless records)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.log import AppendOrigin
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.records import RecordBatch, iter_batches
from tests.broker.helpers import START_MS, CoreClient, batch, make_core

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "200", "min.cleanable.dirty.ratio": "0.5"}


def compacted_core(**configs: str) -> Any:
    core, clock = make_core()
    core.create_topic("c", 1, configs={**COMPACT, **configs})
    return core, clock, CoreClient(core)


def produce(c: CoreClient, values: list[tuple[bytes | None, bytes | None]], version: int = 9, **kw: Any) -> Any:
    records = batch([v for _, v in values], keys=[k for k, _ in values], **kw)
    resp = c.send(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="c", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])]), version)
    return resp.responses[0].partition_responses[0]


def contents(core: Any) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for b in core.cluster.topics["c"].partitions[0].log.batches:
        if b.is_control:
            continue
        out.extend((r.offset, r.key, r.value) for r in RecordBatch(b.data))
    return out


def fill(c: CoreClient, rounds: int) -> None:
    """k0..k2 written ``rounds`` times, one batch each, values v<round>: segments of 200 bytes roll."""
    for r in range(rounds):
        for k in range(3):
            assert produce(c, [(f"k{k}".encode(), f"v{r}".encode())]).error_code == 0


def test_keyless_records_are_refused_with_record_errors() -> None:
    """LogValidator.validateKey: INVALID_RECORD, one RecordError per keyless record (Produce v8+),
    the message Kafka writes, nothing appended."""
    core, _, c = compacted_core()
    r = produce(c, [(b"k", b"v"), (None, b"x"), (None, b"y")])
    assert r.error_code == E.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
        (i, "Compacted topic cannot accept message without key in topic partition c-0.") for i in (1, 2)]
    assert r.error_message.startswith("One or more records have been rejected due to 2 record errors in total")
    assert core.cluster.topics["c"].partitions[0].log.log_end_offset == 0


def test_the_latest_record_per_key_is_kept_offsets_are_not_reused() -> None:
    core, _, c = compacted_core()
    fill(c, 6)  # offsets 0..17
    log = core.cluster.topics["c"].partitions[0].log
    active = log.segments[-1].base_offset
    assert len(log.segments) > 2 and active > 3
    done = core.subsystems.cleaner.run(force=True)
    assert [(t, p) for t, p, _ in done] == [("c", 0)]
    kept = contents(core)
    cleaned = [x for x in kept if x[0] < active]
    # below the active segment only each key's latest (within the cleaned range) remains
    latest_below = {}
    for off in range(active):
        latest_below[f"k{off % 3}".encode()] = off
    assert [o for o, _, _ in cleaned] == sorted(o for o in latest_below.values())
    assert [x for x in kept if x[0] >= active] == [(o, f"k{o % 3}".encode(), f"v{o // 3}".encode())
                                                   for o in range(active, 18)]
    assert log.log_end_offset == 18 and log.cleaner_checkpoint == active
    assert produce(c, [(b"k0", b"new")]).base_offset == 18  # offsets continue


def test_a_consumer_fetch_skips_the_gaps() -> None:
    core, _, c = compacted_core()
    fill(c, 6)
    core.subsystems.cleaner.run(force=True)
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic="c", partitions=[FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
            partition_max_bytes=1 << 20)])]), 11)
    p = resp.responses[0].partitions[0]
    got = [(r.offset, r.value) for b in iter_batches(bytes(p.records)) for r in b]
    assert got == [(o, v) for o, _, v in contents(core)]
    assert p.error_code == 0 and p.log_start_offset == 0


def test_the_dirty_ratio_decides_when_not_forced() -> None:
    """LogCleanerManager: cleaned only once dirty bytes / (clean + dirty) reaches
    min.cleanable.dirty.ratio."""
    core, _, c = compacted_core()
    for i in range(30):
        produce(c, [(f"u{i}".encode(), b"once")])
    fill(c, 2)
    cleaner = core.subsystems.cleaner
    assert cleaner.run()  # all dirty: ratio 1.0
    fill(c, 2)  # a little dirt over a large clean part
    assert cleaner.run() == []
    core.configs.set(ResourceType.TOPIC, "c", "min.cleanable.dirty.ratio", "0.01")
    assert cleaner.run()


def test_min_compaction_lag_keeps_young_segments_dirty() -> None:
    core, clock, c = compacted_core(**{"min.compaction.lag.ms": "60000"})
    fill(c, 6)
    assert core.subsystems.cleaner.run(force=True) == []  # every segment is younger than the lag
    clock.advance(60_001)
    assert core.subsystems.cleaner.run(force=True)


def test_max_compaction_lag_cleans_below_the_ratio() -> None:
    core, clock, c = compacted_core(**{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "1000"})
    fill(c, 3)
    core.subsystems.cleaner.run(force=True)
    fill(c, 2)  # a little dirt after a cleaned part: ratio below 0.99
    cleaner = core.subsystems.cleaner
    assert cleaner.run() == []
    clock.advance(START_MS + 10**9 - clock.now_ms())  # record timestamps are START_MS based
    assert cleaner.run()


def test_tombstones_stay_until_their_delete_horizon() -> None:
    """KIP-534: a kept tombstone's batch gets deleteHorizonMs = now + delete.retention.ms when first
    cleaned; a later cleaning past it removes the tombstone."""
    core, clock, c = compacted_core(**{"delete.retention.ms": "1000"})
    produce(c, [(b"gone", b"v1")])
    produce(c, [(b"gone", None)])
    fill(c, 4)
    cleaner = core.subsystems.cleaner
    cleaner.run(force=True)
    log = core.cluster.topics["c"].partitions[0].log
    tomb = [b for b in log.batches if any(r.key == b"gone" for r in RecordBatch(b.data))]
    assert [r.value for b in tomb for r in RecordBatch(b.data)] == [None]
    horizon = RecordBatch(tomb[0].data).delete_horizon_ms
    assert horizon == clock.now_ms() + 1000
    fill(c, 2)  # more dirt: the next pass filters the clean part again (Cleaner.doClean from offset 0)
    clock.advance(1001)
    cleaner.run(force=True)
    assert not [x for x in contents(core) if x[1] == b"gone"]


def test_aborted_transaction_data_goes_and_its_marker_after_the_horizon() -> None:
    """CleanedTransactionMetadata: an aborted transaction's batches are discarded; its marker stays
    while the pass still saw the transaction's data, gets a delete horizon on the next pass, and
    goes on the first pass after the horizon."""
    core, clock, c = compacted_core(**{"delete.retention.ms": "1000"})
    log = core.cluster.topics["c"].partitions[0].log
    txn = batch([b"aborted"], keys=[b"t"], producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)
    log.append(bytearray(txn), AppendOrigin.CLIENT, now_ms=clock.now_ms())
    log.append_marker(9, 0, False, coordinator_epoch=0, now_ms=clock.now_ms(), transaction_version=1)
    cleaner = core.subsystems.cleaner

    def marker() -> Any:
        got = [RecordBatch(b.data) for b in log.batches if b.is_control and b.producer_id == 9]
        return got[0] if got else None

    fill(c, 6)
    cleaner.run(force=True)
    assert not [x for x in contents(core) if x[1] == b"t"]
    assert marker() is not None and marker().delete_horizon_ms is None
    fill(c, 2)
    cleaner.run(force=True)
    assert marker().delete_horizon_ms == clock.now_ms() + 1000 and marker().record_count == 1
    clock.advance(1001)
    fill(c, 2)
    cleaner.run(force=True)
    # gone, or kept empty as the producer's last batch (RETAIN_EMPTY keeps its epoch)
    assert marker() is None or marker().record_count == 0


def test_an_idempotent_producers_last_batch_is_kept_so_its_sequence_continues() -> None:
    """RETAIN_EMPTY: the batch holding a producer's last sequence survives as an empty batch; the
    producer's next sequence is then accepted (no OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    core, _, c = compacted_core()
    assert produce(c, [(b"k0", b"p0")], producer_id=5, producer_epoch=0, base_sequence=0).error_code == 0
    fill(c, 6)  # k0 is overwritten later by non-idempotent writes
    core.subsystems.cleaner.run(force=True)
    log = core.cluster.topics["c"].partitions[0].log
    kept = [b for b in log.batches if b.producer_id == 5]
    assert len(kept) == 1 and RecordBatch(kept[0].data).record_count == 0
    assert (RecordBatch(kept[0].data).base_sequence, kept[0].last_offset) == (0, 0)
    assert produce(c, [(b"k9", b"p1")], producer_id=5, producer_epoch=0, base_sequence=1).error_code == 0


def test_the_cleaner_runs_on_the_broker_clock() -> None:
    core, clock, c = compacted_core()
    fill(c, 6)
    log = core.cluster.topics["c"].partitions[0].log
    before = len(contents(core))
    core.advance(15_000)  # log.cleaner.backoff.ms
    assert len(contents(core)) < before and log.cleaner_checkpoint > 0


@pytest.mark.parametrize("crash", [False, True])
def test_a_restart_serves_the_compacted_log(tmp_path: Path, crash: bool) -> None:
    core, _ = make_core(data_dir=str(tmp_path))
    core.create_topic("c", 1, configs=COMPACT)
    c = CoreClient(core)
    fill(c, 6)
    core.subsystems.cleaner.run(force=True)
    want = contents(core)
    checkpoint = core.cluster.topics["c"].partitions[0].log.cleaner_checkpoint
    if not crash:
        core.close()
    core2, _ = make_core(data_dir=str(tmp_path))
    assert contents(core2) == want
    assert core2.cluster.topics["c"].partitions[0].log.cleaner_checkpoint == checkpoint
    assert core2.subsystems.storage.problems == []
