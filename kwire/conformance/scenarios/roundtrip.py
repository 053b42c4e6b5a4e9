"""Produce/consume round trip: keys, headers, NULLs and every codec the client supports.

One topic of ``PARTITIONS`` partitions per run. For each codec the client produces the
same record set (explicit partitions, so the expected order per partition is known),
then one groupless consume reads everything back. Per partition, consumed records must
equal produced ones in order, and any offsets the producer reported must match.
"""

from __future__ import annotations

from collections import defaultdict

from kwire.conformance.clients.base import ClientAdapter, Produced, Record
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name

__all__ = ["produce_consume_roundtrip", "roundtrip_records"]

SCENARIO = "roundtrip"
PARTITIONS = 2
# Compressible enough that every codec actually compresses it.
_BIG_VALUE = b"kwire-roundtrip-" * 256


def roundtrip_records(tag: str, *, binary_headers: bool = True) -> list[Record]:
    """The record set: NULL and empty keys/values, binary bytes, headers, a 4 KiB value."""
    binary = bytes(range(256))
    hv = binary[:16] if binary_headers else b"text-value"
    rows: list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]] = [
        (b"key-0", f"{tag}-value-0".encode(), ()),
        (None, f"{tag}-null-key".encode(), ()),
        (b"", f"{tag}-empty-key".encode(), ()),
        (b"key-3", b"", ()),
        (b"key-4-tombstone", None, ()),
        (binary, binary, (("h-bin", hv), ("h-text", b"abc"))),
        (b"key-6", _BIG_VALUE + tag.encode(), (("trace-id", b"0123456789abcdef"),)),
        (b"key-7", f"{tag}-after-big".encode(), (("empty-header", b""),)),
    ]
    return [Record(k, v, h, partition=i % PARTITIONS) for i, (k, v, h) in enumerate(rows)]


def _by_partition(records: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        out[r.partition if r.partition is not None else -1].append(r)
    return out


def _show(r: Record) -> str:
    def short(b: bytes | None) -> str:
        return "NULL" if b is None else (repr(b[:24]) + ("…" if len(b) > 24 else ""))

    return f"key={short(r.key)} value={short(r.value)} headers={[(k, short(v)) for k, v in r.headers]}"


def produce_consume_roundtrip(
    adapter: ClientAdapter, bootstrap: str, control: BrokerControl
) -> ScenarioResult:
    """The record set is produced once per supported codec, consumed back and compared."""
    topic = unique_name(f"kw-rt-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    expected: list[Record] = []
    produced: list[tuple[Record, Produced]] = []
    for codec in adapter.supported_codecs:
        records = roundtrip_records(codec, binary_headers=adapter.binary_headers)
        result = adapter.produce(bootstrap, topic, records, compression=codec)
        expected.extend(records)
        produced.extend(zip(records, result.produced, strict=True))
    consumed = adapter.consume(bootstrap, topic, group_id=None, count=len(expected), timeout_s=30)
    if len(consumed) != len(expected):
        return ScenarioResult.failed(
            adapter.name, SCENARIO, f"consumed {len(consumed)} of {len(expected)} records"
        )
    want, got = _by_partition(expected), _by_partition(consumed)
    for part, records in want.items():
        have = sorted(got.get(part, []), key=lambda r: r.offset or 0)
        for i, (w, g) in enumerate(zip(records, have, strict=True)):
            if w.content() != g.content():
                return ScenarioResult.failed(
                    adapter.name, SCENARIO, f"partition {part} record {i}: sent {_show(w)}, got {_show(g)}"
                )
    # Offsets the producer reported must be where the consumer found each record.
    found = {(r.partition, r.offset): r.content() for r in consumed}
    for rec, where in produced:
        if where.offset is None:
            continue
        if where.partition != rec.partition:
            return ScenarioResult.failed(
                adapter.name, SCENARIO, f"asked for partition {rec.partition}, acked on {where.partition}"
            )
        if found.get((where.partition, where.offset)) != rec.content():
            return ScenarioResult.failed(
                adapter.name, SCENARIO, f"acked offset {where.partition}:{where.offset} holds another record"
            )
    return ScenarioResult.passed(
        adapter.name, SCENARIO, codecs=list(adapter.supported_codecs), records=len(expected), topic=topic
    )
