"""Kafka's on-disk log: partition directories of segment files, read and written the same way.

A partition directory is ``<topic>-<partition>/``; each segment is named by its base offset,
``%020d.log`` (batches back to back, exactly as on the wire), with optional side files
``%020d.index`` (entries ``relative_offset uint32 | position uint32``) and ``%020d.timeindex``
(``timestamp int64 | relative_offset uint32``). kwire's broker data dir and a real broker's are
read by the same code.

A torn last batch (the process died mid-write: the file ends inside a batch, its CRC does not
match, or the tail is zero-filled preallocation) is *reported* in ``torn_tail`` and skipped,
never raised. Corruption before the last batch raises, unless ``recover=True``, which stops
there and reports it the way Kafka's log recovery truncates.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from construct import Int32ub, Int64sb, Struct

from kwire.errors import RecordError, SegmentError

from .batch import RecordBatch
from .message_set import BatchIterator, iter_batches

__all__ = [
    "SegmentWriter",
    "SegmentReader",
    "PartitionReader",
    "TornTail",
    "OffsetIndexEntry",
    "TimeIndexEntry",
    "write_segment",
    "read_segment",
    "iter_partition_dir",
    "list_segments",
    "segment_filename",
    "partition_dir_name",
    "parse_partition_dir_name",
    "read_offset_index",
    "read_time_index",
    "DEFAULT_INDEX_INTERVAL_BYTES",
]

DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes default (LogConfig)

OFFSET_INDEX_ENTRY = Struct("relative_offset" / Int32ub, "position" / Int32ub)
TIME_INDEX_ENTRY = Struct("timestamp" / Int64sb, "relative_offset" / Int32ub)
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT = re.compile(r"^(?P<base>\d{20})\.log$")


class OffsetIndexEntry(NamedTuple):
    """One ``.index`` entry, with the absolute offset resolved."""

    offset: int
    position: int


class TimeIndexEntry(NamedTuple):
    """One ``.timeindex`` entry, with the absolute offset resolved."""

    timestamp: int
    offset: int


class TornTail(NamedTuple):
    """Where a segment stopped being readable, and why."""

    path: str
    position: int
    size: int
    reason: str


def segment_filename(base_offset: int, suffix: str = ".log") -> str:
    """``00000000000000000042.log`` for base offset 42."""
    if base_offset < 0:
        raise SegmentError(f"segment base offset must be >= 0, not {base_offset}")
    return f"{base_offset:020d}{suffix}"


def partition_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``, the partition directory's name."""
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str | os.PathLike[str]) -> tuple[str, int]:
    """``("orders", 3)`` from ``.../orders-3``."""
    base = Path(name).name
    m = _PARTITION_DIR.match(base)
    if not m:
        raise SegmentError(f"{base!r} is not a <topic>-<partition> directory name")
    return m["topic"], int(m["partition"])


