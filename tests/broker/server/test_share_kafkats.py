"""@kafkats/client's ShareConsumer (ShareFetch/ShareAcknowledge v2, `message.renew()`) against kwire."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.clock import JumpClock
from kwire.control import Broker, BrokerConfig
from tests.broker.server.share_clients import KafkatsShareConsumer

pytestmark = pytest.mark.conformance

GROUP = "g"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=1)
        b.set_config("group", GROUP, "share.auto.offset.reset", "earliest")
        yield b


@pytest.fixture
def consumer(broker: Broker) -> Iterator[KafkatsShareConsumer]:
    c = KafkatsShareConsumer(broker.bootstrap, GROUP, "t")
    yield c
    c.kill()


def held(broker: Broker) -> dict[int, tuple[str, int]]:
    st = broker.share_state(GROUP, "t", 0)
    assert st is not None
    return {o["offset"]: (o["state"], o["delivery_count"]) for o in st["offsets"] if o["offset"] >= st["start_offset"]}


@pytest.mark.rule("RN-1, RN-4, RN-7")
def test_renew_from_a_handler_outlives_the_lock(broker: Broker, consumer: KafkatsShareConsumer) -> None:
    """RN-1/RN-4: message.renew() (ShareAcknowledge v2, IsRenewAck) restarts the lock: 40 s after the
    fetch the record is still ACQUIRED with its delivery count unchanged; RN-7: the client reads the
    lock duration from the answer; ack() then finishes it."""
    broker.produce("t", [b"slow"])
    r = consumer.next_record()
    count = r.delivery_count  # the client's warm-up fetch releases what it got: 2 here, as upstream
    assert r.offset == 0 and held(broker) == {0: ("ACQUIRED", count)}
    broker.advance(20_000)
    consumer.verdict("renew")
    broker.advance(20_000)
    assert held(broker) == {0: ("ACQUIRED", count)}
    assert consumer.lock_timeout_ms() == 30_000
    consumer.verdict("ack")
    broker.wait_until(lambda core: broker_spso(core) == 1, timeout=30)


@pytest.mark.rule("AK-12")
def test_release_then_reject(broker: Broker, consumer: KafkatsShareConsumer) -> None:
    """AK-12: release() hands the record back (delivered again, count + 1); reject() archives it."""
    broker.produce("t", [b"x"])
    first = consumer.next_record()
    consumer.verdict("release")
    again = consumer.next_record()
    assert (again.offset, again.delivery_count) == (0, first.delivery_count + 1)
    consumer.verdict("reject")
    broker.wait_until(lambda core: broker_spso(core) == 1, timeout=30)


def broker_spso(core: object) -> int | None:
    from kwire.broker.core.share_coordinator import share_coordinator

    sp = share_coordinator(core).partitions.get(GROUP, "t", 0)  # type: ignore[arg-type]
    return None if sp is None else sp.start_offset
