"""Wire primitives shared by the generated codec: structs, varints, uuids, error helpers.

Layouts (big-endian, as Kafka sends them):
  intN/uintN/float64  fixed width
  string              int16 length (-1 = null) + UTF-8          compact: uvarint(length + 1), 0 = null
  bytes/records       int32 length (-1 = null) + bytes           compact: uvarint(length + 1), 0 = null
  array               int32 count (-1 = null) + elements         compact: uvarint(count + 1), 0 = null
  uuid                16 bytes
  tagged fields       uvarint count, then per field: uvarint tag, uvarint size, bytes
"""

from __future__ import annotations

import struct
import uuid as _uuid_mod
from collections.abc import Iterable

from kwire.errors import DecodeError, EncodeError

__all__ = [
    "S_INT8",
    "S_INT16",
    "S_INT32",
    "S_INT64",
    "S_UINT16",
    "S_UINT32",
    "S_FLOAT64",
    "ZERO_UUID",
    "make_uuid",
    "read_uvarint",
    "read_uvarint_cont",
    "write_uvarint",
    "uvarint_bytes",
    "read_varint",
    "write_varint",
    "read_varlong",
    "write_varlong",
    "write_tagged_fields",
    "MAX_UVARINT_BYTES",
]

S_INT8 = struct.Struct(">b")
S_INT16 = struct.Struct(">h")
S_INT32 = struct.Struct(">i")
S_INT64 = struct.Struct(">q")
S_UINT16 = struct.Struct(">H")
S_UINT32 = struct.Struct(">I")
S_FLOAT64 = struct.Struct(">d")

# An unsigned varint that carries a 32-bit value takes at most 5 bytes (Kafka's ByteUtils).
MAX_UVARINT_BYTES = 5

UUID = _uuid_mod.UUID
_new = object.__new__
_set = object.__setattr__
_SAFE_UNKNOWN = _uuid_mod.SafeUUID.unknown
_from_bytes = int.from_bytes


def make_uuid(raw: bytes) -> UUID:
    """Build a ``uuid.UUID`` from 16 bytes without the checks of ``UUID(bytes=...)`` (5x faster)."""
    u = _new(UUID)
    _set(u, "int", _from_bytes(raw, "big"))
    _set(u, "is_safe", _SAFE_UNKNOWN)
    return u


ZERO_UUID = UUID(int=0)


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; returns (value, new position)."""
    try:
        b = buf[pos]
    except IndexError:
        raise DecodeError("truncated varint", offset=pos) from None
    if b < 0x80:
        return b, pos + 1
    return read_uvarint_cont(buf, pos + 1, b)


def read_uvarint_cont(buf: bytes | memoryview, pos: int, first: int) -> tuple[int, int]:
    """Continue an unsigned varint whose first byte (``first`` >= 0x80) was already read."""
    value = first & 0x7F
    shift = 7
    start = pos - 1
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varint", offset=start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 7 * MAX_UVARINT_BYTES:
            raise DecodeError("varint longer than 5 bytes", offset=start)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint (value must fit in 32 bits)."""
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 32-bit varint."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 64-bit varint (up to 10 bytes)."""
    value = 0
    shift = 0
    start = pos
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varlong", offset=start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise DecodeError("varlong longer than 10 bytes", offset=start)
    return (value >> 1) ^ -(value & 1), pos


def write_varlong(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write_tagged_fields(out: bytearray, fields: Iterable[tuple[int, bytes | bytearray]]) -> None:
    """Append a tagged-field section; ``fields`` are (tag, encoded value) pairs, sorted by tag here."""
    items = sorted(fields, key=lambda kv: kv[0])
    write_uvarint(out, len(items))
    last = -1
    for tag, data in items:
        if tag == last:
            raise EncodeError(f"tagged field {tag} appears twice")
        last = tag
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
