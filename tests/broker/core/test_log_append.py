"""The one append path of a partition's log (``PartitionLog.append``), per origin, without a core:
client checks, producer state (TX-6..TX-10), the transaction index and LSO (TX-18..TX-21), marker
acceptance (TX-19), LogAppendTime, segment rolls, listeners, and a restore that rebuilds exactly
what the live appends built."""

from __future__ import annotations

import pytest

from kwire.broker.core.log import AppendOrigin, LogConfig, PartitionLog
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.records import BatchBuilder, Compression, ControlRecordType, RecordBatch, build_control_batch
from kwire.records.batch import BatchInfo

NOW = 1_750_000_000_000
CLIENT, DLQ, RESTORE = AppendOrigin.CLIENT, AppendOrigin.DLQ, AppendOrigin.RESTORE


def raw(n: int = 1, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
        compression: Compression = Compression.NONE, size: int = 1) -> bytearray:
    b = BatchBuilder(0, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn,
                     compression=compression)
    for i in range(n):
        b.append(b"v" * size, key=b"k%d" % i, timestamp_ms=NOW + i)
    return bytearray(b.build())


def append(log: PartitionLog, buf: bytearray, origin: AppendOrigin = CLIENT, **kw: object) -> object:
    return log.append(buf, origin, now_ms=NOW, **kw)  # type: ignore[arg-type]


def refused(log: PartitionLog, buf: bytearray, code: int, **kw: object) -> None:
    before = (log.log_end_offset, len(log.batches), {p: (e.epoch, list(e.batches)) for p, e in log.producers.entries.items()})
    with pytest.raises(KafkaError) as exc:
        append(log, buf, **kw)
    assert exc.value.code == code
    after = (log.log_end_offset, len(log.batches), {p: (e.epoch, list(e.batches)) for p, e in log.producers.entries.items()})
    assert after == before  # a refused batch changes nothing


def test_client_batches_get_offsets_and_the_leader_epoch_in_place() -> None:
    log = PartitionLog("t", 0)
    first, second = raw(3), raw(2)
    r1 = append(log, first, leader_epoch=4)
    r2 = append(log, second, leader_epoch=4)
    assert (r1.base_offset, r1.last_offset, r2.base_offset, r2.last_offset) == (0, 2, 3, 4)  # type: ignore[attr-defined]
    stored = RecordBatch(log.batches[1].data)
    assert (stored.base_offset, stored.partition_leader_epoch) == (3, 4)
    assert log.batches[1].data is second  # stored as given, not copied
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == 5


def test_client_batch_checks_in_kafkas_order_and_nothing_changes() -> None:
    log = PartitionLog("t", 0)
    refused(log, raw(1, size=2000), ErrorCode.MESSAGE_TOO_LARGE, config=LogConfig(max_message_bytes=1000))
    refused(log, raw(1, compression=Compression.ZSTD), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, allow_zstd=False)
    refused(log, bytearray(build_control_batch(ControlRecordType.COMMIT, 1, 0, 0)), ErrorCode.INVALID_RECORD)
    refused(log, raw(1, pid=5, epoch=-1, seq=0), ErrorCode.INVALID_RECORD)
    bad = raw(1)
    bad[-1] ^= 0xFF
    refused(log, bad, ErrorCode.CORRUPT_MESSAGE)
    append(log, raw(1, compression=Compression.ZSTD))  # zstd is fine from v7 on


@pytest.mark.rule("TX-6")
def test_tx6_a_retried_batch_is_answered_with_its_original_offset_and_not_appended() -> None:
    """TX-6: same epoch and first/last sequence of a retained batch → success, original offset."""
    log = PartitionLog("t", 0)
    heard = []
    log.on_append.append(heard.append)
    append(log, raw(2, pid=1, epoch=0, seq=0))
    append(log, raw(1))
    again = append(log, raw(2, pid=1, epoch=0, seq=0))
    assert (again.base_offset, again.last_offset, again.duplicate) == (0, 1, True)  # type: ignore[attr-defined]
    assert log.log_end_offset == 3 and len(heard) == 2


@pytest.mark.rule("TX-7")
def test_tx7_an_older_epoch_is_invalid_producer_epoch() -> None:
    """TX-7: an epoch below the current one → INVALID_PRODUCER_EPOCH."""
    log = PartitionLog("t", 0)
    append(log, raw(1, pid=1, epoch=3, seq=0))
    refused(log, raw(1, pid=1, epoch=2, seq=1), ErrorCode.INVALID_PRODUCER_EPOCH)


