"""ShareFetch and ShareAcknowledge through the core: pre-checks, share sessions, RENEW-only
fetches, acknowledgement error placement, long polls, rotation and log-start moves."""

from __future__ import annotations

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


def put(core, values: list[bytes], partition: int = 0) -> None:  # type: ignore[no-untyped-def]
    produce(CoreClient(core), "t", partition, batch(values))


def member(core) -> ShareClient:  # type: ignore[no-untyped-def]
    m = ShareClient(core)
    m.heartbeat(["t"])
    return m


@pytest.mark.rule("SG-3")
@pytest.mark.parametrize(("member_id", "code"), [("", E.INVALID_REQUEST), ("m" * 37, E.INVALID_REQUEST)])
def test_member_id_checks(core, member_id, code) -> None:  # type: ignore[no-untyped-def]
    """SG-3: MemberId empty or over 36 characters → INVALID_REQUEST at the top level, no partitions, lock 0."""
    m = ShareClient(core)
    m.member_id = member_id
    r = m.fetch({"t": [0]})
    assert (r.error_code, r.responses, r.acquisition_lock_timeout_ms) == (code, [], 0)
    assert m.acknowledge({("t", 0): [(0, 0, 1)]}, epoch=1).error_code == code


@pytest.mark.rule("SG-3")
def test_null_group_id_is_invalid_request(core) -> None:  # type: ignore[no-untyped-def]
    """SG-3: GroupId null → INVALID_REQUEST."""
    m = ShareClient(core)
    m.group = None  # type: ignore[assignment]
    assert m.fetch({"t": [0]}).error_code == E.INVALID_REQUEST


@pytest.mark.rule("SG-4")
def test_unknown_topic_id_and_partition(core) -> None:  # type: ignore[no-untyped-def]
    """SG-4: an unknown topic id → UNKNOWN_TOPIC_ID, a partition beyond the topic → UNKNOWN_TOPIC_OR_PARTITION,
    for fetch partitions (ErrorCode) and acknowledgements in ShareAcknowledge (partition ErrorCode)."""
    m = member(core)
    core.create_topic("gone", 1)
    gone_id = m.topic_id("gone")
    core.delete_topic("gone")
    m.topic_id = lambda name, _orig=m.topic_id: gone_id if name == "gone" else _orig(name)  # type: ignore[method-assign]
    r = m.fetch({"t": [5], "gone": [0]})
    codes = {(tr.topic_id, pd.partition_index): pd.error_code for tr in r.responses for pd in tr.partitions}
    assert codes == {(m.topic_id("t"), 5): E.UNKNOWN_TOPIC_OR_PARTITION, (gone_id, 0): E.UNKNOWN_TOPIC_ID}
    a = m.acknowledge({("t", 5): [(0, 0, 1)], ("gone", 0): [(0, 0, 1)]})
    codes = {(tr.topic_id, pd.partition_index): pd.error_code for tr in a.responses for pd in tr.partitions}
    assert codes == {(m.topic_id("t"), 5): E.UNKNOWN_TOPIC_OR_PARTITION, (gone_id, 0): E.UNKNOWN_TOPIC_ID}


@pytest.mark.rule("SS-1, SS-2")
def test_session_cache_limit(core) -> None:  # type: ignore[no-untyped-def]
    """SS-1: at most group.share.max.share.sessions sessions; SS-2: a new one beyond that waits
    MaxWaitMs and is then answered SHARE_SESSION_LIMIT_REACHED."""
    core.configs.set(ResourceType.BROKER, "", "group.share.max.share.sessions", "1")
    member(core).fetch({"t": [0]})
    late = member(core)
    assert late.fetch({"t": [0]}).error_code == E.SHARE_SESSION_LIMIT_REACHED
    assert late.fetch({"t": [0]}, max_wait_ms=500, epoch=0) is None
    core.advance(500)
    (resp,) = late.c.deferred()
    assert resp.error_code == E.SHARE_SESSION_LIMIT_REACHED


@pytest.mark.rule("SS-2")
def test_opening_a_session_with_acknowledgements_is_invalid_request(core) -> None:  # type: ignore[no-untyped-def]
    """SS-2: epoch 0 with acknowledgements → INVALID_REQUEST; a reopened session keeps the old records acquired."""
    put(core, [b"a"])
    m = member(core)
    assert acquired(m.fetch({"t": [0]})) == [(0, 0, 1)]
    assert m.fetch(acks={("t", 0): [(0, 0, 1)]}, epoch=0).error_code == E.INVALID_REQUEST
    m.session_epoch = 0
    m.fetch({"t": [0]})
    assert core.subsystems.share_groups.partitions.get("sg", "t", 0).record_state(0)[0].name == "ACQUIRED"


