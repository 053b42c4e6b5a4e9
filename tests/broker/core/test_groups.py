"""Classic groups through BrokerCore.handle: JoinGroup/SyncGroup/Heartbeat/LeaveGroup, timers on
the manual clock, static membership, coordinator checks. No sockets, no trio."""

from __future__ import annotations

import re

import pytest

from kwire.broker.core.classic_groups import GroupState
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.describe_groups import DescribeGroupsRequest
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.leave_group import LeaveGroupRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from tests.broker.groups_helpers import ClassicClient, coordinator_of, stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


def group_state(core, group="g"):
    return coordinator_of(core).groups[group]


def test_member_id_required_hands_out_client_id_uuid_then_join_waits_for_the_initial_delay():
    core, clock = make_core()  # group.initial.rebalance.delay.ms default 3000
    c = ClassicClient(core)
    first = c.join(4)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert re.fullmatch(r"test-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first.member_id)
    assert first.generation_id == -1
    assert c.join(4) is None  # deferred: the group waits for more members
    clock.advance(2_999)
    core.fire_due()
    assert c.answers() == []
    clock.advance(1)
    core.fire_due()
    resp = c.answer()
    assert (resp.error_code, resp.generation_id, resp.leader) == (E.NONE, 1, first.member_id)
    assert [m.member_id for m in resp.members] == [first.member_id]
    assert resp.protocol_name == "range"
    assert group_state(core).state is GroupState.COMPLETING_REBALANCE


def test_join_before_v4_gets_a_member_id_without_the_extra_round():
    core, _ = make_core(settings=NO_DELAY)
    c = ClassicClient(core)
    assert c.join(3) is None
    core.fire_due()
    resp = c.answer()
    assert resp.error_code == E.NONE and resp.member_id.startswith("test-")


def test_initial_delay_extends_while_new_members_keep_joining_up_to_the_rebalance_timeout():
    core, clock = make_core(settings={"group.initial.rebalance.delay.ms": "1000"})
    a, b = ClassicClient(core), ClassicClient(core)
    assert a.join_with_id(rebalance_ms=2_500) is None
    clock.advance(900)
    assert b.join_with_id(rebalance_ms=2_500) is None
    clock.advance(100)  # first delay over, but a member arrived during it: wait again
    core.fire_due()
    assert a.answers() == [] and b.answers() == []
    clock.advance(1_000)
    core.fire_due()
    assert a.answer().generation_id == 1 and b.answer().generation_id == 1


def test_two_members_rebalance_and_both_get_the_leaders_assignment():
    core, _ = make_core(settings=NO_DELAY)
    (a,) = stable_group(core, 1)
    assert a.generation == 1
    b = ClassicClient(core)
    assert b.join_with_id() is None
    assert group_state(core).state is GroupState.PREPARING_REBALANCE
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
    ja = a.join()  # the last known member rejoined: the join phase completes at once
    jb = b.answer()
    assert ja.generation_id == jb.generation_id == 2
    assert ja.leader == jb.leader == a.member_id
    assert sorted(m.member_id for m in ja.members) == sorted([a.member_id, b.member_id])
    assert jb.members == []
    assert b.sync() is None
    resp = a.sync(assignments={a.member_id: b"A", b.member_id: b"B"})
    assert (resp.error_code, resp.assignment) == (E.NONE, b"A")
    assert b.answer().assignment == b"B"
    assert group_state(core).state is GroupState.STABLE
    assert a.heartbeat() == b.heartbeat() == E.NONE


def test_leaving_member_triggers_a_rebalance_without_it():
    core, _ = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    resp = b.leave()
    assert resp.error_code == E.NONE
    assert [(m.member_id, m.error_code) for m in resp.members] == [(b.member_id, E.NONE)]
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
    resp = a.join()
    assert resp.generation_id == 2 and [m.member_id for m in resp.members] == [a.member_id]
    assert b.heartbeat() == E.UNKNOWN_MEMBER_ID


def test_last_member_leaving_empties_the_group():
    core, _ = make_core(settings=NO_DELAY)
    (a,) = stable_group(core, 1)
    assert a.leave(1).error_code == E.NONE
    g = group_state(core)
    assert g.state is GroupState.EMPTY and g.generation_id == 2 and g.leader_id is None


def test_session_expiry_removes_a_silent_member_and_starts_a_rebalance():
    core, clock = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    for _ in range(3):
        clock.advance(3_000)
        core.fire_due()
        assert a.heartbeat() == E.NONE  # a keeps its session alive; b says nothing
    assert group_state(core).state is GroupState.STABLE
    clock.advance(3_000)  # b's 10 s session has passed
    core.fire_due()
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert b.heartbeat() == E.UNKNOWN_MEMBER_ID
    assert [m.member_id for m in a.join().members] == [a.member_id]


def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    core, clock = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2, join={"rebalance_ms": 8_000, "session_ms": 60_000})
    assert a.join(rebalance_ms=8_000, session_ms=60_000) is None  # the leader's rejoin forces a rebalance
    clock.advance(7_999)
    core.fire_due()
    assert a.answers() == []
    clock.advance(1)
    core.fire_due()
    resp = a.answer()
    assert resp.generation_id == 2
    assert [m.member_id for m in resp.members] == [a.member_id]
    assert b.heartbeat() == E.UNKNOWN_MEMBER_ID


