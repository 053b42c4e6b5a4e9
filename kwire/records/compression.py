"""Compression codecs of record batches and legacy wrapper messages (RB-2 bits 0-2).

All four codecs come from cramjam; the Kafka-specific framings sit on top of it here:

* **snappy**: Java clients write the *xerial* block framing (a 16-byte header, then big-endian
  length-prefixed raw snappy blocks of at most 32 KiB input). librdkafka and others write raw
  snappy. Both are read; xerial is written by default, as Java does.
* **lz4**: Kafka's frame (KIP-57): a standard LZ4 frame with independent 64 KiB blocks, no
  content size and no checksums, as ``KafkaLZ4BlockOutputStream`` writes it. Magic 0 wrapper
  messages carry the historical *wrong* header checksum, computed over the 4 magic bytes too;
  it is written for magic 0 and accepted (as Java ignores it) on read.
* **gzip** and **zstd**: plain streams (multi-member / multi-frame accepted).

Decompression is bounded: output larger than ``max_size`` (default
:data:`DEFAULT_MAX_DECOMPRESSED_BYTES`) raises :class:`~kwire.errors.CompressionError` rather
than allocating without limit, so a small hostile batch cannot exhaust memory.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final

import cramjam

from kwire.errors import CompressionError

__all__ = [
    "Compression",
    "compress",
    "decompress",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "xxh32",
]

CODEC_MASK: Final = 0x07  # RB-2: attribute bits 0-2

# A compressed batch is at most message.max.bytes (1 MiB default) on the wire; 256 MiB of
# output is far above any real batch yet small enough to allocate safely on a test machine.
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 256 * 1024 * 1024


class Compression(IntEnum):
    """Codec ids of the attributes field (RB-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# --- xxh32 (only the LZ4 frame header checksum needs it: a few bytes) -------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH32 of ``data``; pure Python, meant for the few bytes of an LZ4 frame descriptor."""
    data = bytes(data)
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i <= n - 16:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (w,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + w * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- bounded output -----------------------------------------------------------------------------

_MIN_GUESS = 64 * 1024


def _decompress_bounded(
    into: object, data: bytes | memoryview, guess: int, max_size: int, name: str
) -> memoryview:
    """Run a cramjam ``decompress_into`` with a growing output buffer capped at ``max_size``.

    cramjam fails with "failed to write whole buffer" when the output does not fit, so the
    buffer is grown (x4) and the call retried; the total work stays within ~1.3x the last call.
    """
    size = min(max(guess, _MIN_GUESS), max_size)
    while True:
        out = bytearray(size)
        try:
            n = into(data, out)  # type: ignore[operator]
        except cramjam.DecompressionError as exc:
            too_small = "whole buffer" in str(exc)
            if too_small and size < max_size:
                size = min(size * 4, max_size)
                continue
            if too_small:
                raise CompressionError(
                    f"{name} data decompresses to more than the limit of {max_size} bytes"
                ) from None
            raise CompressionError(f"corrupt {name} data: {exc}") from None
        return memoryview(out)[:n]


# --- snappy (raw and xerial) ----------------------------------------------------------------------

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible 1
_XERIAL_BLOCK: Final = 32 * 1024  # xerial SnappyOutputStream's default block size
_BE_INT = struct.Struct(">i")


def _snappy_raw_len(block: bytes | memoryview) -> int:
    try:
        return int(cramjam.snappy.decompress_raw_len(block))
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"corrupt snappy data: {exc}") from None


def _snappy_decompress(data: memoryview, max_size: int) -> memoryview:
    if data[:8] != _XERIAL_MAGIC:
        n = _snappy_raw_len(data)
        if n > max_size:
            raise CompressionError(f"snappy data claims {n} bytes, over the limit of {max_size}")
        out = bytearray(n)
        try:
            cramjam.snappy.decompress_raw_into(data, out)
        except cramjam.DecompressionError as exc:
            raise CompressionError(f"corrupt snappy data: {exc}") from None
        return memoryview(out)
    # xerial: collect the blocks and their sizes first so the output is allocated once
    blocks = []
    total = 0
    pos = 0
    end = len(data)
    while pos < end:
        if data[pos : pos + 8] == _XERIAL_MAGIC:
            # xerial streams may be concatenated: each part starts with its own header
            if end - pos < 16:
                raise CompressionError("truncated xerial snappy header")
            pos += 16
            continue
        if end - pos < 4:
            raise CompressionError("truncated xerial snappy block length")
        (size,) = _BE_INT.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CompressionError(f"xerial snappy block length {size} runs past the data")
        block = data[pos : pos + size]
        pos += size
        n = _snappy_raw_len(block)
        total += n
        if total > max_size:
            raise CompressionError(f"snappy data decompresses to more than the limit of {max_size} bytes")
        blocks.append((block, n))
    out = bytearray(total)
    view = memoryview(out)
    at = 0
    try:
        for block, n in blocks:
            cramjam.snappy.decompress_raw_into(block, view[at : at + n])
            at += n
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"corrupt snappy data: {exc}") from None
    return view


