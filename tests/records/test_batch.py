"""Magic 2 batches: header fields, attribute bits, builder options, iteration (RB-1..RB-4)."""

from __future__ import annotations

import struct

import pytest

from kwire.errors import RecordDecodeError, RecordEncodeError
from kwire.records import (
    BatchBuilder,
    Compression,
    Record,
    RecordBatch,
    TimestampType,
    iter_batches,
    set_log_append_time,
    validate_and_assign,
    validate_and_assign_all,
)
from kwire.records.batch import HEADER_SIZE
from kwire.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong


def _batch(n: int = 3, **kw: object) -> bytes:
    b = BatchBuilder(**kw)  # type: ignore[arg-type]
    for i in range(n):
        b.append(f"v{i}".encode(), f"k{i}".encode(), [("h", b"x")], 1_000 + i)
    return b.build()


def test_header_layout_matches_the_spec_table() -> None:
    """The 61-byte header sits at the offsets of broker-semantics 4.1."""
    data = _batch(3, base_offset=100, producer_id=7, producer_epoch=2, base_sequence=9, partition_leader_epoch=4)
    fields = struct.unpack_from(">qiibIhiqqqhii", data)
    assert fields[0] == 100  # BaseOffset
    assert fields[1] == len(data) - 12  # BatchLength: bytes after the field
    assert fields[2] == 4 and fields[3] == 2
    assert fields[6] == 2 and fields[7] == 1000 and fields[8] == 1002
    assert fields[9:] == (7, 2, 9, 3)
    b = RecordBatch(data)
    assert (b.base_offset, b.last_offset, b.next_offset, b.record_count) == (100, 102, 103, 3)
    assert b.size_in_bytes == len(data) and b.batch_length == len(data) - 12
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (7, 2, 9)
    assert b.partition_leader_epoch == 4 and b.magic == 2
    assert (b.base_timestamp, b.max_timestamp) == (1000, 1002)


@pytest.mark.rule("RB-2")
@pytest.mark.parametrize(
    ("kw", "bits"),
    [
        ({"compression": Compression.GZIP}, 0x01),
        ({"compression": Compression.ZSTD}, 0x04),
        ({"timestamp_type": TimestampType.LOG_APPEND_TIME}, 0x08),
        ({"is_transactional": True, "producer_id": 1, "producer_epoch": 0}, 0x10),
        ({"is_control": True}, 0x20),
        ({"delete_horizon_ms": 5_000}, 0x40),
    ],
)
def test_attribute_bits_are_where_rb2_puts_them(kw: dict[str, object], bits: int) -> None:
    """RB-2: codec bits 0-2, timestamp type 3, transactional 4, control 5, delete horizon 6."""
    b = RecordBatch(_batch(2, **kw))
    assert b.attributes == bits
    assert b.compression == bits & 7
    assert b.timestamp_type == (1 if bits & 0x08 else 0)
    assert b.is_transactional is bool(bits & 0x10)
    assert b.is_control is bool(bits & 0x20)
    assert b.has_delete_horizon is bool(bits & 0x40)


@pytest.mark.rule("RB-2")
def test_delete_horizon_becomes_the_base_timestamp() -> None:
    """RB-2: with bit 6 set, BaseTimestamp holds the delete horizon and records stay right."""
    b = RecordBatch(_batch(2, delete_horizon_ms=50))
    assert b.base_timestamp == 50 and b.delete_horizon_ms == 50
    assert [r.timestamp for r in b] == [1000, 1001]


@pytest.mark.rule("RB-3")
@pytest.mark.parametrize(
    ("base", "delta", "last"),
    [(0, 4, 4), (-1, 4, -1), (2147483647, 0, 2147483647), (2147483647, 1, 0), (2147483640, 10, 2)],
)
def test_last_sequence_wraps_past_int32_max_to_zero(base: int, delta: int, last: int) -> None:
    """RB-3: last sequence = base + last offset delta, wrapping to 0."""
    b = BatchBuilder(producer_id=1, producer_epoch=0, base_sequence=base)
    for i in range(delta + 1):
        b.append(b"v", timestamp_ms=i)
    batch = RecordBatch(b.build())
    assert batch.last_sequence == last
    ba = bytearray(b.build())
    assert validate_and_assign(ba, 0, 0).last_sequence == last