def list_segments(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(base_offset, path)`` of every ``.log`` segment in a partition dir, by base offset."""
    d = Path(directory)
    if not d.is_dir():
        raise SegmentError(f"{d} is not a directory")
    out = []
    for p in d.iterdir():
        m = _SEGMENT.match(p.name)
        if m:
            out.append((int(m["base"]), p))
    out.sort()
    return out


# --- writing ---------------------------------------------------------------------------------------


class SegmentWriter:
    """Append batches to ``<directory>/%020d.log`` (and its index files), as a broker does.

    Every batch is checked (whole, CRC valid) and must start at or after the previous one's next
    offset. Index entries follow LogSegment.append: after more than ``index_interval_bytes``
    since the last entry, ``(last offset, batch position)`` goes to ``.index`` and the largest
    timestamp so far to ``.timeindex``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        base_offset: int,
        *,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        write_indexes: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.base_offset = base_offset
        self.path = self.directory / segment_filename(base_offset)
        self._index_interval = index_interval_bytes
        self._log: BinaryIO = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self.size = self._log.tell()
        self._index: BinaryIO | None = None
        self._timeindex: BinaryIO | None = None
        if write_indexes:
            self._index = open(self.directory / segment_filename(base_offset, ".index"), "ab")  # noqa: SIM115
            self._timeindex = open(self.directory / segment_filename(base_offset, ".timeindex"), "ab")  # noqa: SIM115
        self.next_offset = base_offset
        if self.size:
            # reopening: continue after what is there (a torn tail is cut off first)
            # Structure only: a batch that fails its CRC below the end is kept (log recovery
            # decides about it), and appending continues after the last whole batch.
            reader = read_segment(self.path, verify_crc=False, recover=True)
            for batch in reader:
                self.next_offset = batch.next_offset
            if reader.torn_tail is not None:
                self._log.truncate(reader.torn_tail.position)
                self._log.seek(reader.torn_tail.position)
                self.size = reader.torn_tail.position
        self._bytes_since_index = 0
        self._max_ts = -1
        self._offset_of_max_ts = -1
        self._last_time_entry = -1

    def append(self, batches: bytes | bytearray | memoryview | RecordBatch) -> int:
        """Write one or more whole batches; returns the file position they start at."""
        data = bytes(batches) if isinstance(batches, RecordBatch) else batches
        it = iter_batches(data, verify_crc=True)
        checked = list(it)
        if it.partial_bytes:
            raise SegmentError(f"refusing to write a partial batch ({it.partial_bytes} trailing bytes)")
        start = self.size
        for batch in checked:
            first = batch.base_offset
            if first < self.next_offset:
                raise SegmentError(
                    f"batch at offset {first} does not follow the segment's next offset {self.next_offset}"
                )
            if batch.last_offset - self.base_offset > 0xFFFFFFFF:
                raise SegmentError(f"offset {batch.last_offset} too far from segment base {self.base_offset}")
            position = self.size
            raw = batch.buffer
            self._log.write(raw)
            self.size += len(raw)
            if batch.max_timestamp > self._max_ts:
                self._max_ts = batch.max_timestamp
                self._offset_of_max_ts = batch.last_offset
            if self._bytes_since_index > self._index_interval:
                self._write_index(batch.last_offset, position)
                self._bytes_since_index = 0
            self._bytes_since_index += len(raw)
            self.next_offset = batch.next_offset
        return start

    def _write_index(self, offset: int, position: int) -> None:
        if self._index is not None:
            self._index.write(OFFSET_INDEX_ENTRY.build({"relative_offset": offset - self.base_offset,
                                                        "position": position}))
        self._maybe_time_entry()

    def _maybe_time_entry(self) -> None:
        if self._timeindex is not None and self._max_ts > self._last_time_entry and self._offset_of_max_ts >= 0:
            self._timeindex.write(
                TIME_INDEX_ENTRY.build(
                    {"timestamp": self._max_ts, "relative_offset": self._offset_of_max_ts - self.base_offset}
                )
            )
            self._last_time_entry = self._max_ts

    def flush(self, *, fsync: bool = False) -> None:
        """Flush the files (and fsync them when asked)."""
        for f in (self._log, self._index, self._timeindex):
            if f is not None:
                f.flush()
                if fsync:
                    os.fsync(f.fileno())

    def close(self) -> None:
        """Flush and close; the time index gets its final entry, as on segment roll."""
        if self._log.closed:
            return
        self._maybe_time_entry()
        for f in (self._log, self._index, self._timeindex):
            if f is not None:
                f.close()

    def __enter__(self) -> SegmentWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_segment(
    directory: str | os.PathLike[str],
    batches: Iterable[bytes | bytearray | memoryview | RecordBatch],
    *,
    base_offset: int | None = None,
    write_indexes: bool = True,
) -> Path:
    """Write ``batches`` as a new segment in ``directory``; returns the ``.log`` path.

    The segment is named after ``base_offset`` (default: the first batch's base offset).
    """
    items = [bytes(b) if isinstance(b, RecordBatch) else b for b in batches]
    if base_offset is None:
        if not items:
            raise SegmentError("no batches and no base offset: cannot name the segment")
        base_offset = next(iter_batches(items[0], verify_crc=False)).base_offset
    path = Path(directory) / segment_filename(base_offset)
    if path.exists():
        raise SegmentError(f"{path} already exists")
    with SegmentWriter(directory, base_offset, write_indexes=write_indexes) as w:
        for b in items:
            w.append(b)
    return path


# --- reading ---------------------------------------------------------------------------------------


class SegmentReader:
    """Iterate the batches of one ``.log`` file; ``torn_tail`` reports where reading stopped."""

    def __init__(self, path: str | os.PathLike[str], *, verify_crc: bool = True, recover: bool = False) -> None:
        self.path = Path(path)
        m = _SEGMENT.match(self.path.name)
        self.base_offset: int | None = int(m["base"]) if m else None
        try:
            self._data = self.path.read_bytes()
        except OSError as exc:
            raise SegmentError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        self._verify = verify_crc
        self._recover = recover
        self.torn_tail: TornTail | None = None
        self.valid_bytes = 0
        self._it: Iterator[Any] | None = None

    @property
    def size(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        if self._it is None:
            self._it = self._iterate()
        return self._it

    def _tail(self, position: int, reason: str) -> None:
        self.torn_tail = TornTail(str(self.path), position, len(self._data) - position, reason)

    def _why(self, pos: int, reason: str) -> str:
        if self._data.count(0, pos) == len(self._data) - pos:
            return "zero-filled tail (preallocated or never flushed)"
        return reason

    def _iterate(self) -> Iterator[Any]:
        data = self._data
        end = len(data)
        it: BatchIterator = iter_batches(data, verify_crc=False)
        while True:
            pos = it.position
            try:
                batch = next(it)
            except StopIteration:
                if it.partial_bytes:
                    self._tail(pos, self._why(pos, f"truncated batch: {it.partial_bytes} bytes, less than a whole batch"))
                return
            except RecordError as exc:
                if self._recover or data.count(0, pos) == end - pos:
                    self._tail(pos, self._why(pos, str(exc)))
                    return
                raise
            if self._verify:
                try:
                    batch.validate()
                except RecordError as exc:
                    if self._recover or pos + batch.size_in_bytes == end:
                        self._tail(pos, str(exc))
                        return
                    raise
            self.valid_bytes = pos + batch.size_in_bytes
            yield batch


def read_segment(path: str | os.PathLike[str], *, verify_crc: bool = True, recover: bool = False) -> SegmentReader:
    """Open a ``.log`` segment for lazy batch iteration (see :class:`SegmentReader`)."""
    return SegmentReader(path, verify_crc=verify_crc, recover=recover)


class PartitionReader:
    """Iterate a partition directory's batches across its segments, in offset order."""

    def __init__(self, directory: str | os.PathLike[str], *, verify_crc: bool = True, recover: bool = False) -> None:
        self.directory = Path(directory)
        self.segments = list_segments(self.directory)
        self._verify = verify_crc
        self._recover = recover
        self.torn_tails: list[TornTail] = []

    def __iter__(self) -> Iterator[Any]:
        for _, path in self.segments:
            reader = read_segment(path, verify_crc=self._verify, recover=self._recover)
            yield from reader
            if reader.torn_tail is not None:
                self.torn_tails.append(reader.torn_tail)


def iter_partition_dir(
    directory: str | os.PathLike[str], *, verify_crc: bool = True, recover: bool = False
) -> PartitionReader:
    """Batches of every segment of ``<topic>-<partition>/``; torn tails land in ``.torn_tails``."""
    return PartitionReader(directory, verify_crc=verify_crc, recover=recover)


def _read_entries(path: str | os.PathLike[str], entry: Any) -> list[Any]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SegmentError(f"cannot read {p}: {exc.strerror or exc}") from None
    size = entry.sizeof()
    out = []
    for i in range(0, len(data) - len(data) % size, size):
        chunk = data[i : i + size]
        if i and not any(chunk):
            break  # Kafka preallocates index files with zeros: the entries end here
        out.append(entry.parse(chunk))
    return out


def _base_of(path: str | os.PathLike[str]) -> int:
    name = Path(path).name.split(".", 1)[0]
    if not name.isdigit():
        raise SegmentError(f"{path}: index file name does not carry a base offset")
    return int(name)


def read_offset_index(path: str | os.PathLike[str]) -> list[OffsetIndexEntry]:
    """Entries of a ``.index`` file with absolute offsets."""
    base = _base_of(path)
    return [OffsetIndexEntry(base + e.relative_offset, e.position) for e in _read_entries(path, OFFSET_INDEX_ENTRY)]


def read_time_index(path: str | os.PathLike[str]) -> list[TimeIndexEntry]:
    """Entries of a ``.timeindex`` file with absolute offsets."""
    base = _base_of(path)
    return [TimeIndexEntry(e.timestamp, base + e.relative_offset) for e in _read_entries(path, TIME_INDEX_ENTRY)]
