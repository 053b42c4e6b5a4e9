"""ShareGroupHeartbeat and ShareGroupDescribe through the core (HB-, SG- rules)."""

from __future__ import annotations

import uuid

import pytest

from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.share_group_describe import ShareGroupDescribeRequest
from kwire.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from tests.broker.groups_helpers import ClassicClient
from tests.broker.helpers import CoreClient, make_core
from tests.broker.share_helpers import ShareClient, acquired


@pytest.fixture
def core():  # type: ignore[no-untyped-def]
    c, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    c.create_topic("t", 3)
    c.create_topic("u", 1)
    return c


def hb(c: CoreClient, **kw: object) -> object:
    fields = {"group_id": "sg", "member_id": str(uuid.uuid4()), "member_epoch": 0, "subscribed_topic_names": ["t"]}
    fields.update(kw)
    return c.send(ShareGroupHeartbeatRequest(**fields), 1)  # type: ignore[arg-type]


@pytest.mark.rule("HB-1")
@pytest.mark.parametrize(("fields", "why"), [
    ({"member_id": ""}, "empty member id"),
    ({"member_id": "x" * 37}, "member id over 36 characters"),
    ({"group_id": "  "}, "blank group id"),
    ({"rack_id": " "}, "blank rack id"),
    ({"member_epoch": 0, "subscribed_topic_names": []}, "join without topics"),
    ({"member_epoch": 0, "subscribed_topic_names": None}, "join with null topics"),
    ({"member_epoch": -2}, "epoch below -1"),
])
def test_invalid_heartbeats_are_invalid_request(core, fields, why) -> None:  # type: ignore[no-untyped-def]
    """HB-1: each malformed heartbeat gets INVALID_REQUEST and creates nothing."""
    resp = hb(CoreClient(core), **fields)
    assert resp.error_code == E.INVALID_REQUEST, why  # type: ignore[attr-defined]
    assert core.subsystems.share_groups.groups.get("sg") is None


@pytest.mark.rule("HB-2, HB-4, HB-5, HB-6")
def test_join_gets_epoch_one_an_empty_assignment_then_the_partitions(core) -> None:  # type: ignore[no-untyped-def]
    """HB-2: epoch 0 joins with the client's member id; HB-4/HB-6: the first member sees epoch 1 and
    an empty (non-null) assignment, as GroupMetadataManager.shareGroupHeartbeat answers before the
    share state is initialised; a heartbeat within share.assignment.interval.ms keeps epoch 1 and
    gets no assignment; the first after it bumps the epoch and carries the partitions
    (initializedAssignmentPending, canComputeNextTargetAssignment); HB-5: HeartbeatIntervalMs is
    the group's setting, an unchanged assignment is null; leaving answers epoch -1."""
    a = ShareClient(core)
    r = a.heartbeat(["t"])
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, a.member_id, 1, 5000)
    assert r.assignment is not None and r.assignment.topic_partitions == []
    core.advance(999)
    r = a.heartbeat()
    assert (r.member_epoch, r.assignment) == (1, None)
    core.advance(1)
    r = a.heartbeat()
    assert r.member_epoch == 2 and a.assignment == {core.cluster.topics["t"].topic_id: [0, 1, 2]}
    r = a.heartbeat()
    assert r.assignment is None and r.member_epoch == 2
    r = a.heartbeat(epoch=-1)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, a.member_id, -1)


@pytest.mark.rule("HB-6")
def test_the_initialisation_delay_is_a_broker_clock_deadline_a_test_widens() -> None:
    """HB-6: with kwire.share.initialize.delay.ms widened, no heartbeat before the deadline gets a
    partition (GroupCoordinatorService.persisterInitialize has not completed); the first after it does."""
    c, _ = make_core(settings={"kwire.share.initialize.delay.ms": "10000"})
    c.create_topic("t", 2)
    a = ShareClient(c)
    assert a.heartbeat(["t"]).member_epoch == 1
    for _ in range(9):
        c.advance(1000)
        r = a.heartbeat()
        assert (r.member_epoch, r.assignment) == (1, None)
    c.advance(1000)
    assert a.heartbeat().member_epoch == 2 and a.assignment == {a.topic_id("t"): [0, 1]}


@pytest.mark.rule("HB-4, HB-6")
def test_the_group_assignment_interval_paces_the_target(core) -> None:  # type: ignore[no-untyped-def]
    """HB-4: share.assignment.interval.ms 0 recomputes the target on the next heartbeat once the
    share state exists; a member joining an initialised group within the interval waits for it
    (GroupMetadataManager.maybeUpdateTargetAssignment keeps the last target)."""
    from kwire.broker.core.configs import ResourceType

    core.configs.set(ResourceType.GROUP, "sg", "share.assignment.interval.ms", "0")
    a = ShareClient(core)
    a.heartbeat(["t"])
    core.advance(0)  # the initialisation deadline
    assert a.heartbeat().member_epoch == 2 and sorted(a.assignment[a.topic_id("t")]) == [0, 1, 2]
    core.configs.set(ResourceType.GROUP, "sg", "share.assignment.interval.ms", "3000")
    b = ShareClient(core)
    r = b.heartbeat(["t"])
    assert (r.member_epoch, r.assignment.topic_partitions) == (2, [])  # the old target: nothing for b
    core.advance(2999)
    assert b.heartbeat().assignment is None
    core.advance(1)
    b.heartbeat()
    a.heartbeat()
    assert a.member_epoch == b.member_epoch == 3
    assert sorted(a.assignment[a.topic_id("t")] + b.assignment[b.topic_id("t")]) == [0, 1, 2]


@pytest.mark.rule("HB-5, HB-6")
def test_a_recreated_topic_is_a_changed_assignment_by_topic_id(core) -> None:  # type: ignore[no-untyped-def]
    """HB-5: assignments are keyed by topic id (ShareGroupMember.hasAssignedPartitionsChanged): a
    topic deleted and recreated under its name changes the assignment, so the next heartbeat sends
    it (empty: the new topic's share state is not initialised, maybeCleanupShareGroupState dropped
    the old one) and the one after sends the new topic id."""
    from kwire.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequest_CreatableTopic
    from kwire.protocol.messages.delete_topics import (
        DeleteTopicsRequest,
        DeleteTopicsRequest_DeleteTopicState,
    )

    a = ShareClient(core)
    a.join(["u"])
    old = a.topic_id("u")
    assert a.assignment == {old: [0]}
    c = CoreClient(core)
    assert c.send(DeleteTopicsRequest(topics=[DeleteTopicsRequest_DeleteTopicState(name="u")]), 6).responses[0] \
        .error_code == 0
    assert c.send(CreateTopicsRequest(topics=[CreateTopicsRequest_CreatableTopic(
        name="u", num_partitions=1, replication_factor=1)]), 7).topics[0].error_code == 0
    new = a.topic_id("u")
    assert new != old
    core.advance(1000)
    r = a.heartbeat()
    assert r.member_epoch == 3 and r.assignment is not None and a.assignment == {}
    core.advance(1000)
    r = a.heartbeat()
    assert r.member_epoch == 4 and a.assignment == {new: [0]}


@pytest.mark.rule("HB-3")
def test_coordinator_errors(core) -> None:  # type: ignore[no-untyped-def]
    """HB-3: unknown group with epoch ≠ 0 → GROUP_ID_NOT_FOUND; unknown member → UNKNOWN_MEMBER_ID;
    epoch ahead → FENCED_MEMBER_EPOCH; the previous epoch is tolerated; a classic group's id → GROUP_ID_NOT_FOUND."""
    a = ShareClient(core)
    assert a.heartbeat(["t"], epoch=3).error_code == E.GROUP_ID_NOT_FOUND
    a.heartbeat(["t"])
    assert hb(CoreClient(core), member_epoch=1).error_code == E.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
    assert a.heartbeat(epoch=7).error_code == E.FENCED_MEMBER_EPOCH
    core.advance(1000)
    assert a.heartbeat().member_epoch == 2  # the partitions' share state is initialised
    assert a.heartbeat(epoch=1).error_code == E.NONE  # HB-3: the previous epoch, in case an answer was lost
    classic = ClassicClient(core, group="cg")
    classic.join_with_id()
    assert ShareClient(core, group="cg").heartbeat(["t"]).error_code == E.GROUP_ID_NOT_FOUND


@pytest.mark.rule("HB-3")
def test_group_max_size(core) -> None:  # type: ignore[no-untyped-def]
    """HB-3: group.share.max.size members, then a new member gets GROUP_MAX_SIZE_REACHED."""
    from kwire.broker.core.configs import ResourceType

    core.configs.set(ResourceType.BROKER, "", "group.share.max.size", "2")
    ShareClient(core).heartbeat(["t"])
    ShareClient(core).heartbeat(["t"])
    assert ShareClient(core).heartbeat(["t"]).error_code == E.GROUP_MAX_SIZE_REACHED


@pytest.mark.rule("HB-4, HB-6")
def test_simple_assignor_balances_and_shares_when_members_outnumber_partitions(core) -> None:  # type: ignore[no-untyped-def]
    """HB-6: 3 partitions over 2 members differ by at most 1; 2 members on the 1-partition topic
    share it; HB-4: every join bumps the group epoch and members move straight to the target."""
    tid = core.cluster.topics["t"].topic_id
    a, b = ShareClient(core), ShareClient(core)
    a.heartbeat(["t"])
    b.heartbeat(["t"])
    core.advance(1000)
    a.heartbeat()
    b.heartbeat()
    got = sorted(len(x.assignment.get(tid, [])) for x in (a, b))
    assert got == [1, 2] and sorted(a.assignment[tid] + b.assignment[tid]) == [0, 1, 2]
    assert a.member_epoch == b.member_epoch == 2  # b's join (epoch 2) waited for the interval
    c, d = ShareClient(core, group="sg2"), ShareClient(core, group="sg2")
    c.heartbeat(["u"])
    d.heartbeat(["u"])
    core.advance(1000)
    c.heartbeat()
    d.heartbeat()
    uid = core.cluster.topics["u"].topic_id
    assert c.assignment == d.assignment == {uid: [0]}


@pytest.mark.rule("HB-4")
def test_new_partitions_bump_the_epoch_and_are_assigned(core) -> None:  # type: ignore[no-untyped-def]
    """HB-4: a subscribed topic growing moves the group epoch on the next heartbeat (upstream's
    metadata hash), which keeps the assignment (the new partition has no share state yet, HB-6);
    once it is initialised the next heartbeat carries it."""
    a = ShareClient(core)
    a.join(["u"])
    uid = a.topic_id("u")
    assert (a.member_epoch, a.assignment) == (2, {uid: [0]})
    core.create_partitions("u", 2)
    core.advance(1000)
    r = a.heartbeat()
    assert (r.member_epoch, r.assignment) == (3, None)
    core.advance(1000)
    r = a.heartbeat()
    assert r.member_epoch == 4 and a.assignment == {uid: [0, 1]}


@pytest.mark.rule("SG-1, SG-2")
def test_share_version_zero_answers_unsupported_version(core) -> None:  # type: ignore[no-untyped-def]
    """SG-1: share.version 0 turns share groups off; SG-2: the APIs stay listed and answer UNSUPPORTED_VERSION
    (heartbeat top level, describe per group, fetch and acknowledge top level)."""
    from kwire.broker.core.configs import ResourceType
    from kwire.protocol.messages.api_versions import ApiVersionsRequest

    core.configs.set(ResourceType.BROKER, "", "share.version", "0")
    c = CoreClient(core)
    keys = {k.api_key for k in c.send(ApiVersionsRequest(), 3).api_keys}
    assert {76, 77, 78, 79} <= keys
    a = ShareClient(core)
    assert a.heartbeat(["t"]).error_code == E.UNSUPPORTED_VERSION
    d = c.send(ShareGroupDescribeRequest(group_ids=["sg", "x"]), 1)
    assert [g.error_code for g in d.groups] == [E.UNSUPPORTED_VERSION] * 2
    f = a.fetch({"t": [0]})
    assert (f.error_code, f.responses, f.acquisition_lock_timeout_ms) == (E.UNSUPPORTED_VERSION, [], 0)
    assert a.acknowledge({("t", 0): [(0, 0, 1)]}, epoch=1).error_code == E.UNSUPPORTED_VERSION


def test_describe_lists_members_and_assignments(core) -> None:  # type: ignore[no-untyped-def]
    """ShareGroupDescribe: state, epochs, the simple assignor, each member with its assignment;
    an unknown or non-share group → GROUP_ID_NOT_FOUND."""
    a = ShareClient(core)
    a.join(["t"])
    d = CoreClient(core).send(ShareGroupDescribeRequest(group_ids=["sg", "nope"]), 1)
    g, missing = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (0, "Stable", 2, 2,
                                                                                                "simple")
    (m,) = g.members
    assert m.member_id == a.member_id and m.subscribed_topic_names == ["t"]
    assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [("t", [0, 1, 2])]
    assert missing.error_code == E.GROUP_ID_NOT_FOUND


def test_share_groups_are_listed_and_deleted_through_the_group_table(core) -> None:  # type: ignore[no-untyped-def]
    """ListGroups shows the share group with type "share"; DeleteGroups refuses it while it has
    members (NON_EMPTY_GROUP) and removes it, with its share state, once empty."""
    from kwire.protocol.messages.delete_groups import DeleteGroupsRequest
    from kwire.protocol.messages.list_groups import ListGroupsRequest

    a = ShareClient(core)
    a.heartbeat(["t"])
    a.fetch({"t": [0]})
    c = CoreClient(core)
    listed = c.send(ListGroupsRequest(types_filter=["share"]), 5).groups
    assert [(g.group_id, g.group_type, g.group_state) for g in listed] == [("sg", "share", "Stable")]
    assert c.send(DeleteGroupsRequest(groups_names=["sg"]), 2).results[0].error_code == E.NON_EMPTY_GROUP
    a.heartbeat(epoch=-1)
    assert c.send(DeleteGroupsRequest(groups_names=["sg"]), 2).results[0].error_code == E.NONE
    assert core.subsystems.share_groups.partitions.get("sg", "t", 0) is None


@pytest.mark.rule("HB-6")
def test_initialised_share_state_survives_a_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """HB-6: which partitions have share state is durable (upstream's ShareGroupStatePartitionMetadata
    record), so after a restart a rejoining member of the group is assigned them on its first
    heartbeat, while a new group still starts empty."""
    c1, _ = make_core(data_dir=str(tmp_path))
    c1.create_topic("t", 2)
    a = ShareClient(c1)
    a.join(["t"])
    assert a.assignment == {a.topic_id("t"): [0, 1]}
    c1.close()
    c2, _ = make_core(data_dir=str(tmp_path))
    b = ShareClient(c2)
    b.heartbeat(["t"])
    assert b.assignment == {b.topic_id("t"): [0, 1]}
    fresh = ShareClient(c2, group="other")
    assert fresh.heartbeat(["t"]).assignment.topic_partitions == []


@pytest.mark.rule("HB-6, ST-6")
def test_a_partition_added_to_a_known_topic_starts_at_offset_zero(core) -> None:  # type: ignore[no-untyped-def]
    """GroupMetadataManager.buildInitializeShareGroupStateRequest: new partitions of a topic the group
    already knew are initialised at offset 0, so with share.auto.offset.reset latest the records
    written to them before the first fetch are still delivered; a brand-new subscription starts at
    latest (its records before the first fetch are skipped)."""
    from tests.broker.handlers.test_produce_fetch import produce
    from tests.broker.helpers import batch

    c = CoreClient(core)
    a = ShareClient(core)
    a.join(["u"])
    core.create_partitions("u", 2)
    produce(c, "u", 1, batch([b"early"]))
    core.advance(1000)
    a.heartbeat()
    core.advance(1000)
    a.heartbeat()
    assert a.assignment == {a.topic_id("u"): [0, 1]}
    f = a.fetch({"u": [1]})
    assert acquired(f, 1) == [(0, 0, 1)]
    produce(c, "t", 0, batch([b"before"]))
    b = ShareClient(core, group="fresh")
    b.join(["t"])
    assert acquired(b.fetch({"t": [0]}), 0) == []
