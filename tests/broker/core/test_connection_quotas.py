"""SocketServer's ConnectionQuotas at d79bd502, sans-I/O on the manual clock (QUO-8, QUO-9):
the acceptor's broker/listener connection-rate throttle and max.connections slots, the ip's
connection_creation_rate (KIP-612) and max.connections.per.ip with its overrides."""

from __future__ import annotations

import pytest

from kwire.broker.core.connection_quotas import parse_ip_overrides
from kwire.errors import ConfigError
from tests.broker.helpers import make_core

QUOTAS = "kwire.client.quotas"


@pytest.mark.rule("QUO-9")
def test_ip_rate_throttles_with_the_bounded_formula_and_unrecords_the_connection() -> None:
    """recordIpConnectionMaybeThrottle: Rate over 11 x 1 s windows (at least 10 s), throttle
    (rate - bound) / bound x window, at most one window; a throttled connection is taken back out
    of the ip, listener and broker sensors and never counts."""
    core, clock = make_core(settings={QUOTAS: "ip=<default>:connection_creation_rate=2;ip=10.0.0.1:"
                                              "connection_creation_rate=4"})
    cq = core.connection_quotas(min(core.cluster.nodes))
    assert cq.ip_rate("10.0.0.2") == 2 and cq.ip_rate("10.0.0.1") == 4
    assert all(cq.admit("PLAINTEXT", "10.0.0.2").kind == "serve" for _ in range(20))
    throttled = cq.admit("PLAINTEXT", "10.0.0.2")  # 21 / 10 s = 2.1/s
    assert throttled.kind == "throttle" and throttled.close_at_ms == clock.now_ms() + 500
    assert cq.per_ip["10.0.0.2"] == 20 and cq.total == 20
    assert sum(s.value for s in cq._ip_rates["10.0.0.2"].samples) == 20  # un-recorded
    assert cq.admit("PLAINTEXT", "10.0.0.2").close_at_ms == clock.now_ms() + 500  # still 2.1/s each time
    assert cq.admit("PLAINTEXT", "10.0.0.3").kind == "serve"  # its own sensor
    clock.advance(1000)  # Rate.windowSize still counts 10 whole windows: 21 / 10 s again
    assert cq.admit("PLAINTEXT", "10.0.0.2").kind == "throttle"
    clock.advance(9500)  # 21 over 10.5 s: 2.0/s, within the rate
    assert cq.admit("PLAINTEXT", "10.0.0.2").kind == "serve"


@pytest.mark.rule("QUO-9")
def test_broker_and_listener_connection_creation_rates_delay_the_acceptor() -> None:
    """recordConnectionAndGetThrottleTimeMs: the longer of the broker-wide and the listener's
    throttle, bounded by one quota window; the listener's value falls back to the broker's."""
    core, clock = make_core(settings={"max.connection.creation.rate": "5",
                                      "listener.name.plaintext.max.connection.creation.rate": "1"})
    cq = core.connection_quotas(min(core.cluster.nodes))
    now = clock.now_ms()
    assert [cq.acceptor_throttle_until("PLAINTEXT") - now for _ in range(10)] == [0] * 10
    assert cq.acceptor_throttle_until("PLAINTEXT") - now == 1000  # 1.1/s on the listener: 1000 ms
    assert cq.acceptor_throttle_until("OTHER") - now == 0  # the broker's 5/s: 12 / 10 s is within


@pytest.mark.rule("QUO-8")
def test_slots_per_listener_and_broker_and_the_per_ip_limit_with_overrides() -> None:
    core, _ = make_core(settings={"max.connections": "3", "listener.name.plaintext.max.connections": "2",
                                  "max.connections.per.ip": "1",
                                  "max.connections.per.ip.overrides": "10.0.0.9:2,localhost:5"})
    core.resolve_host = {"localhost": "127.0.0.1"}.__getitem__  # the edge's lookup, injected
    cq = core.connection_quotas(min(core.cluster.nodes))
    assert cq.max_per_ip("127.0.0.1") == 5 and cq.max_per_ip("10.0.0.9") == 2 and cq.max_per_ip("10.0.0.1") == 1
    assert cq.admit("PLAINTEXT", "10.0.0.9").kind == "serve"
    assert cq.admit("PLAINTEXT", "10.0.0.9").kind == "serve"
    assert not cq.slot_available("PLAINTEXT")  # the listener's 2
    assert cq.slot_available("SSL")
    refused = cq.admit("SSL", "10.0.0.9")
    assert refused.kind == "refuse" and "maximum of 2" in refused.reason
    assert cq.admit("SSL", "10.0.0.1").kind == "serve"
    assert not cq.slot_available("SSL")  # the broker's 3
    cq.release("PLAINTEXT", "10.0.0.9")
    assert cq.slot_available("SSL") and cq.per_ip == {"10.0.0.9": 1, "10.0.0.1": 1}


def test_per_ip_zero_needs_overrides_and_overrides_must_parse() -> None:
    """KafkaConfig.validateValues."""
    with pytest.raises(ConfigError, match="can be set to zero only"):
        make_core(settings={"max.connections.per.ip": "0"})
    with pytest.raises(ConfigError):
        parse_ip_overrides("10.0.0.1")
    with pytest.raises(ConfigError, match="invalid addresses"):
        make_core(settings={"max.connections.per.ip.overrides": "bad/host:3"})
    assert parse_ip_overrides("::1:3, 10.0.0.1:2") == {"::1": 3, "10.0.0.1": 2}
