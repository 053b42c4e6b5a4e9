"""confluent-kafka's ShareConsumer (librdkafka 2.16, ShareFetch/ShareAcknowledge v1) against kwire:
RELEASE and REJECT, two consumers on one partition never holding the same record, lock expiry on
the test's clock, and the delivery limit."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kwire.clock import JumpClock
from kwire.control import Broker, BrokerConfig

pytestmark = pytest.mark.conformance

ck = pytest.importorskip("confluent_kafka")
GROUP = "g"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=1)
        b.set_config("group", GROUP, "share.auto.offset.reset", "earliest")
        yield b


@pytest.fixture
def consumers() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for c in made:
        c.close()


def start(broker: Broker, made: list[Any]) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                          "share.acknowledgement.mode": "explicit", "log_level": 3})
    made.append(c)
    c.subscribe(["t"])
    return c


def poll_until(c: Any, count: int, timeout_s: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"got {len(got)} of {count}"
        got += [m for m in c.poll(0.3) or [] if m.error() is None]
    return got


def states(broker: Broker) -> dict[int, tuple[str, int]]:
    st = broker.share_state(GROUP, "t", 0)
    assert st is not None
    return {o["offset"]: (o["state"], o["delivery_count"]) for o in st["offsets"] if o["offset"] >= st["start_offset"]}


@pytest.mark.rule("AK-12")
def test_release_redelivers_and_reject_does_not(broker: Broker, consumers: list[Any]) -> None:
    """AK-12: RELEASE → AVAILABLE (delivered again with count 2), REJECT → ARCHIVED, ACCEPT → ACKNOWLEDGED."""
    broker.produce("t", [b"a", b"b", b"c"])
    c = start(broker, consumers)
    got = poll_until(c, 3)
    assert [(m.offset(), m.delivery_count(), m.value()) for m in got] == [(0, 1, b"a"), (1, 1, b"b"), (2, 1, b"c")]
    c.acknowledge(got[0], ck.AcknowledgeType.ACCEPT)
    c.acknowledge(got[1], ck.AcknowledgeType.RELEASE)
    c.acknowledge(got[2], ck.AcknowledgeType.REJECT)
    c.commit_sync()
    (again,) = poll_until(c, 1)
    assert (again.offset(), again.delivery_count()) == (1, 2)
    c.acknowledge(again, ck.AcknowledgeType.ACCEPT)
    c.commit_sync()
    st = broker.share_state(GROUP, "t", 0)
    assert st is not None and st["start_offset"] == 3


@pytest.mark.rule("AQ-1, SG-5")
def test_two_consumers_on_one_partition_never_hold_the_same_record(broker: Broker, consumers: list[Any]) -> None:
    """AQ-1, SG-5: both members fetch the one partition; each record is acquired by one of them only."""
    broker.produce("t", [b"%d" % i for i in range(40)])
    a, b = start(broker, consumers), start(broker, consumers)
    held: dict[str, set[int]] = {"a": set(), "b": set()}
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while len(seen) < 40:
        assert time.monotonic() < deadline, f"{len(seen)} of 40 delivered"
        for name, c in (("a", a), ("b", b)):
            msgs = [m for m in c.poll(0.2) or [] if m.error() is None]
            held[name] |= {m.offset() for m in msgs}
            assert not held["a"] & held["b"], "one record held by both consumers"
            seen += [m.offset() for m in msgs]
            for m in msgs:
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            if msgs:
                c.commit_sync()
                held[name].clear()
    assert sorted(seen) == list(range(40))


@pytest.mark.rule("AQ-12")
def test_a_lock_expired_by_the_clock_redelivers_to_the_other_consumer(broker: Broker, consumers: list[Any]) -> None:
    """AQ-12: 31 s on the broker clock and the record the first consumer sat on goes to the second, count 2."""
    broker.produce("t", [b"x"])
    a = start(broker, consumers)
    poll_until(a, 1)
    broker.advance(31_000)
    assert states(broker) == {0: ("AVAILABLE", 1)}
    b = start(broker, consumers)
    (m,) = poll_until(b, 1)
    assert (m.offset(), m.delivery_count()) == (0, 2)


@pytest.mark.rule("AQ-11")
def test_the_delivery_limit_archives(broker: Broker, consumers: list[Any]) -> None:
    """AQ-11: share.delivery.count.limit 3: three RELEASEs and the record is archived."""
    broker.set_config("group", GROUP, "share.delivery.count.limit", "3")
    broker.produce("t", [b"bad"])
    c = start(broker, consumers)
    for n in (1, 2, 3):
        (m,) = poll_until(c, 1)
        assert m.delivery_count() == n
        c.acknowledge(m, ck.AcknowledgeType.RELEASE)
        c.commit_sync()
    assert [m for m in c.poll(0.5) or [] if m.error() is None] == []
    st = broker.share_state(GROUP, "t", 0)
    assert st is not None and st["start_offset"] == 1


@pytest.mark.rule("AQ-12, SS-9")
def test_control_api_expires_locks_and_fences_members(broker: Broker, consumers: list[Any]) -> None:
    """Faults from Python: expire_locks makes a held record available now (AQ-12); fence_share_member
    removes the member from the group but, as in Kafka (SharePartitionManager releases only on a
    final epoch or a disconnect), its session and the record it holds stay (SS-9)."""
    broker.produce("t", [b"a", b"b"])
    a = start(broker, consumers)
    poll_until(a, 2)
    assert broker.expire_locks(GROUP, "t", 0, [0]) == 1
    assert states(broker) == {0: ("AVAILABLE", 1), 1: ("ACQUIRED", 1)}
    group = broker.describe_share_group(GROUP)
    assert group is not None and len(group["members"]) == 1
    (member_id,) = group["members"]
    assert broker.fence_share_member(GROUP, member_id)
    assert states(broker) == {0: ("AVAILABLE", 1), 1: ("ACQUIRED", 1)}
    a.close()  # the session closes (or its connection drops): now the record is released
    consumers.remove(a)
    deadline = time.monotonic() + 20
    while states(broker)[1][0] != "AVAILABLE":
        assert time.monotonic() < deadline, states(broker)
        time.sleep(0.05)
