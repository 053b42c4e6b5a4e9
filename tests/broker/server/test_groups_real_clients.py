"""Real clients in consumer groups against an in-process kwire broker over TCP.

confluent-kafka (librdkafka) in a classic group and in a KIP-848 group (``group.protocol=consumer``):
two members split a topic, one leaves, the other takes over from the committed offsets;
static membership survives a restart without a rebalance; kafka-python and aiokafka consume
and commit as group members. Waiting is bounded polling against deadlines, never sleeping.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from kwire.control import Broker, BrokerConfig

pytestmark = pytest.mark.conformance

ck = pytest.importorskip("confluent_kafka")

PARTITIONS = 4
MESSAGES = 200
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",  # KIP-848 reconciliation rounds ride on heartbeats
    "group.consumer.min.heartbeat.interval.ms": "500",
}


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(settings=dict(SETTINGS), log_connections=False)) as b:
        yield b


def produce(b: Broker, topic: str, n: int = MESSAGES, partitions: int = PARTITIONS) -> None:
    p = ck.Producer({"bootstrap.servers": b.bootstrap})
    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert p.flush(15) == 0


def wait_for(what: str, cond: Callable[[], bool], step: Callable[[], object], timeout_s: float = 25.0) -> None:
    """Run ``step`` (a bounded poll) until ``cond`` holds or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        step()


