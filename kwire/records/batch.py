"""Magic 2 record batches (KIP-98): a zero-copy view, a builder, and the broker's fast path.

Implements broker-semantics.md section 4.1/4.2 (RB-1 .. RB-4). Byte layout of one batch::

     0  BaseOffset            int64   ┐ outside the CRC: the broker rewrites these two in place
     8  BatchLength           int32   │ (bytes after this field = total - 12)
    12  PartitionLeaderEpoch  int32   ┘ RB-1
    16  Magic                 int8    = 2
    17  CRC                   uint32  CRC-32C of bytes 21..end (RB-1)
    21  Attributes            int16   codec 0-2, timestamp type 3, transactional 4, control 5,
                                      delete horizon 6 (RB-2)
    23  LastOffsetDelta       int32
    27  BaseTimestamp         int64   (the delete horizon when bit 6 is set)
    35  MaxTimestamp          int64
    43  ProducerId            int64
    51  ProducerEpoch         int16
    53  BaseSequence          int32   last sequence = base + LastOffsetDelta, wrapping (RB-3)
    57  RecordsCount          int32
    61  Records ...                   compressed as one block when the codec is not none

Each record (RB-4 varints, zig-zag)::

    Length varint | Attributes int8 | TimestampDelta varlong | OffsetDelta varint
    | KeyLength varint (-1 null) | Key | ValueLength varint (-1 null) | Value
    | HeaderCount varint | { HeaderKeyLength varint | HeaderKey utf-8 | HeaderValueLength varint | Value }

Theory of operation: a :class:`RecordBatch` wraps a memoryview of exactly one batch and unpacks
the 61-byte header once with a single precompiled ``Struct``; records are only decoded when the
batch is iterated. The record loops (decode and encode) have a C twin in ``_speedups`` (built
when a compiler is present, disabled by ``KWIRE_NO_EXTENSIONS=1``); both produce the same
records and raise the same errors, and the tests run each. Both iterate lazily, one record per
step (a loop that drops each record never holds the batch's objects at once, so the collector
never walks them); ``records()`` builds the whole list in one C call with collection paused. With
the extension, ``Record``'s fields are slot reads of a C tuple base (``RecordBase``).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from kwire.errors import CorruptBatchError, RecordDecodeError, RecordEncodeError, RecordError

from .compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression, compress, decompress_view
from .crc import _crc32c, crc32c
from .varint import _SMALL as _VARINT_SMALL
from .varint import _SMALL_CACHE as _VARINT_CACHE
from .varint import INT32_MAX, INT64_MAX, INT64_MIN, encode_varint, encode_varlong

__all__ = [
    "Record",
    "Header",
    "RecordBatch",
    "BatchBuilder",
    "BatchInfo",
    "validate_and_assign",
    "validate_and_assign_all",
    "set_log_append_time",
    "TimestampType",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "speedups_enabled",
]

# --- layout constants ------------------------------------------------------------------------------

HEADER = struct.Struct(">qiibIhiqqqhii")  # the whole 61-byte header in one unpack
HEADER_SIZE: Final = HEADER.size  # 61
LOG_OVERHEAD: Final = 12  # BaseOffset + BatchLength: what every magic shares
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21  # RB-1: the CRC covers bytes 21..end
MAX_TIMESTAMP_OFFSET: Final = 35
MIN_BATCH_LENGTH: Final = HEADER_SIZE - LOG_OVERHEAD  # 49
MIN_RECORD_SIZE: Final = 7  # 1-byte length, attributes, ts delta, offset delta, key, value, header count
_PREFIX = struct.Struct(">qii")  # BaseOffset, BatchLength, PartitionLeaderEpoch (outside the CRC)
_MAGIC = struct.Struct(">b")
_ATTR_ONWARD = struct.Struct(">hiq")  # Attributes, LastOffsetDelta, BaseTimestamp
_MAX_TS = struct.Struct(">q")
_CRC = struct.Struct(">I")
_ATTR = struct.Struct(">h")

# RB-2 attribute bits
CODEC_MASK: Final = 0x07
TIMESTAMP_TYPE_BIT: Final = 0x08
TRANSACTIONAL_BIT: Final = 0x10
CONTROL_BIT: Final = 0x20
DELETE_HORIZON_BIT: Final = 0x40

NO_TIMESTAMP: Final = -1
NO_PRODUCER_ID: Final = -1
NO_SEQUENCE: Final = -1


class TimestampType:
    """Attribute bit 3 values (RB-2)."""

    CREATE_TIME: Final = 0
    LOG_APPEND_TIME: Final = 1


# --- records ---------------------------------------------------------------------------------------

Header = tuple[str, bytes | None]


_speedups: Any
if os.environ.get("KWIRE_NO_EXTENSIONS"):
    _speedups = None
else:
    try:
        from . import _speedups  # type: ignore[no-redef]
    except ImportError:  # no compiler at install time: the pure-Python loops below serve
        _speedups = None

if TYPE_CHECKING:
    _RecordBase = tuple
else:
    # With the extension, Record's fields are member descriptors of a C tuple subclass (slot loads,
    # about 5x cheaper to read than property(itemgetter)); without it, properties below.
    _RecordBase = tuple if _speedups is None else _speedups.RecordBase


class Record(_RecordBase):  # type: ignore[type-arg]
    """One record: ``(offset, timestamp, key, value, headers)``.

    A tuple subclass, so building one costs what a tuple does; fields are read by name.
    ``headers`` is a list of ``(str, bytes | None)``. Legacy (magic 0/1) messages use this type
    too, with no headers.
    """

    __slots__ = ()

    if TYPE_CHECKING:
        offset: int
        timestamp: int
        key: bytes | None
        value: bytes | None
        headers: list[Header]
    elif _RecordBase is tuple:
        offset = property(itemgetter(0), doc="absolute offset")
        timestamp = property(itemgetter(1), doc="epoch ms (-1 when absent)")
        key = property(itemgetter(2), doc="key bytes or None")
        value = property(itemgetter(3), doc="value bytes or None")
        headers = property(itemgetter(4), doc="list of (key, value)")

    def __new__(
        cls,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[Header] = (),
    ) -> Record:
        return _new_record(cls, (offset, timestamp, key, value, list(headers)))

    def __repr__(self) -> str:
        return (
            f"Record(offset={self[0]!r}, timestamp={self[1]!r}, key={self[2]!r}, "
            f"value={self[3]!r}, headers={self[4]!r})"
        )

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields (bytes stay bytes)."""
        return {
            "offset": self[0],
            "timestamp": self[1],
            "key": self[2],
            "value": self[3],
            "headers": list(self[4]),
        }


