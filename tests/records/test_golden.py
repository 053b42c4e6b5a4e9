"""Golden bytes made by kafka-python, aiokafka or by hand from the spec (never by kwire).

Each case is decoded and compared with its sidecar; uncompressed cases must also re-encode
byte-exact, and compressed ones must re-encode to bytes that decode to the same records.
"""

from __future__ import annotations

from typing import Any

import pytest

from kwire.records import (
    BatchBuilder,
    Compression,
    ControlRecordType,
    LegacyMessageSetBuilder,
    RecordBatch,
    build_control_batch,
    iter_batches,
    parse_control_record,
)

from .helpers import golden_cases, load_case, unhex

V2_CASES = golden_cases("v2_")
LEGACY_CASES = golden_cases("legacy_")
CONTROL_CASES = golden_cases("control_")


def _records(expected: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (r["offset"], r["timestamp"], unhex(r["key"]), unhex(r["value"]),
         [(k, unhex(v)) for k, v in r["headers"]])
        for r in expected
    ]


def _rebuild(batch: RecordBatch, codec: int) -> bytes:
    b = BatchBuilder(
        batch.base_offset,
        compression=codec,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        partition_leader_epoch=batch.partition_leader_epoch,
    )
    for r in batch:
        b.append(r.value, r.key, r.headers, r.timestamp)
    return b.build()


def test_every_codec_has_a_golden_case() -> None:
    """All four codecs, uncompressed, control batches and legacy v0/v1 sets have goldens."""
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert f"v2_{codec}_kafka_python" in V2_CASES
    assert {"control_commit_hand", "control_abort_hand"} <= set(CONTROL_CASES)
    assert any(c.startswith("legacy_v0_") for c in LEGACY_CASES)
    assert any(c.startswith("legacy_v1_") for c in LEGACY_CASES)


@pytest.mark.parametrize("case", V2_CASES + CONTROL_CASES)
def test_v2_golden_decodes_to_sidecar_content(case: str, impl: str) -> None:
    data, doc = load_case(case)
    assert doc["provenance"] and "kwire" not in doc["provenance"]
    batches = list(iter_batches(data))
    assert len(batches) == len(doc["batches"])
    for batch, want in zip(batches, doc["batches"], strict=True):
        assert batch.magic == 2
        for field in ("base_offset", "partition_leader_epoch", "timestamp_type", "is_transactional", "is_control",
                      "producer_id", "producer_epoch", "base_sequence", "record_count", "base_timestamp",
                      "max_timestamp"):
            assert getattr(batch, field) == want[field], field
        assert batch.compression == want["compression"]
        assert [tuple(r) for r in batch] == _records(want["records"])


@pytest.mark.parametrize("case", V2_CASES + CONTROL_CASES)
def test_v2_golden_reencodes(case: str, impl: str) -> None:
    data, doc = load_case(case)
    batch = RecordBatch(data)
    rebuilt = _rebuild(batch, batch.compression)
    if batch.compression == Compression.NONE:
        assert rebuilt == data
    else:
        assert [tuple(r) for r in RecordBatch(rebuilt)] == [tuple(r) for r in batch]


@pytest.mark.rule("RB-1")
@pytest.mark.parametrize("case", CONTROL_CASES)
def test_control_golden_matches_build_control_batch_byte_for_byte(case: str) -> None:
    """RB-1: the hand-assembled control batch, CRC included, is what build_control_batch writes."""
    data, doc = load_case(case)
    b = doc["batches"][0]
    marker = doc["marker"]
    built = build_control_batch(
        ControlRecordType(marker["type"]),
        producer_id=b["producer_id"],
        producer_epoch=b["producer_epoch"],
        coordinator_epoch=marker["coordinator_epoch"],
        base_offset=b["base_offset"],
        timestamp_ms=b["base_timestamp"],
        partition_leader_epoch=b["partition_leader_epoch"],
    )
    assert built == data
    parsed = parse_control_record(next(iter(RecordBatch(data))))
    assert (parsed.type, parsed.coordinator_epoch, parsed.version) == (
        marker["type"], marker["coordinator_epoch"], marker["version"])


@pytest.mark.parametrize("case", LEGACY_CASES)
def test_legacy_golden_decodes_to_sidecar_content(case: str) -> None:
    data, doc = load_case(case)
    batches = list(iter_batches(data))
    assert all(b.magic == doc["magic"] for b in batches)
    assert all(b.compression == doc["compression"] for b in batches)
    records = [tuple(r) for b in batches for r in b]
    assert records == _records(doc["records"])


@pytest.mark.parametrize("case", [c for c in LEGACY_CASES if "_none_" in c])
def test_legacy_uncompressed_golden_reencodes_byte_exact(case: str) -> None:
    data, doc = load_case(case)
    b = LegacyMessageSetBuilder(magic=doc["magic"])
    for r in doc["records"]:
        b.append(unhex(r["value"]), unhex(r["key"]), r["timestamp"])
    assert b.build() == data