@pytest.mark.rule("TX-8")
def test_tx8_sequences_follow_on_new_epochs_start_at_zero_unknown_producers_start_anywhere() -> None:
    """TX-8: same epoch → last+1 (wrapping); a higher epoch starts at 0; no state → anything."""
    log = PartitionLog("t", 0)
    append(log, raw(2, pid=1, epoch=0, seq=40))  # no state: any first sequence
    refused(log, raw(1, pid=1, epoch=0, seq=43), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    append(log, raw(1, pid=1, epoch=0, seq=42))
    refused(log, raw(1, pid=1, epoch=1, seq=5), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    append(log, raw(1, pid=1, epoch=1, seq=0))
    append(log, raw(1, pid=2, epoch=0, seq=2**31 - 1))
    append(log, raw(1, pid=2, epoch=0, seq=0))  # RB-3: the sequence wraps


@pytest.mark.rule("TX-10")
def test_tx10_a_sequence_is_required_and_plain_batches_cannot_join_an_open_transaction() -> None:
    """TX-10: a producer id without a base sequence → INVALID_RECORD; a non-transactional batch
    from a producer with an open transaction → INVALID_TXN_STATE."""
    log = PartitionLog("t", 0)
    refused(log, raw(1, pid=1, epoch=0, seq=-1), ErrorCode.INVALID_RECORD)
    append(log, raw(1, pid=1, epoch=0, seq=0, txn=True))
    refused(log, raw(1, pid=1, epoch=0, seq=1), ErrorCode.INVALID_TXN_STATE)


@pytest.mark.rule("TX-20")
def test_tx20_open_transactions_hold_the_lso_at_their_first_offset() -> None:
    """TX-20: LSO = min(first offset of every open transaction, high watermark)."""
    log = PartitionLog("t", 0)
    append(log, raw(2))
    append(log, raw(2, pid=1, epoch=0, seq=0, txn=True))  # offsets 2-3
    append(log, raw(1, pid=2, epoch=0, seq=0, txn=True))  # offset 4
    append(log, raw(1, pid=1, epoch=0, seq=2, txn=True))  # offset 5: same transaction
    assert (log.last_stable_offset, log.high_watermark) == (2, 6)
    log.append_marker(1, 0, True, coordinator_epoch=0, now_ms=NOW, transaction_version=1)
    assert log.last_stable_offset == 4
    log.append_marker(2, 0, False, coordinator_epoch=0, now_ms=NOW, transaction_version=1)
    assert log.last_stable_offset == log.high_watermark == 8
    assert log.last_stable_offset <= log.high_watermark


@pytest.mark.rule("TX-21")
def test_tx21_aborted_transactions_are_indexed_for_read_committed_fetches() -> None:
    """TX-21: an ABORT marker records (producer, first offset, marker offset); a fetch range
    overlapping it lists it; a committed one is not listed."""
    log = PartitionLog("t", 0)
    append(log, raw(2, pid=1, epoch=0, seq=0, txn=True))  # 0-1
    log.append_marker(1, 0, False, coordinator_epoch=0, now_ms=NOW, transaction_version=1)  # 2
    append(log, raw(1, pid=3, epoch=0, seq=0, txn=True))  # 3
    log.append_marker(3, 0, True, coordinator_epoch=0, now_ms=NOW, transaction_version=1)  # 4
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in log.aborted_txns] == [(1, 0, 2)]
    assert log.aborted_in_range(1, 5) == log.aborted_txns and log.aborted_in_range(3, 5) == []


@pytest.mark.rule("TX-18")
def test_tx18_a_marker_is_one_control_record_with_the_coordinator_epoch_and_the_broker_time() -> None:
    """TX-18: magic 2, transactional and control bits, base sequence -1, one record."""
    log = PartitionLog("t", 0)
    append(log, raw(1, pid=9, epoch=0, seq=0, txn=True))
    log.append_marker(9, 1, True, coordinator_epoch=7, now_ms=NOW + 55, leader_epoch=3)
    b = RecordBatch(log.batches[-1].data)
    b.validate()
    assert (b.is_control, b.is_transactional, b.base_sequence, b.record_count) == (True, True, -1, 1)
    assert (b.producer_id, b.producer_epoch, b.max_timestamp, b.partition_leader_epoch) == (9, 1, NOW + 55, 3)
    assert b.base_offset == 1


@pytest.mark.rule("TX-19")
def test_tx19_marker_acceptance_epochs_and_coordinator_epochs() -> None:
    """TX-19: TV2 markers need an epoch above the open transaction's (a repeat once it ended is
    an idempotent retry); older epochs → INVALID_PRODUCER_EPOCH; an older coordinator epoch →
    TRANSACTION_COORDINATOR_FENCED."""
    log = PartitionLog("t", 0)
    append(log, raw(1, pid=1, epoch=4, seq=0, txn=True))
    for kw, code in (({"producer_epoch": 4}, ErrorCode.INVALID_PRODUCER_EPOCH),
                     ({"producer_epoch": 3}, ErrorCode.INVALID_PRODUCER_EPOCH)):
        with pytest.raises(KafkaError) as exc:
            log.append_marker(1, kw["producer_epoch"], True, coordinator_epoch=2, now_ms=NOW)
        assert exc.value.code == code
    log.append_marker(1, 5, True, coordinator_epoch=2, now_ms=NOW)  # TV2: the bumped epoch
    log.append_marker(1, 5, True, coordinator_epoch=2, now_ms=NOW)  # repeat after the end: accepted
    with pytest.raises(KafkaError) as exc:
        log.append_marker(1, 6, False, coordinator_epoch=1, now_ms=NOW)
    assert exc.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # The marker's epoch fenced the producer's old epoch for data too (TX-7).
    refused(log, raw(1, pid=1, epoch=4, seq=1, txn=True), ErrorCode.INVALID_PRODUCER_EPOCH)
    append(log, raw(1, pid=1, epoch=5, seq=0, txn=True))


def test_dlq_and_coordinator_appends_skip_client_checks_and_are_heard() -> None:
    log = PartitionLog("t", 0)
    heard = []
    log.on_append.append(heard.append)
    r = append(log, raw(1, size=5000), DLQ, config=LogConfig(max_message_bytes=100))
    assert r.base_offset == 0 and len(heard) == 1  # type: ignore[attr-defined]


def test_log_append_time_is_stamped_by_live_appends_only() -> None:
    log = PartitionLog("t", 0)
    r = append(log, raw(2), config=LogConfig(log_append_time=True))
    b = RecordBatch(log.batches[0].data)
    assert (r.log_append_time, b.timestamp_type, b.max_timestamp) == (NOW, 1, NOW)  # type: ignore[attr-defined]
    b.validate()
    restored = PartitionLog("t", 0)
    data = bytearray(log.batches[0].data)
    restored.append(data, RESTORE, now_ms=NOW + 999, info=_info(data), config=LogConfig(log_append_time=True))
    assert RecordBatch(restored.batches[0].data).max_timestamp == NOW


def test_segments_roll_at_segment_bytes() -> None:
    log = PartitionLog("t", 0)
    cfg = LogConfig(segment_bytes=300)
    for _ in range(4):
        append(log, raw(1, size=150), config=cfg)
    assert [s.base_offset for s in log.segments] == [0, 1, 2, 3]


def _info(data: bytearray) -> BatchInfo:
    from kwire.broker.core.storage import batch_info

    return batch_info(RecordBatch(data))


def test_restore_rebuilds_exactly_the_live_state_and_keeps_offsets() -> None:
    live = PartitionLog("t", 0)
    heard: list[object] = []
    append(live, raw(2))
    append(live, raw(2, pid=1, epoch=0, seq=0, txn=True))
    append(live, raw(1, pid=2, epoch=0, seq=0, txn=True))
    live.append_marker(1, 0, False, coordinator_epoch=3, now_ms=NOW, transaction_version=1)
    append(live, raw(3, pid=4, epoch=2, seq=10))
    restored = PartitionLog("t", 0)
    restored.on_append.append(heard.append)
    for b in live.batches:
        data = bytearray(b.data)
        restored.append(data, RESTORE, now_ms=NOW, info=_info(data))
    assert heard == []  # restoring is not news for persistence or long polls
    assert restored.log_end_offset == live.log_end_offset
    assert restored.last_stable_offset == live.last_stable_offset == 4
    assert restored.open_txn_first_offsets == live.open_txn_first_offsets == {2: 4}
    assert restored.aborted_txns == live.aborted_txns
    def state(log: PartitionLog) -> dict[int, object]:
        return {p: (e.epoch, e.txn_first_offset, e.coordinator_epoch, list(e.batches))
                for p, e in log.producers.entries.items()}
    assert state(restored) == state(live)
    # An overlapping batch is refused on restore, not appended twice.
    with pytest.raises(KafkaError):
        data = bytearray(live.batches[0].data)
        restored.append(data, RESTORE, now_ms=NOW, info=_info(data))
