"""KIP-848 consumer groups through BrokerCore.handle: ConsumerGroupHeartbeat epochs, the uniform
assignor's placement, revocation before reassignment, fencing, static members, regexes, topic
changes, and the OffsetCommit v9 epoch checks. No sockets, no trio."""

from __future__ import annotations

import pytest

from kwire.broker.core.consumer_groups import ConsumerGroup, MemberState
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from kwire.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.broker.groups_helpers import ClassicClient, ConsumerClient, coordinator_of
from tests.broker.helpers import CoreClient, make_core


@pytest.fixture
def core():
    core, clock = make_core()
    core.create_topic("t", 4)
    core.clock_ = clock  # type: ignore[attr-defined]
    return core


def group(core, gid="g") -> ConsumerGroup:
    g = coordinator_of(core).groups[gid]
    assert isinstance(g, ConsumerGroup)
    return g


def tp(core, *pairs):
    return {(t, p) for t, p in pairs}


def all_parts(core, topic="t"):
    return {(topic, p) for p in range(len(core.cluster.topics[topic].partitions))}


def test_first_member_gets_every_partition_at_epoch_one(core):
    a = ConsumerClient(core, topics=["t"])
    resp = a.heartbeat()
    assert (resp.error_code, resp.member_id, resp.member_epoch) == (E.NONE, a.member_id, 1)
    assert resp.heartbeat_interval_ms == 5_000
    assert a.partitions(core) == all_parts(core)
    again = a.heartbeat()
    assert again.member_epoch == 1 and again.assignment is None  # nothing changed: no assignment


def test_second_member_waits_until_the_first_has_revoked(core):
    """A partition goes to its new owner only after the previous owner's heartbeat stops listing it."""
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    b = ConsumerClient(core, topics=["t"])
    rb = b.heartbeat()
    assert rb.member_epoch == 2 and rb.assignment is not None and b.owned == {}  # all still held by a
    assert group(core).members[b.member_id].state is MemberState.UNRELEASED_PARTITIONS
    # a keeps reporting all four: it is asked to give two up, at its old epoch.
    ra = a.heartbeat(owned={core.cluster.topics["t"].topic_id: {0, 1, 2, 3}})
    assert ra.member_epoch == 1 and len(a.partitions(core)) == 2
    assert group(core).members[a.member_id].state is MemberState.UNREVOKED_PARTITIONS
    assert b.heartbeat().assignment is None and b.owned == {}  # not yet released
    ra = a.heartbeat()  # now without the revoked two
    assert ra.member_epoch == 2
    rb = b.heartbeat()
    assert rb.member_epoch == 2 and len(b.partitions(core)) == 2
    assert a.partitions(core) | b.partitions(core) == all_parts(core)
    assert not a.partitions(core) & b.partitions(core)
    assert group(core).state_name == "Stable"


def test_revocation_is_skipped_when_the_member_already_let_go(core):
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    b = ConsumerClient(core, topics=["t"])
    b.heartbeat()
    ra = a.heartbeat(owned={})  # the client already released everything
    assert ra.member_epoch == 2 and len(a.partitions(core)) == 2


def test_leave_frees_partitions_for_the_others(core):
    a, b = ConsumerClient(core, topics=["t"]), ConsumerClient(core, topics=["t"])
    for _ in range(3):
        a.heartbeat(), b.heartbeat()
    assert len(a.owned[core.cluster.topics["t"].topic_id]) == 2
    resp = b.leave()
    assert (resp.error_code, resp.member_id, resp.member_epoch) == (E.NONE, b.member_id, -1)
    ra = a.heartbeat()
    assert ra.member_epoch == 3 and a.partitions(core) == all_parts(core)  # joins bumped to 2, the leave to 3
    assert b.heartbeat().error_code == E.UNKNOWN_MEMBER_ID


def test_session_timeout_fences_a_silent_member(core):
    a, b = ConsumerClient(core, topics=["t"]), ConsumerClient(core, topics=["t"])
    for _ in range(3):
        a.heartbeat(), b.heartbeat()
    for _ in range(8):
        core.clock_.advance(5_000)
        core.fire_due()
        a.heartbeat()
    core.clock_.advance(4_999)
    core.fire_due()
    assert b.member_id in group(core).members
    core.clock_.advance(1)  # 45 s since b's last heartbeat
    core.fire_due()
    assert b.member_id not in group(core).members
    assert a.heartbeat().member_epoch == group(core).group_epoch
    assert a.partitions(core) == all_parts(core)
    assert b.heartbeat().error_code == E.UNKNOWN_MEMBER_ID


