"""Online classic <-> consumer group migration (KIP-848) through BrokerCore.handle, on the manual
clock: upgrade, classic members inside a consumer group, downgrade, the migration policy and
committed offsets across conversions (docs/group-migration.md, GM-1..GM-13). Upstream:
GroupMetadataManager (consumerGroupHeartbeat / getOrMaybeCreateConsumerGroup, validateOnlineUpgrade,
convertToConsumerGroup, classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup,
consumerGroupFenceMembers, validateOnlineDowngradeWithFencedMembers, convertToClassicGroup),
ConsumerGroup.fromClassicGroup and ClassicGroup.fromConsumerGroup at d79bd502."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.classic_groups import ClassicGroup, GroupState
from kwire.broker.core.consumer_groups import ConsumerGroup, MemberState
from kwire.broker.core.group_migration import decode_subscription, encode_assignment
from kwire.cluster_info import consumer_assignment
from kwire.protocol.data.consumer_protocol_subscription import ConsumerProtocolSubscription
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.broker.groups_helpers import ClassicClient, ConsumerClient, coordinator_of
from tests.broker.helpers import CoreClient, make_core

SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, version: int = 3) -> bytes:
    sub = ConsumerProtocolSubscription(topics=topics, owned_partitions=[
        ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in (owned or {}).items()])
    return version.to_bytes(2, "big") + sub.encode(version)


class Classic(ClassicClient):
    """A classic consumer-protocol member that revokes everything before it rejoins (eager, as the
    Java and librdkafka consumers' default range assignor does) and reads its assignment."""

    def __init__(self, core: Any, topics: list[str], **kw: Any) -> None:
        super().__init__(core, **kw)
        self.topics = topics
        self.owned: dict[str, list[int]] = {}

    def protocols(self, owned: dict[str, list[int]] | None = None) -> tuple[tuple[str, bytes], ...]:
        meta = subscription(self.topics, owned)
        return (("range", meta), ("cooperative-sticky", meta))

    def rejoin(self, *, owned: dict[str, list[int]] | None = None) -> Any:
        """JoinGroup (eager: owning nothing unless told), MEMBER_ID_REQUIRED answered."""
        if owned is None:
            self.owned = {}
        return self.join_with_id(7, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS, protocols=self.protocols(owned))

    def sync_assignment(self, **kw: Any) -> Any:
        resp = self.sync(5, **kw)
        if resp is not None and resp.error_code == E.NONE:
            self.owned = consumer_assignment(bytes(resp.assignment))
        return resp

    def parts(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


@pytest.fixture
def core() -> Any:
    core, clock = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    core.create_topic("t", 4)
    core.clock_ = clock  # type: ignore[attr-defined]
    return core


def classic_group(core: Any, n: int, topics: list[str] | None = None) -> list[Classic]:
    """n classic members, Stable, with a real range assignment from the leader."""
    clients = [Classic(core, topics or ["t"]) for _ in range(n)]
    for c in clients:
        assert c.rejoin() is None
    core.fire_due()
    for c in clients:
        assert c.answer().error_code == E.NONE
    leader = next(c for c in clients if c.member_id == c.leader)
    ids = sorted(c.member_id for c in clients)
    parts = len(core.cluster.topics["t"].partitions)
    plan = {mid: [p for p in range(parts) if p % len(ids) == i] for i, mid in enumerate(ids)}
    for c in clients:
        if c is not leader:
            assert c.sync_assignment() is None
    assert leader.sync_assignment(assignments={
        mid: encode_assignment({"t": ps}, 3) for mid, ps in plan.items()}).error_code == E.NONE
    for c in clients:
        if c is not leader:
            c.owned = consumer_assignment(bytes(c.answer().assignment))
    return clients


def the_group(core: Any) -> Any:
    return coordinator_of(core).groups["g"]


def owners(core: Any, members: list[Any]) -> None:
    """No partition is held by two members at once (classic: what it synced; consumer: owned)."""
    seen: set[tuple[str, int]] = set()
    for m in members:
        held = m.parts() if isinstance(m, Classic) else m.partitions(core)
        assert not held & seen, f"{held & seen} held twice"
        seen |= held


def commit(c: CoreClient, generation: int, member_id: str, offset: int, version: int = 8) -> int:
    resp = c.send(OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=generation, member_id=member_id,
                                      topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                          OffsetCommitRequest.OffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=offset)])]), version)
    return int(resp.topics[0].partitions[0].error_code)


def committed(core: Any) -> int:
    resp = CoreClient(core).send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="g", topics=None)]), 9)
    parts = {p.partition_index: p.committed_offset for t in resp.groups[0].topics for p in t.partitions}
    return parts.get(0, -1)


