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
