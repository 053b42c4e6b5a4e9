"""Hypothesis: round trips for any records, and the C and Python loops agreeing on any bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kwire.errors import RecordError
from kwire.records import BatchBuilder, Compression, Record, RecordBatch, iter_batches
from kwire.records import batch as batch_mod
from kwire.records.crc import crc32c
from kwire.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=12), blobs), max_size=4)
timestamps = st.integers(min_value=-(1 << 40), max_value=1 << 42)
records = st.lists(st.tuples(blobs, blobs, headers, timestamps), max_size=30)


def _build(recs: list, codec: int = 0, base_offset: int = 0, **kw: object) -> bytes:
    b = BatchBuilder(base_offset, compression=codec, **kw)  # type: ignore[arg-type]
    for value, key, hs, ts in recs:
        b.append(value, key, hs, ts)
    return b.build()


@SETTINGS
@given(recs=records, base_offset=st.integers(0, 1 << 62), codec=st.sampled_from(list(Compression)))
@pytest.mark.parametrize("impl_name", ["c", "py"])
def test_any_records_round_trip(impl_name: str, recs: list, base_offset: int, codec: int) -> None:
    saved = batch_mod._speedups
    if impl_name == "py":
        batch_mod._speedups = None
    elif saved is None:
        pytest.skip("C speedups not built")
    try:
        batch = RecordBatch(_build(recs, codec, base_offset))
        batch.validate()
        got = list(batch)
    finally:
        batch_mod._speedups = saved
    assert got == [Record(base_offset + i, ts, k, v, hs) for i, (v, k, hs, ts) in enumerate(recs)]
    if recs:
        assert batch.max_timestamp == max(r[3] for r in recs)
        assert batch.base_timestamp == recs[0][3]


@SETTINGS
@given(recs=records)
def test_c_and_python_encoders_write_identical_bytes(recs: list) -> None:
    if batch_mod._speedups is None:
        pytest.skip("C speedups not built")
    items = [(i, ts, k, v, hs) for i, (v, k, hs, ts) in enumerate(recs)]
    base = recs[0][3] if recs else -1
    assert batch_mod._speedups.encode_records(items, base) == batch_mod._encode_records_py(items, base)


@SETTINGS
@given(n=st.integers(-(1 << 31), (1 << 31) - 1), m=st.integers(-(1 << 63), (1 << 63) - 1))
def test_large_varints_round_trip(n: int, m: int) -> None:
    assert decode_varint(encode_varint(n)) == (n, len(encode_varint(n)))
    assert decode_varlong(encode_varlong(m)) == (m, len(encode_varlong(m)))


def _decode_either(data: bytes, use_c: bool) -> object:
    saved = batch_mod._speedups
    if not use_c:
        batch_mod._speedups = None
    try:
        return [tuple(r) for b in iter_batches(data) for r in b]
    except RecordError as exc:
        return type(exc).__name__
    finally:
        batch_mod._speedups = saved


@SETTINGS
@given(recs=records.filter(bool), data=st.data())
def test_mutated_batches_give_records_or_typed_errors_the_same_in_c_and_python(recs: list, data: st.DataObject) -> None:
    """Fuzz: any mutation of the records region (CRC re-signed) -> same result from both loops."""
    raw = bytearray(_build(recs))
    assume(len(raw) > 61)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(57, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    struct.pack_into(">I", raw, 17, crc32c(memoryview(raw)[21:]))
    py = _decode_either(bytes(raw), use_c=False)
    if batch_mod._speedups is not None:
        assert _decode_either(bytes(raw), use_c=True) == py


def _outcome(make: object) -> object:
    try:
        return [tuple(r) for r in make()]  # type: ignore[operator]
    except RecordError as exc:
        return type(exc).__name__, str(exc), exc.offset, exc.base_offset


@SETTINGS
@given(recs=records.filter(bool), data=st.data(), codec=st.sampled_from(list(Compression)))
def test_c_iterator_c_list_and_python_loop_agree_on_records_and_errors(
    recs: list, data: st.DataObject, codec: int
) -> None:
    """The lazy C iterator, the one-call C list and the Python generator: same records, same error."""
    if batch_mod._speedups is None:
        pytest.skip("C speedups not built")
    raw = bytearray(_build(recs, codec))
    if codec == 0 and len(raw) > 61:
        for _ in range(data.draw(st.integers(0, 3))):
            raw[data.draw(st.integers(57, len(raw) - 1))] = data.draw(st.integers(0, 255))
    batch = RecordBatch(bytes(raw), verify_crc=False)
    c_iter = _outcome(lambda: iter(batch))
    c_list = _outcome(batch.records)
    saved = batch_mod._speedups
    batch_mod._speedups = None
    try:
        py = _outcome(lambda: iter(batch))
    finally:
        batch_mod._speedups = saved
    assert c_iter == c_list == py


@SETTINGS
@given(junk=st.binary(max_size=400))
def test_arbitrary_bytes_never_escape_as_untyped_errors(junk: bytes) -> None:
    for verify in (True, False):
        try:
            for b in iter_batches(junk, verify_crc=verify):
                list(b)
        except RecordError:
            pass