def test_session_timeout_and_heartbeat_interval_follow_group_then_broker_configs(core):
    from kwire.broker.core.configs import ResourceType

    core.configs.set(ResourceType.BROKER, "", "group.consumer.heartbeat.interval.ms", "700")
    # GroupConfig.validate bounds group overrides by the broker's min keys (5000 and 45000 by default)
    core.configs.set(ResourceType.BROKER, "", "group.consumer.min.heartbeat.interval.ms", "500", static=True)
    core.configs.set(ResourceType.BROKER, "", "group.consumer.min.session.timeout.ms", "1000", static=True)
    a = ConsumerClient(core, topics=["t"])
    assert a.heartbeat().heartbeat_interval_ms == 700
    core.configs.set(ResourceType.GROUP, "g", "consumer.heartbeat.interval.ms", "900")
    core.configs.set(ResourceType.GROUP, "g", "consumer.session.timeout.ms", "2000")
    assert a.heartbeat().heartbeat_interval_ms == 900
    core.clock_.advance(2_000)
    core.fire_due()
    assert a.heartbeat().error_code == E.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(core):
    a = ConsumerClient(core, topics=["t"], rebalance_ms=3_000)
    a.heartbeat()
    b = ConsumerClient(core, topics=["t"])
    b.heartbeat()
    a.heartbeat(owned={core.cluster.topics["t"].topic_id: {0, 1, 2, 3}})  # asked to revoke; refuses
    core.clock_.advance(2_999)
    core.fire_due()
    assert a.member_id in group(core).members
    core.clock_.advance(1)
    core.fire_due()
    assert a.member_id not in group(core).members
    b.heartbeat()
    assert b.partitions(core) == all_parts(core)


def test_epoch_ahead_or_stale_is_fenced_but_the_previous_epoch_is_tolerated(core):
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    assert a.heartbeat(epoch=5).error_code == E.FENCED_MEMBER_EPOCH
    ConsumerClient(core, topics=["t"]).heartbeat()
    a.heartbeat(owned={})  # a moves to epoch 2, previous epoch 1
    assert a.epoch == 2
    # A lost answer: the member repeats its previous epoch with a subset of its partitions.
    assert a.heartbeat(epoch=1).error_code == E.NONE
    ghost_epoch = a.heartbeat(epoch=0)
    assert ghost_epoch.error_code == E.FENCED_MEMBER_EPOCH


def test_unknown_member_and_unknown_group(core):
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    stranger = ConsumerClient(core, topics=["t"])
    stranger.epoch = 3
    assert stranger.heartbeat().error_code == E.UNKNOWN_MEMBER_ID
    lost = ConsumerClient(core, group="never", topics=["t"])
    lost.epoch = 3
    assert lost.heartbeat().error_code == E.GROUP_ID_NOT_FOUND
    assert lost.leave().error_code == E.GROUP_ID_NOT_FOUND


def test_static_member_temporary_leave_keeps_its_partitions_for_the_rejoining_instance(core):
    a = ConsumerClient(core, topics=["t"], instance_id="i-a")
    b = ConsumerClient(core, topics=["t"])
    for _ in range(3):
        a.heartbeat(), b.heartbeat()
    mine = a.partitions(core)
    epoch_before = group(core).group_epoch
    resp = a.leave(-2)
    assert (resp.error_code, resp.member_epoch) == (E.NONE, -2)
    b.heartbeat()
    assert b.partitions(core).isdisjoint(mine)  # reserved for the instance
    again = ConsumerClient(core, topics=["t"], instance_id="i-a")
    assert again.member_id != a.member_id
    r = again.heartbeat()
    assert r.error_code == E.NONE and again.partitions(core) == mine
    assert group(core).group_epoch == epoch_before  # no rebalance
    assert a.heartbeat().error_code == E.FENCED_INSTANCE_ID


def test_static_instance_held_by_a_live_member_is_unreleased(core):
    a = ConsumerClient(core, topics=["t"], instance_id="i-a")
    a.heartbeat()
    resp = ConsumerClient(core, topics=["t"], instance_id="i-a").heartbeat()
    assert resp.error_code == E.UNRELEASED_INSTANCE_ID


