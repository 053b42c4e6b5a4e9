"""DLQ partition directories written by kafka-python's record builder (an independent
implementation of record batch v2), one topic per header convention, plus a torn tail."""

from __future__ import annotations

import struct
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

T0 = 1_763_900_000_000  # ms: all record timestamps count from here

CONVENTIONS = ("kip1191", "connect", "spring", "x-original")


def _headers(convention: str, i: int) -> list[tuple[str, bytes]]:
    topic, part, off, group = "payments", i % 3, 1000 + i, "billing"
    if convention == "kip1191":
        return [("__dlq.errors.topic", topic.encode()), ("__dlq.errors.partition", str(part).encode()),
                ("__dlq.errors.offset", str(off).encode()), ("__dlq.errors.group", group.encode()),
                ("__dlq.errors.delivery.count", str(1 + i % 4).encode()),
                ("__dlq.errors.message", b"Offset rejected by client.")]
    if convention == "connect":
        return [("__connect.errors.topic", topic.encode()), ("__connect.errors.partition", str(part).encode()),
                ("__connect.errors.offset", str(off).encode()),
                ("__connect.errors.connector.name", b"sink"),
                ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
                ("__connect.errors.exception.message", b"Converting byte[] to Kafka Connect data failed")]
    if convention == "spring":
        return [("kafka_dlt-original-topic", topic.encode()), ("kafka_dlt-original-partition", struct.pack(">i", part)),
                ("kafka_dlt-original-offset", struct.pack(">q", off)),
                ("kafka_dlt-original-consumer-group", group.encode()),
                ("kafka_dlt-exception-fqcn", b"java.lang.IllegalStateException"),
                ("kafka_dlt-exception-message", b"listener failed")]
    return [("x-original-topic", topic.encode()), ("x-original-partition", str(part).encode()),
            ("x-original-offset", str(off).encode()), ("x-retry-count", str(i).encode()),
            ("x-error-message", b"poison pill")]


def batch(base_offset: int, records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]]) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for delta, (ts, key, value, headers) in enumerate(records):
        b.append(delta, timestamp=ts, key=key, value=value, headers=headers)
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base_offset)  # base offset sits outside the CRC, as a broker assigns it
    return bytes(raw)


def write_dlq_dirs(root: Path, per_convention: int = 6, *, torn: bool = True) -> Path:
    """``root/dlq.<convention>-0/00000000000000000000.log`` for each convention, 2 records a batch."""
    for conv in CONVENTIONS:
        d = root / f"dlq.{conv}-0"
        d.mkdir(parents=True)
        data = bytearray()
        for start in range(0, per_convention, 2):
            recs = [(T0 + 60_000 * i, f"k{i}".encode(), b"v" * (10 + i), _headers(conv, i))
                    for i in range(start, min(start + 2, per_convention))]
            data += batch(start, recs)
        if torn and conv == "kip1191":
            tail = batch(per_convention, [(T0, b"k", b"torn", _headers(conv, 99))])
            data += tail[: len(tail) // 2]  # the writer died mid-append
        (d / "00000000000000000000.log").write_bytes(bytes(data))
    plain = root / "dlq.plain-0"
    plain.mkdir()
    (plain / "00000000000000000000.log").write_bytes(batch(0, [(T0, None, b"x", [("trace", b"1")])]))
    return root


def write_txn_dlq_dir(root: Path, batches: int = 3) -> Path:
    """``root/dlq.txn-0``: KIP-1191 dead letters written in transactions (kafka-python's builder,
    transactional), each batch followed by its COMMIT marker (kwire's control batch), and
    ``root/events-0``: a topic without dead-letter headers. Offsets as a broker assigns them."""
    from kwire.records.control import ControlRecordType, build_control_batch

    d = root / "dlq.txn-0"
    d.mkdir(parents=True)
    data = bytearray()
    offset = 0
    for n in range(batches):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=1, producer_id=7,
                                      producer_epoch=0, base_sequence=2 * n, batch_size=1 << 20)
        for delta in range(2):
            i = 2 * n + delta
            b.append(delta, timestamp=T0 + 1000 * i, key=None, value=b"v", headers=_headers("kip1191", i))
        raw = bytearray(b.build())
        struct.pack_into(">q", raw, 0, offset)
        data += raw
        offset += 2
        data += build_control_batch(ControlRecordType.COMMIT, 7, 0, 0, base_offset=offset,
                                    timestamp_ms=T0 + 1000 * offset)
        offset += 1
    (d / "00000000000000000000.log").write_bytes(bytes(data))
    plain = root / "events-0"
    plain.mkdir()
    (plain / "00000000000000000000.log").write_bytes(
        batch(0, [(T0, None, b"a", []), (T0 + 1, None, b"b", [("trace", b"1")])]))
    return root
