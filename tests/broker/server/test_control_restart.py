"""``Broker.restart``: the in-process cluster stops (as ``kill -9`` stops a process, or cleanly) and
starts again on the same ports, data dir and clock; conformance scenarios crash a broker with it."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.rule("AQ-12")
def test_a_lock_expired_through_the_control_api_is_durable_at_once(tmp_path: Path) -> None:
    """AQ-12: ``expire_locks`` releases as a lock expiry would, and like a timer's release it is on
    disk when the call returns (no metadata sync on the manual clock): a crash keeps the count."""
    from kwire.broker.core.configs import ResourceType
    from kwire.broker.core.share_coordinator import share_coordinator

    with Broker(BrokerConfig(data_dir=str(tmp_path), log_connections=False), manual_clock=True) as b:
        b.create_topic("t", 1)
        b.set_config("group", "sg", "share.auto.offset.reset", "earliest")
        b.produce("t", [b"a", b"b"])
        b.call(lambda: share_coordinator(b.core).partitions.for_fetch("sg", "t", 0).acquire("m", 10))
        b.expire_locks("sg", "t", 0)
        b.restart(crash=True)
        got = b.share_state("sg", "t", 0)
        assert got is not None
        assert [(o["state"], o["delivery_count"]) for o in got["offsets"]] == [("AVAILABLE", 1)] * 2
        assert b.call(lambda: b.core.configs.get(ResourceType.GROUP, "sg", "share.auto.offset.reset")) == "earliest"


def test_a_restart_keeps_every_listener_port_and_the_throwaway_ca(tmp_path: Path) -> None:
    """With PLAINTEXT and SSL listeners (SEC-1, SEC-3) a restart binds each listener of each
    broker on its old port and keeps the throwaway CA, so TLS clients reconnect as before."""
    import ssl

    settings = {"listeners": "PLAINTEXT://:0,SSL://:0"}
    with Broker(BrokerConfig(brokers=2, data_dir=str(tmp_path), log_connections=False,
                             settings=settings)) as b:
        before, ca = b.listeners, b.ca_file
        assert ca is not None and set(before) == {"PLAINTEXT", "SSL"}
        b.restart(crash=True)
        assert b.listeners == before and b.ca_file == ca
        host, port = before["SSL"].split(",")[1].rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=ca)
        import socket

        with socket.create_connection((host, int(port)), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname=host) as tls:
            assert tls.version() is not None  # the handshake completed against the kept certificate