def settle(core: Any, classic: list[Classic], consumers: list[ConsumerClient], rounds: int = 6) -> None:
    """Let every member follow the protocol until nothing changes: consumers heartbeat with what
    they own; classic members heartbeat, and rejoin and sync when told to."""
    for _ in range(rounds):
        for c in consumers:
            assert c.heartbeat().error_code == E.NONE
        for k in classic:
            code = k.heartbeat()
            if code == E.REBALANCE_IN_PROGRESS:
                resp = k.rejoin()
                assert resp is not None and resp.error_code == E.NONE, resp
                assert k.sync_assignment().error_code == E.NONE
            else:
                assert code == E.NONE
        owners(core, [*classic, *consumers])


# --- upgrade ------------------------------------------------------------------------------------
@pytest.mark.rule("GM-1")
def test_a_consumer_member_joining_a_live_classic_group_converts_it(core: Any) -> None:
    a, b = classic_group(core, 2)
    gen = a.generation
    c = ConsumerClient(core, topics=["t"])
    resp = c.heartbeat()
    assert resp.error_code == E.NONE
    g = the_group(core)
    assert isinstance(g, ConsumerGroup)
    for k in (a, b):
        m = g.members[k.member_id]
        assert m.classic is not None and m.classic.session_timeout_ms == SESSION_MS
        assert m.subscribed_topic_names == ("t",) and m.previous_member_epoch == gen
        assert {(core.cluster.topics_by_id[t].name, p) for t, ps in m.assigned.items() for p in ps} == k.parts()
    # The new member waits for partitions the classic members still hold: none is held twice.
    assert g.group_epoch == gen + 1 and c.partitions(core) == set()
    assert g.members[c.member_id].state is MemberState.UNRELEASED_PARTITIONS
    described = CoreClient(core).send(ConsumerGroupDescribeRequest(group_ids=["g"]), 1).groups[0].members
    assert sorted((m.member_id, m.member_type) for m in described) == sorted(
        [(a.member_id, 0), (b.member_id, 0), (c.member_id, 1)])
    listed = CoreClient(core).send(ListGroupsRequest(types_filter=[]), 5).groups
    assert [(x.group_id, x.group_type, x.protocol_type) for x in listed] == [("g", "consumer", "consumer")]
    settle(core, [a, b], [c])
    assert sorted(len(x) for x in (a.parts(), b.parts(), c.partitions(core))) == [1, 1, 2]


@pytest.mark.rule("GM-2")
def test_joins_and_syncs_still_waiting_are_told_to_rejoin(core: Any) -> None:
    a, b = classic_group(core, 2)
    assert a.rejoin() is None  # a rebalance starts; a's JoinGroup waits for b
    ConsumerClient(core, topics=["t"]).heartbeat()
    assert a.answer().error_code == E.REBALANCE_IN_PROGRESS
    assert isinstance(the_group(core), ConsumerGroup)


