"""KIP-368 with real clients on a JumpClock: a session that expires on the broker clock.

Upstream: SaslServerAuthenticator.ReauthInfo (SessionLifetimeMs), KafkaChannel.serverAuthenticationSessionExpired
and SocketServer.Processor.processCompletedReceives (the close at the next request) at d79bd502.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.clock import JumpClock
from kwire.control import Broker, BrokerConfig, SaslConfig

ck = pytest.importorskip("confluent_kafka")

LIFETIME_MS = 60_000


@pytest.fixture
def broker() -> Iterator[Broker]:
    settings = {"listeners": "SASL_PLAINTEXT://:0", "connections.max.reauth.ms": str(LIFETIME_MS)}
    with Broker(BrokerConfig(settings=settings, sasl=SaslConfig(users={"alice": "pw"}), log_connections=False),
                clock=JumpClock()) as b:
        b.create_topic("t", 1)
        yield b


def _deliver(p: Any, value: bytes) -> None:
    got: list[Any] = []
    p.produce("t", value, callback=lambda err, msg: got.append(err))
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        p.poll(0.1)
    assert got == [None], got


@pytest.mark.rule("SEC-11")
@pytest.mark.rule("SEC-12")
def test_a_jump_past_the_session_lifetime_closes_the_connection_at_its_next_request(broker: Broker) -> None:
    """librdkafka would re-authenticate after ~90% of 60 s of its own (wall) time; the broker clock
    jumps past the expiry first, so the next request closes the connection and the producer
    reconnects, authenticates again and delivers."""
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "pw", "linger.ms": 0,
                     "log_level": 0})
    _deliver(p, b"before")
    assert broker.stats()["expired_sessions"] == 0
    broker.advance(LIFETIME_MS + 1)
    _deliver(p, b"after")
    assert broker.stats()["expired_sessions"] >= 1
    assert [r.value for r in broker.read("t", 0)] == [b"before", b"after"]
    p.flush(5)
