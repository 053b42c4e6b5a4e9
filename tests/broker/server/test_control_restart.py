"""``Broker.restart``: the in-process cluster stops (as ``kill -9`` stops a process, or cleanly) and
starts again on the same ports, data dir and clock; conformance scenarios crash a broker with it."""

from __future__ import annotations

from pathlib import Path

from kwire.client import WireClient
from kwire.control import Broker, BrokerConfig
from kwire.protocol.messages.metadata import MetadataRequest


def test_a_crash_restart_keeps_ports_data_and_the_recording(tmp_path: Path) -> None:
    with Broker(BrokerConfig(brokers=2, data_dir=str(tmp_path), log_connections=False)) as b:
        b.create_topic("t", 1)
        b.produce("t", [b"a", b"b"])
        b.start_recording()
        with WireClient(b.bootstrap) as c:
            c.request(MetadataRequest(topics=None))
        before = b.bootstrap
        seen = len(b.recorded())
        old_storage = b.core.subsystems.storage
        b.restart(crash=True)
        assert old_storage is not None and old_storage._closed  # the dead core writes nothing more
        assert b.bootstrap == before
        assert [bytes(r.value) for r in b.read("t", 0)] == [b"a", b"b"]
        with WireClient(b.bootstrap) as c:
            assert {t.name for t in c.request(MetadataRequest(topics=None)).topics} >= {"t"}
        recorded = b.recorded()
        assert len(recorded) > seen
        # Connections keep one numbering across the restart (the client rules key them by id).
        ids = [e.conn_id for e in recorded]
        assert max(ids[seen:]) > max(ids[:seen])


def test_a_clean_restart_serves_the_same_cluster(tmp_path: Path) -> None:
    with Broker(BrokerConfig(data_dir=str(tmp_path), log_connections=False)) as b:
        b.create_topic("t", 1)
        b.produce("t", [b"a"])
        before = b.bootstrap
        b.restart(crash=False)
        assert b.bootstrap == before
        assert [bytes(r.value) for r in b.read("t", 0)] == [b"a"]
