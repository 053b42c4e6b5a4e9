"""Log segments and partition directories: Kafka's on-disk layout, torn tails, index files."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kwire.errors import CorruptBatchError, SegmentError
from kwire.records import (
    BatchBuilder,
    SegmentWriter,
    iter_partition_dir,
    list_segments,
    parse_partition_dir_name,
    partition_dir_name,
    read_offset_index,
    read_segment,
    read_time_index,
    segment_filename,
    write_segment,
)


def _batch(base: int, n: int = 3, size: int = 10) -> bytes:
    b = BatchBuilder(base)
    for i in range(n):
        b.append(b"v" * size, b"k%d" % (base + i), (), 1000 + base + i)
    return b.build()


def test_names_follow_kafka(tmp_path: Path) -> None:
    assert segment_filename(42) == "00000000000000000042.log"
    assert segment_filename(7, ".timeindex") == "00000000000000000007.timeindex"
    assert partition_dir_name("orders", 3) == "orders-3"
    assert parse_partition_dir_name(tmp_path / "my-topic-12") == ("my-topic", 12)
    with pytest.raises(SegmentError):
        parse_partition_dir_name("nodash")
    with pytest.raises(SegmentError):
        segment_filename(-1)


def test_write_then_read_a_partition_dir(tmp_path: Path) -> None:
    d = tmp_path / "orders-0"
    write_segment(d, [_batch(0), _batch(3)])
    write_segment(d, [_batch(6), _batch(9)])
    assert [p.name for _, p in list_segments(d)] == ["00000000000000000000.log", "00000000000000000006.log"]
    reader = iter_partition_dir(d)
    assert [r.offset for b in reader for r in b] == list(range(12))
    assert reader.torn_tails == []
    assert (d / "00000000000000000000.log").read_bytes() == _batch(0) + _batch(3)


def test_a_real_clients_batches_read_back_from_a_segment(tmp_path: Path) -> None:
    """Bytes written by kafka-python's builder go through the same reader."""
    kp = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i in range(5):
        kp.append(i, 10 + i, None, b"kp%d" % i, [])
    path = write_segment(tmp_path / "t-0", [bytes(kp.build())])
    assert [r.value for b in read_segment(path) for r in b] == [b"kp%d" % i for i in range(5)]


@pytest.mark.parametrize("cut", [1, 11, 12, 17, 60, 61, 70])
def test_torn_last_batch_is_reported_and_skipped(tmp_path: Path, cut: int) -> None:
    good = _batch(0) + _batch(3)
    path = tmp_path / segment_filename(0)
    path.write_bytes(good + _batch(6)[:cut])
    reader = read_segment(path)
    assert [b.base_offset for b in reader] == [0, 3]
    assert reader.torn_tail is not None
    assert (reader.torn_tail.position, reader.torn_tail.size) == (len(good), cut)
    assert reader.valid_bytes == len(good)


def test_last_batch_with_a_bad_crc_is_a_torn_tail_but_an_earlier_one_raises(tmp_path: Path) -> None:
    good = _batch(0)
    bad = bytearray(_batch(3))
    bad[-1] ^= 0xFF
    path = tmp_path / segment_filename(0)
    path.write_bytes(good + bad)
    reader = read_segment(path)
    assert [b.base_offset for b in reader] == [0]
    assert reader.torn_tail is not None and "CRC" in reader.torn_tail.reason
    path.write_bytes(good + bad + _batch(6))
    with pytest.raises(CorruptBatchError) as info:
        list(read_segment(path))
    assert info.value.base_offset == 3
    recovering = read_segment(path, recover=True)  # stop there, as Kafka's recovery truncates
    assert [b.base_offset for b in recovering] == [0] and recovering.torn_tail is not None


def test_zero_filled_tail_is_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / segment_filename(0)
    path.write_bytes(_batch(0) + bytes(4096))
    reader = read_segment(path)
    assert len(list(reader)) == 1
    assert reader.torn_tail is not None and "zero" in reader.torn_tail.reason


def test_writer_refuses_partial_out_of_order_and_corrupt_batches(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path / "t-0", 100) as w:
        w.append(_batch(100))
        with pytest.raises(SegmentError):
            w.append(_batch(100))  # does not follow next offset 103
        with pytest.raises(SegmentError):
            w.append(_batch(103)[:-1])
        bad = bytearray(_batch(103))
        bad[-1] ^= 1
        with pytest.raises(CorruptBatchError):
            w.append(bytes(bad))
        assert w.next_offset == 103


def test_reopening_a_segment_cuts_a_torn_tail_and_appends(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    path = write_segment(d, [_batch(0)])
    with open(path, "ab") as f:
        f.write(_batch(3)[:20])
    with SegmentWriter(d, 0) as w:
        assert w.next_offset == 3
        w.append(_batch(3))
    reader = read_segment(path)
    assert [b.base_offset for b in reader] == [0, 3] and reader.torn_tail is None


def test_index_files_follow_log_segment_append(tmp_path: Path) -> None:
    """An entry (last offset, position) after more than index.interval.bytes since the last."""
    d = tmp_path / "t-0"
    batches = [_batch(10 * i, n=10, size=100) for i in range(20)]  # ~1.3 KiB each
    with SegmentWriter(d, 0, index_interval_bytes=4096) as w:
        positions = [w.append(b) for b in batches]
    index = read_offset_index(d / segment_filename(0, ".index"))
    assert index, "expected index entries"
    for entry in index:
        i = positions.index(entry.position)
        assert entry.offset == 10 * i + 9
    gaps = [b.position - a.position for a, b in zip(index, index[1:], strict=False)]
    assert all(g > 4096 for g in gaps)
    times = read_time_index(d / segment_filename(0, ".timeindex"))
    assert times and times[-1] == (1000 + 199, 199)
    assert [t.timestamp for t in times] == sorted(t.timestamp for t in times)


def test_missing_paths_raise_segment_errors(tmp_path: Path) -> None:
    with pytest.raises(SegmentError):
        read_segment(tmp_path / "nope.log")
    with pytest.raises(SegmentError):
        list_segments(tmp_path / "nope")
    with pytest.raises(SegmentError):
        write_segment(tmp_path, [])