def test_regex_subscription_follows_topics_created_later(core):
    """Asynchronous, as upstream: see test_consumer_groups_regex.py for the exact timing."""
    core.create_topic("orders-1", 2)
    a = ConsumerClient(core, regex="orders-.*")
    a.heartbeat()
    assert a.partitions(core) == set()  # resolved after the heartbeat that brought the regex
    core.advance(0)
    a.heartbeat()
    assert a.partitions(core) == all_parts(core, "orders-1")
    epoch = group(core).group_epoch
    core.create_topic("orders-2", 1)
    core.create_topic("other", 1)
    assert group(core).group_epoch == epoch  # picked up by the next refresh, not at creation
    core.advance(10_001)
    a.heartbeat()
    core.advance(0)
    assert group(core).group_epoch == epoch + 1
    a.heartbeat()
    assert a.partitions(core) == all_parts(core, "orders-1") | all_parts(core, "orders-2")


def test_invalid_regex_is_invalid_regular_expression(core):
    resp = ConsumerClient(core, regex="(unclosed").heartbeat()
    assert resp.error_code == E.INVALID_REGULAR_EXPRESSION


def test_more_partitions_are_assigned_after_the_topic_grows(core):
    a, b = ConsumerClient(core, topics=["t"]), ConsumerClient(core, topics=["t"])
    for _ in range(3):
        a.heartbeat(), b.heartbeat()
    core.create_partitions("t", 6)
    for _ in range(2):
        a.heartbeat(), b.heartbeat()
    assert a.partitions(core) | b.partitions(core) == all_parts(core)
    assert len(a.partitions(core)) == len(b.partitions(core)) == 3


def test_deleting_a_subscribed_topic_revokes_its_partitions(core):
    core.create_topic("u", 2)
    a = ConsumerClient(core, topics=["t", "u"])
    a.heartbeat()
    assert len(a.partitions(core)) == 6
    u_id = core.cluster.topics["u"].topic_id
    core.delete_topic("u")
    resp = a.heartbeat()
    assert resp.assignment is not None and u_id not in a.owned
    assert a.partitions(core) == all_parts(core)


def test_subscription_change_moves_the_assignment(core):
    core.create_topic("u", 2)
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    a.topics = ["u"]
    a.heartbeat(full=True)
    a.heartbeat()
    assert a.partitions(core) == all_parts(core, "u")


@pytest.mark.parametrize(("fields", "message"), [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"group_id": ""}, "GroupId can't be empty."),
    ({"instance_id": ""}, "InstanceId can't be empty."),
    ({"rack_id": ""}, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"topic_partitions": None}, "TopicPartitions must be empty when (re-)joining."),
    ({"subscribed_topic_names": None}, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                                       "(re-)joining."),
    ({"member_epoch": -3}, "MemberEpoch is invalid."),
    ({"member_epoch": -2}, "InstanceId can't be null."),
])
def test_invalid_requests_are_invalid_request_with_upstreams_message(core, fields, message):
    req = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0, rebalance_timeout_ms=1000,
                                        subscribed_topic_names=["t"], topic_partitions=[])
    for k, v in fields.items():
        setattr(req, k, v)
    resp = CoreClient(core).send(req, 1)
    assert (resp.error_code, resp.error_message) == (E.INVALID_REQUEST, message)


def test_v0_generates_the_member_id_and_unknown_assignors_are_refused(core):
    req = ConsumerGroupHeartbeatRequest(group_id="g", member_id="", member_epoch=0, rebalance_timeout_ms=1000,
                                        subscribed_topic_names=["t"], topic_partitions=[])
    resp = CoreClient(core).send(req, 0)
    assert resp.error_code == E.NONE and len(resp.member_id) == 22
    req.server_assignor = "sticky"
    req.member_id = "x"
    assert CoreClient(core).send(req, 1).error_code == E.UNSUPPORTED_ASSIGNOR


def test_range_assignor_on_request(core):
    core.create_topic("u", 2)
    a = ConsumerClient(core, topics=["t", "u"], member_id="a")
    b = ConsumerClient(core, topics=["t", "u"], member_id="b")
    a.heartbeat(server_assignor="range")
    b.heartbeat(server_assignor="range")
    for _ in range(2):
        a.heartbeat(), b.heartbeat()
    assert a.partitions(core) == {("t", 0), ("t", 1), ("u", 0)}
    assert b.partitions(core) == {("t", 2), ("t", 3), ("u", 1)}


