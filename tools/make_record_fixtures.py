"""Write the golden record fixtures in fixtures/records/ (never from kwire's own encoder).

Each case is ``<case>.bin`` plus ``<case>.json``: the expected decoded content and a
``provenance`` string naming the library and version that produced the bytes. Producers:
kafka-python's and aiokafka's record builders, and, for control batches, bytes assembled by hand
here from the spec (broker-semantics.md 4.1/4.2, KIP-98) with the crc32c package.

Run: ``python tools/make_record_fixtures.py`` (needs the test extras: kafka-python, aiokafka, lz4,
python-snappy, zstandard, xxhash). Output is deterministic: gzip's mtime is pinned.
"""

from __future__ import annotations

import json
import struct
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any
from unittest import mock

import crc32c

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "records"

# Records chosen to hit the corners: null key, null value, null header value, a non-ASCII
# header key, a negative timestamp delta, an empty value, a multi-byte varint length.
RECORDS: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (1_700_000_000_000, b"key-0", b"value-0 " * 4, [("trace", b"t-0"), ("h\u00e9", None)]),
    (1_700_000_000_250, None, b"null key", []),
    (1_699_999_999_900, b"key-2", None, [("only", b"")]),  # timestamp before the first: negative delta
    (1_700_000_000_500, b"", b"", []),
    (1_700_000_001_000, b"k" * 20, b"v" * 300, [("big", b"x" * 200)]),
]
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _hex(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).hex()


def _save(case: str, data: bytes, provenance: str, expected: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{case}.bin").write_bytes(bytes(data))
    doc = {"case": case, "provenance": provenance, **expected}
    (OUT / f"{case}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{case}: {len(data)} bytes")


def _expected_v2(
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    *,
    codec: int,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = 0,
    base_offset: int = 0,
) -> dict[str, Any]:
    return {
        "magic": 2,
        "batches": [
            {
                "base_offset": base_offset,
                "partition_leader_epoch": partition_leader_epoch,
                "compression": codec,
                "timestamp_type": 0,
                "is_transactional": transactional,
                "is_control": control,
                "producer_id": producer[0],
                "producer_epoch": producer[1],
                "base_sequence": producer[2],
                "record_count": len(records),
                "base_timestamp": records[0][0],
                "max_timestamp": max(r[0] for r in records),
                "records": [
                    {
                        "offset": base_offset + i,
                        "timestamp": ts,
                        "key": _hex(k),
                        "value": _hex(v),
                        "headers": [[hk, _hex(hv)] for hk, hv in hs],
                    }
                    for i, (ts, k, v, hs) in enumerate(records)
                ],
            }
        ],
    }


def kafka_python_v2() -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    prov = f"kafka-python {version('kafka-python')} DefaultRecordBatchBuilder"
    for name, codec in CODECS.items():
        b = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=False, producer_id=-1, producer_epoch=-1,
            base_sequence=-1, batch_size=1 << 30,
        )
        for i, (ts, k, v, hs) in enumerate(RECORDS):
            b.append(i, ts, k, v, hs)
        lib = {"gzip": "gzip (stdlib)", "snappy": f"python-snappy {version('python-snappy')} (xerial framing)",
               "lz4": f"lz4 {version('lz4')}", "zstd": f"zstandard {version('zstandard')}"}.get(name)
        _save(f"v2_{name}_kafka_python", b.build(), prov + (f", codec via {lib}" if lib else ""),
              _expected_v2(RECORDS, codec=codec))
    # idempotent and transactional producer fields
    for case, txn in (("v2_idempotent_kafka_python", False), ("v2_transactional_kafka_python", True)):
        b = DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=txn, producer_id=4242, producer_epoch=3,
            base_sequence=17, batch_size=1 << 30,
        )
        for i, (ts, k, v, hs) in enumerate(RECORDS[:3]):
            b.append(i, ts, k, v, hs)
        _save(case, b.build(), prov, _expected_v2(RECORDS[:3], codec=0, producer=(4242, 3, 17), transactional=txn))


