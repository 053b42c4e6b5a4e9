"""DescribeGroups handler: v0–6 layouts (authorized operations v3+, instance ids v4+,
GROUP_ID_NOT_FOUND and ErrorMessage v6) and injected errors."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.broker.handlers._common import NO_AUTHORIZED_OPERATIONS
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.describe_groups import DescribeGroupsRequest
from kwire.protocol.registry import ApiKey
from tests.broker.groups_helpers import stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(7))
def test_every_version_describes_a_stable_group_and_a_missing_one(version):
    core, _ = make_core(settings=NO_DELAY)
    (s,) = stable_group(core, 1, instance_id="i-1")
    resp = CoreClient(core).send(DescribeGroupsRequest(groups=["g", "missing"],
                                                       include_authorized_operations=version >= 3), version)
    g, missing = resp.groups
    assert (g.error_code, g.group_state, g.protocol_data) == (E.NONE, "Stable", "range")
    (m,) = g.members
    assert (m.member_id, m.client_id, m.client_host) == (s.member_id, "test", "")  # no socket peer here
    assert m.group_instance_id == ("i-1" if version >= 4 else None)
    assert m.member_metadata == b"meta" and m.member_assignment == s.member_id.encode()
    assert (g.authorized_operations != NO_AUTHORIZED_OPERATIONS) == (version >= 3)
    assert missing.group_state == "Dead"
    assert missing.error_code == (E.GROUP_ID_NOT_FOUND if version >= 6 else E.NONE)
    assert (missing.error_message is not None) == (version >= 6)


def test_only_a_stable_group_shows_protocol_metadata_and_assignments():
    core, _ = make_core(settings=NO_DELAY)
    from tests.broker.groups_helpers import ClassicClient

    c = ClassicClient(core)
    c.join_with_id()
    core.fire_due()
    c.answer()
    g = CoreClient(core).send(DescribeGroupsRequest(groups=["g"]), 5).groups[0]
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("CompletingRebalance", "consumer", "")
    assert g.members[0].member_metadata == b"" and g.members[0].client_id == "test"


@pytest.mark.parametrize("version", range(7))
def test_injected_errors_answer_for_every_group(version):
    core, _ = make_core()
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.DESCRIBE_GROUPS, error_code=E.NOT_COORDINATOR))
    resp = CoreClient(core).send(DescribeGroupsRequest(groups=["a", "b"]), version)
    assert [g.error_code for g in resp.groups] == [E.NOT_COORDINATOR] * 2


@pytest.mark.parametrize(("peer", "host"), [("127.0.0.1:5555", "/127.0.0.1"), ("[::1]:5555", "/::1"), ("", "")])
def test_client_host_is_printed_as_upstream_does(peer, host):
    core, _ = make_core(settings=NO_DELAY)
    from tests.broker.groups_helpers import ClassicClient

    c = ClassicClient(core)
    c.conn.peer = peer
    c.join_with_id()
    g = CoreClient(core).send(DescribeGroupsRequest(groups=["g"]), 5).groups[0]
    assert g.members[0].client_host == host
