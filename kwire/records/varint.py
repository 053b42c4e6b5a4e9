"""Zig-zag varints of the record format (RB-4) and the protocol's unsigned varints.

Records use *signed* zig-zag varints (at most 5 bytes) and varlongs (at most 10 bytes), seven
bits a byte, least-significant group first, 0x80 meaning "more follows". The protocol's compact
lengths use the same scheme without zig-zag. Decoders return ``(value, next_position)`` and raise
``RecordDecodeError`` on a truncated or over-long encoding; they never raise ``IndexError``.
"""

from __future__ import annotations

from kwire.errors import RecordDecodeError, RecordEncodeError

__all__ = [
    "encode_varint",
    "encode_varlong",
    "decode_varint",
    "decode_varlong",
    "encode_unsigned_varint",
    "decode_unsigned_varint",
    "size_of_varint",
    "size_of_varlong",
    "zigzag_encode",
    "zigzag_decode",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_VARINT_BYTES = 5  # RB-4: ByteUtils.readVarint
MAX_VARLONG_BYTES = 10  # RB-4: ByteUtils.readVarlong


def zigzag_encode(n: int) -> int:
    """Map a signed integer onto an unsigned one: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ..."""
    return (n << 1) ^ (n >> 63)


def zigzag_decode(u: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (u >> 1) ^ -(u & 1)


def encode_unsigned_varint(u: int) -> bytes:
    """Seven bits a byte, low group first (no zig-zag)."""
    if u < 0:
        raise RecordEncodeError(f"unsigned varint cannot hold {u}")
    if u < 0x80:
        return bytes((u,))
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


# Small values dominate (lengths, deltas): their encodings are precomputed once.
_SMALL = 1 << 13
_SMALL_CACHE = [encode_unsigned_varint(zigzag_encode(n)) for n in range(-_SMALL, _SMALL)]


def encode_varint(n: int) -> bytes:
    """Zig-zag varint of a signed 32-bit integer."""
    if -_SMALL <= n < _SMALL:
        return _SMALL_CACHE[n + _SMALL]
    if not INT32_MIN <= n <= INT32_MAX:
        raise RecordEncodeError(f"{n} does not fit a varint (int32)")
    return encode_unsigned_varint(zigzag_encode(n))


def encode_varlong(n: int) -> bytes:
    """Zig-zag varlong of a signed 64-bit integer."""
    if -_SMALL <= n < _SMALL:
        return _SMALL_CACHE[n + _SMALL]
    if not INT64_MIN <= n <= INT64_MAX:
        raise RecordEncodeError(f"{n} does not fit a varlong (int64)")
    return encode_unsigned_varint(zigzag_encode(n))


def size_of_varint(n: int) -> int:
    """Encoded size in bytes of the zig-zag varint of ``n``."""
    u = zigzag_encode(n)
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size


size_of_varlong = size_of_varint


def _decode_unsigned(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise RecordDecodeError("varint runs past the end of the data", offset=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise RecordDecodeError(f"varint longer than {max_bytes} bytes", offset=pos - 1)


def decode_unsigned_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned varint (at most 5 bytes) at ``pos``."""
    value, pos = _decode_unsigned(buf, pos, MAX_VARINT_BYTES)
    return value & 0xFFFFFFFF, pos


def decode_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varint (int32, at most 5 bytes) at ``pos``."""
    u, pos = _decode_unsigned(buf, pos, MAX_VARINT_BYTES)
    # Java keeps only the low 32 bits of a 5-byte encoding; so do we.
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varlong (int64, at most 10 bytes) at ``pos``."""
    u, pos = _decode_unsigned(buf, pos, MAX_VARLONG_BYTES)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos
