"""ConsumerGroupDescribe handler: v0–1 (MemberType from v1), unknown and classic groups."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.broker.groups_helpers import ConsumerClient, stable_group
from tests.broker.helpers import CoreClient, make_core


@pytest.mark.parametrize("version", [0, 1])
def test_every_version_describes_members_and_refuses_other_groups(version):
    core, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    core.create_topic("t", 3)
    a = ConsumerClient(core, topics=["t"], member_id="a", instance_id="i-a")
    a.heartbeat()
    stable_group(core, 1, group="classic")
    resp = CoreClient(core).send(ConsumerGroupDescribeRequest(group_ids=["g", "classic", "none"]), version)
    g, classic, none = resp.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch) == (E.NONE, "Stable", 1, 1)
    (m,) = g.members
    assert (m.member_id, m.instance_id, m.member_epoch, m.client_id) == ("a", "i-a", 1, "test")
    assert m.member_type == (1 if version >= 1 else -1)
    assert [(t.topic_name, t.partitions) for t in m.assignment.topic_partitions] == [("t", [0, 1, 2])]
    assert (classic.error_code, classic.error_message) == (E.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")
    assert none.error_code == E.GROUP_ID_NOT_FOUND
