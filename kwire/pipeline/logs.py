"""``log_records`` from partition directories, and the split planner that cuts segments into tasks.

INPUT is a log dir holding ``<topic>-<partition>/`` directories, or one such directory. The
planner walks only the batch length fields (``baseOffset int64 | batchLength int32``: the next
batch starts at ``pos + 12 + batchLength``) and cuts a segment at the first batch boundary past
every ``target_bytes``; small segments are packed together. A segment whose last batch is
incomplete (a torn tail: the writer died mid-append) ends at the last whole batch, and the
tail is reported, as ``kwire.records.segment`` does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwire.errors import CaptureError, RecordError, SegmentError
from kwire.records.message_set import iter_batches
from kwire.records.segment import list_segments, parse_partition_dir_name

__all__ = ["LogSlice", "TornTail", "partition_dirs", "plan_log_slices", "pack", "iter_log_records",
           "DEFAULT_TARGET_BYTES"]

DEFAULT_TARGET_BYTES = 64 << 20  # spark.md §3: 32-128 MB of input per task
_BATCH_PREFIX = struct.Struct(">qi")
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(slots=True, frozen=True)
class LogSlice:
    """Bytes ``[start, end)`` of one segment file: whole batches only."""

    path: str
    topic: str
    partition: int
    start: int
    end: int


@dataclass(slots=True, frozen=True)
class TornTail:
    path: str
    position: int
    nbytes: int


def partition_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """The partition directories under ``root`` (or ``root`` itself when it is one), sorted."""
    r = Path(root)
    if not r.is_dir():
        raise CaptureError(f"{r} is not a directory")
    try:
        parse_partition_dir_name(r)
        if list_segments(r):
            return [r]
    except SegmentError:
        pass
    out = []
    for d in sorted(r.iterdir()):
        if not d.is_dir():
            continue
        try:
            parse_partition_dir_name(d)
        except SegmentError:
            continue
        out.append(d)
    return out


def _walk(path: Path, target: int) -> tuple[list[tuple[int, int]], TornTail | None]:
    """Cut points of one segment: ``(start, end)`` ranges of whole batches, about ``target`` each."""
    size = path.stat().st_size
    ranges = []
    start = pos = 0
    with open(path, "rb") as f:
        while pos + 12 <= size:
            f.seek(pos)
            _, length = _BATCH_PREFIX.unpack(f.read(12))
            nxt = pos + 12 + length
            if length < 49 or nxt > size:  # 49: the smallest v2 batch after the length field
                break
            pos = nxt
            if pos - start >= target:
                ranges.append((start, pos))
                start = pos
    if pos > start:
        ranges.append((start, pos))
    torn = TornTail(str(path), pos, size - pos) if pos < size else None
    return ranges, torn


def plan_log_slices(root: str | os.PathLike[str], target_bytes: int = DEFAULT_TARGET_BYTES, *,
                    topics: Collection[str] | None = None) -> tuple[list[LogSlice], list[TornTail]]:
    """Every segment of every partition dir under ``root`` (of ``topics`` only, when given) as
    slices of at most ~``target_bytes``."""
    slices: list[LogSlice] = []
    torn: list[TornTail] = []
    for d in partition_dirs(root):
        topic, partition = parse_partition_dir_name(d)
        if topics is not None and topic not in topics:
            continue
        for _, seg in list_segments(d):
            ranges, tail = _walk(seg, target_bytes)
            slices.extend(LogSlice(str(seg), topic, partition, a, b) for a, b in ranges)
            if tail is not None:
                torn.append(tail)
    return slices, torn


def pack(items: list[LogSlice], target_bytes: int) -> list[list[LogSlice]]:
    """Group slices, in order, into tasks of about ``target_bytes`` each."""
    tasks: list[list[LogSlice]] = []
    cur: list[LogSlice] = []
    size = 0
    for s in items:
        if cur and size + (s.end - s.start) > target_bytes:
            tasks.append(cur)
            cur, size = [], 0
        cur.append(s)
        size += s.end - s.start
    if cur:
        tasks.append(cur)
    return tasks


def iter_log_records(piece: LogSlice, *, source: str | None = None) -> Iterator[dict[str, Any]]:
    """``log_records`` rows of one slice; a batch that fails its CRC is skipped, not fatal."""
    with open(piece.path, "rb") as f:
        f.seek(piece.start)
        data = f.read(piece.end - piece.start)
    src = source if source is not None else str(Path(piece.path).parent)
    it = iter_batches(data, verify_crc=False)
    while True:
        pos = it.position
        try:
            batch = next(it)
        except StopIteration:
            return
        except RecordError:
            return
        try:
            batch.validate()
            records = list(batch)
        except RecordError:
            continue
        attrs = batch.attributes
        common = {
            "source": src, "topic": piece.topic, "partition": piece.partition,
            "batch_position": piece.start + pos, "base_offset": batch.base_offset,
            "timestamp_type": "LogAppendTime" if attrs & 0x08 else "CreateTime",
            "producer_id": batch.producer_id, "is_transactional": bool(batch.is_transactional),
            "is_control": bool(batch.is_control), "compression": _CODECS.get(attrs & 0x07, str(attrs & 0x07)),
        }
        for r in records:
            row = dict(common)
            row.update(offset=r.offset, timestamp_ms=r.timestamp,
                       key_size=len(r.key) if r.key is not None else None,
                       value_size=len(r.value) if r.value is not None else None,
                       headers=[{"key": k, "value": bytes(v) if v is not None else None} for k, v in r.headers])
            yield row
