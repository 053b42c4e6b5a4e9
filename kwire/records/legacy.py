"""Legacy message sets, magic 0 and 1 (broker-semantics.md 4.3, RB-5): read, write, up-convert.

Each log entry::

    Offset int64 | MessageSize int32 | CRC uint32 (CRC-32 IEEE of Magic..end) | Magic int8
    | Attributes int8 (codec bits 0-2; v1: timestamp type bit 3) | [v1: Timestamp int64]
    | KeyLength int32 (-1 null) | Key | ValueLength int32 (-1 null) | Value

A compressed entry is a *wrapper*: its value is a whole inner message set, compressed. For
magic 1 the inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of
the last inner message; for magic 0 the inner offsets are absolute. Magic 0 lz4 uses the
historical wrong frame checksum (see ``compression``).

Produce v3+ carries only magic 2 (RB-5), so legacy sets are met in old log data; a broker
up-converts them to v2 for storage (``message_set.upconvert_to_v2``).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import Any, Final

from kwire.errors import CorruptBatchError, RecordDecodeError, RecordEncodeError, RecordError

from .batch import LOG_OVERHEAD, NO_TIMESTAMP, Record, _as_view
from .compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression, compress, decompress_view
from .crc import crc32

__all__ = ["LegacyBatch", "LegacyMessageSetBuilder"]

# Offset, MessageSize, CRC, Magic, Attributes [, Timestamp]
_HEADER_V0 = struct.Struct(">qiIbb")
_HEADER_V1 = struct.Struct(">qiIbbq")
_HEADERS = (_HEADER_V0, _HEADER_V1)
_INT32 = struct.Struct(">i")
MAGIC_OFFSET: Final = 16  # the CRC covers Magic..end
CRC_OFFSET: Final = 12
RECORD_OVERHEAD: Final = (14, 22)  # v0, v1: CRC+magic+attrs(+ts)+two lengths
TIMESTAMP_TYPE_BIT: Final = 0x08


class _Message:
    """One decoded legacy message (inner or outer)."""

    __slots__ = ("offset", "crc", "magic", "attributes", "timestamp", "key", "value", "start", "size")

    def __init__(self, view: memoryview, pos: int, end: int) -> None:
        if end - pos < LOG_OVERHEAD + 5:
            raise RecordDecodeError("truncated legacy message header", offset=pos)
        magic = view[pos + MAGIC_OFFSET]
        if magic > 1:
            raise RecordDecodeError(f"magic {magic} inside a legacy message set", offset=pos + MAGIC_OFFSET)
        fmt = _HEADERS[magic]
        (offset, size) = struct.unpack_from(">qi", view, pos)
        if size < RECORD_OVERHEAD[magic] or pos + LOG_OVERHEAD + size > end:
            raise RecordDecodeError(f"legacy message size {size} does not fit", offset=pos + 8, base_offset=offset)
        fields = fmt.unpack_from(view, pos)
        self.offset = offset
        self.size = size + LOG_OVERHEAD
        self.crc = fields[2]
        self.magic = magic
        self.attributes = fields[4]
        self.timestamp = fields[5] if magic else NO_TIMESTAMP
        self.start = pos
        msg_end = pos + self.size
        p = pos + fmt.size
        self.key, p = _read_bytes(view, p, msg_end, offset)
        self.value, p = _read_bytes(view, p, msg_end, offset)
        if p != msg_end:
            raise RecordDecodeError(f"{msg_end - p} stray bytes in legacy message", offset=p, base_offset=offset)


def _read_bytes(view: memoryview, pos: int, end: int, base_offset: int) -> tuple[memoryview | None, int]:
    if end - pos < 4:
        raise RecordDecodeError("truncated legacy message length", offset=pos, base_offset=base_offset)
    (n,) = _INT32.unpack_from(view, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or n > end - pos:
        raise RecordDecodeError(f"legacy length {n} does not fit", offset=pos - 4, base_offset=base_offset)
    return view[pos : pos + n], pos + n


def _check_crc(view: memoryview, msg: _Message) -> None:
    actual = crc32(view[msg.start + MAGIC_OFFSET : msg.start + msg.size])
    if actual != msg.crc:
        raise CorruptBatchError(msg.offset, msg.crc, actual, offset=msg.start)


class LegacyBatch:
    """One top-level legacy entry (a message, or a compressed wrapper) with the batch interface.

    Iterating yields :class:`~kwire.records.Record` objects (no headers), with absolute offsets;
    a wrapper's inner messages are decompressed on iteration and their CRCs checked when
    ``verify_crc`` is set.
    """

    __slots__ = ("_view", "_msg", "_verify", "_max_decompressed", "_inner")

    is_transactional: Final = False  # type: ignore[misc]
    is_control: Final = False  # type: ignore[misc]
    has_delete_horizon: Final = False  # type: ignore[misc]
    producer_id: Final = -1  # type: ignore[misc]
    producer_epoch: Final = -1  # type: ignore[misc]
    base_sequence: Final = -1  # type: ignore[misc]
    last_sequence: Final = -1  # type: ignore[misc]
    partition_leader_epoch: Final = -1  # type: ignore[misc]

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        offset: int = 0,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> None:
        view = _as_view(buf)
        msg = _Message(view, offset, len(view))
        self._view = view[offset : offset + msg.size]
        msg.start = 0
        self._msg = _Message(self._view, 0, msg.size)
        self._verify = verify_crc
        self._max_decompressed = max_decompressed_size
        self._inner: list[Record] | None = None

    @property
    def magic(self) -> int:
        return self._msg.magic

    @property
    def crc(self) -> int:
        return self._msg.crc

    @property
    def attributes(self) -> int:
        return self._msg.attributes

    @property
    def compression(self) -> Compression:
        codec = self._msg.attributes & 0x07
        try:
            return Compression(codec)
        except ValueError:
            raise RecordDecodeError(f"unknown compression codec {codec}", base_offset=self._msg.offset) from None

    @property
    def timestamp_type(self) -> int:
        return 1 if self._msg.magic and self._msg.attributes & TIMESTAMP_TYPE_BIT else 0

    @property
    def timestamp(self) -> int:
        return self._msg.timestamp

    @property
    def max_timestamp(self) -> int:
        return self._msg.timestamp

    @property
    def base_timestamp(self) -> int:
        return self._msg.timestamp

    @property
    def last_offset(self) -> int:
        """The wrapper's offset: the last inner message's absolute offset."""
        return self._msg.offset

    @property
    def next_offset(self) -> int:
        return self._msg.offset + 1

    @property
    def base_offset(self) -> int:
        """First offset; a compressed wrapper is decompressed to learn it, as Java does."""
        if not self._msg.attributes & 0x07:
            return self._msg.offset
        inner = self._records()
        return inner[0].offset if inner else self._msg.offset

    @property
    def record_count(self) -> int:
        if not self._msg.attributes & 0x07:
            return 1
        return len(self._records())

    @property
    def size_in_bytes(self) -> int:
        return self._msg.size

    @property
    def batch_length(self) -> int:
        return self._msg.size - LOG_OVERHEAD

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.base_offset

    @property
    def buffer(self) -> memoryview:
        return self._view

    def __bytes__(self) -> bytes:
        return bytes(self._view)

    def compute_crc(self) -> int:
        return crc32(self._view[MAGIC_OFFSET:])

    def validate(self) -> None:
        """Check the outer CRC-32 and the codec id."""
        _check_crc(self._view, self._msg)
        self.compression  # noqa: B018 - raises on an unknown codec
        self._verify = False

    def _records(self) -> list[Record]:
        if self._inner is None:
            self._inner = self._decode()
        return self._inner

    def _decode(self) -> list[Record]:
        msg = self._msg
        codec = msg.attributes & 0x07
        if not codec:
            return [Record(msg.offset, msg.timestamp, _b(msg.key), _b(msg.value))]
        if msg.value is None:
            raise RecordDecodeError("compressed wrapper message has a null value", base_offset=msg.offset)
        try:
            data = decompress_view(codec, msg.value, magic=msg.magic, max_size=self._max_decompressed)
        except RecordError as exc:
            raise type(exc)(f"wrapper at offset {msg.offset}: {exc}") from None
        inner = []
        pos = 0
        end = len(data)
        while pos < end:
            m = _Message(data, pos, end)
            if self._verify:
                _check_crc(data, m)
            if m.attributes & 0x07:
                raise RecordDecodeError("nested compression inside a wrapper message", base_offset=m.offset)
            inner.append(m)
            pos += m.size
        if not inner:
            raise RecordDecodeError("compressed wrapper holds no messages", base_offset=msg.offset)
        # magic 1: inner offsets are relative; the wrapper names the last absolute offset
        shift = msg.offset - inner[-1].offset if msg.magic == 1 else 0
        # LogAppendTime on the wrapper applies to every inner message
        log_append = msg.magic == 1 and bool(msg.attributes & TIMESTAMP_TYPE_BIT)
        return [
            Record(m.offset + shift, msg.timestamp if log_append else m.timestamp, _b(m.key), _b(m.value))
            for m in inner
        ]

    def __iter__(self) -> Iterator[Record]:
        if self._verify:
            self.validate()
        return iter(self._records())

    def records(self) -> list[Record]:
        return list(self)

    def header_dict(self) -> dict[str, Any]:
        msg = self._msg
        return {
            "base_offset": self.base_offset,
            "last_offset": msg.offset,
            "magic": msg.magic,
            "crc": msg.crc,
            "attributes": msg.attributes,
            "compression": self.compression.name.lower(),
            "timestamp_type": self.timestamp_type,
            "timestamp": msg.timestamp,
            "record_count": self.record_count,
            "size_in_bytes": msg.size,
            "producer_id": -1,
            "producer_epoch": -1,
            "base_sequence": -1,
            "is_transactional": False,
            "is_control": False,
        }

    def to_dict(self, *, records: bool = True) -> dict[str, Any]:
        d = self.header_dict()
        if records:
            d["records"] = [r.to_dict() for r in self]
        return d

    def __repr__(self) -> str:
        m = self._msg
        return f"LegacyBatch(magic={m.magic}, offset={m.offset}, compression={m.attributes & 7}, size={m.size})"


def _b(v: memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)


class LegacyMessageSetBuilder:
    """Build a magic 0 or 1 message set, optionally as one compressed wrapper.

    Offsets are ``base_offset``, ``base_offset + 1``...; a compressed set gets the broker's
    shape: inner offsets relative (magic 1) or absolute (magic 0), wrapper offset = last offset.
    """

    def __init__(
        self,
        magic: int = 1,
        compression: Compression | int = Compression.NONE,
        *,
        base_offset: int = 0,
        timestamp_type: int = 0,
    ) -> None:
        if magic not in (0, 1):
            raise RecordEncodeError(f"legacy magic must be 0 or 1, not {magic}")
        try:
            self.compression = Compression(compression)
        except ValueError:
            raise RecordEncodeError(f"unknown compression codec {compression}") from None
        if self.compression is Compression.ZSTD:
            raise RecordEncodeError("zstd needs magic 2 (RB-2)")
        self.magic = magic
        self.base_offset = base_offset
        self.timestamp_type = timestamp_type
        self._messages: list[tuple[int, bytes | None, bytes | None]] = []

    def append(
        self,
        value: bytes | bytearray | memoryview | None,
        key: bytes | bytearray | memoryview | None = None,
        timestamp_ms: int | None = None,
    ) -> int:
        """Add a message and return its offset (magic 0 keeps no timestamp)."""
        if self.magic == 0:
            timestamp_ms = NO_TIMESTAMP
        elif timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        for name, v in (("key", key), ("value", value)):
            if v is not None and not isinstance(v, bytes | bytearray | memoryview):
                raise RecordEncodeError(f"{name} must be bytes or None, not {type(v).__name__}")
        self._messages.append(
            (timestamp_ms, None if key is None else bytes(key), None if value is None else bytes(value))
        )
        return self.base_offset + len(self._messages) - 1

    def _encode(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None, attributes: int) -> bytes:
        magic = self.magic
        body = [struct.pack(">bb", magic, attributes)]
        if magic:
            body.append(struct.pack(">q", timestamp))
        for v in (key, value):
            if v is None:
                body.append(b"\xff\xff\xff\xff")
            else:
                body.append(_INT32.pack(len(v)))
                body.append(v)
        payload = b"".join(body)
        return struct.pack(">qiI", offset, len(payload) + 4, crc32(payload)) + payload

    def build(self) -> bytes:
        """The message set bytes."""
        ts_bit = TIMESTAMP_TYPE_BIT if self.magic and self.timestamp_type else 0
        if not self.compression:
            return b"".join(
                self._encode(self.base_offset + i, ts, k, v, ts_bit) for i, (ts, k, v) in enumerate(self._messages)
            )
        if not self._messages:
            return b""
        inner = b"".join(
            self._encode(i if self.magic else self.base_offset + i, ts, k, v, 0)
            for i, (ts, k, v) in enumerate(self._messages)
        )
        wrapper_value = compress(self.compression, inner, magic=self.magic)
        last = self.base_offset + len(self._messages) - 1
        max_ts = max(ts for ts, _, _ in self._messages)
        return self._encode(last, max_ts, None, wrapper_value, self.compression.value | ts_bit)
