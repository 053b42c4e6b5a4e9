"""Share sessions as Kafka keeps them: one cache per broker (SS-1), independent of group membership
(SS-9), released on disconnect only for a connection's latest session (SS-8); ShareFetch long polls
with acknowledgements (SS-10), MaxBytes/MaxRecords 0 (SS-11) and the hostile inputs of issue 20
(an unknown ShareAcquireMode, made-up partition indexes, made-up member ids)."""

from __future__ import annotations

import logging

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.handlers.test_produce_fetch import produce
from tests.broker.helpers import CoreClient, batch, make_core
from tests.broker.share_helpers import ShareClient, acquired, partition_data


@pytest.fixture
def core():  # type: ignore[no-untyped-def]
    c, _ = make_core()
    c.create_topic("t", 2)
    c.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    return c


def put(core, values: list[bytes], partition: int = 0, topic: str = "t") -> None:  # type: ignore[no-untyped-def]
    leader = core.cluster.topics[topic].partitions[partition].leader_id
    produce(CoreClient(core, leader), topic, partition, batch(values))


def member(core, **kw) -> ShareClient:  # type: ignore[no-untyped-def]
    m = ShareClient(core, **kw)
    m.heartbeat(["t"])
    return m


def state(core, offset: int, partition: int = 0) -> str:  # type: ignore[no-untyped-def]
    """The record's state; "untouched" when the group never fetched the partition, "done" when the
    share-partition start offset has moved past it."""
    sp = core.subsystems.share_groups.partitions.get("sg", "t", partition)
    if sp is None:
        return "untouched"
    if offset < sp.start_offset:
        return "done"
    st = sp.record_state(offset)
    return "AVAILABLE" if st is None else st[0].name


def codes(resp) -> dict[int, int]:  # type: ignore[no-untyped-def]
    return {pd.partition_index: pd.error_code for tr in resp.responses for pd in tr.partitions}


# --- SS-1: one cache per broker ----------------------------------------------------------------
@pytest.fixture
def cluster():  # type: ignore[no-untyped-def]
    c, _ = make_core(brokers=3)
    c.create_topic("t", 3)
    c.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    return c


def leaders(core) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """partition -> its leader."""
    return {i: p.leader_id for i, p in enumerate(core.cluster.topics["t"].partitions)}


@pytest.mark.rule("SS-1")
def test_a_member_keeps_one_session_per_broker(cluster) -> None:  # type: ignore[no-untyped-def]
    """SS-1 (ShareSessionCache is one per broker's SharePartitionManager): a consumer fetching from
    every broker holds one session on each with its own epochs; opening a session on one broker
    leaves the others alone, so acknowledgements through the first still land."""
    lead = leaders(cluster)
    assert len(set(lead.values())) > 1
    for p in lead:
        put(cluster, [b"a", b"b"], partition=p)
    first = member(cluster)
    by_broker = {}
    for p, b in lead.items():
        c = by_broker.get(b)
        if c is None:
            c = by_broker[b] = ShareClient(cluster, member_id=first.member_id, broker_id=b)
        r = c.fetch({"t": [p]})
        assert r.error_code == 0 and acquired(r, p) == [(0, 1, 1)]
    # Every broker's session is there, each at its own next epoch.
    for b, c in by_broker.items():
        s = cluster.subsystems.share_sessions.get("sg", first.member_id, b)
        assert s is not None and s.epoch == c.session_epoch
    # Reopening on one broker (epoch 0) does not touch the session on another.
    (b0, c0), (b1, c1) = list(by_broker.items())[:2]
    c1.session_epoch = 0
    assert c1.fetch({"t": [p for p, b in lead.items() if b == b1]}).error_code == 0
    p0 = next(p for p, b in lead.items() if b == b0)
    r = c0.acknowledge({("t", p0): [(0, 1, 1)]})
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
    assert state(cluster, 1, p0) == "done"