# RecordBase.__new__ insists on 5 items (its fields are unchecked slot reads); tuple.__new__ is
# refused for Record then, as for any subclass of a C type with its own constructor
_new_record = _RecordBase.__new__

# --- optional C twin -------------------------------------------------------------------------------

def speedups_enabled() -> bool:
    """Whether the C record loops are in use (False under ``KWIRE_NO_EXTENSIONS=1``)."""
    return _speedups is not None


# --- pure-Python record loops ----------------------------------------------------------------------


def _varint_slow(data: bytes, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Multi-byte zig-zag varint at ``pos`` (the loops inline the 1-byte case)."""
    result = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise _Fail("varint runs past the end of the records", pos)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if max_bytes == 5:
                result &= 0xFFFFFFFF
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise _Fail(f"varint longer than {max_bytes} bytes", pos)


# zig-zag value of every 1-byte varint: one tuple index instead of three operations
_ZIGZAG_1 = tuple((b >> 1) ^ -(b & 1) for b in range(128))


class _Fail(Exception):
    """Internal: a decode failure at a byte position of the records region."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(reason, pos)
        self.reason = reason
        self.pos = pos


def _decode_records_py(
    data: bytes, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None
) -> Iterator[Record]:
    """Yield ``count`` records from ``data`` (the uncompressed records region).

    Hot loop: 1-byte varints are decoded inline; everything is bounds-checked so hostile
    bytes end in ``_Fail`` (turned into RecordDecodeError by the caller), never IndexError.
    """
    pos = 0
    end = len(data)
    new = _new_record
    rec_type = Record
    slow = _varint_slow
    zz = _ZIGZAG_1
    for _ in range(count):
        if pos >= end:
            raise _Fail("record count says more records than the data holds", pos)
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        elif pos + 1 < end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            length = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            length, pos = slow(data, pos, end, 5)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _Fail(f"record length {length} is impossible here", pos)
        pos += 1  # attributes: unused (RB-4 table)
        b = data[pos]
        if b < 0x80:
            ts_delta = zz[b]
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            ts_delta = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            ts_delta, pos = slow(data, pos, rec_end, 10)
        b = data[pos] if pos < rec_end else 0
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            offset_delta = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            offset_delta, pos = slow(data, pos, rec_end, 5)
        b = data[pos] if pos < rec_end else 0
        if b < 0x80:
            n = zz[b]
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            n = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            n, pos = slow(data, pos, rec_end, 5)
        if n >= 0:
            if pos + n > rec_end:
                raise _Fail(f"key length {n} runs past the record", pos)
            key: bytes | None = data[pos : pos + n]
            pos += n
        elif n == -1:
            key = None
        else:
            raise _Fail(f"invalid key length {n}", pos)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            n = zz[b]
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            n = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            n, pos = slow(data, pos, rec_end, 5)
        if n >= 0:
            if pos + n > rec_end:
                raise _Fail(f"value length {n} runs past the record", pos)
            value: bytes | None = data[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise _Fail(f"invalid value length {n}", pos)
        b = data[pos] if pos < rec_end else 0x80
        if b < 0x80:
            hcount = zz[b]
            pos += 1
        elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
            u = (b & 0x7F) | (data[pos + 1] << 7)
            hcount = (u >> 1) ^ -(u & 1)
            pos += 2
        else:
            hcount, pos = slow(data, pos, rec_end, 5)
        headers: list[Header] = []
        if hcount:
            if hcount < 0 or hcount > (rec_end - pos) // 2:
                raise _Fail(f"invalid header count {hcount}", pos)
            for _h in range(hcount):
                b = data[pos] if pos < rec_end else 0x80
                if b < 0x80:
                    n = zz[b]
                    pos += 1
                elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
                    u = (b & 0x7F) | (data[pos + 1] << 7)
                    n = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    n, pos = slow(data, pos, rec_end, 5)
                if n < 0 or pos + n > rec_end:
                    raise _Fail(f"invalid header key length {n}", pos)
                try:
                    hkey = data[pos : pos + n].decode()
                except UnicodeDecodeError:
                    raise _Fail("header key is not valid UTF-8", pos) from None
                pos += n
                b = data[pos] if pos < rec_end else 0x80
                if b < 0x80:
                    n = zz[b]
                    pos += 1
                elif pos + 1 < rec_end and data[pos + 1] < 0x80:  # 2-byte varint, also common
                    u = (b & 0x7F) | (data[pos + 1] << 7)
                    n = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    n, pos = slow(data, pos, rec_end, 5)
                if n >= 0:
                    if pos + n > rec_end:
                        raise _Fail(f"header value length {n} runs past the record", pos)
                    headers.append((hkey, data[pos : pos + n]))
                    pos += n
                elif n == -1:
                    headers.append((hkey, None))
                else:
                    raise _Fail(f"invalid header value length {n}", pos)
        if pos != rec_end:
            raise _Fail(f"record length {length} disagrees with its fields ({pos - rec_end:+d} bytes)", pos)
        yield new(
            rec_type,
            (
                base_offset + offset_delta,
                base_timestamp + ts_delta if fixed_timestamp is None else fixed_timestamp,
                key,
                value,
                headers,
            ),
        )
    if pos != end:
        raise _Fail(f"{end - pos} bytes left after the last of {count} records", pos)


_EMPTY_HEADERS = b"\x00"


def _check_blob(v: Any, what: str, i: int) -> None:
    if not (v is None or isinstance(v, _BYTES_LIKE)):
        raise TypeError(f"record {i}: {what} must be bytes-like or None, not {type(v).__name__}")


def _encode_records_py(records: Sequence[tuple[int, int, Any, Any, Any]], base_timestamp: int) -> bytes:
    """Encode ``(offset_delta, timestamp, key, value, headers)`` tuples as a records region.

    Parts go straight into one list, each record's length slot filled in once its size is
    known, so there is a single join at the end; small varints come from a precomputed table.
    """
    out: list[bytes] = []
    add = out.append
    ev = encode_varint
    cache = _VARINT_CACHE
    small = _VARINT_SMALL
    for i, (offset_delta, timestamp, key, value, headers) in enumerate(records):
        if not isinstance(timestamp, int):
            raise TypeError(f"record {i}: timestamp must be an int, not {type(timestamp).__name__}")
        delta = timestamp - base_timestamp
        if -small <= delta < small:
            tsb = cache[delta + small]
        elif INT64_MIN <= delta <= INT64_MAX:
            tsb = encode_varlong(delta)
        else:
            raise OverflowError(f"record {i}: timestamp delta out of int64 range")
        odb = cache[offset_delta + small] if offset_delta < small else ev(offset_delta)
        slot = len(out)
        add(b"")
        add(b"\x00")
        add(tsb)
        add(odb)
        size = 1 + len(tsb) + len(odb)
        if key is None:
            add(b"\x01")
            size += 1
        else:
            if type(key) is not bytes:
                _check_blob(key, "key", i)
                key = bytes(key)
            n = len(key)
            lb = cache[n + small] if n < small else ev(n)
            add(lb)
            add(key)
            size += len(lb) + n
        if value is None:
            add(b"\x01")
            size += 1
        else:
            if type(value) is not bytes:
                _check_blob(value, "value", i)
                value = bytes(value)
            n = len(value)
            lb = cache[n + small] if n < small else ev(n)
            add(lb)
            add(value)
            size += len(lb) + n
        if headers:
            if not isinstance(headers, list | tuple):
                raise TypeError(f"record {i}: headers must be a list or tuple")
            n = len(headers)
            hb = cache[n + small] if n < small else ev(n)
            add(hb)
            size += len(hb)
            for h in headers:
                if not (isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], str)):
                    raise TypeError(f"record {i}: header must be a (str, bytes | None) tuple, not {h!r}")
                kb = h[0].encode()
                n = len(kb)
                lb = cache[n + small] if n < small else ev(n)
                add(lb)
                add(kb)
                size += len(lb) + n
                hvalue = h[1]
                if hvalue is None:
                    add(b"\x01")
                    size += 1
                else:
                    if type(hvalue) is not bytes:
                        _check_blob(hvalue, "header value", i)
                        hvalue = bytes(hvalue)
                    n = len(hvalue)
                    lb = cache[n + small] if n < small else ev(n)
                    add(lb)
                    add(hvalue)
                    size += len(lb) + n
        else:
            add(_EMPTY_HEADERS)
            size += 1
        out[slot] = cache[size + small] if size < small else ev(size)
    return b"".join(out)