@pytest.mark.rule("RB-1")
def test_partition_leader_epoch_and_base_offset_are_outside_the_crc() -> None:
    """RB-1: rewriting bytes 0-15 keeps the CRC valid; any byte from 21 on breaks it."""
    data = bytearray(_batch(5))
    crc = RecordBatch(data).crc
    struct.pack_into(">qii", data, 0, 999, len(data) - 12, 31)
    b = RecordBatch(data)
    b.validate()
    assert (b.crc, b.base_offset, b.partition_leader_epoch) == (crc, 999, 31)
    assert [r.offset for r in b] == [999, 1000, 1001, 1002, 1003]
    data[21] ^= 0x00  # no-op keeps it valid; a real flip is tested in test_corruption
    assert RecordBatch(data).compute_crc() == crc


@pytest.mark.rule("RB-4")
@pytest.mark.parametrize(
    ("n", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (2147483647, b"\xfe\xff\xff\xff\x0f"), (-2147483648, b"\xff\xff\xff\xff\x0f")],
)
def test_varints_are_zigzag_seven_bits_low_group_first(n: int, encoded: bytes) -> None:
    """RB-4: zig-zag, 7 bits a byte, least significant group first, at most 5 bytes."""
    assert encode_varint(n) == encoded
    assert decode_varint(encoded) == (n, len(encoded))


@pytest.mark.rule("RB-4")
def test_varlong_takes_ten_bytes_at_most() -> None:
    """RB-4: int64 extremes take 10 bytes; an 11th continuation byte is an error."""
    for n in (-(1 << 63), (1 << 63) - 1):
        enc = encode_varlong(n)
        assert len(enc) == 10 and decode_varlong(enc) == (n, 10)
    with pytest.raises(RecordDecodeError):
        decode_varlong(b"\xff" * 11)
    with pytest.raises(RecordDecodeError):
        decode_varint(b"\xff" * 6)
    with pytest.raises(RecordDecodeError):
        decode_varint(b"\x80")
    with pytest.raises(RecordEncodeError):
        encode_varint(1 << 31)


def test_records_carry_offsets_timestamps_keys_values_headers(impl: str) -> None:
    b = BatchBuilder(base_offset=10)
    b.append(b"a", None, [("x", None), ("\u00fc", b"")], 5)
    b.append(None, b"k", (), 3)  # negative timestamp delta
    b.append(b"", b"", [], 7)
    recs = list(RecordBatch(b.build()))
    assert recs == [
        Record(10, 5, None, b"a", [("x", None), ("\u00fc", b"")]),
        Record(11, 3, b"k", None, []),
        Record(12, 7, b"", b"", []),
    ]
    assert recs[1].to_dict() == {"offset": 11, "timestamp": 3, "key": b"k", "value": None, "headers": []}
    assert "Record(offset=10" in repr(recs[0])


def test_record_fields_read_by_name_and_survive_pickle_in_both_builds(impl: str) -> None:
    """Record is a 5-tuple with named fields whichever loop decoded it (RB-4 record layout)."""
    import copy
    import pickle

    rec = next(iter(RecordBatch(_batch(1))))
    assert (rec.offset, rec.timestamp, rec.key, rec.value, rec.headers) == tuple(rec)
    assert pickle.loads(pickle.dumps(rec)) == rec and type(pickle.loads(pickle.dumps(rec))) is Record
    assert copy.copy(rec) == rec and isinstance(rec, tuple) and len(rec) == 5
    with pytest.raises(AttributeError):
        rec.offset = 3  # type: ignore[misc]


def test_a_record_cannot_be_built_short_of_its_five_fields() -> None:
    """With the C build the fields are unchecked slot reads, so a short Record must be impossible."""
    from kwire.records import batch as batch_mod

    with pytest.raises(TypeError):
        Record(1, 2, b"k")  # type: ignore[call-arg]
    if batch_mod._speedups is None:
        pytest.skip("C speedups not built")
    with pytest.raises(TypeError):
        tuple.__new__(Record, ())  # refused: RecordBase has its own constructor
    with pytest.raises(TypeError):
        batch_mod._speedups.RecordBase.__new__(Record, (1, 2, 3))
    assert batch_mod._speedups.RecordBase.__new__(Record, [1, 2, None, None, []]).headers == []


