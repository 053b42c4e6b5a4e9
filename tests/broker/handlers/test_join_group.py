"""JoinGroup handler: every version v0–9 end to end, pre-check order, version notes, and the
fault-injection answer at every version."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.registry import ApiKey
from tests.broker.groups_helpers import ClassicClient
from tests.broker.helpers import make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(10))
def test_every_version_joins_and_completes(version):
    core, _ = make_core(settings=NO_DELAY)
    c = ClassicClient(core)
    first = c.join(version)
    if version >= 4:
        assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
        first = c.join(version)
    assert first is None
    core.fire_due()
    resp = c.answer()
    assert (resp.error_code, resp.generation_id, resp.leader) == (E.NONE, 1, c.member_id)
    assert resp.protocol_name == "range"
    assert resp.protocol_type == ("consumer" if version >= 7 else None)


def test_precheck_order_invalid_group_then_session_timeout_then_coordinator():
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    wrong = next(n for n in core.cluster.nodes if n != core.coordinator_for("g").node_id)
    assert ClassicClient(core, group="", broker_id=wrong).join(session_ms=1).error_code == E.INVALID_GROUP_ID
    assert ClassicClient(core, broker_id=wrong).join(session_ms=1).error_code == E.INVALID_SESSION_TIMEOUT
    assert ClassicClient(core, broker_id=wrong).join().error_code == E.NOT_COORDINATOR


def test_static_members_skip_member_id_required_and_v4_leaders_see_them_without_instance_ids():
    core, _ = make_core(settings=NO_DELAY)
    leader = ClassicClient(core)
    static = ClassicClient(core, instance_id="i-1")
    assert leader.join_with_id(4) is None
    assert static.join(5) is None
    core.fire_due()
    r = leader.answer()
    assert static.answer().members == []
    assert r.leader == leader.member_id
    assert sorted(m.member_id for m in r.members) == sorted([leader.member_id, static.member_id])
    assert all(m.group_instance_id is None for m in r.members)  # v4 has no instance ids


def test_v7_errors_carry_a_null_protocol_name_and_v6_an_empty_one():
    core, _ = make_core(settings=NO_DELAY)
    assert ClassicClient(core).join(7, member_id="ghost").protocol_name is None
    assert ClassicClient(core).join(6, member_id="ghost").protocol_name == ""


@pytest.mark.parametrize("version", range(10))
def test_injected_errors_answer_in_every_version(version):
    core, _ = make_core(settings=NO_DELAY)
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.JOIN_GROUP, error_code=E.COORDINATOR_LOAD_IN_PROGRESS))
    resp = ClassicClient(core).join(version)
    assert (resp.error_code, resp.generation_id) == (E.COORDINATOR_LOAD_IN_PROGRESS, -1)