def aiokafka_v2() -> None:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    prov = f"aiokafka {version('aiokafka')} DefaultRecordBatchBuilder, codecs via cramjam {version('cramjam')}"
    for name in ("none", "snappy", "lz4", "zstd"):
        codec = CODECS[name]
        b = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=0, producer_id=-1, producer_epoch=-1,
            base_sequence=-1, batch_size=1 << 30,
        )
        for i, (ts, k, v, hs) in enumerate(RECORDS):
            b.append(i, ts, k, v, hs)
        # aiokafka writes PartitionLeaderEpoch -1 (kafka-python writes 0)
        _save(f"v2_{name}_aiokafka", bytes(b.build()), prov,
              _expected_v2(RECORDS, codec=codec, partition_leader_epoch=-1))


def _varint(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def hand_control(kind: int, case: str) -> None:
    """A control batch assembled field by field from the spec tables (not from any library)."""
    base_offset, ple, pid, epoch, coord_epoch, ts = 1234, 7, 9001, 5, 42, 1_700_000_002_000
    key = struct.pack(">hh", 0, kind)  # version 0, type (0 abort, 1 commit)
    value = struct.pack(">hi", 0, coord_epoch)  # EndTxnMarker: version 0, coordinator epoch
    body = b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(len(value)) + value + _varint(0)
    records = _varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0x30, 0, ts, ts, pid, epoch, -1, 1) + records  # attrs: txn|control
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # PLE + magic + CRC + rest
    data = struct.pack(">qiibI", base_offset, length, ple, 2, crc) + after_crc
    expected = _expected_v2(
        [(ts, key, value, [])], codec=0, producer=(pid, epoch, -1), transactional=True, control=True,
        partition_leader_epoch=ple, base_offset=base_offset,
    )
    expected["marker"] = {"type": kind, "coordinator_epoch": coord_epoch, "version": 0}
    _save(case, data, f"hand-assembled from the spec (KIP-98 control batch), crc32c {version('crc32c')}", expected)


def kafka_python_legacy() -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    prov = f"kafka-python {version('kafka-python')} LegacyRecordBatchBuilder"
    msgs = [(1_600_000_000_000 + i, None if i == 1 else f"k{i}".encode(), f"legacy value {i} ".encode() * 3)
            for i in range(4)]
    msgs.append((1_600_000_000_100, b"k4", None))
    for magic in (0, 1):
        for name in ("none", "gzip", "snappy", "lz4"):
            codec = CODECS[name]
            b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
            for i, (ts, k, v) in enumerate(msgs):
                b.append(i, ts, k, v)
            data = bytes(b.build())
            n = len(msgs)
            # kafka-python writes the wrapper at offset 0: for magic 1 the relative inner offsets
            # then resolve to 0 - (n - 1) + i, exactly as Kafka's reader computes them.
            shift = -(n - 1) if codec and magic == 1 else 0
            expected = {
                "magic": magic,
                "compression": codec,
                "records": [
                    {"offset": i + shift, "timestamp": ts if magic else -1, "key": _hex(k), "value": _hex(v),
                     "headers": []}
                    for i, (ts, k, v) in enumerate(msgs)
                ],
            }
            note = {"gzip": "gzip (stdlib)", "snappy": f"python-snappy {version('python-snappy')}",
                    "lz4": f"lz4 {version('lz4')}" + (f" + xxhash {version('xxhash')} (legacy wrong header checksum)"
                                                       if magic == 0 else "")}.get(name)
            _save(f"legacy_v{magic}_{name}_kafka_python", data, prov + (f", codec via {note}" if note else ""),
                  expected)


def main() -> int:
    # gzip headers carry a modification time: pin it so the fixtures are reproducible
    with mock.patch("time.time", return_value=1_700_000_000.0):
        kafka_python_v2()
        aiokafka_v2()
        kafka_python_legacy()
    hand_control(1, "control_commit_hand")
    hand_control(0, "control_abort_hand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