@pytest.mark.rule("SS-1")
def test_the_session_limit_is_per_broker(cluster) -> None:  # type: ignore[no-untyped-def]
    """SS-1 (ShareGroupConfig: group.share.max.share.sessions is "per broker"): a full cache on one
    broker does not stop a session on another."""
    cluster.configs.set(ResourceType.BROKER, "", "group.share.max.share.sessions", "1")
    lead = leaders(cluster)
    b0 = lead[0]
    other = next(n for n in cluster.cluster.nodes if n != b0)
    assert member(cluster, broker_id=b0).fetch({"t": [0]}).error_code == 0
    late = member(cluster, broker_id=b0)
    assert late.fetch({"t": [0]}).error_code == E.SHARE_SESSION_LIMIT_REACHED
    elsewhere = ShareClient(cluster, member_id=late.member_id, broker_id=other)
    assert elsewhere.fetch({"t": [0]}).error_code == 0


@pytest.mark.rule("SS-1")
def test_fetch_sessions_belong_to_their_broker(cluster) -> None:  # type: ignore[no-untyped-def]
    """SS-1 for KIP-227 fetch sessions (FetchSessionCache is one per broker): a session id opened on
    one broker is unknown on another (FETCH_SESSION_ID_NOT_FOUND)."""
    from tests.broker.handlers.test_produce_fetch import fetch_req

    lead = leaders(cluster)[0]
    other = next(n for n in cluster.cluster.nodes if n != lead)
    req = fetch_req("t", 0, 0)
    req.session_epoch = 0
    r = CoreClient(cluster, lead).send(req, 12)
    assert r.error_code == 0 and r.session_id > 0
    again = fetch_req("t", 0, 0)
    again.session_id, again.session_epoch = r.session_id, 1
    assert CoreClient(cluster, other).send(again, 12).error_code == E.FETCH_SESSION_ID_NOT_FOUND
    assert CoreClient(cluster, lead).send(again, 12).error_code == 0


# --- SS-9: sessions outlive membership ----------------------------------------------------------
def _leave(m: ShareClient) -> None:
    m.heartbeat(epoch=-1)


def _time_out(m: ShareClient) -> None:
    m.core.advance(45_001)  # share.session.timeout.ms; the lock (60 s here) has not run out


def _fence(m: ShareClient) -> None:
    assert m.core.subsystems.share_groups.fence_member("sg", m.member_id)


@pytest.mark.rule("SS-9")
@pytest.mark.parametrize("gone", [_leave, _time_out, _fence], ids=["leave", "session-timeout", "fenced"])
def test_the_share_session_outlives_group_membership(core, gone) -> None:  # type: ignore[no-untyped-def]
    """SS-9 (ShareSessionCache/SharePartitionManager: releaseSession is called only by KafkaApis'
    final-epoch paths and the disconnect listener, never by the group coordinator): a member that
    left, timed out or was fenced keeps its session and its ACQUIRED records; its acknowledgements
    at the session's epoch succeed; closing the session (epoch -1) releases the rest."""
    core.configs.set(ResourceType.GROUP, "sg", "share.record.lock.duration.ms", "60000")
    put(core, [b"a", b"b", b"c"])
    m = member(core)
    assert acquired(m.fetch({"t": [0]})) == [(0, 2, 1)]
    gone(m)
    assert m.member_id not in core.subsystems.share_groups.groups.get("sg").members
    assert [state(core, o) for o in (0, 1, 2)] == ["ACQUIRED"] * 3
    r = m.fetch(acks={("t", 0): [(0, 0, 1)]})
    assert (r.error_code, partition_data(r).acknowledge_error_code) == (0, 0)
    r = m.acknowledge({("t", 0): [(1, 1, 1)]})
    assert (r.error_code, r.responses[0].partitions[0].error_code) == (0, 0)
    assert [state(core, o) for o in (0, 1, 2)] == ["done", "done", "ACQUIRED"]
    m.acknowledge({}, epoch=-1)
    assert state(core, 2) == "AVAILABLE"
    assert core.subsystems.share_sessions.get("sg", m.member_id) is None


