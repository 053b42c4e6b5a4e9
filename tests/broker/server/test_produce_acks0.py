"""Produce with acks=0 is never answered: a failure closes the connection instead (Kafka's
KafkaApis.handleProduceRequest; ProduceRequest.getErrorResponse is null for acks=0). Found by
``kwire fuzz`` (an acks=0 produce with an empty transactional id was answered, so the next
answer on the connection carried the wrong correlation id)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.conformance.wire_client import WireClient, WireClosed
from kwire.control import Broker, BrokerConfig
from kwire.records import BatchBuilder


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False)) as b:
        b.create_topic("t", 1)
        yield b


def _produce(topic: str, txn: str | None = None) -> dict:
    # With a transactional id: a transactional batch of a producer no transaction knows (TX-13 refuses it).
    b = BatchBuilder(producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True) if txn else BatchBuilder()
    b.append(b"v")
    return {"TransactionalId": txn, "Acks": 0, "TimeoutMs": 1000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": b.build().hex()}]}]}


def _metadata(c: WireClient) -> int:
    corr = c.send(3, 5, {"Topics": None})
    frame = c.recv_frame()
    return int.from_bytes(frame[:4], "big", signed=True) if corr else -1


def test_successful_acks0_produce_is_not_answered(broker: Broker) -> None:
    with WireClient(broker.bootstrap).connect() as c:
        c.send(0, 9, _produce("t"))
        corr = c.next_correlation_id
        assert _metadata(c) == corr  # the next answer is the Metadata one: nothing came for the produce
    assert broker.end_offsets("t") == {0: 1}


@pytest.mark.parametrize("topic, txn", [("missing", None), ("t", "tx")])
def test_failed_acks0_produce_closes_the_connection_unanswered(broker: Broker, topic: str, txn: str | None) -> None:
    with WireClient(broker.bootstrap).connect() as c:
        c.send(0, 9, _produce(topic, txn))
        with pytest.raises(WireClosed):
            c.recv_frame()
