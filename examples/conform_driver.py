#!/usr/bin/env python3
"""A minimal conformance driver: kafka-python behind kwire's JSON-lines driver protocol.

Run by ``kwire conform --client-command 'python examples/conform_driver.py'``; the protocol is
in docs/driver-protocol.md. It implements ``describe``, ``produce`` and ``consume`` (without a
group), which is what the ``roundtrip`` scenario needs; scenarios that need ``member`` or
``producer`` are skipped for it. Copy it as the start of a driver for another client.
"""

from __future__ import annotations

import json
import sys
import time


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


def unhex(s: str | None) -> bytes | None:
    return None if s is None else bytes.fromhex(s)


def hexed(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def produce(cmd: dict) -> None:
    from kafka import KafkaProducer

    codec = None if cmd.get("compression", "none") == "none" else cmd["compression"]
    producer = KafkaProducer(bootstrap_servers=cmd["bootstrap"], acks="all" if cmd.get("acks", -1) == -1 else 1,
                             compression_type=codec)
    futures = []
    for r in cmd["records"]:
        headers = [(k, unhex(v) or b"") for k, v in r.get("headers") or ()]
        futures.append(producer.send(cmd["topic"], key=unhex(r["key"]), value=unhex(r["value"]),
                                     headers=headers, partition=r.get("partition")))
    producer.flush(timeout=cmd["timeout_ms"] / 1000)
    for f in futures:  # report in the order given
        md = f.get(timeout=cmd["timeout_ms"] / 1000)
        emit(event="produced", partition=md.partition, offset=md.offset)
    producer.close()


def consume(cmd: dict) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cmd["bootstrap"], enable_auto_commit=False,
                             isolation_level=cmd.get("isolation_level", "read_uncommitted"),
                             auto_offset_reset="earliest" if cmd.get("from_beginning", True) else "latest")
    deadline = time.monotonic() + cmd["timeout_ms"] / 1000
    parts = None
    while parts is None and time.monotonic() < deadline:
        parts = consumer.partitions_for_topic(cmd["topic"])
    consumer.assign([TopicPartition(cmd["topic"], p) for p in sorted(parts or ())])
    seen = 0
    while seen < cmd["count"] and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            for m in records:
                seen += 1
                emit(event="record", key=hexed(m.key), value=hexed(m.value), partition=m.partition,
                     offset=m.offset, headers=[[k, hexed(v)] for k, v in m.headers or ()])
    if cmd.get("positions"):
        emit(event="positions", positions={tp.partition: consumer.position(tp) for tp in consumer.assignment()})
    consumer.close()


def main() -> None:
    cmd = json.loads(sys.stdin.readline())
    op = cmd.get("op")
    try:
        if op == "describe":
            import kafka

            emit(event="describe", name="example-kafka-python", version=kafka.__version__,
                 codecs=["none", "gzip"], ops=["produce", "consume"], kip848=False,
                 features=["consume_positions"],
                 lacks={"share_consumer": "kafka-python has no share consumer (see examples/share_driver.py)",
                        "transactions": "this example has no transactional producer"})
        elif op == "produce":
            produce(cmd)
        elif op == "consume":
            consume(cmd)
        else:
            emit(event="error", error="unsupported", message=f"op {op!r} is not implemented")
            return
    except Exception as exc:  # noqa: BLE001 - every failure is reported as an event
        emit(event="error", error=type(exc).__name__, message=str(exc))
        return
    emit(event="done")


if __name__ == "__main__":
    main()
