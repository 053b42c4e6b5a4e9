"""Differential: kwire against kafka-python's and aiokafka's record code (both directions)."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.legacy_records import LegacyRecordBatch as KpLegacy
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder

from kwire.records import BatchBuilder, Compression, LegacyMessageSetBuilder, RecordBatch, iter_batches

pytestmark = pytest.mark.differential

CODECS = list(Compression)
RECS = [
    (b"value-%d" % i * (i % 5 + 1) if i % 7 else None, None if i % 4 == 0 else b"key-%d" % i,
     [(f"h{j}", b"x" * j if j else None) for j in range(i % 3)], 1_700_000_000_000 + (i * 37) % 500 - 100)
    for i in range(60)
]
blobs = st.one_of(st.none(), st.binary(max_size=200))
records = st.lists(
    st.tuples(blobs, blobs, st.lists(st.tuples(st.text(max_size=8), blobs), max_size=3),
              st.integers(0, 1 << 41)),
    min_size=1, max_size=20,
)


def _theirs(builder_cls: type, recs: list, codec: int, pid: tuple[int, int, int] = (-1, -1, -1),
            txn: bool = False) -> bytes:
    b = builder_cls(2, codec, txn, pid[0], pid[1], pid[2], 1 << 30)
    for i, (v, k, hs, ts) in enumerate(recs):
        b.append(i, ts, k, v, hs)
    return bytes(b.build())


def _ours(recs: list, codec: int, ple: int, pid: tuple[int, int, int] = (-1, -1, -1), txn: bool = False) -> bytes:
    b = BatchBuilder(0, compression=codec, partition_leader_epoch=ple, producer_id=pid[0], producer_epoch=pid[1],
                     base_sequence=pid[2], is_transactional=txn)
    for v, k, hs, ts in recs:
        b.append(v, k, hs, ts)
    return b.build()


def _as_tuples(batch: object) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("lib", "ple"), [(KpBuilder, 0), (AioBuilder, -1)])
def test_identical_bytes_uncompressed(lib: type, ple: int, impl: str) -> None:
    """Same input, same bytes (kafka-python writes leader epoch 0, aiokafka -1)."""
    assert _ours(RECS, 0, ple) == _theirs(lib, RECS, 0)
    pid = (123456789, 7, 2147483600)
    assert _ours(RECS, 0, ple, pid, txn=True) == _theirs(lib, RECS, 0, pid, txn=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=records)
def test_identical_bytes_uncompressed_for_any_records(recs: list) -> None:
    assert _ours(recs, 0, 0) == _theirs(KpBuilder, recs, 0)
    assert _ours(recs, 0, -1) == _theirs(AioBuilder, recs, 0)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("lib", ["kafka-python", "aiokafka"])
def test_they_decode_our_batches(codec: int, lib: str, impl: str) -> None:
    data = _ours(RECS, codec, -1)
    reader = KpBatch(data) if lib == "kafka-python" else AioBatch(data)
    assert reader.validate_crc()
    assert reader.compression_type == codec
    assert _as_tuples(reader) == _as_tuples(RecordBatch(data))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("lib", [KpBuilder, AioBuilder])
def test_we_decode_their_batches(codec: int, lib: type, impl: str) -> None:
    data = _theirs(lib, RECS, codec)
    batch = RecordBatch(data)
    batch.validate()
    # kafka-python falls back to no compression when it does not pay; these records compress
    assert batch.compression == codec
    assert _as_tuples(batch) == _as_tuples(KpBatch(data))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_legacy_both_directions(magic: int, codec: int) -> None:
    msgs = [(b"v%d" % i * 10, None if i == 2 else b"k%d" % i, 1_600_000_000_000 + i) for i in range(6)]
    kp = KpLegacyBuilder(magic, codec, 1 << 30)
    for i, (v, k, ts) in enumerate(msgs):
        kp.append(i, ts, k, v)
    theirs = bytes(kp.build())
    ours = [(r.key, r.value, r.timestamp) for b in iter_batches(theirs) for r in b]
    assert ours == [(k, v, ts if magic else -1) for v, k, ts in msgs]
    builder = LegacyMessageSetBuilder(magic, codec)
    for v, k, ts in msgs:
        builder.append(v, k, ts)
    data = builder.build()
    if codec == 0:
        assert data == theirs
    decoded = []
    for b in iter_batches(data):
        decoded += [(r.key, r.value, r.timestamp if magic else -1) for r in KpLegacy(bytes(b), magic)]
    assert decoded == [(k, v, ts if magic else -1) for v, k, ts in msgs]
