"""Compacted topics with a real client (confluent-kafka): a keyless record is refused with
INVALID_RECORD, and after the cleaner runs a consumer reads each key's latest value once, across
the gaps compaction leaves (LogCleaner, LogValidator.validateKey)."""

from __future__ import annotations

import time

import pytest

from kwire.control import Broker, BrokerConfig

pytestmark = pytest.mark.conformance
ck = pytest.importorskip("confluent_kafka")


def test_confluent_reads_a_compacted_topic_and_cannot_write_keyless_records() -> None:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("state", 1, configs={"cleanup.policy": "compact", "segment.bytes": "300"})
        p = ck.Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "log_level": 0})
        errors: list[object] = []
        for rnd in range(5):
            for k in range(4):
                p.produce("state", key=f"user-{k}".encode(), value=f"v{rnd}".encode())
                p.flush(10)  # one batch each, so segments roll
        p.produce("state", key=None, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
        p.flush(10)
        assert len(errors) == 1 and errors[0] is not None and errors[0].code() == ck.KafkaError.INVALID_RECORD
        cleaned = b.run_cleaner()
        assert cleaned and cleaned[0]["records_kept"] < cleaned[0]["records_read"]
        c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "reader", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
        c.assign([ck.TopicPartition("state", 0, 0)])
        got: dict[bytes, list[bytes]] = {}
        offsets: list[int] = []
        deadline = time.monotonic() + 20
        end = b.topics()["state"][0]["high_watermark"]
        while time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is None or m.error() is not None:
                if offsets and offsets[-1] >= end - 1:
                    break
                continue
            got.setdefault(m.key(), []).append(m.value())
            offsets.append(m.offset())
        c.close()
        assert offsets == sorted(offsets) and len(offsets) < 20  # gaps: compacted records are gone
        assert {k: v[-1] for k, v in got.items()} == {f"user-{k}".encode(): b"v4" for k in range(4)}