_BYTES_LIKE = (bytes, bytearray, memoryview)

# --- the batch view --------------------------------------------------------------------------------


def _as_view(buf: bytes | bytearray | memoryview) -> memoryview:
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


class RecordBatch:
    """A zero-copy view of one magic 2 batch in a buffer.

    ``RecordBatch(buf, offset=0)`` checks only that a whole batch header and the bytes its
    length announces are present; :meth:`validate` checks the CRC and structure. Iterating
    decodes the records (verifying the CRC first unless ``verify_crc=False``).
    """

    __slots__ = ("_view", "_h", "_verify", "_max_decompressed")

    magic: Final = 2  # type: ignore[misc]

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        offset: int = 0,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> None:
        view = _as_view(buf)
        if offset < 0 or len(view) - offset < HEADER_SIZE:
            raise RecordDecodeError(
                f"need {HEADER_SIZE} bytes for a batch header, have {max(len(view) - offset, 0)}",
                offset=offset,
            )
        h = HEADER.unpack_from(view, offset)
        if h[3] != 2:
            raise RecordDecodeError(f"magic {h[3]} is not a v2 record batch", offset=offset + MAGIC_OFFSET,
                                    base_offset=h[0])
        length = h[1]
        if length < MIN_BATCH_LENGTH:
            raise RecordDecodeError(f"batch length {length} is below the minimum {MIN_BATCH_LENGTH}",
                                    offset=offset + 8, base_offset=h[0])
        size = length + LOG_OVERHEAD
        if len(view) - offset < size:
            raise RecordDecodeError(
                f"batch length says {size} bytes, only {len(view) - offset} present",
                offset=offset + 8,
                base_offset=h[0],
            )
        self._view = view[offset : offset + size]
        self._h = h
        self._verify = verify_crc
        self._max_decompressed = max_decompressed_size

    @classmethod
    def from_buffer(cls, buf: bytes | bytearray | memoryview, offset: int = 0, **kwargs: Any) -> RecordBatch:
        """Same as the constructor; reads like ``struct.unpack_from``."""
        return cls(buf, offset, **kwargs)

    # header fields (the unpacked tuple keeps the values as of construction)
    @property
    def base_offset(self) -> int:
        return self._h[0]  # type: ignore[no-any-return]

    @property
    def batch_length(self) -> int:
        return self._h[1]  # type: ignore[no-any-return]

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]  # type: ignore[no-any-return]

    @property
    def crc(self) -> int:
        return self._h[4]  # type: ignore[no-any-return]

    @property
    def attributes(self) -> int:
        return self._h[5]  # type: ignore[no-any-return]

    @property
    def compression(self) -> Compression:
        try:
            return Compression(self._h[5] & CODEC_MASK)
        except ValueError:
            raise RecordDecodeError(f"unknown compression codec {self._h[5] & CODEC_MASK}",
                                    base_offset=self._h[0]) from None

    @property
    def timestamp_type(self) -> int:
        return 1 if self._h[5] & TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._h[5] & DELETE_HORIZON_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (BaseTimestamp) when bit 6 is set, else None (RB-2)."""
        return self._h[7] if self._h[5] & DELETE_HORIZON_BIT else None

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]  # type: ignore[no-any-return]

    @property
    def base_timestamp(self) -> int:
        return self._h[7]  # type: ignore[no-any-return]

    @property
    def max_timestamp(self) -> int:
        return self._h[8]  # type: ignore[no-any-return]

    @property
    def producer_id(self) -> int:
        return self._h[9]  # type: ignore[no-any-return]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]  # type: ignore[no-any-return]

    @property
    def base_sequence(self) -> int:
        return self._h[11]  # type: ignore[no-any-return]

    @property
    def last_sequence(self) -> int:
        """RB-3: base sequence + last offset delta, wrapping past int32 max to 0."""
        return _last_sequence(self._h[11], self._h[6])

    @property
    def record_count(self) -> int:
        return self._h[12]  # type: ignore[no-any-return]

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]  # type: ignore[no-any-return]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1  # type: ignore[no-any-return]

    @property
    def size_in_bytes(self) -> int:
        return self._h[1] + LOG_OVERHEAD  # type: ignore[no-any-return]

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (a view into the original buffer, not a copy)."""
        return self._view

    @property
    def records_buffer(self) -> memoryview:
        """The (possibly compressed) records region after the header."""
        return self._view[HEADER_SIZE:]

    def __bytes__(self) -> bytes:
        return bytes(self._view)

    def compute_crc(self) -> int:
        """CRC-32C of bytes 21..end, as the CRC field should hold (RB-1)."""
        return crc32c(self._view[ATTRIBUTES_OFFSET:])

    def validate(self) -> None:
        """Check CRC, attributes and record count sanity; raise a typed error on failure.

        Raises:
            CorruptBatchError: the CRC does not match (names base offset, both CRCs).
            RecordDecodeError: unknown codec or a record count the bytes cannot hold.
        """
        h = self._h
        actual = crc32c(self._view[ATTRIBUTES_OFFSET:])
        if actual != h[4]:
            raise CorruptBatchError(h[0], h[4], actual)
        _check_header(h, len(self._view) - HEADER_SIZE)
        self._verify = False  # validated once; iteration need not repeat it

    def _region(self) -> tuple[memoryview | bytes, int, int | None]:
        """(uncompressed records region, record count, fixed timestamp or None), checked."""
        if self._verify:
            self.validate()
        h = self._h
        _check_header(h, len(self._view) - HEADER_SIZE)
        count = h[12]
        codec = h[5] & CODEC_MASK
        region: memoryview | bytes = self._view[HEADER_SIZE:]
        if codec:
            try:
                region = decompress_view(codec, region, max_size=self._max_decompressed)
            except RecordError as exc:
                raise type(exc)(f"batch at base offset {h[0]}: {exc}") from None
            if count > len(region) // MIN_RECORD_SIZE:
                raise RecordDecodeError(
                    f"record count {count} exceeds what {len(region)} decompressed bytes can hold",
                    base_offset=h[0],
                )
        fixed = h[8] if h[5] & TIMESTAMP_TYPE_BIT else None  # LogAppendTime: all records get max
        return region, count, fixed

    def __iter__(self) -> Iterator[Record]:
        """Decode the records lazily, one per step (the C loop and the Python one alike)."""
        region, count, fixed = self._region()
        h = self._h
        if _speedups is not None:
            # lazy: a loop that drops each record before taking the next never holds the batch's
            # objects at once, so no collection runs over them
            base = h[0]

            def fail(reason: str, pos: int) -> RecordDecodeError:
                return RecordDecodeError(reason, offset=HEADER_SIZE + pos, base_offset=base)

            it: Iterator[Record] = _speedups.RecordIterator(region, count, base, h[7], fixed, Record, fail)
            return it
        return self._iter_py(bytes(region), count, fixed)

    def _iter_py(self, data: bytes, count: int, fixed: int | None) -> Iterator[Record]:
        h = self._h
        try:
            yield from _decode_records_py(data, count, h[0], h[7], fixed)
        except _Fail as exc:
            raise RecordDecodeError(exc.reason, offset=HEADER_SIZE + exc.pos, base_offset=h[0]) from None
        except IndexError:  # defensive: the loop checks bounds, this must stay unreachable
            raise RecordDecodeError("records run past the end of the batch", base_offset=h[0]) from None

    def records(self) -> list[Record]:
        """All records as a list (the C loop builds it in one call, with collection paused)."""
        if _speedups is None:
            return list(self)
        region, count, fixed = self._region()
        h = self._h
        try:
            records: list[Record] = _speedups.decode_records(region, count, h[0], h[7], fixed, Record)
        except _speedups.DecodeFailure as exc:
            raise RecordDecodeError(exc.args[0], offset=HEADER_SIZE + exc.args[1], base_offset=h[0]) from None
        return records

    def header_dict(self) -> dict[str, Any]:
        """The header fields as a dict."""
        h = self._h
        return {
            "base_offset": h[0],
            "batch_length": h[1],
            "partition_leader_epoch": h[2],
            "magic": h[3],
            "crc": h[4],
            "attributes": h[5],
            "compression": Compression(h[5] & CODEC_MASK).name.lower() if h[5] & CODEC_MASK <= 4 else h[5] & 7,
            "timestamp_type": self.timestamp_type,
            "is_transactional": self.is_transactional,
            "is_control": self.is_control,
            "has_delete_horizon": self.has_delete_horizon,
            "last_offset_delta": h[6],
            "base_timestamp": h[7],
            "max_timestamp": h[8],
            "producer_id": h[9],
            "producer_epoch": h[10],
            "base_sequence": h[11],
            "record_count": h[12],
            "size_in_bytes": h[1] + LOG_OVERHEAD,
        }

    def to_dict(self, *, records: bool = True) -> dict[str, Any]:
        """Header fields, plus ``records`` (list of record dicts) unless ``records=False``."""
        d = self.header_dict()
        if records:
            d["records"] = [r.to_dict() for r in self]
        return d

    def __repr__(self) -> str:
        h = self._h
        return (
            f"RecordBatch(base_offset={h[0]}, record_count={h[12]}, size={h[1] + LOG_OVERHEAD}, "
            f"compression={h[5] & CODEC_MASK}, producer_id={h[9]}, control={self.is_control})"
        )


