#!/usr/bin/env python3
"""A minimal share-consumer driver: confluent-kafka's ShareConsumer behind kwire's JSON-lines
driver protocol (docs/driver-protocol.md, op ``share_consumer``).

    kwire conform --client-command 'python examples/share_driver.py' --scenario share_commit

It answers ``describe`` (what it can do, and why not where it cannot) and runs one share
consumer: the first stdin line creates it, every further line is one step (subscribe, poll,
acknowledge, commit, commit_async, lock_timeout, close) answered by its events and then
``{"event": "ok", "op"}`` or ``{"event": "failed", "op", "error", "message"}``. Copy it as the
start of a share driver for another client; it imports nothing from kwire.
"""

from __future__ import annotations

import json
import sys
import time


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


def hexed(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).hex()


def describe() -> None:
    from importlib.metadata import version

    from confluent_kafka import AcknowledgeType

    v = version("confluent-kafka")
    features = ["share_consumer", "share_implicit", "share_commit_async"]
    lacks = {"share_lock_timeout": f"confluent-kafka {v} does not expose the acquisition lock timeout"}
    if hasattr(AcknowledgeType, "RENEW"):
        features.append("share_renew")
    else:
        lacks["share_renew"] = f"confluent-kafka {v} has no AcknowledgeType.RENEW (KIP-1222)"
    emit(event="describe", name="example-share-confluent", version=v, ops=["share_consumer"],
         features=features, lacks=lacks)
    emit(event="done")


def share_consumer(cmd: dict) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": cmd["bootstrap"], "group.id": cmd["group_id"],
                              "share.acknowledgement.mode": cmd.get("ack_mode", "explicit"),
                              **(cmd.get("config") or {})})
    held = {}  # (topic, partition, offset) -> the Message, for acknowledge

    def on_commit(offsets: dict, err: Exception | None) -> None:
        for tp, done in offsets.items():
            emit(event="async_committed", topic=tp.topic, partition=tp.partition, offsets=sorted(done),
                 error=None if err is None else type(err).__name__)

    consumer.set_acknowledgement_commit_callback(on_commit)
    emit(event="ready")
    for line in sys.stdin:
        step = json.loads(line)
        op = step["op"]
        if op == "close":
            break
        try:
            if op == "subscribe":
                consumer.subscribe(step["topics"])
            elif op == "poll":
                deadline = time.monotonic() + step["timeout_ms"] / 1000
                got = []
                while not got and time.monotonic() < deadline:
                    # poll(-1) waits forever: never hand it a negative time left
                    got = [m for m in consumer.poll(max(0.0, deadline - time.monotonic())) or []
                           if m.error() is None]
                for m in got:
                    held[(m.topic(), m.partition(), m.offset())] = m
                    emit(event="share_record", topic=m.topic(), partition=m.partition(), offset=m.offset(),
                         key=hexed(m.key()), value=hexed(m.value()), delivery_count=m.delivery_count(),
                         headers=[[k, hexed(v)] for k, v in m.headers() or ()])
            elif op == "acknowledge":
                m = held[(step["topic"], step["partition"], step["offset"])]
                consumer.acknowledge(m, getattr(AcknowledgeType, step["type"]))
            elif op == "commit":
                for tp, err in consumer.commit_sync().items():
                    err = err or tp.error
                    emit(event="committed", topic=tp.topic, partition=tp.partition,
                         error=None if err is None else type(err).__name__, message=str(err or ""))
            elif op == "commit_async":
                consumer.commit_async()
            elif op == "lock_timeout":
                emit(event="lock_timeout", ms=None)
            else:
                raise ValueError(f"unknown op {op!r}")
            emit(event="ok", op=op)
        except Exception as exc:  # noqa: BLE001 - every failure is reported as an event
            emit(event="failed", op=op, error=type(exc).__name__, message=str(exc))
    consumer.close()
    emit(event="closed")


def main() -> None:
    cmd = json.loads(sys.stdin.readline())
    try:
        if cmd.get("op") == "describe":
            describe()
        elif cmd.get("op") == "share_consumer":
            share_consumer(cmd)
        else:
            emit(event="error", error="unsupported", message=f"op {cmd.get('op')!r} is not implemented")
    except Exception as exc:  # noqa: BLE001
        emit(event="error", error=type(exc).__name__, message=str(exc))


if __name__ == "__main__":
    main()
