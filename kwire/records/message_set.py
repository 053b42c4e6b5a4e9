"""Message sets: back-to-back batches of any magic, as a Produce or Fetch carries them and a log
segment stores them; walked lazily (``iter_batches``), read as legacy messages, or up-converted
from magic 0/1 to one v2 batch as a broker stores old producers' data (broker-semantics.md 4.3,
RB-5). Above both batch formats: ``batch`` (v2) and ``legacy`` (v0/v1) never import this module.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, Final

from kwire.errors import RecordDecodeError, RecordEncodeError

from .batch import LOG_OVERHEAD, MAGIC_OFFSET, MIN_BATCH_LENGTH, BatchBuilder, Record, RecordBatch, _as_view
from .compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression
from .legacy import LegacyBatch

__all__ = ["BatchIterator", "iter_batches", "iter_legacy_messages", "upconvert_to_v2"]


class BatchIterator:
    """Lazily yield the batches of a buffer (v2 :class:`RecordBatch` or legacy entries).

    Each item is a view into the buffer (no copy). A trailing partial batch, which fetch
    responses may carry, ends the iteration cleanly: afterwards ``partial_bytes`` holds its size
    (0 when the buffer ended on a batch boundary) and ``position`` where it starts.
    """

    __slots__ = ("_view", "position", "partial_bytes", "_verify", "_end", "_max_decompressed")

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        *,
        verify_crc: bool = True,
        start: int = 0,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> None:
        self._view = _as_view(buf)
        self._end = len(self._view)
        self.position = start
        self.partial_bytes = 0
        self._verify = verify_crc
        self._max_decompressed = max_decompressed_size

    @property
    def has_partial_tail(self) -> bool:
        """True once iteration stopped at an incomplete trailing batch."""
        return self.partial_bytes > 0

    def __iter__(self) -> BatchIterator:
        return self

    def __next__(self) -> Any:
        pos = self.position
        view = self._view
        remaining = self._end - pos
        if remaining <= 0:
            raise StopIteration
        # Offset, length, and the magic at byte 16 are laid out alike in every magic.
        if remaining < MAGIC_OFFSET + 1:
            self.partial_bytes = remaining
            raise StopIteration
        base_offset, length = struct.unpack_from(">qi", view, pos)
        magic = view[pos + MAGIC_OFFSET]
        if magic > 2:
            raise RecordDecodeError(f"unknown magic {magic}", offset=pos + MAGIC_OFFSET, base_offset=base_offset)
        min_length = MIN_BATCH_LENGTH if magic == 2 else _LEGACY_MIN_LENGTH[magic]
        if length < min_length:
            raise RecordDecodeError(
                f"batch length {length} is below the minimum {min_length} for magic {magic}",
                offset=pos + 8,
                base_offset=base_offset,
            )
        size = length + LOG_OVERHEAD
        if size > remaining:
            self.partial_bytes = remaining
            raise StopIteration
        batch: Any
        if magic == 2:
            batch = RecordBatch(view, pos, verify_crc=self._verify, max_decompressed_size=self._max_decompressed)
        else:
            batch = LegacyBatch(view, pos, verify_crc=self._verify, max_decompressed_size=self._max_decompressed)
        if self._verify:
            batch.validate()
        self.position = pos + size
        return batch


_LEGACY_MIN_LENGTH: Final = (14, 22)  # record overhead of magic 0 and 1 (RB-5 table, 4.3)


def iter_batches(
    buf: bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    start: int = 0,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> BatchIterator:
    """Iterate the back-to-back batches of ``buf`` (a FetchResponse records field, a segment).

    Returns a :class:`BatchIterator`; see there for the partial-tail report.
    """
    return BatchIterator(buf, verify_crc=verify_crc, start=start, max_decompressed_size=max_decompressed_size)



def iter_legacy_messages(buf: bytes | bytearray | memoryview, *, verify_crc: bool = True) -> Iterator[Record]:
    """Every record of a legacy message set (wrappers opened), in order."""
    for batch in iter_batches(buf, verify_crc=verify_crc):
        yield from batch


def upconvert_to_v2(
    buf: bytes | bytearray | memoryview,
    *,
    base_offset: int | None = None,
    compression: Compression | int | None = None,
    partition_leader_epoch: int = -1,
    verify_crc: bool = True,
) -> bytes:
    """Convert a legacy message set to one magic 2 batch, as a broker stores old producers' data.

    Offsets are kept unless ``base_offset`` is given (then assigned from it, as the broker does).
    The codec is the source's unless ``compression`` overrides it; magic 0 messages get
    NO_TIMESTAMP (-1); a LogAppendTime source stays LogAppendTime. Magic 2 batches already in
    ``buf`` are not allowed: convert legacy data only.
    """
    records: list[Record] = []
    codec: Compression | None = None
    ts_type = 0
    for batch in iter_batches(buf, verify_crc=verify_crc):
        if isinstance(batch, RecordBatch):
            raise RecordEncodeError("upconvert_to_v2 takes legacy (magic 0/1) data only")
        if codec is None:
            codec = batch.compression
            ts_type = batch.timestamp_type
        records.extend(batch)
    if not records:
        raise RecordEncodeError("no legacy messages to convert")
    if compression is not None:
        codec = Compression(compression)
    first = records[0].offset if base_offset is None else base_offset
    builder = BatchBuilder(
        first,
        compression=codec or Compression.NONE,
        partition_leader_epoch=partition_leader_epoch,
        timestamp_type=ts_type,
    )
    for i, r in enumerate(records):
        builder.append(r.value, r.key, (), r.timestamp, offset=r.offset if base_offset is None else first + i)
    return builder.build()