def _last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if base_sequence > INT32_MAX - last_offset_delta:  # RB-3: wraps to 0
        return last_offset_delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + last_offset_delta


def _check_header(h: tuple[Any, ...], region_size: int) -> None:
    """Structural checks that need no decoding: codec id, record count sanity."""
    codec = h[5] & CODEC_MASK
    if codec > 4:
        raise RecordDecodeError(f"unknown compression codec {codec}", offset=ATTRIBUTES_OFFSET, base_offset=h[0])
    count = h[12]
    if count < 0:
        raise RecordDecodeError(f"negative record count {count}", offset=57, base_offset=h[0])
    # Uncompressed records take at least 7 bytes each: a lying count is caught before any
    # allocation proportional to it.
    if not codec and count > region_size // MIN_RECORD_SIZE:
        raise RecordDecodeError(
            f"record count {count} exceeds what {region_size} bytes of records can hold",
            offset=57,
            base_offset=h[0],
        )


# --- builder ---------------------------------------------------------------------------------------


class BatchBuilder:
    """Build one magic 2 batch: ``append`` records, then ``build()`` the bytes.

    Producer fields (``producer_id``, ``producer_epoch``, ``base_sequence``,
    ``is_transactional``) are written as given. ``delete_horizon_ms`` sets attribute bit 6 and
    makes BaseTimestamp the horizon (RB-2), as the log cleaner does.
    """

    __slots__ = (
        "base_offset",
        "compression",
        "compression_level",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "is_control",
        "partition_leader_epoch",
        "timestamp_type",
        "delete_horizon_ms",
        "last_offset",
        "max_timestamp",
        "_records",
        "_next_delta",
        "_first_ts",
        "_max_ts",
    )

    def __init__(
        self,
        base_offset: int = 0,
        *,
        compression: Compression | int = Compression.NONE,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = -1,
        timestamp_type: int = TimestampType.CREATE_TIME,
        delete_horizon_ms: int | None = None,
        compression_level: int | None = None,
    ) -> None:
        try:
            self.compression = Compression(compression)
        except ValueError:
            raise RecordEncodeError(f"unknown compression codec {compression}") from None
        if timestamp_type not in (0, 1):
            raise RecordEncodeError(f"timestamp type must be 0 or 1, not {timestamp_type}")
        self.base_offset = base_offset
        self.compression_level = compression_level
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.timestamp_type = timestamp_type
        self.delete_horizon_ms = delete_horizon_ms
        # The log cleaner keeps a batch's last offset and max timestamp when it drops records
        # (MemoryRecordsBuilder.overrideLastOffset; LogAppendTime batches keep their time): None
        # means from the records.
        self.last_offset: int | None = None
        self.max_timestamp: int | None = None
        self._records: list[tuple[int, int, Any, Any, Any]] = []
        self._next_delta = 0
        self._first_ts: int | None = None
        self._max_ts = NO_TIMESTAMP

    def append(
        self,
        value: bytes | bytearray | memoryview | None,
        key: bytes | bytearray | memoryview | None = None,
        headers: Sequence[Header] = (),
        timestamp_ms: int | None = None,
        *,
        offset: int | None = None,
    ) -> int:
        """Add a record and return its offset.

        ``timestamp_ms`` defaults to the wall clock. ``offset`` (absolute) leaves gaps, as a
        compacted batch has; offsets must increase. Types (bytes-like or None for key and value,
        ``(str, bytes | None)`` tuples for headers, int timestamp) are checked by :meth:`build`,
        which raises RecordEncodeError naming the record: this keeps ``append`` cheap.
        """
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        if offset is None:
            delta = self._next_delta
        else:
            delta = offset - self.base_offset
            if delta < self._next_delta:
                raise RecordEncodeError(f"offset {offset} is not after the previous record's")
            if delta > INT32_MAX:
                raise RecordEncodeError(f"offset {offset} is too far from base offset {self.base_offset}")
        if self._first_ts is None:
            self._first_ts = timestamp_ms
            self._max_ts = timestamp_ms
        elif timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        self._records.append((delta, timestamp_ms, key, value, headers))
        self._next_delta = delta + 1
        return self.base_offset + delta

    @property
    def record_count(self) -> int:
        return len(self._records)

    def estimated_size(self) -> int:
        """Upper bound of the uncompressed batch size so far (for batch.size caps)."""
        size = HEADER_SIZE
        for _, _, key, value, headers in self._records:
            size += 21 + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
            for hk, hv in headers:
                size += 10 + len(hk) * 4 + (len(hv) if hv is not None else 0)
        return size

    def build(self) -> bytes:
        """Encode, compress and checksum the batch (RB-1: CRC-32C over bytes 21..end)."""
        records = self._records
        max_ts = self._max_ts if self.max_timestamp is None else self.max_timestamp
        base_ts = self._first_ts if self._first_ts is not None else (
            NO_TIMESTAMP if self.max_timestamp is None else self.max_timestamp)
        if self.delete_horizon_ms is not None:
            base_ts = self.delete_horizon_ms
        try:
            if _speedups is not None:
                payload = _speedups.encode_records(records, base_ts)
            else:
                payload = _encode_records_py(records, base_ts)
        except UnicodeEncodeError as exc:
            raise RecordEncodeError(f"header key is not encodable as UTF-8: {exc}") from None
        except (OverflowError, TypeError, ValueError, RecordEncodeError) as exc:
            raise RecordEncodeError(f"cannot encode records: {exc}") from None
        attributes = self.compression.value
        if self.compression:
            payload = compress(self.compression, payload, level=self.compression_level)
        if self.timestamp_type:
            attributes |= TIMESTAMP_TYPE_BIT
        if self.is_transactional:
            attributes |= TRANSACTIONAL_BIT
        if self.is_control:
            attributes |= CONTROL_BIT
        if self.delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_BIT
        last_delta = records[-1][0] if records else 0
        if self.last_offset is not None:
            if self.last_offset - self.base_offset < last_delta:
                raise RecordEncodeError(f"last offset {self.last_offset} is before the batch's last record")
            last_delta = self.last_offset - self.base_offset
        length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
        if length > INT32_MAX:
            raise RecordEncodeError(f"batch of {length} bytes is too large")
        try:
            header = bytearray(
                HEADER.pack(
                    self.base_offset,
                    length,
                    self.partition_leader_epoch,
                    2,
                    0,
                    attributes,
                    last_delta,
                    base_ts,
                    max_ts,
                    self.producer_id,
                    self.producer_epoch,
                    self.base_sequence,
                    len(records),
                )
            )
        except struct.error as exc:
            raise RecordEncodeError(f"batch header field out of range: {exc}") from None
        crc = crc32c(payload, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
        _CRC.pack_into(header, CRC_OFFSET, crc)
        return b"".join((header, payload))


# --- the broker's fast path ------------------------------------------------------------------------


class BatchInfo(NamedTuple):
    """What the broker needs from a validated batch, without decoding its records."""

    base_offset: int
    last_offset: int
    record_count: int
    size_in_bytes: int
    compression: int
    timestamp_type: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool
    crc: int

    @property
    def last_sequence(self) -> int:
        """RB-3 last sequence (wraps past int32 max to 0)."""
        return _last_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def validate_and_assign(
    buf: bytearray | memoryview,
    base_offset: int,
    partition_leader_epoch: int,
    *,
    offset: int = 0,
) -> BatchInfo:
    """Validate the v2 batch at ``buf[offset:]`` and set its base offset and leader epoch in place.

    The two fields sit before the CRC-covered range (RB-1), so the CRC stays valid and the
    records are neither decoded nor copied. Checks, in LogValidator's spirit: whole batch
    present, magic 2, CRC, known codec, record count > 0 and equal to LastOffsetDelta + 1, and
    (uncompressed) no more records than the bytes can hold.

    Raises:
        CorruptBatchError: CRC mismatch. RecordDecodeError: any other structural problem.
        TypeError: ``buf`` is not writable.
    """
    view = _as_view(buf)
    if view.readonly:
        raise TypeError("validate_and_assign rewrites in place: pass a bytearray or writable memoryview")
    avail = len(view) - offset
    if offset < 0 or avail < HEADER_SIZE:
        raise RecordDecodeError(f"need {HEADER_SIZE} bytes for a batch header, have {max(avail, 0)}", offset=offset)
    h = HEADER.unpack_from(view, offset)
    old_base = h[0]
    if h[3] != 2:
        raise RecordDecodeError(f"magic {h[3]} is not accepted, only magic 2 (RB-5)", offset=offset + MAGIC_OFFSET,
                                base_offset=old_base)
    length = h[1]
    if length < MIN_BATCH_LENGTH or length + LOG_OVERHEAD > avail:
        raise RecordDecodeError(f"batch length {length} does not fit the {avail} bytes given",
                                offset=offset + 8, base_offset=old_base)
    end = offset + length + LOG_OVERHEAD
    actual = _crc32c(view[offset + ATTRIBUTES_OFFSET : end])  # the C function itself: on every produce
    if actual != h[4]:
        raise CorruptBatchError(old_base, h[4], actual, offset=offset)
    _check_header(h, length + LOG_OVERHEAD - HEADER_SIZE)
    count = h[12]
    if count <= 0:
        raise RecordDecodeError(f"invalid record count {count}", offset=offset + 57, base_offset=old_base)
    if h[6] != count - 1:
        raise RecordDecodeError(
            f"inconsistent batch: last offset delta {h[6]} but {count} records", offset=offset + 23,
            base_offset=old_base,
        )
    _PREFIX.pack_into(view, offset, base_offset, length, partition_leader_epoch)
    attributes = h[5]
    return BatchInfo(
        base_offset,
        base_offset + h[6],
        count,
        length + LOG_OVERHEAD,
        attributes & CODEC_MASK,
        1 if attributes & TIMESTAMP_TYPE_BIT else 0,
        h[7],
        h[8],
        h[9],
        h[10],
        h[11],
        bool(attributes & TRANSACTIONAL_BIT),
        bool(attributes & CONTROL_BIT),
        h[4],
    )


def validate_and_assign_all(
    buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int
) -> list[BatchInfo]:
    """:func:`validate_and_assign` every batch of ``buf`` in turn, offsets following on."""
    view = _as_view(buf)
    infos = []
    pos = 0
    next_offset = base_offset
    while pos < len(view):
        info = validate_and_assign(view, next_offset, partition_leader_epoch, offset=pos)
        infos.append(info)
        pos += info.size_in_bytes
        next_offset = info.last_offset + 1
    return infos


def set_log_append_time(buf: bytearray | memoryview, timestamp_ms: int, *, offset: int = 0) -> None:
    """Mark the batch at ``offset`` LogAppendTime with ``timestamp_ms`` and fix its CRC.

    Unlike the offset rewrite, these fields are inside the CRC (RB-1), so it is recomputed.
    """
    view = _as_view(buf)
    if view.readonly:
        raise TypeError("set_log_append_time rewrites in place: pass a bytearray or writable memoryview")
    batch = RecordBatch(view, offset, verify_crc=False)
    _ATTR.pack_into(view, offset + ATTRIBUTES_OFFSET, batch.attributes | TIMESTAMP_TYPE_BIT)
    _MAX_TS.pack_into(view, offset + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    end = offset + batch.size_in_bytes
    _CRC.pack_into(view, offset + CRC_OFFSET, crc32c(view[offset + ATTRIBUTES_OFFSET : end]))