@pytest.mark.rule("SS-8, SS-9")
def test_a_disconnect_releases_only_the_connections_latest_session(core) -> None:  # type: ignore[no-untyped-def]
    """SS-8, SS-9 (ShareSessionCache.connectionIdToSessionMap keeps one session per connection): two
    members on one connection; when it drops, only the latest session goes and its records are
    released; the other session and its locks stay until they run out."""
    put(core, [b"a"], partition=0)
    put(core, [b"b"], partition=1)
    a, b = member(core), member(core)
    b.c = a.c  # one connection
    assert acquired(a.fetch({"t": [0]}), 0) == [(0, 0, 1)]
    assert acquired(b.fetch({"t": [1]}), 1) == [(0, 0, 1)]
    core.disconnect(a.c.conn.conn_id)
    assert core.subsystems.share_sessions.get("sg", b.member_id) is None
    assert state(core, 0, 1) == "AVAILABLE"
    assert core.subsystems.share_sessions.get("sg", a.member_id) is not None
    assert state(core, 0, 0) == "ACQUIRED"
    core.advance(30_000)
    assert state(core, 0, 0) == "AVAILABLE"


@pytest.mark.rule("SS-8")
def test_closing_one_session_makes_the_connections_entry_stale(core) -> None:  # type: ignore[no-untyped-def]
    """SS-8 as upstream has it (ShareSessionCache.remove marks the entry of the removed session's
    connection stale, whichever session it names): A and B share a connection, B opened last; A
    closes its session (epoch -1), so the connection's disconnect no longer releases B's records
    (they wait for their lock)."""
    put(core, [b"a"], partition=0)
    put(core, [b"b"], partition=1)
    a, b = member(core), member(core)
    b.c = a.c
    a.fetch({"t": [0]})
    assert acquired(b.fetch({"t": [1]}), 1) == [(0, 0, 1)]
    a.acknowledge({}, epoch=-1)
    core.disconnect(a.c.conn.conn_id)
    assert core.subsystems.share_sessions.get("sg", b.member_id) is not None
    assert state(core, 0, 1) == "ACQUIRED"
    core.advance(30_000)
    assert state(core, 0, 1) == "AVAILABLE"


@pytest.mark.rule("SS-2, SS-8")
def test_a_session_reopened_on_a_new_connection_survives_the_old_ones_disconnect(core) -> None:  # type: ignore[no-untyped-def]
    """SS-2, SS-8 (ShareSessionCache.remove marks the old connection's entry stale): a member that
    reopens its session on a new connection keeps it when the old connection drops."""
    put(core, [b"a"])
    m = member(core)
    m.fetch({"t": [0]})
    old = m.c
    m.c = CoreClient(core)
    m.session_epoch = 0
    m.fetch({"t": [0]})
    core.disconnect(old.conn.conn_id)
    assert core.subsystems.share_sessions.get("sg", m.member_id) is not None
    assert state(core, 0) == "ACQUIRED"


# --- SS-10, SS-11 -----------------------------------------------------------------------------
@pytest.mark.rule("SS-10")
def test_a_fetch_with_acknowledgements_still_waits(core) -> None:  # type: ignore[no-untyped-def]
    """SS-10 (KafkaApis.handleShareFetchRequest sends every non-renew fetch through
    DelayedShareFetch): acknowledgements are applied at once, but the answer waits up to MaxWaitMs
    for records and carries the acknowledgement result when it comes."""
    put(core, [b"a"])
    m = member(core)
    m.fetch({"t": [0]})
    assert m.fetch(acks={("t", 0): [(0, 0, 1)]}, max_wait_ms=5000) is None
    assert state(core, 0) == "done"
    core.advance(4999)
    assert m.c.deferred() == []
    core.advance(1)
    (r,) = m.c.deferred()
    pd = partition_data(r)
    assert (r.error_code, pd.acknowledge_error_code, pd.acquired_records) == (0, 0, [])
    # An append ends the wait early, and the answer has both.
    assert m.fetch(acks={}, max_wait_ms=5000) is None
    put(core, [b"b"])
    (r,) = m.c.deferred()
    assert acquired(r) == [(1, 1, 1)]


