"""Codecs: every one written and read, the Kafka framings, foreign encoders, limits (RB-2)."""

from __future__ import annotations

import gzip
import os

import lz4.frame
import pytest
import snappy
import xxhash
import zstandard

from kwire.errors import CompressionError
from kwire.records import BatchBuilder, Compression, RecordBatch, compress, decompress
from kwire.records.compression import xxh32

DATA = b"kafka wire " * 9000 + os.urandom(3000)


@pytest.mark.rule("RB-2")
@pytest.mark.parametrize("codec", list(Compression))
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_every_codec_round_trips(codec: Compression, magic: int) -> None:
    """RB-2: codec ids 0-4 all compress and decompress."""
    assert Compression(codec).value == [c.value for c in Compression].index(codec)
    assert decompress(codec, compress(codec, DATA, magic=magic), magic=magic) == DATA
    assert decompress(codec, compress(codec, b"", magic=magic), magic=magic) == b""


@pytest.mark.rule("RB-2")
@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_round_trip_and_set_the_codec_bits(codec: Compression, impl: str) -> None:
    b = BatchBuilder(compression=codec)
    for i in range(200):
        b.append(b"value %d" % i, b"key", [("h", b"v")], 1000 + i)
    batch = RecordBatch(b.build())
    assert batch.compression == codec and batch.attributes & 7 == codec
    assert len(batch.records_buffer) < 200 * 10
    assert [r.value for r in batch] == [b"value %d" % i for i in range(200)]


def test_snappy_reads_raw_and_xerial_and_concatenated_xerial() -> None:
    xerial = compress(Compression.SNAPPY, DATA)
    assert xerial.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    raw = compress(Compression.SNAPPY, DATA, xerial=False)
    assert snappy.decompress(raw) == DATA
    assert decompress(Compression.SNAPPY, snappy.compress(DATA)) == DATA
    assert decompress(Compression.SNAPPY, xerial + compress(Compression.SNAPPY, b"tail")) == DATA + b"tail"


def test_lz4_writes_kafkas_frame_and_reads_any_standard_frame() -> None:
    frame = compress(Compression.LZ4, DATA)
    assert frame[:6] == b"\x04\x22\x4d\x18\x60\x40"  # magic, FLG (independent blocks), BD 64 KiB
    assert lz4.frame.decompress(frame) == DATA
    for kw in ({}, {"block_linked": True, "content_checksum": True, "store_size": True},
               {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "block_checksum": True}):
        assert decompress(Compression.LZ4, lz4.frame.compress(DATA, **kw)) == DATA
    assert decompress(Compression.LZ4, compress(Compression.LZ4, DATA, level=12)) == DATA


def test_lz4_magic0_quirk_header_checksum_covers_the_magic_bytes() -> None:
    """Magic 0 wrappers hash the 4 magic bytes into HC (pre-KIP-57); others do not."""
    v0 = compress(Compression.LZ4, DATA, magic=0)
    v1 = compress(Compression.LZ4, DATA, magic=1)
    assert v0[6] == (xxhash.xxh32(v0[:6]).intdigest() >> 8) & 0xFF
    assert v1[6] == (xxhash.xxh32(v1[4:6]).intdigest() >> 8) & 0xFF
    assert v0[6] != v1[6] and v0[7:] == v1[7:]
    assert decompress(Compression.LZ4, v0, magic=0) == DATA
    with pytest.raises(CompressionError, match="checksum"):
        decompress(Compression.LZ4, v0, magic=1)


def test_gzip_and_zstd_read_foreign_streams() -> None:
    assert gzip.decompress(compress(Compression.GZIP, DATA)) == DATA
    assert decompress(Compression.GZIP, gzip.compress(DATA) + gzip.compress(b"!")) == DATA + b"!"
    stream = zstandard.ZstdCompressor().compressobj()
    framed = stream.compress(DATA) + stream.flush()  # no content size, as zstd-jni streams write
    assert decompress(Compression.ZSTD, framed) == DATA
    assert zstandard.ZstdDecompressor().decompress(compress(Compression.ZSTD, DATA)) == DATA


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_decompression_is_bounded(codec: Compression) -> None:
    """A small payload that inflates past the limit raises instead of allocating it."""
    bomb = compress(codec, bytes(8 * 1024 * 1024))
    with pytest.raises(CompressionError, match="limit"):
        decompress(codec, bomb, max_size=1024 * 1024)
    assert len(decompress(codec, bomb, max_size=8 * 1024 * 1024)) == 8 * 1024 * 1024


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_garbage_raises_compression_error(codec: Compression) -> None:
    good = compress(codec, DATA)
    for bad in (b"", b"\x00" * 3, os.urandom(64), good[: len(good) // 2], good[:20] + b"\xff" * 40):
        try:
            out = decompress(codec, bad)
        except CompressionError:
            continue
        assert isinstance(out, bytes)  # tolerated prefixes decode to *something* typed


def test_unknown_codec_is_a_compression_error() -> None:
    with pytest.raises(CompressionError):
        compress(7, b"x")
    with pytest.raises(CompressionError):
        decompress(6, b"x")


def test_xxh32_matches_the_reference() -> None:
    for n in (0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 100):
        data = os.urandom(n)
        for seed in (0, 1, 0xDEADBEEF):
            assert xxh32(data, seed) == xxhash.xxh32(data, seed=seed).intdigest()
