"""Keyed long polls, woken after the current request or timer, answered once; the stepping clock
through the core (``core.advance``); and the count of unanswered requests of every kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kwire.broker.core.broker_core import BrokerCore, ConnInfo, LongPoll, Reply, RequestContext
from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol import decode_response
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsResponse
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.metadata import MetadataRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.registry import ApiKey
from kwire.protocol.splice import as_bytes
from kwire.records import iter_batches
from tests.broker.groups_helpers import ClassicClient
from tests.broker.helpers import START_MS, CoreClient, batch, make_core

SHARE_KEY = ("share", "g", "t", 0)  # what a share partition's waiters will be keyed by
PARTITION_KEY = ("t", 0)


@dataclass
class Poll:
    """A LongPoll that records how it was asked; its answer names it (ApiVersions error code)."""

    core: BrokerCore
    tag: int
    is_ready: bool = False
    checks: int = 0
    completions: list[tuple[bool, int]] = field(default_factory=list)
    on_complete: Any = None

    def ready(self) -> bool:
        self.checks += 1
        return self.is_ready

    def complete(self, final: bool) -> ApiVersionsResponse:
        self.completions.append((final, self.core.clock.now_ms()))
        if self.on_complete is not None:
            self.on_complete()
        return ApiVersionsResponse(error_code=self.tag)


class Spy:
    """Wraps a real LongPoll, noting when it is asked."""

    def __init__(self, poll: LongPoll, *, on_ready: Any = None, on_complete: Any = None) -> None:
        self.poll, self.on_ready, self.on_complete = poll, on_ready, on_complete

    def ready(self) -> bool:
        if self.on_ready is not None:
            self.on_ready()
        return self.poll.ready()

    def complete(self, final: bool) -> Any:
        if self.on_complete is not None:
            self.on_complete()
        return self.poll.complete(final)


def reply_for(core: BrokerCore, conn: ConnInfo, corr: int = 1) -> Reply:
    ctx = RequestContext(core, conn, ApiKey.API_VERSIONS, 0, corr, "test", None)
    return ctx.defer()


def answers(core: BrokerCore) -> list[tuple[int, int | None]]:
    """(connection, ApiVersions error code) per answer in the outbox; None for a close."""
    out: list[tuple[int, int | None]] = []
    for conn_id, data in core.take_outbox():
        out.append((conn_id, None if data is None else
                    decode_response(as_bytes(data), ApiKey.API_VERSIONS, 0).body.error_code))
    return out


def park(core: BrokerCore, keys: list[Any], tag: int, wait_ms: int = 1_000, **kw: Any) -> tuple[Poll, ConnInfo]:
    conn = core.connect(0)
    poll = Poll(core, tag, **kw)
    core.park(reply_for(core, conn), keys, wait_ms, poll)
    return poll, conn


# --- keyed waiters ---------------------------------------------------------------------------
def test_wake_only_notes_the_key_and_the_wakeup_runs_later() -> None:
    core, _ = make_core()
    poll, conn = park(core, [SHARE_KEY], 7, is_ready=True)
    core.wake(SHARE_KEY)
    assert poll.checks == 0 and core.take_outbox() == []
    core.run_wakeups()
    assert poll.completions == [(False, START_MS)]
    assert answers(core) == [(conn.conn_id, 7)]
    assert core.parked() == []


def test_only_the_polls_waiting_on_the_woken_key_are_asked() -> None:
    core, _ = make_core()
    share, _ = park(core, [SHARE_KEY], 1)
    part, _ = park(core, [PARTITION_KEY], 2)
    both, _ = park(core, [PARTITION_KEY, SHARE_KEY], 3)
    core.wake(SHARE_KEY)
    core.run_wakeups()
    assert (share.checks, part.checks, both.checks) == (1, 0, 1)
    assert [p.poll for p in core.parked(PARTITION_KEY)] == [part, both]


def test_a_poll_not_ready_stays_parked_and_is_completed_once_at_its_deadline() -> None:
    core, _ = make_core()
    poll, conn = park(core, [SHARE_KEY], 9, wait_ms=500)
    for _ in range(3):
        core.wake(SHARE_KEY)
        core.run_wakeups()
    assert poll.checks == 3 and poll.completions == [] and core.take_outbox() == []
    core.advance(2_000)
    assert poll.completions == [(True, START_MS + 500)]
    assert answers(core) == [(conn.conn_id, 9)]
    core.wake(SHARE_KEY)
    core.run_wakeups()
    assert poll.checks == 3 and len(poll.completions) == 1


def test_woken_polls_are_answered_in_the_order_they_parked() -> None:
    core, _ = make_core()
    park(core, [("k", 2)], 1, is_ready=True)
    park(core, [("k", 1)], 2, is_ready=True)
    park(core, [("k", 2)], 3, is_ready=True)
    core.wake(("k", 1))
    core.wake(("k", 2))
    core.run_wakeups()
    assert [code for _, code in answers(core)] == [1, 2, 3]


def test_a_wake_while_completing_is_run_in_the_same_round() -> None:
    core, _ = make_core()
    second, _ = park(core, [SHARE_KEY], 2, is_ready=True)
    first, _ = park(core, [PARTITION_KEY], 1, is_ready=True, on_complete=lambda: core.wake(SHARE_KEY))
    core.wake(PARTITION_KEY)
    core.run_wakeups()
    assert [code for _, code in answers(core)] == [1, 2]
    assert second.completions and first.completions


def test_wake_all_asks_every_poll() -> None:
    core, _ = make_core()
    polls = [park(core, [("k", i)], i, is_ready=i % 2 == 0)[0] for i in range(4)]
    core.wake_all()
    core.run_wakeups()
    assert [p.checks for p in polls] == [1, 1, 1, 1]
    assert [code for _, code in answers(core)] == [0, 2]
    assert [p.poll for p in core.parked()] == [polls[1], polls[3]]


def test_a_failing_complete_closes_that_request_only() -> None:
    core, _ = make_core()

    def boom() -> None:
        raise RuntimeError("builder bug")

    _, bad = park(core, [SHARE_KEY], 1, is_ready=True, on_complete=boom)
    _, good = park(core, [SHARE_KEY], 2, is_ready=True)
    core.wake(SHARE_KEY)
    core.run_wakeups()
    assert answers(core) == [(bad.conn_id, None), (good.conn_id, 2)]
    assert core.unanswered_requests() == 0


def test_disconnect_drops_the_connections_polls() -> None:
    core, _ = make_core()
    gone, conn = park(core, [SHARE_KEY], 1, is_ready=True)
    stays, other = park(core, [SHARE_KEY], 2, wait_ms=100)
    core.disconnect(conn.conn_id)
    assert [p.poll for p in core.parked(SHARE_KEY)] == [stays]
    core.wake(SHARE_KEY)
    core.advance(1_000)
    assert gone.checks == 0 and gone.completions == []
    assert answers(core) == [(other.conn_id, 2)]


def test_waking_a_key_nobody_waits_on_does_nothing() -> None:
    core, _ = make_core()
    poll, _ = park(core, [SHARE_KEY], 1)
    core.wake(("nobody", 0))
    core.run_wakeups()
    assert poll.checks == 0


# --- Fetch as a keyed long poll ----------------------------------------------------------------
def produce_req(records: bytes) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])


def fetch_req(offset: int, *, max_wait_ms: int, min_bytes: int = 1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=-1,
                                                        log_start_offset=-1, partition_max_bytes=1 << 20)])])


def values(resp: Any) -> list[bytes | None]:
    return [r.value for p in resp.responses[0].partitions for b in iter_batches(p.records) for r in b]


def test_fetch_waits_under_its_partition_key_and_is_answered_after_the_produce_was() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    core.recording = []
    consumer, producer = CoreClient(core), CoreClient(core)
    assert consumer.send(fetch_req(0, max_wait_ms=5_000), 11) is None
    [parked] = core.parked(PARTITION_KEY)
    seen: list[bool] = []
    # The produce's own answer is already built when the poll is asked: the wake-up did not
    # run inside the append.
    parked.poll = Spy(parked.poll, on_ready=lambda: seen.append(core.recording[-1].response is not None))
    assert producer.send(produce_req(batch([b"v"])), 9).responses[0].partition_responses[0].error_code == 0
    assert seen == [True]
    [resp] = consumer.deferred()
    assert values(resp) == [b"v"]
    assert core.parked() == [] and core.unanswered_requests() == 0


def test_fetch_below_min_bytes_keeps_waiting_then_answers_what_there_is_at_the_deadline() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    consumer, producer = CoreClient(core), CoreClient(core)
    assert consumer.send(fetch_req(0, max_wait_ms=500, min_bytes=1 << 16), 11) is None
    producer.send(produce_req(batch([b"small"])), 9)
    assert consumer.deferred() == []
    core.advance(499)
    assert consumer.deferred() == []
    core.advance(1)
    [resp] = consumer.deferred()
    assert values(resp) == [b"small"]


# --- the stepping clock through the core -------------------------------------------------------
def test_core_advance_fires_a_periodic_timer_at_each_period() -> None:
    core, clock = make_core()
    seen: list[int] = []

    def tick() -> None:
        seen.append(clock.now_ms() - START_MS)
        core.deadlines.at(clock.now_ms() + 10, tick)

    core.deadlines.at(START_MS + 10, tick)
    assert core.advance(35) == START_MS + 35
    assert seen == [10, 20, 30]


def test_wakeups_from_a_timer_run_right_after_it_at_its_time() -> None:
    core, clock = make_core()
    events: list[tuple[str, int]] = []
    poll, _ = park(core, [SHARE_KEY], 1, wait_ms=10_000,
                   on_complete=lambda: events.append(("answered", clock.now_ms() - START_MS)))

    def release() -> None:  # e.g. an acquisition lock expiring
        events.append(("released", clock.now_ms() - START_MS))
        poll.is_ready = True
        core.wake(SHARE_KEY)

    core.deadlines.at(START_MS + 200, release)
    core.deadlines.at(START_MS + 300, lambda: events.append(("later", clock.now_ms() - START_MS)))
    core.advance(1_000)
    assert events == [("released", 200), ("answered", 200), ("later", 300)]
    assert poll.completions == [(False, START_MS + 200)]


def test_fetch_long_poll_expires_mid_advance_at_its_own_deadline() -> None:
    core, clock = make_core()
    core.create_topic("t", 1)
    consumer = CoreClient(core)
    assert consumer.send(fetch_req(0, max_wait_ms=300), 11) is None
    [parked] = core.parked()
    expired_at: list[int] = []
    parked.poll = Spy(parked.poll, on_complete=lambda: expired_at.append(clock.now_ms() - START_MS))
    core.advance(10_000)
    assert expired_at == [300]
    [resp] = consumer.deferred()
    assert resp.responses[0].partitions[0].records == b""


# --- unanswered requests of every kind ----------------------------------------------------------
def test_unanswered_counts_a_fetch_long_poll_until_data_arrives() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    consumer, producer = CoreClient(core), CoreClient(core)
    consumer.send(fetch_req(0, max_wait_ms=5_000), 11)
    assert core.unanswered_requests() == 1
    producer.send(produce_req(batch([b"v"])), 9)
    assert core.unanswered_requests() == 0


def test_unanswered_counts_a_join_waiting_for_the_rebalance() -> None:
    core, _ = make_core(settings={"group.initial.rebalance.delay.ms": "3000"})
    member = ClassicClient(core)
    assert member.join_with_id() is None
    assert core.unanswered_requests() == 1
    core.advance(3_000)
    assert member.answer().error_code == ErrorCode.NONE
    assert core.unanswered_requests() == 0


def test_unanswered_counts_a_sync_waiting_for_the_leader() -> None:
    core, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    members = [ClassicClient(core) for _ in range(2)]
    for m in members:
        m.join_with_id()
    core.fire_due()
    for m in members:
        m.answer()
    leader = next(m for m in members if m.member_id == m.leader)
    follower = next(m for m in members if m is not leader)
    assert follower.sync() is None
    assert core.unanswered_requests() == 1
    leader.sync(assignments={follower.member_id: b"F"})
    assert follower.answer().assignment == b"F"
    assert core.unanswered_requests() == 0


def test_unanswered_counts_a_request_held_by_a_latency_fault() -> None:
    core, _ = make_core()
    core.faults.add(FaultRule(FaultAction.LATENCY, api_key=ApiKey.METADATA, delay_ms=1_000))
    c = CoreClient(core)
    assert c.send(MetadataRequest(topics=None), 12) is None
    assert core.unanswered_requests() == 1
    core.advance(1_000)
    assert len(c.deferred()) == 1 and core.unanswered_requests() == 0


def test_unanswered_ignores_acks_zero_produce_under_latency_and_forgets_a_closed_connection() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    core.faults.add(FaultRule(FaultAction.LATENCY, api_key=ApiKey.PRODUCE, delay_ms=1_000, times=None))
    c = CoreClient(core)
    req = produce_req(batch([b"fire and forget"]))
    req.acks = 0
    assert c.send(req, 9) is None
    assert core.unanswered_requests() == 0  # nothing will ever be sent for acks=0
    core.faults.add(FaultRule(FaultAction.SWALLOW, api_key=ApiKey.METADATA))
    assert c.send(MetadataRequest(topics=None), 12) is None
    assert core.unanswered_requests() == 1  # swallowed: never answered
    core.disconnect(c.conn.conn_id)
    assert core.unanswered_requests() == 0