@pytest.mark.rule("SS-11")
@pytest.mark.parametrize("limit", [{"max_bytes": 0}, {"max_records": 0}], ids=["MaxBytes", "MaxRecords"])
def test_max_bytes_or_max_records_zero_fetches_nothing_at_once(core, limit) -> None:  # type: ignore[no-untyped-def]
    """SS-11 (SharePartitionManager.processShareFetch: maxFetchRecords 0 or fetch maxBytes 0 completes
    with an empty map): nothing is read or acquired, the answer comes at once despite MaxWaitMs, and
    piggy-backed acknowledgements are still applied and answered."""
    put(core, [b"a", b"b"])
    m = member(core)
    r = m.fetch({"t": [0, 1]}, max_wait_ms=5000, **limit)
    assert r.error_code == 0 and r.responses == []
    assert state(core, 0) == "untouched"
    assert acquired(m.fetch(max_records=1, mode=1)) == [(0, 0, 1)]
    r = m.fetch(acks={("t", 0): [(0, 0, 1)]}, max_wait_ms=5000, **limit)
    pd = partition_data(r)
    assert (pd.acknowledge_error_code, pd.acquired_records) == (0, [])
    assert [state(core, o) for o in (0, 1)] == ["done", "AVAILABLE"]


@pytest.mark.rule("SS-11")
def test_max_bytes_is_split_evenly_over_the_partitions(core) -> None:  # type: ignore[no-untyped-def]
    """SS-11 (DelayedShareFetch reads with PartitionMaxBytesStrategy UNIFORM: each acquirable
    partition gets MaxBytes / n): with room for four log batches and two partitions, each partition
    gets two batches instead of the first taking all four."""
    for p in (0, 1):
        for i in range(6):
            put(core, [b"x%d" % i], partition=p)
    one = len(core.cluster.topics["t"].partitions[0].log.read(0, 2**31 - 1, upto=1))
    m = member(core)
    r = m.fetch({"t": [0, 1]}, max_bytes=4 * one)
    got = {pd.partition_index: [(a.first_offset, a.last_offset) for a in pd.acquired_records]
           for tr in r.responses for pd in tr.partitions}
    assert {p: sum(last - first + 1 for first, last in got[p]) for p in got} == {0: 2, 1: 2}


# --- hostile inputs ---------------------------------------------------------------------------
@pytest.mark.rule("SS-3")
@pytest.mark.parametrize("mode", [2, -1, 127])
def test_an_unknown_acquire_mode_changes_nothing(core, mode, caplog) -> None:  # type: ignore[no-untyped-def]
    """Hostile input (ShareFetch.java: ShareAcquireMode.forId throws for an unknown id; KafkaApis
    answers UNKNOWN_SERVER_ERROR): ShareFetch v2 with ShareAcquireMode outside 0-1 is answered
    UNKNOWN_SERVER_ERROR at the top level before its session epoch moves or an acknowledgement in it
    is applied; no traceback in the log. A renew-only or final request does not fetch, so its mode
    does not matter."""
    put(core, [b"a", b"b"])
    m = member(core)
    opening = m.fetch({"t": [0]}, mode=mode, epoch=0)
    assert (opening.error_code, opening.responses) == (E.UNKNOWN_SERVER_ERROR, [])
    assert core.subsystems.share_sessions.get("sg", m.member_id) is None
    m.fetch({"t": [0]})
    r = m.fetch(acks={("t", 0): [(0, 0, 1)]}, mode=mode, epoch=m.session_epoch)
    assert (r.error_code, r.responses) == (E.UNKNOWN_SERVER_ERROR, [])
    assert state(core, 0) == "ACQUIRED"
    assert m.fetch(acks={("t", 0): [(0, 0, 1)]}).error_code == 0  # the same epoch is still expected
    assert state(core, 0) == "done"
    r = m.fetch(acks={("t", 0): [(1, 1, 4)]}, mode=mode, renew=True, max_wait_ms=0, min_bytes=0, max_bytes=0,
                max_records=0)
    assert (r.error_code, partition_data(r).acknowledge_error_code) == (0, 0)
    assert m.fetch(mode=mode, epoch=-1).error_code == 0
    # A session with nothing to fetch answers normally, as upstream's does (no ShareFetch is built).
    idle = member(core)
    assert idle.fetch({}, mode=mode, max_wait_ms=100) is None
    core.advance(100)
    (r,) = idle.c.deferred()
    assert (r.error_code, r.responses) == (0, [])
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


