"""Control batches: transaction markers built and parsed, flagged and checksummed (KIP-98)."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from kafka.record.default_records import DefaultRecordBatch as KpBatch

from kwire.errors import RecordDecodeError, RecordEncodeError
from kwire.records import (
    ControlRecordType,
    ControlType,
    EndTxnMarker,
    Record,
    RecordBatch,
    build_control_batch,
    parse_control_key,
    parse_control_record,
)


@pytest.mark.rule("RB-2")
@pytest.mark.parametrize("kind", [ControlType.COMMIT, ControlType.ABORT])
def test_marker_batch_is_flagged_control_and_transactional_with_a_real_crc(kind: ControlRecordType) -> None:
    """RB-2 bits 4 and 5 set; the CRC is computed (never 0), and real clients accept it."""
    data = build_control_batch(kind, producer_id=77, producer_epoch=4, coordinator_epoch=9, base_offset=50,
                               timestamp_ms=1234)
    batch = RecordBatch(data)
    batch.validate()
    assert batch.crc != 0 and batch.attributes == 0x30
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 4, -1)
    (record,) = list(batch)
    assert record.key == bytes([0, 0, 0, int(kind)]) and record.value == b"\x00\x00\x00\x00\x00\x09"
    assert parse_control_record(record) == EndTxnMarker(kind, 9)
    assert parse_control_record((record.key, record.value)).is_commit is (kind == ControlType.COMMIT)
    for other in (KpBatch(data), AioBatch(data)):
        assert other.validate_crc() and other.is_control_batch and other.is_transactional
    (kp_record,) = list(KpBatch(data))
    assert kp_record.type == int(kind)


def test_bad_markers_are_refused() -> None:
    with pytest.raises(RecordEncodeError):
        build_control_batch(ControlType.LEADER_CHANGE, 1, 0, 0)
    with pytest.raises(RecordEncodeError):
        build_control_batch(9, 1, 0, 0)
    with pytest.raises(RecordEncodeError):
        build_control_batch(ControlType.COMMIT, -1, 0, 0)
    with pytest.raises(RecordEncodeError):
        build_control_batch(ControlType.COMMIT, 1, 0, 1 << 40)


def test_parse_rejects_non_markers_and_short_fields() -> None:
    with pytest.raises(RecordDecodeError):
        parse_control_record(Record(0, 0, b"\x00\x00", b"\x00" * 6))
    with pytest.raises(RecordDecodeError):
        parse_control_record(Record(0, 0, b"\x00\x00\x00\x02", b"\x00" * 6))
    with pytest.raises(RecordDecodeError):
        parse_control_record(Record(0, 0, b"\x00\x00\x00\x01", b"\x00"))
    with pytest.raises(RecordDecodeError):
        parse_control_key(b"\xff\xff\x00\x01")
    assert parse_control_key(b"\x00\x00\x00\x63") == (0, 0x63)
    assert parse_control_key(b"\x00\x00\x00\x02") == (0, ControlRecordType.LEADER_CHANGE)