def test_iteration_is_lazy_and_a_bad_record_fails_where_it_sits(impl: str) -> None:
    """Good records before a corrupt one are yielded first, then RecordDecodeError, in both loops."""
    data = bytearray(_batch(3))
    # the third record's length varint: make it claim more bytes than the batch holds
    recs_region = data[HEADER_SIZE:]
    first_len, n = decode_varint(bytes(recs_region))
    second_len, m = decode_varint(bytes(recs_region[n + first_len :]))
    third_at = HEADER_SIZE + n + first_len + m + second_len
    data[third_at] = 0x7E  # zig-zag 63: longer than what is left
    it = iter(RecordBatch(data, verify_crc=False))
    assert next(it).offset == 0 and next(it).offset == 1
    with pytest.raises(RecordDecodeError) as info:
        next(it)
    assert info.value.offset == third_at + 1 and info.value.base_offset == 0
    assert list(it) == []  # a failed iterator stays finished
    with pytest.raises(RecordDecodeError) as again:
        RecordBatch(data, verify_crc=False).records()
    assert str(again.value) == str(info.value)


def test_header_keys_that_change_between_records_are_read_fresh(impl: str) -> None:
    """The C loop shares a header key str with the previous record only when the bytes match."""
    b = BatchBuilder()
    keys = [["a", "b"], ["a", "c"], ["\u00e9", "b"], ["ab", "b"], ["a"], ["a", "b", "x"]]
    for i, ks in enumerate(keys):
        b.append(b"v", None, [(k, b"%d" % i) for k in ks], i)
    batch = RecordBatch(b.build())
    want = [[(k, b"%d" % i) for k in ks] for i, ks in enumerate(keys)]
    assert [r.headers for r in batch] == want
    assert [r.headers for r in batch.records()] == want


def test_log_append_time_gives_every_record_the_max_timestamp(impl: str) -> None:
    data = bytearray(_batch(3))
    set_log_append_time(data, 77_777)
    b = RecordBatch(data)
    b.validate()  # the CRC was recomputed: these fields are inside it
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in b] == [77_777] * 3


def test_explicit_offsets_leave_gaps_like_a_compacted_batch(impl: str) -> None:
    b = BatchBuilder(base_offset=100)
    b.append(b"a", timestamp_ms=1, offset=100)
    b.append(b"b", timestamp_ms=1, offset=105)
    batch = RecordBatch(b.build())
    assert [r.offset for r in batch] == [100, 105]
    assert batch.last_offset_delta == 5 and batch.record_count == 2
    with pytest.raises(RecordEncodeError):
        b.append(b"c", timestamp_ms=1, offset=104)


def test_empty_batch_builds_with_no_records() -> None:
    batch = RecordBatch(BatchBuilder(base_offset=3).build())
    batch.validate()
    assert batch.record_count == 0 and list(batch) == []
    assert batch.base_timestamp == -1