def test_waiting_on_a_rebalance_does_not_expire_the_session():
    core, clock = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2, join={"rebalance_ms": 60_000})
    assert a.join(rebalance_ms=60_000) is None
    for _ in range(10):  # 30 s: well past a's 10 s session, but a waits on its JoinGroup
        clock.advance(3_000)
        core.fire_due()
        assert b.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert b.join().error_code == E.NONE
    assert a.answer().error_code == E.NONE


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout():
    core, clock = make_core(settings=NO_DELAY)
    a, b = (ClassicClient(core) for _ in range(2))
    for c in (a, b):
        assert c.join_with_id(rebalance_ms=5_000) is None
    core.fire_due()
    a.answer(), b.answer()
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    assert leader.sync(assignments={leader.member_id: b"x", follower.member_id: b"y"}).error_code == E.NONE
    clock.advance(5_000)
    core.fire_due()
    g = group_state(core)
    assert list(g.members) == [leader.member_id]
    assert g.state is GroupState.PREPARING_REBALANCE
    assert follower.heartbeat() == E.UNKNOWN_MEMBER_ID


def test_sync_waits_for_the_leader_and_a_rebalance_cancels_it():
    core, _ = make_core(settings=NO_DELAY)
    a, b = (ClassicClient(core) for _ in range(2))
    for c in (a, b):
        c.join_with_id()
    core.fire_due()
    a.answer(), b.answer()
    follower = a if a.member_id != a.leader else b
    assert follower.sync() is None
    ClassicClient(core).join_with_id()  # a newcomer voids the assignment being synced
    assert follower.answer().error_code == E.REBALANCE_IN_PROGRESS


def test_pending_member_id_is_forgotten_after_the_session_timeout():
    core, clock = make_core(settings=NO_DELAY)
    (a,) = stable_group(core, 1)
    b = ClassicClient(core)
    assert b.join(4).error_code == E.MEMBER_ID_REQUIRED
    assert b.member_id in group_state(core).pending_members
    clock.advance(10_000)
    core.fire_due()
    assert group_state(core).pending_members == {}
    assert b.join(4).error_code == E.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_in_a_stable_group_keeps_the_generation_and_fences_the_old_id():
    core, _ = make_core(settings=NO_DELAY)
    a = ClassicClient(core, instance_id="i-a")
    b = ClassicClient(core, instance_id="i-b")
    for c in (a, b):
        assert c.join() is None  # static members skip MEMBER_ID_REQUIRED
    core.fire_due()
    a.answer(), b.answer()
    assert a.member_id.startswith("i-a-")
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    follower.sync()
    leader.sync(assignments={a.member_id: b"A", b.member_id: b"B"})
    follower.answers()
    old_id, generation = follower.member_id, follower.generation
    restarted = ClassicClient(core, instance_id=follower.instance_id)
    resp = restarted.join()
    assert resp is not None, "a static rejoin of a stable group is answered at once"
    assert (resp.error_code, resp.generation_id) == (E.NONE, generation)
    assert resp.member_id != old_id and resp.members == [] and not resp.skip_assignment
    assert restarted.sync().assignment == (b"A" if follower is a else b"B")
    assert leader.heartbeat() == E.NONE  # no rebalance happened
    assert group_state(core).state is GroupState.STABLE
    assert follower.heartbeat() == E.FENCED_INSTANCE_ID
    assert follower.join().error_code == E.FENCED_INSTANCE_ID


