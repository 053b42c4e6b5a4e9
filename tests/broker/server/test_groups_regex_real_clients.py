"""confluent-kafka (librdkafka) in a KIP-848 group (``group.protocol=consumer``) subscribing with a
``^regex`` against an in-process kwire broker over TCP: the broker resolves the regex
asynchronously (the joining heartbeat answers with an empty assignment, the topics follow at a
later epoch), the consumer reads the matched topics only, then resubscribes to a literal topic
and reads only that. Waiting is bounded polling against deadlines, never sleeping."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.protocol.registry import ApiKey
from tests.broker.server.test_groups_real_clients import wait_for

pytestmark = pytest.mark.conformance

ck = pytest.importorskip("confluent_kafka")

SETTINGS = {"group.consumer.heartbeat.interval.ms": "500",  # reconciliation rides on heartbeats
            "group.consumer.min.heartbeat.interval.ms": "500"}
N = 20


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(settings=dict(SETTINGS), log_connections=False)) as b:
        yield b


def produce(b: Broker, topic: str, prefix: str, n: int = N) -> set[str]:
    p = ck.Producer({"bootstrap.servers": b.bootstrap})
    values = {f"{prefix}-{i}" for i in range(n)}
    for v in sorted(values):
        p.produce(topic, value=v.encode())
    assert p.flush(15) == 0
    return values


def test_kip848_confluent_regex_subscription_then_literal_resubscription(broker):
    b = broker
    b.create_topic("orders-1", 2)
    b.create_topic("orders-2", 1)
    b.create_topic("audit", 1)
    orders = produce(b, "orders-1", "o1") | produce(b, "orders-2", "o2")
    audit = produce(b, "audit", "a")
    b.start_recording()
    c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-regex", "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    seen: list[tuple[str, str]] = []

    def poll() -> None:
        m = c.poll(0.05)
        if m is not None:
            assert m.error() is None, m.error()
            seen.append((m.topic(), m.value().decode()))

    try:
        c.subscribe(["^orders-.*"])
        wait_for("every record of the regex's topics", lambda: {v for _, v in seen} >= orders, poll)
        assert {t for t, _ in seen} == {"orders-1", "orders-2"}, "only the matched topics"
        heartbeats = [e for e in b.recorded() if e.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT]
        first = heartbeats[0]
        assert first.request.subscribed_topic_regex and first.request.member_epoch == 0
        # Resolved asynchronously: the joining answer is empty, the topics come at a later epoch.
        assert first.response.assignment is not None and first.response.assignment.topic_partitions == []
        given = next(e for e in heartbeats if e.response.assignment and e.response.assignment.topic_partitions)
        assert given.response.member_epoch > first.response.member_epoch

        c.subscribe(["audit"])
        wait_for("the assignment to be the literal topic only",
                 lambda: [p.topic for p in c.assignment()] == ["audit"], poll)
        before = len(seen)
        late_orders = produce(b, "orders-1", "late")
        wait_for("every record of the literal topic", lambda: {v for _, v in seen} >= audit, poll)
        more = produce(b, "audit", "a2")
        wait_for("the records produced after the switch", lambda: {v for _, v in seen} >= more, poll)
        after = seen[before:]
        assert {t for t, _ in after} == {"audit"}, "nothing from the regex's topics after the switch"
        assert not late_orders & {v for _, v in seen}
    finally:
        c.close()