def test_not_coordinator_and_disabled_protocol():
    core, _ = make_core(brokers=3, settings={"group.coordinator.rebalance.protocols": "classic"})
    core.create_topic("t", 1)
    coord = core.coordinator_for("g").node_id
    assert ConsumerClient(core, topics=["t"], broker_id=coord).heartbeat().error_code == E.UNSUPPORTED_VERSION
    core, _ = make_core(brokers=3)
    wrong = next(n for n in core.cluster.nodes if n != core.coordinator_for("g").node_id)
    assert ConsumerClient(core, topics=["t"], broker_id=wrong).heartbeat().error_code == E.NOT_COORDINATOR


def test_classic_and_consumer_groups_share_one_namespace(core):
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    c = ClassicClient(core)
    assert c.join(3).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    a.leave()
    assert c.join(3) is None  # the empty consumer group gives way
    other = ConsumerClient(core, topics=["t"])
    assert other.heartbeat().error_code == E.GROUP_ID_NOT_FOUND


def test_offset_commit_v9_checks_the_member_epoch(core):
    tid = core.cluster.topics["t"].topic_id
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()

    def commit(version, epoch, member_id=a.member_id):
        topic = (OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=tid, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)]) if version >= 10
            else OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)]))
        resp = a.send(OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=epoch, member_id=member_id,
                                          topics=[topic]), version)
        return resp.topics[0].partitions[0].error_code

    assert commit(9, a.epoch) == E.NONE
    assert commit(10, a.epoch) == E.NONE
    assert commit(9, a.epoch + 1) == E.STALE_MEMBER_EPOCH
    assert commit(9, a.epoch, "ghost") == E.UNKNOWN_MEMBER_ID
    assert commit(8, a.epoch) == E.UNSUPPORTED_VERSION
    assert commit(9, -1, "") == E.UNKNOWN_MEMBER_ID  # an admin commit needs an empty group
    fetch = a.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="g", member_id=a.member_id, member_epoch=a.epoch + 1, topics=None)]), 9)
    assert fetch.groups[0].error_code == E.STALE_MEMBER_EPOCH
    fetch = a.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="g", member_id=a.member_id, member_epoch=a.epoch, topics=None)]), 9)
    assert fetch.groups[0].topics[0].partitions[0].committed_offset == 3
    a.leave()
    assert commit(9, -1, "") == E.NONE


def test_describe_and_list_consumer_groups(core):
    a = ConsumerClient(core, topics=["t"], member_id="a")
    b = ConsumerClient(core, topics=["t"], member_id="b")
    a.heartbeat(), b.heartbeat()
    c = CoreClient(core)
    d = c.send(ConsumerGroupDescribeRequest(group_ids=["g", "nope"], include_authorized_operations=True), 1).groups
    assert (d[0].error_code, d[0].group_state, d[0].group_epoch, d[0].assignment_epoch) == (E.NONE, "Reconciling", 2, 2)
    assert d[0].assignor_name == "uniform"
    by_id = {m.member_id: m for m in d[0].members}
    assert by_id["a"].member_type == 1 and by_id["a"].subscribed_topic_names == ["t"]
    assert [p for t in by_id["a"].assignment.topic_partitions for p in t.partitions] == [0, 1, 2, 3]
    assert sum(len(t.partitions) for t in by_id["b"].target_assignment.topic_partitions) == 2
    assert by_id["a"].assignment.topic_partitions[0].topic_name == "t"
    assert (d[1].error_code, d[1].error_message) == (E.GROUP_ID_NOT_FOUND, "Consumer group nope not found.")
    listed = c.send(ListGroupsRequest(types_filter=["consumer"]), 5).groups
    assert [(g.group_id, g.protocol_type, g.group_type, g.group_state) for g in listed] == [
        ("g", "consumer", "consumer", "Reconciling")]
    assert c.send(ListGroupsRequest(types_filter=["classic"]), 5).groups == []
    from kwire.protocol.messages.delete_groups import DeleteGroupsRequest

    assert c.send(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == E.NON_EMPTY_GROUP
    a.leave(), b.leave()
    assert c.send(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == E.NONE
