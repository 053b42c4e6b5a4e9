"""``Broker.wait_until`` and the cluster read-outs the conformance scenarios use.

Regression: the predicate used to run through ``call()``, whose poke counts as broker
progress, so ``wait_until`` woke itself, re-ran the predicate in a busy loop and never
reached its deadline check: an unmet condition hung the caller forever.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.protocol import encode_request
from kwire.protocol.messages.produce import ProduceRequest
from tests.broker.helpers import batch
from tests.broker.server.test_wire_edge_cases import Raw

# Far above the waits below: only a hang gets near it.
JOIN_S = 20.0


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(brokers=3, log_connections=False)) as b:
        b.create_topic("t", 3, replication_factor=3)
        yield b


def test_wait_until_an_unmet_condition_times_out_without_spinning(broker: Broker) -> None:
    calls = 0
    outcome: list[BaseException | None] = []

    def never(core: object) -> bool:
        nonlocal calls
        calls += 1
        return False

    def run() -> None:
        try:
            broker.wait_until(never, timeout=0.5)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)
        else:
            outcome.append(None)

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(JOIN_S)
    assert not t.is_alive(), "wait_until did not return: it never checked its deadline"
    assert isinstance(outcome[0], TimeoutError)
    assert time.monotonic() - start < JOIN_S
    # An idle broker makes no progress: the predicate runs once, not in a busy loop.
    assert calls <= 3


def test_wait_until_returns_when_client_traffic_meets_the_condition(broker: Broker) -> None:
    leader = broker.leader_of("t", 0)
    host, port = broker.bootstrap.split(",")[broker.node_ids.index(leader)].split(":")
    c = Raw(broker)
    c.sock.close()
    c.sock = socket.create_connection((host, int(port)), timeout=10)
    c.send(encode_request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch([b"a", b"b"]))])]),
        9, correlation_id=1))
    broker.wait_until(lambda core: core.cluster.topics["t"].partitions[0].log.log_end_offset >= 2, timeout=10)
    assert broker.end_offsets("t") == {0: 2, 1: 0, 2: 0}
    c.close()


def test_leader_of_follows_broker_down_and_move_leader(broker: Broker) -> None:
    victim = broker.leader_of("t", 0)
    broker.broker_down(victim)
    assert victim not in broker.live_node_ids()
    assert broker.leader_of("t", 0) not in (victim, -1)
    broker.broker_up(victim)
    broker.move_leader("t", 0, victim)
    assert broker.leader_of("t", 0) == victim
    assert sorted(broker.live_node_ids()) == broker.node_ids
