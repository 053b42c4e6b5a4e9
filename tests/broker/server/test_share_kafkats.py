"""@kafkats/client's ShareConsumer (ShareFetch/ShareAcknowledge v2, `message.renew()`) against kwire."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kwire.broker.core.share_coordinator import share_coordinator
from kwire.clock import JumpClock
from kwire.conformance.clients.share import ShareMember
from kwire.control import Broker, BrokerConfig
from tests.broker.server.share_clients import share_member

pytestmark = pytest.mark.conformance

GROUP = "g"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=1)
        b.set_config("group", GROUP, "share.auto.offset.reset", "earliest")
        yield b


@pytest.fixture
def consumer(broker: Broker) -> Iterator[ShareMember]:
    c = share_member("kafkats", broker.bootstrap, GROUP)
    c.subscribe("t")
    yield c
    c.kill()


def held(broker: Broker) -> dict[int, tuple[str, int]]:
    st = broker.share_state(GROUP, "t", 0)
    assert st is not None
    return {o["offset"]: (o["state"], o["delivery_count"]) for o in st["offsets"] if o["offset"] >= st["start_offset"]}


def spso(core: object) -> int | None:
    sp = share_coordinator(core).partitions.get(GROUP, "t", 0)  # type: ignore[arg-type]
    return None if sp is None else sp.start_offset


@pytest.mark.rule("RN-1, RN-4, RN-7")
def test_renew_from_a_handler_outlives_the_lock(broker: Broker, consumer: ShareMember) -> None:
    """RN-1/RN-4: message.renew() (ShareAcknowledge v2, IsRenewAck) restarts the lock: 40 s after the
    fetch the record is still ACQUIRED with its delivery count unchanged; RN-7: the client reads the
    lock duration from the answer; ack() then finishes it."""
    broker.produce("t", [b"slow"])
    (r,) = consumer.poll_until(1)
    count = r.delivery_count  # the client's warm-up fetch releases what it got: 2 here, as upstream
    assert r.offset == 0 and held(broker) == {0: ("ACQUIRED", count)}
    broker.advance(20_000)
    consumer.ack(r, "RENEW")
    broker.advance(20_000)
    assert held(broker) == {0: ("ACQUIRED", count)}
    assert consumer.lock_timeout_ms() == 30_000
    consumer.ack(r, "ACCEPT")
    broker.wait_until(lambda core: spso(core) == 1, timeout=30)


@pytest.mark.rule("AK-12")
def test_release_then_reject(broker: Broker, consumer: ShareMember) -> None:
    """AK-12: release() hands the record back (delivered again, count + 1); reject() archives it."""
    broker.produce("t", [b"x"])
    (first,) = consumer.poll_until(1)
    consumer.ack(first, "RELEASE")
    (again,) = consumer.poll_until(1)
    assert (again.offset, again.delivery_count) == (0, first.delivery_count + 1)
    consumer.ack(again, "REJECT")
    broker.wait_until(lambda core: spso(core) == 1, timeout=30)