@pytest.mark.rule("SS-3")
def test_session_epochs(core) -> None:  # type: ignore[no-untyped-def]
    """SS-3: no session → SHARE_SESSION_NOT_FOUND; a wrong epoch → INVALID_SHARE_SESSION_EPOCH; otherwise
    the epoch advances, partitions are added and ForgottenTopicsData removes them."""
    m = member(core)
    assert m.fetch({"t": [0]}, epoch=1).error_code == E.SHARE_SESSION_NOT_FOUND
    m.fetch({"t": [0]})
    assert m.fetch({"t": [0]}, epoch=5).error_code == E.INVALID_SHARE_SESSION_EPOCH
    m.fetch({"t": [1]})
    session = core.subsystems.share_sessions.get("sg", m.member_id)
    assert session.epoch == 2 and session.partitions == {(m.topic_id("t"), 0), (m.topic_id("t"), 1)}
    m.fetch(forgotten={"t": [0]})
    assert session.partitions == {(m.topic_id("t"), 1)}


@pytest.mark.rule("SS-4")
def test_final_fetch_acknowledges_then_closes_and_releases(core) -> None:  # type: ignore[no-untyped-def]
    """SS-4: epoch -1 fetches nothing, applies its acknowledgements, closes the session and releases the rest."""
    put(core, [b"a", b"b", b"c"])
    m = member(core)
    m.fetch({"t": [0]})
    r = m.fetch({"t": [0]}, acks={("t", 0): [(0, 0, 1)]}, epoch=-1)
    pd = partition_data(r)
    assert (pd.acknowledge_error_code, pd.acquired_records) == (0, [])
    assert core.subsystems.share_sessions.get("sg", m.member_id) is None
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert [sp.record_state(o)[0].name for o in (0, 1, 2)] == ["ACKNOWLEDGED", "AVAILABLE", "AVAILABLE"]
    assert m.fetch({"t": [0]}, epoch=-1).error_code == E.SHARE_SESSION_NOT_FOUND


@pytest.mark.rule("SS-5, AK-14")
def test_share_acknowledge_sessions_and_error_placement(core) -> None:  # type: ignore[no-untyped-def]
    """SS-5: ShareAcknowledge epoch 0 → INVALID_SHARE_SESSION_EPOCH, a wrong epoch too, the right one
    advances the epoch shared with ShareFetch; -1 closes. AK-14: the result is the partition ErrorCode."""
    put(core, [b"a", b"b"])
    m = member(core)
    m.fetch({"t": [0]})
    assert m.acknowledge({("t", 0): [(0, 0, 1)]}, epoch=0).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert m.acknowledge({("t", 0): [(0, 0, 1)]}, epoch=9).error_code == E.INVALID_SHARE_SESSION_EPOCH
    r = m.acknowledge({("t", 0): [(0, 0, 2)]})  # RELEASE: AVAILABLE again
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == E.NONE
    bad = m.acknowledge({("t", 0): [(0, 0, 1)]})  # no longer held
    assert bad.error_code == 0 and bad.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
    assert m.fetch({"t": [0]}).error_code == E.NONE  # same epoch sequence
    m.acknowledge({("t", 0): [(1, 1, 2)]}, epoch=-1)  # offset 1 was still held from the first fetch
    assert core.subsystems.share_sessions.get("sg", m.member_id) is None


@pytest.mark.rule("AK-14, SS-6")
def test_fetch_acknowledgement_errors_go_in_acknowledge_error_code(core) -> None:  # type: ignore[no-untyped-def]
    """AK-14: in ShareFetch the acknowledgement result is AcknowledgeErrorCode, the fetch result ErrorCode;
    SS-6: a partition that only had acknowledgements is listed with NONE and no records."""
    put(core, [b"a"])
    put(core, [b"z"], partition=1)
    m = member(core)
    m.fetch({"t": [0, 1]})
    r = m.fetch(acks={("t", 0): [(0, 0, 9)]})
    pd = partition_data(r, 0)
    assert (pd.error_code, pd.acknowledge_error_code, pd.acquired_records) == (0, E.INVALID_REQUEST, [])
    r = m.fetch(acks={("t", 1): [(0, 0, 1)]})
    assert [p.partition_index for tr in r.responses for p in tr.partitions] == [1]
    assert partition_data(r, 1).acknowledge_error_code == E.NONE


@pytest.mark.rule("SS-6")
def test_opening_response_lists_every_partition_later_ones_only_changes(core) -> None:  # type: ignore[no-untyped-def]
    """SS-6: the session-opening answer lists every requested partition; later ones only those with records."""
    m = member(core)
    r = m.fetch({"t": [0, 1]})
    assert sorted(p.partition_index for tr in r.responses for p in tr.partitions) == [0, 1]
    put(core, [b"a"], partition=1)
    r = m.fetch()
    assert [p.partition_index for tr in r.responses for p in tr.partitions] == [1]


