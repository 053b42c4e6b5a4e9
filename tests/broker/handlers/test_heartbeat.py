"""Heartbeat handler: v0–4 and the error it gives in each group state."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.groups_helpers import ClassicClient, stable_group
from tests.broker.helpers import make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(5))
def test_every_version_answers_by_group_state(version):
    core, _ = make_core(settings=NO_DELAY)
    a, b = stable_group(core, 2)
    assert a.heartbeat(version) == E.NONE
    ClassicClient(core).join_with_id()
    assert a.heartbeat(version) == E.REBALANCE_IN_PROGRESS
    assert a.heartbeat(version, generation=99) == E.ILLEGAL_GENERATION
    assert a.heartbeat(version, member_id="ghost") == E.UNKNOWN_MEMBER_ID


def test_heartbeat_in_completing_rebalance_is_accepted():
    core, _ = make_core(settings=NO_DELAY)
    c = ClassicClient(core)
    c.join_with_id()
    core.fire_due()
    c.answer()
    assert c.heartbeat() == E.NONE


def test_v3_static_instance_with_another_member_id_is_fenced():
    core, _ = make_core(settings=NO_DELAY)
    (s,) = stable_group(core, 1, instance_id="i-1")
    assert s.heartbeat(3, member_id="i-1-old") == E.FENCED_INSTANCE_ID
    assert s.heartbeat(2, member_id="i-1-old") == E.UNKNOWN_MEMBER_ID  # v2 has no instance id


def test_empty_group_id_is_invalid_group_id():
    core, _ = make_core(settings=NO_DELAY)
    c = ClassicClient(core, group="")
    c.member_id = "m"
    assert c.heartbeat() == E.INVALID_GROUP_ID