@pytest.mark.rule("SG-4")
def test_made_up_partition_indexes_do_not_grow_a_session(core) -> None:  # type: ignore[no-untyped-def]
    """Hostile input (SharePartitionManager/KafkaApis answer a partition beyond the topic with
    UNKNOWN_TOPIC_OR_PARTITION): 20,000 made-up partition indexes are answered with that error, but
    the session keeps only partitions that exist, so the next fetches cost what a real session does."""
    put(core, [b"a"])
    m = member(core)
    assert m.fetch({"t": [0]}).error_code == 0
    r = m.fetch({"t": list(range(2, 20_002))})
    got = codes(r)
    assert len(got) == 20_000 and set(got.values()) == {E.UNKNOWN_TOPIC_OR_PARTITION}
    session = core.subsystems.share_sessions.get("sg", m.member_id)
    assert session.partitions == {(m.topic_id("t"), 0)}
    r = m.fetch({"t": [1]})
    assert r.error_code == 0 and codes(r) == {}
    assert session.partitions == {(m.topic_id("t"), 0), (m.topic_id("t"), 1)}


@pytest.mark.rule("SG-5, SS-2")
def test_made_up_members_cannot_take_every_session_slot(core) -> None:  # type: ignore[no-untyped-def]
    """Hostile input. Upstream (SharePartitionManager.newContext, ShareSessionCache.maybeCreateSession)
    does not ask the group at session creation, so a member id the group does not know opens a
    session and fetches (SG-5). But one connection opening sessions for made-up member ids does not
    lock real consumers out: when the broker's cache is full, a session that no disconnect would end
    and whose member the group does not know makes room (its records are released)."""
    core.configs.set(ResourceType.BROKER, "", "group.share.max.share.sessions", "3")
    put(core, [b"a", b"b", b"c"])
    attacker = CoreClient(core)
    fakes = [ShareClient(core) for _ in range(3)]
    for i, f in enumerate(fakes):
        f.c = attacker
        assert acquired(f.fetch({"t": [0]}, max_records=1, mode=1)) == [(i, i, 1)]
    real = member(core)
    assert real.fetch({"t": [0]}, max_records=0).error_code == 0  # a session, no records
    sessions = core.subsystems.share_sessions
    assert sessions.get("sg", fakes[0].member_id) is None  # the least recently used orphan
    assert state(core, 0) == "AVAILABLE"
    assert sessions.get("sg", fakes[2].member_id) is not None  # its connection's latest: a disconnect ends it
    # Real members' sessions are never evicted: with only those and connections' latest left, the
    # cache is full as upstream's is.
    other = member(core)
    assert other.fetch({"t": [0]}, max_records=0).error_code == 0  # evicts fakes[1]
    assert state(core, 1) == "AVAILABLE"
    assert member(core).fetch({"t": [0]}).error_code == E.SHARE_SESSION_LIMIT_REACHED
    assert {sessions.get("sg", x.member_id) is not None for x in (real, other, fakes[2])} == {True}
