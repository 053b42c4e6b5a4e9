"""Legacy message sets (magic 0/1): build, read, wrappers, up-conversion (broker-semantics 4.3, RB-5)."""

from __future__ import annotations

import struct

import pytest
from kafka.record.legacy_records import LegacyRecordBatch

from kwire.errors import CorruptBatchError, RecordDecodeError, RecordEncodeError
from kwire.records import (
    Compression,
    LegacyBatch,
    LegacyMessageSetBuilder,
    Record,
    RecordBatch,
    iter_batches,
    iter_legacy_messages,
    upconvert_to_v2,
)

MSGS = [(b"v0", b"k0", 100), (None, b"k1", 101), (b"v2", None, 99)]


def _set(magic: int, codec: Compression = Compression.NONE, base_offset: int = 0) -> bytes:
    b = LegacyMessageSetBuilder(magic, codec, base_offset=base_offset)
    for v, k, ts in MSGS:
        b.append(v, k, ts)
    return b.build()


@pytest.mark.parametrize("magic", [0, 1])
def test_message_layout_matches_the_spec_table(magic: int) -> None:
    """4.3: Offset, MessageSize, CRC-32 over Magic..end, Magic, Attributes, [Timestamp], Key, Value."""
    data = _set(magic, base_offset=7)
    offset, size, crc, m, attrs = struct.unpack_from(">qiIbb", data)
    assert (offset, m, attrs) == (7, magic, 0)
    assert size == (14 if magic == 0 else 22) + 4  # record overhead + "k0" + "v0"
    import zlib

    assert crc == zlib.crc32(data[16 : 12 + size])
    if magic:
        assert struct.unpack_from(">q", data, 18)[0] == 100


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4])
def test_legacy_sets_round_trip_and_kafka_python_agrees(magic: int, codec: Compression) -> None:
    data = _set(magic, codec, base_offset=10)
    ours = [tuple(r) for r in iter_legacy_messages(data)]
    want = [(10 + i, ts if magic else -1, k, v, []) for i, (v, k, ts) in enumerate(MSGS)]
    assert ours == want
    theirs = []
    for batch in iter_batches(data):
        kp = LegacyRecordBatch(bytes(batch), magic)
        theirs += [(r.offset, r.timestamp if magic else -1, r.key, r.value, []) for r in kp]
    assert theirs == want


def test_wrapper_reports_batch_fields() -> None:
    data = _set(1, Compression.GZIP, base_offset=20)
    (batch,) = list(iter_batches(data))
    assert isinstance(batch, LegacyBatch)
    assert (batch.base_offset, batch.last_offset, batch.next_offset, batch.record_count) == (20, 22, 23, 3)
    assert (batch.magic, batch.compression, batch.max_timestamp) == (1, Compression.GZIP, 101)
    assert batch.producer_id == -1 and not batch.is_control and batch.size_in_bytes == len(data)
    assert batch.to_dict()["records"][0]["offset"] == 20


def test_log_append_time_wrapper_stamps_inner_messages() -> None:
    b = LegacyMessageSetBuilder(1, Compression.GZIP, timestamp_type=1)
    b.append(b"a", None, 5)
    b.append(b"b", None, 9)
    (batch,) = list(iter_batches(b.build()))
    assert batch.timestamp_type == 1 and [r.timestamp for r in batch] == [9, 9]


def test_flipped_legacy_byte_is_corrupt_batch() -> None:
    data = bytearray(_set(1))
    data[20] ^= 1
    with pytest.raises(CorruptBatchError) as info:
        list(iter_batches(data))
    assert info.value.base_offset == 0
    wrapper = LegacyMessageSetBuilder(0, Compression.GZIP)
    wrapper.append(b"x", None)
    assert list(iter_batches(wrapper.build()))


def test_lying_legacy_lengths_are_typed_errors() -> None:
    data = bytearray(_set(1))
    struct.pack_into(">i", data, 26, 1 << 30)  # key length of the first message
    with pytest.raises(RecordDecodeError):
        list(iter_batches(data, verify_crc=False))
    data = bytearray(_set(0))
    struct.pack_into(">i", data, 8, 3)  # message size below the overhead
    with pytest.raises(RecordDecodeError):
        list(iter_batches(data))


def test_builder_rejects_zstd_and_bad_magic() -> None:
    with pytest.raises(RecordEncodeError):
        LegacyMessageSetBuilder(1, Compression.ZSTD)
    with pytest.raises(RecordEncodeError):
        LegacyMessageSetBuilder(2)
    with pytest.raises(RecordEncodeError):
        LegacyMessageSetBuilder(1).append("str")  # type: ignore[arg-type]


@pytest.mark.rule("RB-5")
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.SNAPPY, Compression.LZ4])
def test_upconvert_to_v2_keeps_records_and_assigns_offsets(magic: int, codec: Compression, impl: str) -> None:
    """RB-5: legacy data is stored as magic 2; offsets assigned as the broker does."""
    data = _set(magic, codec, base_offset=3)
    kept = RecordBatch(upconvert_to_v2(data))
    kept.validate()
    assert kept.compression == codec
    assert list(kept) == [Record(3 + i, ts if magic else -1, k, v) for i, (v, k, ts) in enumerate(MSGS)]
    moved = RecordBatch(upconvert_to_v2(data, base_offset=1000, compression=Compression.ZSTD))
    assert [r.offset for r in moved] == [1000, 1001, 1002] and moved.compression == Compression.ZSTD
    with pytest.raises(RecordEncodeError):
        upconvert_to_v2(bytes(kept))
