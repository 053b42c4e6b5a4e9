"""SyncGroup handler: v0–5, the v5 protocol checks, waiting for the leader, injected errors."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.sync_group import SyncGroupRequest
from kwire.protocol.registry import ApiKey
from tests.broker.groups_helpers import ClassicClient
from tests.broker.helpers import make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


def joined(core, n=2):
    cs = [ClassicClient(core) for _ in range(n)]
    for c in cs:
        c.join_with_id()
    core.fire_due()
    for c in cs:
        c.answer()
    return sorted(cs, key=lambda c: c.member_id != c.leader)  # leader first


@pytest.mark.parametrize("version", range(6))
def test_every_version_delivers_the_leaders_assignment(version):
    core, _ = make_core(settings=NO_DELAY)
    leader, follower = joined(core)
    assert follower.sync(version) is None
    resp = leader.sync(version, assignments={leader.member_id: b"L", follower.member_id: b"F"})
    assert (resp.error_code, resp.assignment) == (E.NONE, b"L")
    got = follower.answer()
    assert got.assignment == b"F"
    assert (got.protocol_type, got.protocol_name) == (("consumer", "range") if version >= 5 else (None, None))
    assert follower.sync(version).assignment == b"F"  # in Stable: at once


def test_v5_protocol_mismatch_is_inconsistent_group_protocol():
    core, _ = make_core(settings=NO_DELAY)
    (leader,) = joined(core, 1)
    req = SyncGroupRequest(group_id="g", generation_id=leader.generation, member_id=leader.member_id,
                           protocol_type="consumer", protocol_name="roundrobin")
    assert leader.send(req, 5).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    req.protocol_name, req.protocol_type = "range", "connect"
    assert leader.send(req, 5).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_while_preparing_a_rebalance_is_rebalance_in_progress():
    core, _ = make_core(settings=NO_DELAY)
    leader, follower = joined(core)
    leader.sync(assignments={leader.member_id: b"", follower.member_id: b""})
    ClassicClient(core).join_with_id()
    assert follower.sync().error_code == E.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("version", range(6))
def test_injected_errors_answer_in_every_version(version):
    core, _ = make_core(settings=NO_DELAY)
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.SYNC_GROUP, error_code=E.NOT_COORDINATOR))
    c = ClassicClient(core)
    c.member_id, c.generation = "m", 1
    assert c.sync(version).error_code == E.NOT_COORDINATOR