def test_static_leader_rejoin_gets_members_and_skip_assignment_in_v9():
    core, _ = make_core(settings=NO_DELAY)
    a = ClassicClient(core, instance_id="i-a")
    assert a.join(9) is None
    core.fire_due()
    a.answer()
    a.sync(assignments={a.member_id: b"A"})
    again = ClassicClient(core, instance_id="i-a")
    resp = again.join(9)
    assert resp.skip_assignment and resp.leader == resp.member_id
    assert [m.group_instance_id for m in resp.members] == ["i-a"]
    assert resp.protocol_type == "consumer" and resp.protocol_name == "range"


def test_static_member_is_kept_when_it_misses_a_rebalance_until_its_session_ends():
    core, clock = make_core(settings=NO_DELAY)
    a = ClassicClient(core)
    s = ClassicClient(core, instance_id="i-s")
    a.join_with_id(session_ms=60_000, rebalance_ms=5_000), s.join(session_ms=20_000, rebalance_ms=5_000)
    core.fire_due()
    a.answer(), s.answer()
    assert a.leader == a.member_id
    assert s.sync() is None
    a.sync(assignments={a.member_id: b"A", s.member_id: b"S"})
    assert s.answer().assignment == b"S"
    assert a.join(session_ms=60_000, rebalance_ms=5_000) is None  # the leader's rejoin: a rebalance
    clock.advance(5_000)
    core.fire_due()
    resp = a.answer()  # the join phase ended without s, which is static: it stays
    assert sorted(m.group_instance_id or "" for m in resp.members) == ["", "i-s"]
    assert s.instance_id in group_state(core).static_members
    clock.advance(15_000)  # s's session ends
    core.fire_due()
    assert s.instance_id not in group_state(core).static_members


def test_illegal_generation_and_unknown_member():
    core, _ = make_core(settings=NO_DELAY)
    (a,) = stable_group(core, 1)
    assert a.heartbeat(generation=a.generation + 1) == E.ILLEGAL_GENERATION
    assert a.heartbeat(member_id="nobody") == E.UNKNOWN_MEMBER_ID
    assert a.sync(generation=7).error_code == E.ILLEGAL_GENERATION
    assert a.join(member_id="nobody").error_code == E.UNKNOWN_MEMBER_ID
    stranger = ClassicClient(core, group="unknown-group")
    stranger.member_id, stranger.generation = "m", 1
    assert stranger.heartbeat() == E.UNKNOWN_MEMBER_ID
    assert stranger.sync().error_code == E.UNKNOWN_MEMBER_ID
    assert stranger.join(member_id="m").error_code == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("session_ms", [5_999, 1_800_001])
def test_session_timeout_outside_the_broker_bounds_is_invalid(session_ms):
    core, _ = make_core(settings=NO_DELAY)
    assert ClassicClient(core).join(session_ms=session_ms).error_code == E.INVALID_SESSION_TIMEOUT


def test_session_timeout_bounds_follow_the_broker_configs():
    core, _ = make_core(settings={**NO_DELAY, "group.min.session.timeout.ms": "100"})
    assert ClassicClient(core).join(session_ms=100).error_code == E.MEMBER_ID_REQUIRED


