"""Share-group dead-letter queues (KIP-1191) with real share consumers: the Java KafkaShareConsumer
and confluent-kafka's ShareConsumer reject and keep failing records; kwire writes the DLQ records;
an ordinary consumer reads them with their headers. A disabled or refusing DLQ leaves the consumer
unaffected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.clock import JumpClock
from kwire.conformance.clients.share import ShareMember
from kwire.control import Broker, BrokerConfig
from tests.broker.server.share_clients import share_member

pytestmark = pytest.mark.conformance

GROUP = "g"
CLIENTS = ["java", "confluent_kafka"]


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=1)
        b.create_topic("dlq.g", partitions=1, configs={"errors.deadletterqueue.group.enable": "true"})
        b.set_config("group", GROUP, "share.auto.offset.reset", "earliest")
        b.set_config("group", GROUP, "errors.deadletterqueue.topic.name", "dlq.g")
        b.set_config("group", GROUP, "errors.deadletterqueue.copy.record.enable", "true")
        b.set_config("group", GROUP, "share.delivery.count.limit", "2")
        yield b


@pytest.fixture
def members() -> Iterator[list[ShareMember]]:
    made: list[ShareMember] = []
    yield made
    for m in made:
        m.kill()


def start(client: str, broker: Broker, made: list[ShareMember]) -> ShareMember:
    m = share_member(client, broker.bootstrap, GROUP)
    made.append(m)
    m.subscribe("t")
    return m


def wait_dlq(broker: Broker, count: int) -> list[dict[str, object]]:
    def enough(core: object) -> bool:
        t = broker.core.cluster.topics["dlq.g"]
        return t.partitions[0].log.log_end_offset >= count

    broker.wait_until(enough, timeout=30)
    return broker.dlq_records(GROUP)


@pytest.mark.rule("DLQ-3, DLQ-8, DLQ-9, DLQ-11")
@pytest.mark.parametrize("client", CLIENTS)
def test_reject_and_the_delivery_limit_land_in_the_dlq_once(client: str, broker: Broker,
                                                            members: list[ShareMember]) -> None:
    """DLQ-3: REJECT goes straight to the DLQ (no retry); a record released at every delivery reaches the
    limit (2) and lands there once; DLQ-11: every acknowledgement succeeded; DLQ-8/9: the copy carries
    the original key and value and the __dlq.errors.* headers."""
    broker.produce("t", [b"bad", b"poison", b"good"], keys=[b"k0", b"k1", b"k2"])
    m = start(client, broker, members)
    got = {r.value: r for r in m.poll_until(3)}
    m.ack(got["bad"], "REJECT")
    m.ack(got["poison"], "RELEASE")
    m.ack(got["good"], "ACCEPT")
    assert all(line.endswith("ok") for line in m.commit())
    (again,) = m.poll_until(1)
    assert again.value == "poison" and again.delivery_count == 2
    m.ack(again, "RELEASE")
    assert all(line.endswith("ok") for line in m.commit())
    records = wait_dlq(broker, 2)
    by_offset = {int(r["headers"]["__dlq.errors.offset"]): r for r in records}  # type: ignore[index]
    assert sorted(by_offset) == [0, 1]
    assert by_offset[0]["headers"]["__dlq.errors.message"] == "Offset rejected by client."  # type: ignore[index]
    assert by_offset[1]["headers"]["__dlq.errors.message"] == "Offset delivery count exceeded the threshold."  # type: ignore[index]
    assert (by_offset[1]["key"], by_offset[1]["value"]) == (b"k1", b"poison")
    assert m.poll(500) == []


@pytest.mark.rule("DLQ-5, DLQ-11")
@pytest.mark.parametrize("client", CLIENTS)
def test_a_refusing_dlq_archives_and_the_consumer_never_knows(client: str, broker: Broker,
                                                             members: list[ShareMember]) -> None:
    """DLQ-5: the topic no longer opts in: nothing is written, the record is archived, and the
    consumer's acknowledgement succeeds as usual (DLQ-11)."""
    broker.set_config("topic", "dlq.g", "errors.deadletterqueue.group.enable", "false")
    broker.produce("t", [b"bad"])
    m = start(client, broker, members)
    (r,) = m.poll_until(1)
    m.ack(r, "REJECT")
    assert all(line.endswith("ok") for line in m.commit())
    broker.wait_until(lambda core: broker.core.subsystems.share_groups.partitions.get(GROUP, "t", 0).start_offset == 1,
                      timeout=30)
    assert broker.dlq_records(GROUP) == []
    assert broker.dlq_stats(GROUP)["failures"]


def test_an_ordinary_consumer_reads_the_dlq_headers(broker: Broker, members: list[ShareMember]) -> None:
    """The DLQ topic is a normal topic: confluent-kafka's Consumer reads the record and its headers."""
    ck = pytest.importorskip("confluent_kafka")
    broker.produce("t", [b"bad"])
    m = start("confluent_kafka", broker, members)
    (r,) = m.poll_until(1)
    m.ack(r, "REJECT")
    m.commit()
    wait_dlq(broker, 1)
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "reader", "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["dlq.g"])
        msg = None
        for _ in range(60):
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.error() is None
        headers = [(k, v.decode()) for k, v in msg.headers()]
        assert [k for k, _ in headers] == ["__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
                                           "__dlq.errors.group", "__dlq.errors.delivery.count",
                                           "__dlq.errors.message"]
        assert dict(headers)["__dlq.errors.group"] == GROUP and msg.value() == b"bad"
    finally:
        c.close()
