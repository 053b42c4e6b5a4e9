"""ConsumerGroupHeartbeat handler: v0 (coordinator-made member ids, no regex) and v1
(client-made ids, regex), leave epochs, the answer's assignment rules, injected errors."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from kwire.protocol.registry import ApiKey
from tests.broker.groups_helpers import ConsumerClient
from tests.broker.helpers import CoreClient, make_core


def join_request(member_id: str = "") -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=0, rebalance_timeout_ms=5000,
                                         subscribed_topic_names=["t"], topic_partitions=[])


def test_v0_makes_the_member_id_and_v1_requires_one():
    core, _ = make_core()
    core.create_topic("t", 2)
    c = CoreClient(core)
    r0 = c.send(join_request(), 0)
    assert r0.error_code == E.NONE and r0.member_id and r0.member_epoch == 1
    r1 = c.send(join_request(), 1)
    assert (r1.error_code, r1.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")


@pytest.mark.parametrize("version", [0, 1])
def test_assignment_only_in_full_requests_or_when_it_changes(version):
    core, _ = make_core()
    core.create_topic("t", 2)
    a = ConsumerClient(core, topics=["t"])
    assert a.heartbeat(version).assignment is not None  # joining
    assert a.heartbeat(version).assignment is None  # nothing new
    assert a.heartbeat(version, full=True).assignment is not None  # a full request
    assert a.heartbeat(version, send_owned=False).assignment is None


def test_leave_answers_the_epoch_it_was_sent():
    core, _ = make_core()
    core.create_topic("t", 1)
    a = ConsumerClient(core, topics=["t"], instance_id="i")
    a.heartbeat()
    r = a.leave(-2)
    assert (r.error_code, r.member_id, r.member_epoch, r.assignment) == (E.NONE, a.member_id, -2, None)
    r = a.leave(-1)
    assert (r.error_code, r.member_epoch) == (E.NONE, -1)


@pytest.mark.parametrize("version", [0, 1])
def test_injected_errors_answer_in_every_version(version):
    core, _ = make_core()
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.CONSUMER_GROUP_HEARTBEAT,
                              error_code=E.COORDINATOR_NOT_AVAILABLE))
    resp = CoreClient(core).send(join_request("m"), version)
    assert (resp.error_code, resp.member_id, resp.assignment) == (E.COORDINATOR_NOT_AVAILABLE, None, None)


@pytest.mark.rule("HB-5")
def test_a_recreated_topic_is_a_changed_assignment_by_topic_id():
    """ConsumerGroupHeartbeat keys assignments by topic id (ConsumerGroupMember.assignedPartitions,
    GroupMetadataManager.consumerGroupHeartbeat's hasAssignedPartitionsChanged): a topic deleted and
    recreated under its name is a new topic, so the member's next heartbeats revoke the old id and
    then bring the new one instead of answering a null assignment."""
    from kwire.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequest_CreatableTopic
    from kwire.protocol.messages.delete_topics import (
        DeleteTopicsRequest,
        DeleteTopicsRequest_DeleteTopicState,
    )

    core, _ = make_core()
    core.create_topic("t", 2)
    a = ConsumerClient(core, topics=["t"])
    a.heartbeat()
    old = core.cluster.topics["t"].topic_id
    assert a.owned == {old: {0, 1}}
    c = CoreClient(core)
    assert c.send(DeleteTopicsRequest(topics=[DeleteTopicsRequest_DeleteTopicState(name="t")]), 6) \
        .responses[0].error_code == 0
    assert c.send(CreateTopicsRequest(topics=[CreateTopicsRequest_CreatableTopic(
        name="t", num_partitions=2, replication_factor=1)]), 7).topics[0].error_code == 0
    new = core.cluster.topics["t"].topic_id
    r = a.heartbeat()  # the old id is revoked: the member keeps its epoch until it lets go
    assert (r.member_epoch, r.assignment is not None, a.owned) == (1, True, {})
    r = a.heartbeat()  # then the new id comes
    assert (r.member_epoch, r.assignment is not None, a.owned) == (3, True, {new: {0, 1}})
    assert a.heartbeat().assignment is None