@pytest.mark.rule("RN-2")
@pytest.mark.parametrize("field", ["max_wait_ms", "min_bytes", "max_bytes", "max_records"])
def test_renew_only_fetch_must_zero_the_fetch_fields(core, field) -> None:  # type: ignore[no-untyped-def]
    """RN-2: IsRenewAck with any of MaxWaitMs, MinBytes, MaxBytes, MaxRecords non-zero → INVALID_REQUEST, naming it."""
    put(core, [b"a"])
    m = member(core)
    m.fetch({"t": [0]})
    zeros = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
    zeros[field] = 1
    r = m.fetch(acks={("t", 0): [(0, 0, 4)]}, renew=True, **zeros)
    assert r.error_code == E.INVALID_REQUEST and r.responses == []
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert sp.record_state(0)[0].name == "ACQUIRED"


@pytest.mark.rule("RN-3, RN-4")
def test_renew_only_fetch_renews_and_returns_no_records(core) -> None:  # type: ignore[no-untyped-def]
    """RN-3: a valid renew-only ShareFetch applies its acknowledgements and fetches nothing: only the
    acknowledged partitions come back, with no AcquiredRecords; RN-4: the lock runs from now."""
    put(core, [b"a"])
    put(core, [b"b"], partition=1)
    m = member(core)
    m.fetch({"t": [0]})
    core.advance(20_000)
    r = m.fetch(acks={("t", 0): [(0, 0, 4)]}, renew=True, max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0)
    pd = partition_data(r, 0)
    assert (r.error_code, pd.acknowledge_error_code, pd.acquired_records) == (0, 0, [])
    assert [p.partition_index for tr in r.responses for p in tr.partitions] == [0]
    core.advance(20_000)
    assert core.subsystems.share_groups.partitions.get("sg", "t", 0).record_state(0)[0].name == "ACQUIRED"


@pytest.mark.rule("RN-4, AK-14")
def test_a_renewal_survives_a_later_failing_batch_of_the_same_request(core) -> None:  # type: ignore[no-untyped-def]
    """RN-4: ShareAcknowledge v2 renews offset 0, then a batch beyond the acquired records fails the
    partition (INVALID_REQUEST in its ErrorCode, AK-14); the renewal stays as upstream keeps it
    (SharePartition ``acknowledge``: renewals are not on the rollback list), so the record is
    still held when its first lock would have run out."""
    put(core, [b"a"])
    m = member(core)
    assert acquired(m.fetch({"t": [0]})) == [(0, 0, 1)]
    core.advance(20_000)
    r = m.acknowledge({("t", 0): [(0, 0, 4), (5, 5, 1)]}, renew=True)
    assert partition_data(r).error_code == E.INVALID_REQUEST
    core.advance(20_000)
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert sp.record_state(0)[0].name == "ACQUIRED"
    core.advance(10_000)
    assert sp.record_state(0)[0].name == "AVAILABLE"


@pytest.mark.rule("AQ-2, AQ-7")
def test_a_fetch_parked_at_the_lock_limit_is_woken_when_the_start_offset_moves(core) -> None:  # type: ignore[no-untyped-def]
    """AQ-2: at share.partition.max.record.locks the partition is not fetched (DelayedShareFetch
    ``acquirablePartitions``) and a ShareFetch waits; AQ-7: an ACCEPT that moves SPSO makes room and
    wakes it at once, as upstream notifies the partition's delayed fetches after an acknowledgement
    (SharePartitionManager ``acknowledge``); the new records are rounded up to their log batch."""
    core.configs.set(ResourceType.GROUP, "sg", "share.partition.max.record.locks", "100")
    for _ in range(3):
        put(core, [b"x"] * 50)
    m, other = member(core), member(core)
    assert acquired(m.fetch({"t": [0]}, max_records=100)) == [(0, 99, 1)]
    assert other.fetch({"t": [0]}, max_wait_ms=5000) is None
    m.acknowledge({("t", 0): [(10, 19, 1)]})  # SPSO stays at 0: no room, still waiting
    assert other.c.deferred() == []
    m.acknowledge({("t", 0): [(0, 9, 1)]})  # SPSO 20: room for 20, rounded up to the batch end
    (r,) = other.c.deferred()
    assert acquired(r) == [(100, 149, 1)]
    assert core.subsystems.share_groups.partitions.get("sg", "t", 0).in_flight_count() == 130


