"""Hostile bytes: flipped CRC bytes, truncation, lying lengths and counts -> typed errors only.

No IndexError or struct.error may escape, and nothing is allocated in proportion to a lying
length or count (checked with tracemalloc).
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest

from kwire.errors import CorruptBatchError, RecordDecodeError, RecordError
from kwire.records import BatchBuilder, Compression, RecordBatch, iter_batches, validate_and_assign
from kwire.records.varint import encode_varint


def _batch(n: int = 4, base_offset: int = 42, codec: Compression = Compression.NONE) -> bytes:
    b = BatchBuilder(base_offset, compression=codec)
    for i in range(n):
        b.append(b"value-%d" % i, b"key", [("h", b"v")], 1000 + i)
    return b.build()


def _resign(data: bytearray) -> bytearray:
    """Recompute the CRC so a structural lie is reached past the checksum."""
    from kwire.records.crc import crc32c

    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
    return data


@pytest.mark.rule("RB-1")
@pytest.mark.parametrize("pos", [17, 20, 21, 30, 60, 61, -1])
def test_flipped_byte_in_crc_range_is_corrupt_batch_naming_offset_and_crcs(pos: int) -> None:
    """RB-1: any flip from the CRC field on is caught; the error names base offset and both CRCs."""
    data = bytearray(_batch())
    stored = RecordBatch(data).crc
    data[pos] ^= 0x01
    with pytest.raises(CorruptBatchError) as info:
        RecordBatch(data).validate()
    err = info.value
    assert err.base_offset == 42
    assert {err.expected_crc, err.actual_crc} != {stored} and err.expected_crc != err.actual_crc
    assert "base offset 42" in str(err) and f"{err.expected_crc:08x}" in str(err)
    with pytest.raises(CorruptBatchError):
        list(RecordBatch(data))  # iteration verifies too
    with pytest.raises(CorruptBatchError):
        list(iter_batches(data))
    with pytest.raises(CorruptBatchError):
        validate_and_assign(data, 0, 0)
    assert len(list(RecordBatch(data, verify_crc=False).records_buffer)) > 0


def test_truncated_batch_is_a_typed_error_or_a_partial_tail() -> None:
    data = _batch()
    for cut in range(len(data)):
        it = iter_batches(data[:cut])
        assert list(it) == []
        assert it.partial_bytes == cut
        with pytest.raises(RecordDecodeError):
            RecordBatch(data[:cut])


@pytest.mark.parametrize("length", [-1, 0, 48, -(1 << 31)])
def test_batch_length_below_the_header_is_rejected(length: int) -> None:
    data = bytearray(_batch())
    struct.pack_into(">i", data, 8, length)
    with pytest.raises(RecordDecodeError, match="length"):
        list(iter_batches(data))
    with pytest.raises(RecordDecodeError):
        RecordBatch(data)
    with pytest.raises(RecordDecodeError):
        validate_and_assign(data, 0, 0)


def test_batch_length_larger_than_the_data_is_a_partial_tail_not_an_allocation() -> None:
    data = bytearray(_batch())
    struct.pack_into(">i", data, 8, (1 << 31) - 1)
    it = iter_batches(data)
    assert list(it) == [] and it.partial_bytes == len(data)
    with pytest.raises(RecordDecodeError):
        validate_and_assign(data, 0, 0)


@pytest.mark.parametrize("count", [5, 1000, (1 << 31) - 1, -1])
def test_record_count_larger_than_the_data_is_a_typed_error(count: int, impl: str) -> None:
    data = _resign(bytearray(_batch(4)))
    struct.pack_into(">i", data, 57, count)
    _resign(data)
    tracemalloc.start()
    try:
        with pytest.raises(RecordDecodeError) as info:
            list(RecordBatch(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.base_offset == 42
    assert peak < 1_000_000  # never sized by the lying count


def test_record_count_lie_in_a_compressed_batch_is_caught_after_decompression(impl: str) -> None:
    data = bytearray(_batch(4, codec=Compression.ZSTD))
    struct.pack_into(">i", data, 57, (1 << 31) - 1)
    _resign(data)
    with pytest.raises(RecordDecodeError, match="record count"):
        list(RecordBatch(data))


def test_fewer_records_than_bytes_is_a_typed_error(impl: str) -> None:
    data = _resign(bytearray(_batch(4)))
    struct.pack_into(">i", data, 57, 3)
    _resign(data)
    with pytest.raises(RecordDecodeError, match="left after"):
        list(RecordBatch(data))


def _one_record_batch(body: bytes, length: int | None = None) -> bytearray:
    """A batch whose records region is one hand-written record (to lie in its fields)."""
    data = bytearray(_batch(1))
    region = encode_varint(len(body) if length is None else length) + body
    out = bytearray(data[:61]) + region
    struct.pack_into(">i", out, 8, len(out) - 12)
    return _resign(out)


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\x00\x00" + encode_varint(100) + b"k" + b"\x01\x00",  # key length past the record
        b"\x00\x00\x00\x01" + encode_varint(50) + b"v\x00",  # value length past the record
        b"\x00\x00\x00" + encode_varint(-5) + b"\x01\x00",  # negative key length other than -1
        b"\x00\x00\x00\x01\x01" + encode_varint(1 << 20),  # header count past the record
        b"\x00\x00\x00\x01\x01" + encode_varint(-3),  # negative header count
        b"\x00\x00\x00\x01\x01\x02" + encode_varint(40) + b"ab\x01",  # header key length lies
        b"\x00\x00\x00\x01\x01\x02\x02\xff\xfe\x01",  # header key not UTF-8
        b"\x00\x00\x00\x01\x01\x02\x02ab" + encode_varint(-7),  # bad header value length
        b"\x00" + b"\xff" * 11,  # over-long varlong
        b"\x00\x00" + b"\xff" * 6,  # over-long varint
        b"\x00\x00\x00\x01\x01\x00\x99",  # stray byte inside the record
    ],
)
def test_lying_record_fields_are_typed_errors(body: bytes, impl: str) -> None:
    with pytest.raises(RecordDecodeError) as info:
        list(RecordBatch(_one_record_batch(body)))
    assert info.value.base_offset == 42


@pytest.mark.parametrize("length", [-1, 3, 5, 1 << 30])
def test_lying_record_length_is_a_typed_error(length: int, impl: str) -> None:
    body = b"\x00\x00\x00\x01\x01\x00"
    with pytest.raises(RecordDecodeError):
        list(RecordBatch(_one_record_batch(body, length)))


def test_unknown_codec_bits_are_a_typed_error(impl: str) -> None:
    data = bytearray(_batch())
    data[22] |= 0x07
    _resign(data)
    with pytest.raises(RecordDecodeError, match="codec"):
        RecordBatch(data).validate()
    with pytest.raises(RecordDecodeError):
        list(iter_batches(data))


def test_corrupt_compressed_payload_is_a_record_error(impl: str) -> None:
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        data = bytearray(_batch(20, codec=codec))
        for i in range(61, len(data)):
            data[i] ^= 0x5A
        _resign(data)
        with pytest.raises(RecordError) as info:
            list(RecordBatch(data))
        assert "42" in str(info.value)


def test_unknown_magic_is_a_typed_error() -> None:
    data = bytearray(_batch())
    data[16] = 3
    with pytest.raises(RecordDecodeError, match="magic"):
        list(iter_batches(data))
