"""LeaveGroup handler: v0–2 single member with its error at top level, v3+ batches whose answer
always carries the Members array (kafkajs cannot read an answer without it)."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.framing import encode_response
from kwire.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from kwire.protocol.registry import ApiKey
from tests.broker.groups_helpers import stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(6))
def test_every_version_removes_the_member(version):
    core, _ = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    resp = b.leave(version)
    assert resp.error_code == E.NONE
    if version >= 3:
        assert [(m.member_id, m.error_code) for m in resp.members] == [(b.member_id, E.NONE)]
    again = b.leave(version)
    if version >= 3:
        assert again.error_code == E.NONE and again.members[0].error_code == E.UNKNOWN_MEMBER_ID
    else:
        assert again.error_code == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", [3, 4, 5])
def test_members_array_is_on_the_wire_even_for_a_top_level_error(version):
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    wrong = next(n for n in core.cluster.nodes if n != core.coordinator_for("g").node_id)
    c = CoreClient(core, wrong)
    resp = c.send(LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]), version)
    assert resp.error_code == E.NOT_COORDINATOR and resp.members == []
    raw = encode_response(LeaveGroupResponse(error_code=E.NOT_COORDINATOR), version, correlation_id=1, size_prefix=False)
    assert len(raw) > 4 + (1 if version >= 4 else 0) + 4 + 2  # the array's count is there


def test_unknown_group_answers_unknown_member_for_each_member():
    core, _ = make_core(settings=NO_DELAY)
    resp = CoreClient(core).send(LeaveGroupRequest(group_id="none", members=[
        LeaveGroupRequest.MemberIdentity(member_id="a"), LeaveGroupRequest.MemberIdentity(member_id="b")]), 4)
    assert resp.error_code == E.NONE
    assert [m.error_code for m in resp.members] == [E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]


@pytest.mark.parametrize("version", range(6))
def test_injected_errors_answer_in_every_version(version):
    core, _ = make_core(settings=NO_DELAY)
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.LEAVE_GROUP, error_code=E.NOT_COORDINATOR))
    req = LeaveGroupRequest(group_id="g", member_id="m" if version < 3 else "",
                            members=[LeaveGroupRequest.MemberIdentity(member_id="m")] if version >= 3 else [])
    assert CoreClient(core).send(req, version).error_code == E.NOT_COORDINATOR
