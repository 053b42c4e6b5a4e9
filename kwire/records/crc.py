"""Checksums of the record layer: CRC-32C for magic 2 batches (RB-1), CRC-32 (IEEE) for magic 0/1.

Both accept any buffer (bytes, bytearray, memoryview) without copying.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c

__all__ = ["crc32c", "crc32"]


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value`` (RB-1)."""
    return _crc32c(data, value)


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE, zlib's) of ``data``: the legacy magic 0/1 message checksum."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