def test_protocol_mismatch_is_inconsistent_group_protocol():
    core, _ = make_core(settings=NO_DELAY)
    stable_group(core, 1)
    c = ClassicClient(core)
    assert c.join(3, protocols=(("roundrobin", b""),)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert c.join(3, protocol_type="connect").error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert ClassicClient(core, group="other").join(3, protocols=()).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_vote_picks_the_choice_supported_by_all():
    core, _ = make_core(settings=NO_DELAY)
    a, b = ClassicClient(core), ClassicClient(core)
    c = ClassicClient(core)
    a.join_with_id(protocols=(("cooperative-sticky", b"a1"), ("range", b"a2")))
    b.join_with_id(protocols=(("range", b"b1"), ("cooperative-sticky", b"b2"), ("roundrobin", b"b3")))
    c.join_with_id(protocols=(("cooperative-sticky", b"c1"), ("range", b"c2")))
    core.fire_due()
    answers = [x.answer() for x in (a, b, c)]
    assert {r.protocol_name for r in answers} == {"cooperative-sticky"}  # two votes to one
    leader = next(r for r in answers if r.leader == r.member_id)
    assert {m.member_id: m.metadata for m in leader.members} == {
        a.member_id: b"a1", b.member_id: b"b2", c.member_id: b"c1"}


def test_group_max_size_refuses_new_members():
    core, _ = make_core(settings={**NO_DELAY, "group.max.size": "1"})
    stable_group(core, 1)
    assert ClassicClient(core).join(3).error_code == E.GROUP_MAX_SIZE_REACHED


def test_empty_group_id_is_invalid():
    core, _ = make_core(settings=NO_DELAY)
    assert ClassicClient(core, group="").join().error_code == E.INVALID_GROUP_ID


def test_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator():
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    coord = core.coordinator_for("g").node_id
    other = next(n for n in core.cluster.nodes if n != coord)
    fc = CoreClient(core, other).send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]), 4)
    assert {c.key: c.node_id for c in fc.coordinators} == {"g": coord, "h": core.coordinator_for("h").node_id}
    c = ClassicClient(core, broker_id=other)
    c.member_id, c.generation = "m", 1
    assert c.join().error_code == E.NOT_COORDINATOR
    assert c.sync().error_code == E.NOT_COORDINATOR
    assert c.heartbeat() == E.NOT_COORDINATOR
    assert c.leave().error_code == E.NOT_COORDINATOR
    assert c.send(DescribeGroupsRequest(groups=["g"]), 5).groups[0].error_code == E.NOT_COORDINATOR
    right = ClassicClient(core, broker_id=coord)
    assert right.join_with_id() is None


def test_describe_list_and_delete_a_classic_group():
    core, _ = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    d = a.send(DescribeGroupsRequest(groups=["g", "nope"], include_authorized_operations=True), 5).groups
    assert (d[0].group_state, d[0].protocol_type, d[0].protocol_data) == ("Stable", "consumer", "range")
    assert {m.member_id: m.member_assignment for m in d[0].members} == {
        a.member_id: a.member_id.encode(), b.member_id: b.member_id.encode()}
    assert all(m.client_id == "test" for m in d[0].members)
    assert d[0].authorized_operations > 0
    assert (d[1].error_code, d[1].group_state) == (E.NONE, "Dead")
    v6 = a.send(DescribeGroupsRequest(groups=["nope"]), 6).groups[0]
    assert (v6.error_code, v6.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")
    listed = a.send(ListGroupsRequest(states_filter=["stable"], types_filter=["Classic"]), 5).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("g", "consumer", "Stable", "classic")]
    assert a.send(ListGroupsRequest(states_filter=["Empty"]), 4).groups == []
    from kwire.protocol.messages.delete_groups import DeleteGroupsRequest

    assert a.send(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == E.NON_EMPTY_GROUP
    a.leave(), b.leave()
    res = a.send(DeleteGroupsRequest(groups_names=["g", "g2"]), 3).results
    assert [(r.group_id, r.error_code) for r in res] == [("g", E.NONE), ("g2", E.GROUP_ID_NOT_FOUND)]
    assert a.send(ListGroupsRequest(), 0).groups == []


def test_leave_by_instance_id_and_batch_answers_each_member():
    core, _ = make_core(settings=NO_DELAY)
    a = ClassicClient(core, instance_id="i-a")
    b = ClassicClient(core)
    a.join(), b.join_with_id()
    core.fire_due()
    a.answer(), b.answer()
    resp = a.send(LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="i-a"),
        LeaveGroupRequest.MemberIdentity(member_id="wrong", group_instance_id="i-b"),
        LeaveGroupRequest.MemberIdentity(member_id=b.member_id),
        LeaveGroupRequest.MemberIdentity(member_id="ghost"),
    ]), 5)
    assert [m.error_code for m in resp.members] == [E.NONE, E.UNKNOWN_MEMBER_ID, E.NONE, E.UNKNOWN_MEMBER_ID]
    assert resp.members[0].group_instance_id == "i-a"
    assert group_state(core).members == {}


def test_leave_v0_carries_the_member_error_at_top_level():
    core, _ = make_core(settings=NO_DELAY)
    c = ClassicClient(core)
    c.member_id = "ghost"
    assert c.leave(0).error_code == E.UNKNOWN_MEMBER_ID


def test_leave_of_a_waiting_member_answers_its_join_with_unknown_member():
    core, _ = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    assert a.join() is None
    other = ClassicClient(core)
    other.member_id = a.member_id
    assert other.leave().error_code == E.NONE
    assert a.answer().error_code == E.UNKNOWN_MEMBER_ID