def _snappy_compress(data: bytes | bytearray | memoryview, xerial: bool) -> bytes:
    if not xerial:
        return bytes(cramjam.snappy.compress_raw(data))
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
        parts.append(_BE_INT.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


# --- lz4 (Kafka's frame) --------------------------------------------------------------------------

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_LZ4_FLG: Final = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD: Final = 0x40  # 64 KiB maximum block size, as KafkaLZ4BlockOutputStream
_LZ4_BLOCK: Final = 64 * 1024
_LZ4_BLOCK_SIZES: Final = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LE_UINT = struct.Struct("<I")
_LZ4_DEFAULT_LEVEL: Final = 9  # Kafka's default lz4 level (KIP-390), which uses the fast compressor


def _lz4_header_checksum(descriptor: bytes, broken: bool) -> int:
    # The frame spec hashes FLG..(content size); Kafka before KIP-57 (kept for magic 0) also
    # hashed the four magic bytes in front of them.
    return (xxh32(descriptor if broken else descriptor[4:]) >> 8) & 0xFF


def _lz4_compress(data: bytes | bytearray | memoryview, level: int | None, magic: int) -> bytes:
    view = memoryview(data)
    descriptor = _LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD))
    parts = [descriptor, bytes((_lz4_header_checksum(descriptor, broken=magic == 0),))]
    high = level is not None and level != _LZ4_DEFAULT_LEVEL
    for i in range(0, len(view), _LZ4_BLOCK):
        chunk = view[i : i + _LZ4_BLOCK]
        if high:
            block = cramjam.lz4.compress_block(chunk, mode="high_compression", compression=level, store_size=False)
        else:
            block = cramjam.lz4.compress_block(chunk, store_size=False)
        if len(block) >= len(chunk):
            # incompressible: stored as is, flagged by the block size's high bit
            parts.append(_LE_UINT.pack(len(chunk) | 0x80000000))
            parts.append(bytes(chunk))
        else:
            parts.append(_LE_UINT.pack(len(block)))
            parts.append(bytes(block))
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def _lz4_decompress(data: memoryview, magic: int, max_size: int) -> memoryview:
    end = len(data)
    if end < 7 or data[:4] != _LZ4_MAGIC:
        raise CompressionError("lz4 data does not start with an LZ4 frame magic number")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise CompressionError(f"unsupported lz4 frame version {flg >> 6}")
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
    if block_max is None:
        raise CompressionError(f"invalid lz4 block size code in BD byte 0x{bd:02x}")
    block_checksum = bool(flg & 0x10)
    content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    hc_pos = 6 + (8 if content_size else 0)
    if end <= hc_pos:
        raise CompressionError("truncated lz4 frame descriptor")
    descriptor = bytes(data[:hc_pos])
    hc = data[hc_pos]
    correct = _lz4_header_checksum(descriptor, broken=False)
    if hc != correct:
        # magic 0 wrappers carry the pre-KIP-57 checksum; Java ignores it for them
        if magic != 0:
            raise CompressionError(f"lz4 frame header checksum 0x{hc:02x} != 0x{correct:02x}")
        data = memoryview(descriptor + bytes((correct,)) + bytes(data[hc_pos + 1 :]))
    # Walk the block headers: bounds-check every length and size the output exactly.
    pos = hc_pos + 1
    blocks = 0
    while True:
        if end - pos < 4:
            raise CompressionError("truncated lz4 frame: missing end mark")
        (size,) = _LE_UINT.unpack_from(data, pos)
        pos += 4
        if size == 0:
            break
        size &= 0x7FFFFFFF
        if size > block_max:
            raise CompressionError(f"lz4 block of {size} bytes exceeds the frame's {block_max}-byte maximum")
        pos += size + (4 if block_checksum else 0)
        if pos > end:
            raise CompressionError("truncated lz4 block")
        blocks += 1
    if content_checksum:
        pos += 4
    if pos > end:
        raise CompressionError("truncated lz4 content checksum")
    bound = blocks * block_max
    if bound > max_size:
        bound = max_size
    return _decompress_bounded(cramjam.lz4.decompress_into, data[:pos], bound, max_size, "lz4")


# --- public ---------------------------------------------------------------------------------------


def compress(
    codec: Compression | int,
    data: bytes | bytearray | memoryview,
    *,
    level: int | None = None,
    magic: int = 2,
    xerial: bool = True,
) -> bytes:
    """Compress ``data`` the way a Java client does for ``codec``.

    ``magic`` matters only for lz4 (magic 0 writes the legacy header checksum); ``xerial=False``
    writes raw snappy instead of the Java framing.
    """
    try:
        codec = Compression(codec)
    except ValueError:
        raise CompressionError(f"unknown compression codec {codec}") from None
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=6 if level is None else level))
    if codec is Compression.SNAPPY:
        return _snappy_compress(data, xerial)
    if codec is Compression.LZ4:
        return _lz4_compress(data, level, magic)
    return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))


def decompress_view(
    codec: Compression | int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> memoryview:
    """Like :func:`decompress` but returns a memoryview over the output (no final copy)."""
    view = memoryview(data)
    if codec == Compression.NONE:
        return view
    if codec == Compression.GZIP:
        # a single-member gzip stream ends with its size mod 2**32: a good first guess
        guess = _LE_UINT.unpack_from(view, len(view) - 4)[0] if len(view) >= 18 else 0
        return _decompress_bounded(cramjam.gzip.decompress_into, view, guess + 1, max_size, "gzip")
    if codec == Compression.SNAPPY:
        return _snappy_decompress(view, max_size)
    if codec == Compression.LZ4:
        return _lz4_decompress(view, magic, max_size)
    if codec == Compression.ZSTD:
        return _decompress_bounded(cramjam.zstd.decompress_into, view, 8 * len(view), max_size, "zstd")
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(
    codec: Compression | int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Decompress ``data`` written with ``codec`` (any of the framings above).

    Raises:
        CompressionError: unknown codec, corrupt data, or output over ``max_size`` bytes.
    """
    return bytes(decompress_view(codec, data, magic=magic, max_size=max_size))
