"""DeleteGroups handler: v0–3, per-group results, ErrorMessage from v3."""

from __future__ import annotations

import pytest

from kwire.broker.core.offsets import offset_store
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.delete_groups import DeleteGroupsRequest
from tests.broker.groups_helpers import stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(4))
def test_every_version_deletes_empty_groups_and_their_offsets(version):
    core, _ = make_core(settings=NO_DELAY)
    core.create_topic("t", 1)
    (a,) = stable_group(core, 1, group="busy")
    from tests.broker.core.test_groups_offsets import commit

    commit(CoreClient(core), 8, {("t", 0): (3, -1, "")}, group="idle")
    resp = CoreClient(core).send(DeleteGroupsRequest(groups_names=["idle", "busy", "never"]), version)
    got = [(r.group_id, r.error_code) for r in resp.results]
    assert got == [("idle", E.NONE), ("busy", E.NON_EMPTY_GROUP), ("never", E.GROUP_ID_NOT_FOUND)]
    assert [r.error_message is not None for r in resp.results] == [False, version >= 3, version >= 3]
    assert offset_store(core).partitions("idle") == {}


def test_not_coordinator_per_group():
    core, _ = make_core(brokers=3)
    node = core.coordinator_for("x").node_id
    other = next(n for n in core.cluster.nodes if n != node)
    resp = CoreClient(core, other).send(DeleteGroupsRequest(groups_names=["x"]), 2)
    assert resp.results[0].error_code == E.NOT_COORDINATOR