def test_statistics_are_a_frozen_snapshot_per_group():
    import dataclasses

    core, _ = make_core(settings=NO_DELAY)
    core.create_topic("t", 2)
    stable_group(core, 2)
    from tests.broker.groups_helpers import ConsumerClient

    ConsumerClient(core, group="k", topics=["t"]).heartbeat()
    waiting = ClassicClient(core, group="w")
    waiting.join_with_id()
    stats = coordinator_of(core).statistics()
    assert [(s.group_id, s.group_type, s.state, s.epoch, s.members, s.waiting) for s in stats] == [
        ("g", "classic", "Stable", 1, 2, 0), ("k", "consumer", "Stable", 1, 1, 0),
        ("w", "classic", "PreparingRebalance", 0, 1, 1)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats[0].members = 5  # type: ignore[misc]


GROUP_MODULES = ["kwire/broker/core/classic_groups.py", "kwire/broker/core/group_table.py", "kwire/broker/core/consumer_groups.py", "kwire/broker/core/offsets.py",
                 "kwire/broker/core/_group_common.py", "kwire/broker/handlers/_groups.py"] + [
    f"kwire/broker/handlers/{m}.py" for m in (
        "join_group", "sync_group", "heartbeat", "leave_group", "offset_commit", "offset_fetch", "offset_delete",
        "describe_groups", "list_groups", "delete_groups", "consumer_group_heartbeat", "consumer_group_describe")]


@pytest.mark.parametrize("path", GROUP_MODULES)
def test_group_modules_stay_sans_io(path):
    """The core/handler wall: no trio, socket, time, asyncio or random (style §6)."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[3]
    tree = ast.parse((root / path).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    assert not names & {"trio", "socket", "time", "asyncio", "random"}


WRITE_WINDOW = {**NO_DELAY, "kwire.group.assignment.write.delay.ms": "5"}


def _completing_pair(core):
    a, b = (ClassicClient(core) for _ in range(2))
    for c in (a, b):
        c.join_with_id()
    core.fire_due()
    a.answer(), b.answer()
    return (a, b) if a.member_id == a.leader else (b, a)


def test_leader_sync_is_answered_when_the_assignment_write_commits():
    """GroupMetadataManager.classicGroupSyncToLeader: the group turns Stable and the SyncGroups are
    answered in the append future's callback, after the assignment record is committed; a follower
    whose SyncGroup arrives during the write waits for it (librdkafka 0113 b_subscribe_with_cb)."""
    core, _ = make_core(settings=WRITE_WINDOW)
    leader, follower = _completing_pair(core)
    assert leader.sync(assignments={leader.member_id: b"L", follower.member_id: b"F"}) is None
    assert group_state(core).state is GroupState.COMPLETING_REBALANCE
    core.advance(4)
    assert leader.answers() == []
    assert follower.sync() is None  # arrives inside the write window: waits with the leader
    core.advance(1)
    assert (leader.answer().assignment, follower.answer().assignment) == (b"L", b"F")
    assert group_state(core).state is GroupState.STABLE
    assert leader.heartbeat() == follower.heartbeat() == E.NONE


def test_a_rebalance_during_the_assignment_write_voids_it():
    """The append callback only applies the assignment if the group is still CompletingRebalance
    in the same generation; a join before it commits answers the waiting SyncGroups with
    REBALANCE_IN_PROGRESS (GroupMetadataManager.prepareRebalance resets pending syncs)."""
    core, _ = make_core(settings=WRITE_WINDOW)
    leader, follower = _completing_pair(core)
    assert follower.sync() is None
    assert leader.sync(assignments={leader.member_id: b"L", follower.member_id: b"F"}) is None
    ClassicClient(core).join_with_id()
    assert leader.answer().error_code == follower.answer().error_code == E.REBALANCE_IN_PROGRESS
    core.advance(5)  # the write's callback comes too late to change anything
    assert group_state(core).state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group_state(core).members.values())


def test_without_the_write_window_the_leader_sync_is_answered_at_once():
    core, _ = make_core(settings=NO_DELAY)
    leader, follower = _completing_pair(core)
    resp = leader.sync(assignments={leader.member_id: b"L", follower.member_id: b"F"})
    assert (resp.error_code, resp.assignment) == (E.NONE, b"L")
    assert follower.sync().assignment == b"F"
