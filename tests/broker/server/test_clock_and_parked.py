"""Through ``Broker(manual_clock=True)`` and real sockets: ``advance`` steps through every deadline
(each timer sees its own time) and the answers its timers complete go out; ``parked_requests``
counts every request not answered yet, whatever holds it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kwire.control import Broker, BrokerConfig
from kwire.protocol import decode_response, encode_request
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.join_group import JoinGroupRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.sync_group import SyncGroupRequest
from kwire.protocol.registry import ApiKey
from tests.broker.server.test_wire_edge_cases import Raw


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(BrokerConfig(log_connections=False), manual_clock=True) as b:
        b.create_topic("t", 1)
        yield b


def fetch(wait_ms: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                            partition=0, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                            partition_max_bytes=1 << 20)])])


def ask(c: Raw, body: Any, version: int, corr: int = 1) -> None:
    c.send(encode_request(body, version, correlation_id=corr))


def answer(c: Raw, api_key: int, version: int) -> Any:
    return decode_response(c.recv_frame(), api_key, version).body


def requests_seen(broker: Broker, n: int) -> None:
    broker.wait_until(lambda core: core.stats.requests >= n)


def test_advance_fires_a_periodic_timer_at_each_period_on_the_broker_thread(broker: Broker) -> None:
    seen: list[int] = []
    start = broker.call(broker.clock.now_ms)

    def tick() -> None:
        now = broker.core.clock.now_ms()
        seen.append(now - start)
        broker.core.deadlines.at(now + 10, tick)

    broker.call(lambda: broker.core.deadlines.at(start + 10, tick))
    assert broker.advance(35) == start + 35
    assert seen == [10, 20, 30]
    broker.advance(5)
    assert seen == [10, 20, 30, 40]


def test_answers_completed_by_timers_within_one_advance_all_go_out(broker: Broker) -> None:
    short, long_, slow = Raw(broker), Raw(broker), Raw(broker)
    ask(short, fetch(100), 11)
    ask(long_, fetch(300), 11)
    broker.add_latency(200, api_key=ApiKey.METADATA, times=1)
    ask(slow, MetadataRequest(topics=None), 12)
    requests_seen(broker, 3)
    assert broker.parked_requests() == 3
    broker.advance(1_000)
    for c in (short, long_):
        resp = answer(c, ApiKey.FETCH, 11)
        assert resp.responses[0].partitions[0].records == b""
    assert [t.name for t in answer(slow, ApiKey.METADATA, 12).topics] == ["t"]
    assert broker.parked_requests() == 0


def test_parked_requests_counts_a_fetch_long_poll(broker: Broker) -> None:
    c = Raw(broker)
    ask(c, fetch(30_000), 11)
    requests_seen(broker, 1)
    assert broker.parked_requests() == 1
    broker.advance(30_000)
    answer(c, ApiKey.FETCH, 11)
    assert broker.parked_requests() == 0


def test_parked_requests_counts_a_request_held_by_latency(broker: Broker) -> None:
    broker.add_latency(5_000, api_key=ApiKey.METADATA, times=1)
    c = Raw(broker)
    ask(c, MetadataRequest(topics=None), 12)
    requests_seen(broker, 1)
    assert broker.parked_requests() == 1
    broker.advance(5_000)
    answer(c, ApiKey.METADATA, 12)
    assert broker.parked_requests() == 0


def join(member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                            member_id=member_id, protocol_type="consumer", protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")])


def test_parked_requests_counts_joins_and_syncs_waiting_on_the_group(broker: Broker) -> None:
    a, b = Raw(broker), Raw(broker)
    ask(a, join(), 3)
    ask(b, join(), 3)
    requests_seen(broker, 2)
    assert broker.parked_requests() == 2
    # group.initial.rebalance.delay.ms (3 s), extended once because b joined during it: the
    # chained delay fires within the one advance.
    broker.advance(10_000)
    ja, jb = answer(a, ApiKey.JOIN_GROUP, 3), answer(b, ApiKey.JOIN_GROUP, 3)
    assert ja.error_code == jb.error_code == ErrorCode.NONE
    assert broker.parked_requests() == 0
    leader, follower = (a, b) if ja.member_id == ja.leader else (b, a)
    ids = {a: ja.member_id, b: jb.member_id}

    def sync(assign: bool) -> SyncGroupRequest:
        mine = ids[leader if assign else follower]
        return SyncGroupRequest(group_id="g", generation_id=ja.generation_id, member_id=mine, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=m.encode())
            for m in ids.values()] if assign else [])

    ask(follower, sync(False), 2, corr=2)
    requests_seen(broker, 3)
    assert broker.parked_requests() == 1  # the follower waits for the leader's assignment
    ask(leader, sync(True), 2, corr=2)
    assert answer(leader, ApiKey.SYNC_GROUP, 2).assignment == ids[leader].encode()
    assert answer(follower, ApiKey.SYNC_GROUP, 2).assignment == ids[follower].encode()
    assert broker.parked_requests() == 0


def test_parked_requests_forgets_the_requests_of_a_closed_connection(broker: Broker) -> None:
    c = Raw(broker)
    ask(c, fetch(30_000), 11)
    requests_seen(broker, 1)
    assert broker.parked_requests() == 1
    c.close()
    broker.wait_until(lambda core: core.stats.closed_connections >= 1)
    assert broker.parked_requests() == 0