def ck_consumer(b: Broker, group: str, protocol: str, **extra: object):
    conf = {"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "client.id": extra.pop("client_id", "kwire-test")}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
    conf.update(extra)
    return ck.Consumer(conf)


class Tally:
    """What each consumer processed; every message is committed right after it is processed."""

    def __init__(self) -> None:
        self.by_consumer: dict[str, list[int]] = {}

    def poll(self, name: str, c, timeout: float = 0.05) -> None:
        m = c.poll(timeout)
        if m is None:
            return
        assert m.error() is None, m.error()
        self.by_consumer.setdefault(name, []).append(int(m.value()))
        c.commit(message=m, asynchronous=False)

    def seen(self) -> Counter[int]:
        return Counter(v for vs in self.by_consumer.values() for v in vs)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_group_rebalances_when_a_member_leaves_and_resumes_from_committed_offsets(broker, protocol):
    b = broker
    topic = f"orders-{protocol}"
    b.create_topic(topic, PARTITIONS)
    c1 = ck_consumer(b, f"g-{protocol}", protocol, client_id="c1")
    c2 = ck_consumer(b, f"g-{protocol}", protocol, client_id="c2")
    c1.subscribe([topic])
    c2.subscribe([topic])
    tally = Tally()
    try:
        def both_poll() -> None:
            tally.poll("c1", c1)
            tally.poll("c2", c2)

        wait_for("both members to own half the partitions",
                 lambda: len(c1.assignment()) == len(c2.assignment()) == PARTITIONS // 2, both_poll)
        assert {p.partition for p in c1.assignment()} | {p.partition for p in c2.assignment()} == set(range(PARTITIONS))
        produce(b, topic)
        wait_for("half of the messages", lambda: sum(tally.seen().values()) >= MESSAGES // 2, both_poll)
        assert tally.by_consumer.get("c1") and tally.by_consumer.get("c2"), "both members consumed"
        c2.close()  # leaves the group
        wait_for("the survivor to own every partition and see every message",
                 lambda: len(c1.assignment()) == PARTITIONS and len(tally.seen()) == MESSAGES,
                 lambda: tally.poll("c1", c1, 0.1))
    finally:
        c1.close()
    seen = tally.seen()
    assert set(seen) == set(range(MESSAGES)), "nothing lost"
    duplicates = sum(n - 1 for n in seen.values())
    assert duplicates <= PARTITIONS, f"at-least-once allows little more: {duplicates} duplicates"
    # The group's committed offsets are the end of every partition.
    probe = ck_consumer(b, f"g-{protocol}", "classic")
    try:
        committed = probe.committed([ck.TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        probe.close()
    assert [tp.offset for tp in committed] == [MESSAGES // PARTITIONS] * PARTITIONS


def test_confluent_static_member_restart_keeps_the_assignment_without_a_rebalance(broker):
    b = broker
    b.create_topic("static", PARTITIONS)
    a = ck_consumer(b, "g-static", "classic", **{"group.instance.id": "i-a", "session.timeout.ms": 10_000})
    s = ck_consumer(b, "g-static", "classic", **{"group.instance.id": "i-s", "session.timeout.ms": 10_000})
    for c in (a, s):
        c.subscribe(["static"])
    tally = Tally()
    try:
        wait_for("two static members to share the topic",
                 lambda: len(a.assignment()) == len(s.assignment()) == PARTITIONS // 2,
                 lambda: (tally.poll("a", a), tally.poll("s", s)))
        before = sorted(p.partition for p in s.assignment())
        generation = b.call(lambda: b.core.subsystems.groups.groups["g-static"].generation_id)
        s.close()  # a static member leaves no LeaveGroup behind: its place waits for it
        s = ck_consumer(b, "g-static", "classic", **{"group.instance.id": "i-s", "session.timeout.ms": 10_000})
        s.subscribe(["static"])
        wait_for("the restarted instance to get its partitions back", lambda: len(s.assignment()) == len(before),
                 lambda: (tally.poll("a", a), tally.poll("s", s)))
        assert sorted(p.partition for p in s.assignment()) == before
        after = b.call(lambda: b.core.subsystems.groups.groups["g-static"].generation_id)
        assert after == generation, "no rebalance for a static member's restart"
        assert len(a.assignment()) == PARTITIONS // 2
    finally:
        a.close()
        s.close()


def test_kafka_python_member_commits_and_the_next_member_resumes():
    kafka = pytest.importorskip("kafka")
    with Broker(BrokerConfig(settings=dict(SETTINGS), log_connections=False)) as b:
        b.create_topic("kp", 3)
        produce(b, "kp", 90, 3)
        seen: list[int] = []

        def consume(limit: int) -> None:
            c = kafka.KafkaConsumer("kp", bootstrap_servers=b.bootstrap, group_id="g-kp",
                                    auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=10,
                                    heartbeat_interval_ms=300, session_timeout_ms=6000)
            try:
                got = 0
                deadline = time.monotonic() + 25
                while got < limit:
                    assert time.monotonic() < deadline, "kafka-python did not get its messages in time"
                    for records in c.poll(timeout_ms=200).values():
                        for r in records:
                            seen.append(int(r.value))
                            got += 1
                    c.commit()
            finally:
                c.close()

        consume(40)
        first = len(seen)
        consume(90 - first)
        assert sorted(seen) == list(range(90)), "the second member resumed exactly where the first committed"


def test_aiokafka_two_members_share_a_topic_and_commit():
    aiokafka = pytest.importorskip("aiokafka")
    with Broker(BrokerConfig(settings=dict(SETTINGS), log_connections=False)) as b:
        b.create_topic("aio", 3)
        produce(b, "aio", 90, 3)
        # Start from committed offsets: the group resumes where an earlier commit left it.
        seed = ck_consumer(b, "g-aio", "classic")
        seed.commit(offsets=[ck.TopicPartition("aio", p, 0) for p in range(3)], asynchronous=False)
        seed.close()

        async def run() -> Counter[int]:
            cs = [aiokafka.AIOKafkaConsumer("aio", bootstrap_servers=b.bootstrap, group_id="g-aio",
                                            enable_auto_commit=False, heartbeat_interval_ms=300) for _ in range(2)]
            for c in cs:
                await c.start()
            seen: Counter[int] = Counter()
            try:
                deadline = time.monotonic() + 25
                while len(seen) < 90 or not all(c.assignment() for c in cs):
                    assert time.monotonic() < deadline, f"aiokafka saw {len(seen)} of 90"
                    for c in cs:
                        batch = await c.getmany(timeout_ms=100)
                        for records in batch.values():
                            seen.update(int(r.value) for r in records)
                        if batch:
                            await c.commit()
                parts = [{tp.partition for tp in c.assignment()} for c in cs]
                assert parts[0] | parts[1] == {0, 1, 2} and not parts[0] & parts[1]
            finally:
                for c in cs:
                    await c.stop()
            return seen

        seen = asyncio.run(run())
        assert set(seen) == set(range(90))
        probe = ck_consumer(b, "g-aio", "classic")
        try:
            committed = probe.committed([ck.TopicPartition("aio", p) for p in range(3)], timeout=10)
        finally:
            probe.close()
        assert [tp.offset for tp in committed] == [30, 30, 30]