def test_builder_rejects_bad_types_with_typed_errors(impl: str) -> None:
    for kwargs in ({"value": 5}, {"value": b"v", "key": "str"}, {"value": b"v", "headers": [("k", "v")]},
                   {"value": b"v", "headers": [(1, b"v")]}, {"value": b"v", "headers": [("k",)]}):
        b = BatchBuilder()
        b.append(timestamp_ms=1, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(RecordEncodeError):
            b.build()
    b = BatchBuilder()
    b.append(b"v", headers=[("\ud800", b"")], timestamp_ms=1)
    with pytest.raises(RecordEncodeError):
        b.build()
    b = BatchBuilder()
    b.append(b"v", timestamp_ms=1.5)  # type: ignore[arg-type]
    with pytest.raises(RecordEncodeError):
        b.build()
    with pytest.raises(RecordEncodeError):
        BatchBuilder(compression=9)
    b = BatchBuilder(producer_epoch=1 << 20)
    with pytest.raises(RecordEncodeError):
        b.build()


def test_builder_accepts_bytearray_and_memoryview_values(impl: str) -> None:
    b = BatchBuilder()
    b.append(bytearray(b"ba"), memoryview(b"mv"), [("h", bytearray(b"x"))], 1)
    assert list(RecordBatch(b.build()))[0] == Record(0, 1, b"mv", b"ba", [("h", b"x")])
    assert b.record_count == 1 and b.estimated_size() >= len(b.build())


def test_to_dict_and_header_dict() -> None:
    d = RecordBatch(_batch(2, compression=Compression.LZ4)).to_dict()
    assert d["compression"] == "lz4" and d["record_count"] == 2 and len(d["records"]) == 2
    assert "records" not in RecordBatch(_batch(1)).to_dict(records=False)


def test_constructor_takes_an_offset_and_views_without_copying() -> None:
    a, b = _batch(1, base_offset=1), _batch(2, base_offset=2)
    buf = bytearray(a + b)
    batch = RecordBatch.from_buffer(buf, len(a))
    assert batch.base_offset == 2
    buf[len(a) + 15] = 9  # partition leader epoch low byte: visible through the view
    assert batch.buffer[15] == 9 and batch.partition_leader_epoch == -1  # header was unpacked once
    assert bytes(batch) == bytes(buf[len(a):])
    with pytest.raises(RecordDecodeError):
        RecordBatch(buf, len(buf) - 10)


def test_iter_batches_yields_views_and_reports_a_partial_tail() -> None:
    """A fetch response may end inside a batch: iteration stops there and says so."""
    parts = [_batch(2, base_offset=o) for o in (0, 2, 4)]
    whole = b"".join(parts)
    it = iter_batches(whole + parts[0][:30])
    assert [b.base_offset for b in it] == [0, 2, 4]
    assert it.has_partial_tail and it.partial_bytes == 30 and it.position == len(whole)
    it = iter_batches(whole + parts[0][:5])  # not even the magic byte is there
    assert len(list(it)) == 3 and it.partial_bytes == 5
    it = iter_batches(whole)
    assert len(list(it)) == 3 and not it.has_partial_tail
    assert list(iter_batches(b"")) == []


def test_validate_and_assign_rewrites_in_place_without_touching_records() -> None:
    data = bytearray(_batch(4, producer_id=3, producer_epoch=1, base_sequence=0))
    before = bytes(data[16:])
    info = validate_and_assign(data, 500, 12)
    assert bytes(data[16:]) == before  # CRC and records untouched
    assert (info.base_offset, info.last_offset, info.next_offset, info.record_count) == (500, 503, 504, 4)
    assert (info.producer_id, info.producer_epoch, info.base_sequence, info.last_sequence) == (3, 1, 0, 3)
    b = RecordBatch(data)
    b.validate()
    assert (b.base_offset, b.partition_leader_epoch) == (500, 12)
    assert [r.offset for r in b] == [500, 501, 502, 503]
    view = memoryview(bytearray(_batch(1)))
    assert validate_and_assign(view, 1, 1).base_offset == 1
    with pytest.raises(TypeError):
        validate_and_assign(bytes(data), 0, 0)  # type: ignore[arg-type]


def test_validate_and_assign_all_chains_offsets() -> None:
    buf = bytearray(_batch(2) + _batch(3) + _batch(1))
    infos = validate_and_assign_all(buf, 10, 1)
    assert [(i.base_offset, i.last_offset) for i in infos] == [(10, 11), (12, 14), (15, 15)]
    assert [b.base_offset for b in iter_batches(buf)] == [10, 12, 15]


def test_validate_and_assign_rejects_inconsistent_count_and_legacy_magic() -> None:
    """LogValidator: count must be > 0 and equal LastOffsetDelta + 1; magic must be 2 (RB-5)."""
    b = BatchBuilder()
    b.append(b"a", timestamp_ms=1, offset=0)
    b.append(b"b", timestamp_ms=1, offset=3)
    with pytest.raises(RecordDecodeError, match="inconsistent"):
        validate_and_assign(bytearray(b.build()), 0, 0)
    with pytest.raises(RecordDecodeError, match="record count"):
        validate_and_assign(bytearray(BatchBuilder().build()), 0, 0)
    from kwire.records import LegacyMessageSetBuilder

    lb = LegacyMessageSetBuilder(magic=1)
    lb.append(b"x" * 60, timestamp_ms=1)
    with pytest.raises(RecordDecodeError, match="magic"):
        validate_and_assign(bytearray(lb.build()), 0, 0)


def test_batch_rejects_non_v2_magic_and_short_headers() -> None:
    data = bytearray(_batch(1))
    data[16] = 1
    with pytest.raises(RecordDecodeError, match="magic"):
        RecordBatch(data)
    with pytest.raises(RecordDecodeError):
        RecordBatch(data[: HEADER_SIZE - 1])