@pytest.mark.rule("AQ-7")
def test_fetch_waits_and_is_woken_by_produce_and_by_released_records(core) -> None:  # type: ignore[no-untyped-def]
    """AQ-7: with nothing acquirable the fetch waits up to MaxWaitMs; an append wakes it, and so does a
    record another member releases; with no wake-up it answers empty at MaxWaitMs."""
    m, other = member(core), member(core)
    assert m.fetch({"t": [0]}, max_wait_ms=5000) is None
    put(core, [b"a"])
    (r,) = m.c.deferred()
    assert acquired(r) == [(0, 0, 1)]
    assert other.fetch({"t": [0]}, max_wait_ms=5000) is None
    m.acknowledge({("t", 0): [(0, 0, 2)]})  # RELEASE: the other member's fetch acquires it
    (r,) = other.c.deferred()
    assert acquired(r) == [(0, 0, 2)]
    assert m.fetch(max_wait_ms=1000) is None
    core.advance(1000)
    (r,) = m.c.deferred()
    assert r.error_code == 0 and r.responses == []


@pytest.mark.rule("AQ-3, AQ-8")
def test_max_records_spans_partitions_in_a_rotating_order(core) -> None:  # type: ignore[no-untyped-def]
    """AQ-3: MaxRecords caps the records of the whole request (record-limit mode: exactly);
    AQ-8: the partition served first rotates with the session epoch."""
    for p in (0, 1):
        put(core, [b"x"] * 10, partition=p)
    m = member(core)
    firsts = []
    for _ in range(4):
        r = m.fetch({"t": [0, 1]}, max_records=2, mode=1)
        got = [(p.partition_index, a.first_offset, a.last_offset) for tr in r.responses for p in tr.partitions
               for a in p.acquired_records]
        assert sum(last - first + 1 for _, first, last in got) == 2
        firsts.append(got[0][0])
    assert set(firsts) == {0, 1}


@pytest.mark.rule("ST-8, AQ-10")
def test_delete_records_archives_what_falls_below_the_log_start(core) -> None:  # type: ignore[no-untyped-def]
    """ST-8, AQ-10: DeleteRecords moves the log start past AVAILABLE records: they are archived and the
    start offset follows; the next fetch delivers from the new log start."""
    from kwire.protocol.messages.delete_records import DeleteRecordsRequest

    put(core, [b"a", b"b", b"c", b"d"])
    m = member(core)
    m.fetch({"t": [0]}, max_records=2, mode=1)
    m.acknowledge({("t", 0): [(0, 1, 2)]})  # released: AVAILABLE
    CoreClient(core).send(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=3)])],
        timeout_ms=1000), 2)
    r = m.fetch()
    assert acquired(r) == [(3, 3, 1)]
    assert core.subsystems.share_groups.partitions.get("sg", "t", 0).start_offset == 3


@pytest.mark.rule("SG-4")
def test_not_the_leader(core) -> None:  # type: ignore[no-untyped-def]
    """SG-4: a partition led elsewhere → NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint."""
    c, _ = make_core(brokers=3)
    c.create_topic("t", 1)
    leader = c.cluster.topics["t"].partitions[0].leader_id
    other = next(n for n in c.cluster.nodes if n != leader)
    m = ShareClient(c, broker_id=other)
    pd = partition_data(m.fetch({"t": [0]}))
    assert (pd.error_code, pd.current_leader.leader_id) == (E.NOT_LEADER_OR_FOLLOWER, leader)


def test_fault_injection_on_share_partitions(core) -> None:  # type: ignore[no-untyped-def]
    """Control-API faults: an error for one partition's acknowledgements (nothing applied), an error for
    one fetch partition (nothing acquired), and a partition dropped from the answer after it acquired
    (the records stay locked until their lock runs out)."""
    from kwire.broker.core.faults import FaultAction, FaultRule
    from kwire.protocol.registry import ApiKey

    put(core, [b"a", b"b"])
    m = member(core)
    m.fetch({"t": [0]})
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.SHARE_ACKNOWLEDGE, topic="t", partition=0,
                              error_code=E.INVALID_RECORD_STATE))
    r = m.acknowledge({("t", 0): [(0, 1, 1)]})
    assert r.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert sp.record_state(0)[0].name == "ACQUIRED"
    m.acknowledge({("t", 0): [(0, 1, 2)]})  # RELEASE: the fault was used up
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.SHARE_FETCH, topic="t", partition=0,
                              error_code=E.NOT_LEADER_OR_FOLLOWER))
    assert partition_data(m.fetch()).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert sp.record_state(0)[0].name == "AVAILABLE"
    core.faults.add(FaultRule(FaultAction.DROP, api_key=ApiKey.SHARE_FETCH, topic="t"))
    assert m.fetch().responses == []
    assert sp.record_state(0)[0].name == "ACQUIRED"
    core.advance(30_000)
    assert sp.record_state(0)[0].name == "AVAILABLE"