@pytest.mark.rule("GM-8")
@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_no_upgrade_where_the_policy_forbids_it(policy: str) -> None:
    core, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0",
                                  "group.consumer.migration.policy": policy.upper()})
    core.create_topic("t", 4)
    classic_group(core, 1)
    resp = ConsumerClient(core, topics=["t"]).heartbeat()
    assert (resp.error_code, resp.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because online upgrade is disabled.")
    assert isinstance(the_group(core), ClassicGroup)


@pytest.mark.rule("GM-12")
def test_no_upgrade_for_another_protocol_type_a_custom_assignor_or_a_full_group(core: Any) -> None:
    k = ClassicClient(core)
    assert k.join_with_id(protocol_type="connect", protocols=(("default", b"x"),)) is None
    core.fire_due()
    k.answer()
    resp = ConsumerClient(core, topics=["t"]).heartbeat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "does not use the consumer embedded protocol" in (
        resp.error_message or "")

    core2, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    core2.create_topic("t", 4)
    a = Classic(core2, ["t"])
    assert a.rejoin() is None
    core2.fire_due()
    a.answer()
    user_data = b"\x00\x01" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x02ud"  # v1, no partitions, user data
    assert a.sync_assignment(assignments={a.member_id: user_data}).error_code == E.NONE
    resp = ConsumerClient(core2, topics=["t"]).heartbeat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "unsupported custom assignor" in (resp.error_message or "")

    core3, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0", "group.consumer.max.size": "1"})
    core3.create_topic("t", 4)
    classic_group(core3, 2)
    resp = ConsumerClient(core3, topics=["t"]).heartbeat()
    assert resp.error_code == E.GROUP_ID_NOT_FOUND and "exceeds the consumer group maximum size" in (
        resp.error_message or "")


# --- classic members in a consumer group -------------------------------------------------------
@pytest.mark.rule("GM-3")
def test_a_classic_member_joins_a_consumer_group_through_join_group(core: Any) -> None:
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    k = Classic(core, ["t"])
    first = k.join(7, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS, protocols=k.protocols())
    assert first is not None and first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    resp = k.rejoin()
    assert resp is not None and resp.error_code == E.NONE  # answered at once, no join phase
    g = the_group(core)
    m = g.members[k.member_id]
    assert (resp.generation_id, resp.protocol_type, resp.protocol_name) == (m.member_epoch, "consumer", "range")
    assert resp.leader == "" and resp.members == []  # the server-side assignor does the leader's work
    assert k.sync_assignment().error_code == E.NONE
    settle(core, [k], [c])
    assert len(k.parts()) == 2 and len(c.partitions(core)) == 2


@pytest.mark.rule("GM-3")
def test_join_refusals_inside_a_consumer_group(core: Any) -> None:
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    bad = ClassicClient(core)
    resp = bad.join_with_id(protocols=(("range", b"\x00"),))
    assert resp is not None and resp.error_code == E.INCONSISTENT_GROUP_PROTOCOL  # malformed subscription
    other = ClassicClient(core)
    assert other.join_with_id(protocol_type="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    k = Classic(core, ["t"])
    k.rejoin()
    only_new = Classic(core, ["t"])
    resp = only_new.join_with_id(protocols=(("roundrobin", subscription(["t"])),))
    assert resp.error_code == E.INCONSISTENT_GROUP_PROTOCOL  # no protocol every classic member supports


@pytest.mark.rule("GM-4")
def test_sync_group_hands_out_the_current_assignment_and_checks_generation_and_protocol(core: Any) -> None:
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    k = Classic(core, ["t"])
    k.rejoin()
    assert k.sync(5, generation=k.generation + 1).error_code == E.ILLEGAL_GENERATION
    c2 = ClassicClient(core)
    c2.member_id, c2.generation = c.member_id, c.epoch
    assert c2.sync(5).error_code == E.UNKNOWN_MEMBER_ID  # a consumer-protocol member
    resp = k.sync_assignment()
    assert resp.error_code == E.NONE and (resp.protocol_type, resp.protocol_name) == ("consumer", "range")
    m = the_group(core).members[k.member_id]
    assert k.parts() == {(core.cluster.topics_by_id[t].name, p) for t, ps in m.assigned.items() for p in ps}
    assert int.from_bytes(bytes(resp.assignment)[:2], "big") == 3  # the subscription's version


@pytest.mark.rule("GM-5")
def test_heartbeat_signals_rebalance_and_the_classic_member_catches_up_by_rejoining(core: Any) -> None:
    a, b = classic_group(core, 2)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    g = the_group(core)
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS  # the target moved past its epoch
    assert a.sync(5).error_code == E.REBALANCE_IN_PROGRESS
    assert g.members[a.member_id].join_timer is not None
    resp = a.rejoin()  # eager: owns nothing now
    assert resp.error_code == E.NONE and resp.generation_id == g.assignment_epoch
    assert g.members[a.member_id].join_timer is None
    assert a.sync_assignment().error_code == E.NONE
    settle(core, [a, b], [c])
    assert all(x.heartbeat() == E.NONE for x in (a, b))


@pytest.mark.rule("GM-6")
def test_leave_group_removes_classic_members_and_refuses_unknown_ones(core: Any) -> None:
    a, b = classic_group(core, 2)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    epoch = the_group(core).group_epoch
    resp = a.leave()
    assert resp.error_code == E.NONE and [m.error_code for m in resp.members] == [E.NONE]
    g = the_group(core)
    assert isinstance(g, ConsumerGroup) and a.member_id not in g.members and g.group_epoch == epoch + 1
    ghost = ClassicClient(core)
    ghost.member_id = "nobody"
    assert [m.error_code for m in ghost.leave().members] == [E.UNKNOWN_MEMBER_ID]
    assert b.heartbeat(member_id="nobody") == E.UNKNOWN_MEMBER_ID


@pytest.mark.rule("GM-7")
def test_no_sync_within_the_rebalance_timeout_fences_the_member(core: Any) -> None:
    """scheduleConsumerGroupSyncTimeout: the join's rebalance timeout, shorter than the session here."""
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    k = Classic(core, ["t"])
    assert k.join_with_id(session_ms=30_000, rebalance_ms=5_000, protocols=k.protocols()).error_code == E.NONE
    core.advance(4_999)
    assert k.member_id in the_group(core).members
    core.advance(1)
    assert k.member_id not in the_group(core).members


@pytest.mark.rule("GM-7")
def test_the_classic_session_timeout_fences_a_silent_member(core: Any) -> None:
    """The member's own JoinGroup session timeout, not consumer.session.timeout.ms (45 s)."""
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    k = Classic(core, ["t"])
    k.rejoin()
    assert k.sync_assignment().error_code == E.NONE
    core.advance(SESSION_MS - 1)
    c.heartbeat()
    assert k.member_id in the_group(core).members
    assert k.heartbeat() in (E.NONE, E.REBALANCE_IN_PROGRESS)  # a heartbeat renews the session
    core.advance(SESSION_MS - 1)
    assert k.member_id in the_group(core).members
    core.advance(1)
    assert k.member_id not in the_group(core).members


@pytest.mark.rule("GM-7")
def test_a_member_told_to_rejoin_that_never_does_is_fenced_after_its_rebalance_timeout(core: Any) -> None:
    """scheduleConsumerGroupJoinTimeoutIfAbsent: armed by the first REBALANCE_IN_PROGRESS, not moved by later ones."""
    (k,) = classic_group(core, 1)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    assert k.heartbeat() == E.REBALANCE_IN_PROGRESS
    for _ in range(REBALANCE_MS // 5_000 - 1):
        core.advance(5_000)
        assert k.heartbeat() == E.REBALANCE_IN_PROGRESS
        c.heartbeat()
    core.advance(4_999)
    assert k.member_id in the_group(core).members
    core.advance(1)
    g = the_group(core)
    assert isinstance(g, ConsumerGroup) and k.member_id not in g.members


# --- downgrade ----------------------------------------------------------------------------------
@pytest.mark.rule("GM-9")
def test_the_last_consumer_member_leaving_converts_the_group_back(core: Any) -> None:
    a, b = classic_group(core, 2)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    settle(core, [a, b], [c])
    g = the_group(core)
    epoch = g.group_epoch
    targets = {k.member_id: g.target[k.member_id] for k in (a, b)}
    assert c.leave().error_code == E.NONE
    cg = the_group(core)
    assert isinstance(cg, ClassicGroup)
    assert cg.generation_id == epoch and cg.state is GroupState.PREPARING_REBALANCE
    assert cg.protocol_type == "consumer" and cg.protocol_name == "range"
    for k in (a, b):
        held = consumer_assignment(cg.members[k.member_id].assignment)
        by_id = core.cluster.topics_by_id
        assert held == {by_id[t].name: sorted(ps) for t, ps in targets[k.member_id].items()}
    # The classic members hear of the rebalance and go through a classic join and sync.
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS and b.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert a.rejoin() is None
    assert b.rejoin().error_code == E.NONE  # the last member in completes the join phase
    assert a.answer().error_code == E.NONE and a.generation == b.generation == epoch + 1
    leader = a if a.member_id == a.leader else b
    follower = b if leader is a else a
    assert follower.sync_assignment() is None
    plan = {a.member_id: {"t": [0, 1]}, b.member_id: {"t": [2, 3]}}
    assert leader.sync_assignment(assignments={m: encode_assignment(p, 3) for m, p in plan.items()}
                                  ).error_code == E.NONE
    follower.owned = consumer_assignment(bytes(follower.answer().assignment))
    assert cg.state is GroupState.STABLE and a.parts() | b.parts() == {("t", p) for p in range(4)}


@pytest.mark.rule("GM-9")
def test_a_session_timeout_of_the_last_consumer_member_downgrades_too(core: Any) -> None:
    (a,) = classic_group(core, 1)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    for _ in range(8):  # 40 s: c's 45 s session is not over yet
        core.advance(5_000)
        settle(core, [a], [], rounds=1)
    assert isinstance(the_group(core), ConsumerGroup)
    core.advance(5_000)
    assert c.member_id not in the_group(core).members
    cg = the_group(core)
    assert isinstance(cg, ClassicGroup) and set(cg.members) == {a.member_id}


@pytest.mark.rule("GM-8")
def test_upgrade_policy_keeps_the_group_a_consumer_group() -> None:
    core, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0", "group.consumer.migration.policy": "upgrade"})
    core.create_topic("t", 4)
    a, b = classic_group(core, 2)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    c.leave()
    g = the_group(core)
    assert isinstance(g, ConsumerGroup) and set(g.members) == {a.member_id, b.member_id}


@pytest.mark.rule("GM-8")
def test_disabled_policy_keeps_classic_members_out_of_consumer_groups() -> None:
    core, _ = make_core(settings={"group.consumer.migration.policy": "disabled"})
    core.create_topic("t", 4)
    ConsumerClient(core, topics=["t"]).heartbeat()
    k = Classic(core, ["t"])
    resp = k.rejoin()
    assert resp.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert len(the_group(core).members) == 1


# --- offsets ------------------------------------------------------------------------------------
@pytest.mark.rule("GM-10")
def test_committed_offsets_survive_upgrade_and_downgrade(core: Any) -> None:
    (a,) = classic_group(core, 1)
    assert commit(a, a.generation, a.member_id, 5) == E.NONE
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    assert isinstance(the_group(core), ConsumerGroup) and committed(core) == 5
    c.leave()
    assert isinstance(the_group(core), ClassicGroup) and committed(core) == 5


@pytest.mark.rule("GM-11")
def test_a_classic_member_commits_with_its_member_epoch(core: Any) -> None:
    (a,) = classic_group(core, 1)
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    epoch = the_group(core).members[a.member_id].member_epoch
    assert commit(a, epoch, a.member_id, 7, version=8) == E.NONE  # below v9 is fine for classic members
    assert commit(a, epoch + 5, a.member_id, 8) == E.ILLEGAL_GENERATION
    assert committed(core) == 7


@pytest.mark.rule("GM-13")
def test_a_classic_instance_replacing_the_last_consumer_member_converts_back_at_once(core: Any) -> None:
    (a,) = classic_group(core, 1)
    c = ConsumerClient(core, topics=["t"], instance_id="i-1")
    c.heartbeat()
    settle(core, [a], [c])
    g = the_group(core)
    target = g.target[c.member_id]
    k = Classic(core, ["t"], instance_id="i-1")  # the same instance, restarted with the classic protocol
    resp = k.rejoin()
    assert resp is not None and resp.error_code == E.NONE
    cg = the_group(core)
    assert isinstance(cg, ClassicGroup) and set(cg.members) == {a.member_id, k.member_id}
    assert cg.state is GroupState.STABLE and cg.static_members == {"i-1": k.member_id}
    assert resp.generation_id == cg.generation_id  # the target was current: no rebalance
    by_id = core.cluster.topics_by_id
    assert k.sync_assignment().error_code == E.NONE
    assert k.owned == {by_id[t].name: sorted(ps) for t, ps in target.items()}
    assert a.heartbeat() == E.NONE


@pytest.mark.rule("GM-13")
def test_a_classic_instance_replacing_a_classic_member_keeps_the_consumer_group(core: Any) -> None:
    c = ConsumerClient(core, topics=["t"])
    c.heartbeat()
    k = Classic(core, ["t"], instance_id="i-1")
    k.rejoin()
    again = Classic(core, ["t"], instance_id="i-1")
    assert again.rejoin().error_code == E.NONE
    g = the_group(core)
    assert isinstance(g, ConsumerGroup) and g.static_members == {"i-1": again.member_id}
    assert k.member_id not in g.members and k.heartbeat() == E.FENCED_INSTANCE_ID


@pytest.mark.rule("GM-1")
def test_a_static_classic_member_restarted_with_the_consumer_protocol_takes_its_instance_over(core: Any) -> None:
    """getOrMaybeSubscribeStaticConsumerGroupMember: UNRELEASED_INSTANCE_ID only between two
    consumer-protocol members; a classic member's instance is replaced at once."""
    k = Classic(core, ["t"], instance_id="i-1")
    assert k.rejoin() is None
    core.fire_due()
    k.answer()
    assert k.sync_assignment(assignments={k.member_id: encode_assignment({"t": [0, 1, 2, 3]}, 3)}).error_code == 0
    other = Classic(core, ["t"])
    assert other.rejoin() is None
    assert k.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert k.rejoin(owned={}).error_code == E.NONE
    other.answer()
    c = ConsumerClient(core, topics=["t"], instance_id="i-1")
    resp = c.heartbeat()
    assert resp.error_code == E.NONE
    g = the_group(core)
    assert isinstance(g, ConsumerGroup) and g.static_members == {"i-1": c.member_id}
    assert k.member_id not in g.members and g.members[c.member_id].classic is None


def test_subscription_round_trip() -> None:
    sub = decode_subscription(subscription(["t", "u"], {"t": [1]}))
    assert (sub.topics, [(x.topic, x.partitions) for x in sub.owned_partitions]) == (["t", "u"], [("t", [1])])
    assert consumer_assignment(encode_assignment({"t": [2, 0]}, 1)) == {"t": [0, 2]}
