"""confluent-kafka's ShareConsumer behind kwire's JSON-lines driver protocol (op ``share_consumer``,
docs/driver-protocol.md; the client side is ``kwire/conformance/clients/share.py``).

``python -m kwire.conformance.clients._share_driver`` reads ``{"op": "describe"}`` or
``{"op": "share_consumer", "bootstrap", "group_id", "ack_mode", "config"}`` as its first line, then
one command per line (subscribe, poll, acknowledge, commit, commit_async, lock_timeout, close),
each ending with ``{"event": "ok", "op"}`` or ``{"event": "failed", "op", "error", "message"}``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


def _hex(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).hex()


def _error_kind(err: Any) -> str:
    """The Kafka error name where the exception carries one (INVALID_RECORD_STATE), else its type."""
    inner = err.args[0] if getattr(err, "args", None) else None
    name = getattr(inner, "name", None)
    return str(name()) if callable(name) else type(err).__name__


def describe() -> None:
    import importlib.metadata

    import confluent_kafka

    version = importlib.metadata.version("confluent-kafka")
    if not hasattr(confluent_kafka, "ShareConsumer"):
        emit(event="describe", name="confluent_kafka", version=version, ops=[], features=[],
             lacks={"share_consumer": f"confluent-kafka {version} has no ShareConsumer (2.16 or later)"})
        emit(event="done")
        return
    ack_type = confluent_kafka.AcknowledgeType
    lacks: dict[str, str] = {
        "share_lock_timeout": f"confluent-kafka {version} does not expose the acquisition lock timeout",
    }
    features = ["share_consumer", "share_implicit", "share_commit_async"]
    if hasattr(ack_type, "RENEW"):
        features.append("share_renew")
    else:
        lacks["share_renew"] = (f"confluent-kafka {version} (librdkafka {confluent_kafka.libversion()[0]}) has no "
                                f"AcknowledgeType.RENEW (KIP-1222)")
    emit(event="describe", name="confluent_kafka", version=version, ops=["share_consumer"], features=features,
         lacks=lacks)
    emit(event="done")


def share_consumer(cmd: dict[str, Any], lines: Any) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    conf: dict[str, Any] = {"bootstrap.servers": cmd["bootstrap"], "group.id": cmd["group_id"],
                            "share.acknowledgement.mode": cmd.get("ack_mode", "explicit"), "log_level": 3}
    conf.update(cmd.get("config") or {})
    c = ShareConsumer(conf)
    held: dict[tuple[Any, Any, Any], Any] = {}

    def on_commit(offsets: Any, err: Any) -> None:
        for tp, done in (offsets or {}).items():
            emit(event="async_committed", topic=tp.topic, partition=tp.partition, offsets=sorted(done),
                 error=_error_kind(err) if err else None)

    c.set_acknowledgement_commit_callback(on_commit)
    emit(event="ready")
    for line in lines:
        if not line.strip():
            continue
        step = json.loads(line)
        op = step.get("op")
        if op in ("close", "stop"):
            break
        ok: dict[str, Any] = {}
        try:
            if op == "subscribe":
                c.subscribe(list(step["topics"]))
            elif op == "poll":
                deadline = time.monotonic() + step["timeout_ms"] / 1000
                got = False
                while not got and time.monotonic() < deadline:
                    polled: Any = c.poll(max(0.0, deadline - time.monotonic())) or []
                    for m in polled:
                        if m.error() is not None:
                            continue
                        got = True
                        held[(m.topic(), m.partition(), m.offset())] = m
                        emit(event="share_record", topic=m.topic(), partition=m.partition(), offset=m.offset(),
                             key=_hex(m.key()), value=_hex(m.value()),
                             headers=[[k, _hex(v)] for k, v in m.headers() or ()],
                             delivery_count=m.delivery_count())
            elif op == "acknowledge":
                record = held.get((step["topic"], int(step["partition"]), int(step["offset"])))
                if record is None:
                    raise LookupError(f"no record {step['topic']}-{step['partition']}@{step['offset']} was delivered")
                c.acknowledge(record, getattr(AcknowledgeType, step["type"]))
            elif op == "commit":
                for tp, err in (c.commit_sync() or {}).items():
                    bad = err or tp.error
                    emit(event="committed", topic=tp.topic, partition=tp.partition,
                         error=None if bad is None else _error_kind(bad), message=None if bad is None else str(bad))
            elif op == "commit_async":
                c.commit_async()
            elif op == "lock_timeout":
                emit(event="lock_timeout", ms=None)  # not exposed by this client
            else:
                raise ValueError(f"unknown op {op!r}")
            emit(event="ok", op=op, **ok)
        except Exception as exc:  # noqa: BLE001 - every failure goes to the parent as an event
            emit(event="failed", op=op, error=type(exc).__name__, message=str(exc))
    try:
        c.close()
    except Exception as exc:  # noqa: BLE001
        emit(event="failed", op="close", error=type(exc).__name__, message=str(exc))
    emit(event="closed")


def main() -> int:
    first = sys.stdin.readline()
    if not first:
        return 0
    cmd = json.loads(first)
    try:
        if cmd.get("op") == "describe":
            describe()
        elif cmd.get("op") == "share_consumer":
            share_consumer(cmd, sys.stdin)
        else:
            emit(event="error", error="unsupported", message=f"op {cmd.get('op')!r} is not implemented")
            return 1
    except Exception as exc:  # noqa: BLE001
        emit(event="error", error=type(exc).__name__, message=str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
