"""ListGroups handler: v0–5 (states filter v4, types filter v5), only this broker's groups."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.list_groups import ListGroupsRequest
from tests.broker.groups_helpers import ClassicClient, ConsumerClient, stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


@pytest.mark.parametrize("version", range(6))
def test_every_version_lists_classic_and_consumer_groups(version):
    core, _ = make_core(settings=NO_DELAY)
    core.create_topic("t", 1)
    stable_group(core, 1, group="classic-g")
    ConsumerClient(core, group="kip848-g", topics=["t"]).heartbeat()
    resp = CoreClient(core).send(ListGroupsRequest(), version)
    assert resp.error_code == E.NONE
    got = [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in resp.groups]
    assert got == [
        ("classic-g", "consumer", "Stable" if version >= 4 else "", "classic" if version >= 5 else ""),
        ("kip848-g", "consumer", "Stable" if version >= 4 else "", "consumer" if version >= 5 else ""),
    ]


def test_filters_are_case_insensitive_and_combine():
    core, _ = make_core(settings=NO_DELAY)
    core.create_topic("t", 1)
    stable_group(core, 1, group="a")
    ClassicClient(core, group="b").join_with_id()  # PreparingRebalance
    ConsumerClient(core, group="c", topics=["t"]).heartbeat()
    c = CoreClient(core)

    def ids(**kw):
        return [g.group_id for g in c.send(ListGroupsRequest(**kw), 5).groups]

    assert ids(states_filter=["STABLE"]) == ["a", "c"]
    assert ids(states_filter=["preparingrebalance", "stable"], types_filter=["classic"]) == ["a", "b"]
    assert ids(types_filter=["share"]) == []


def test_each_broker_lists_only_the_groups_it_coordinates():
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    names = [f"group-{i}" for i in range(12)]
    for n in names:
        coord = core.coordinator_for(n).node_id
        ClassicClient(core, group=n, broker_id=coord).join_with_id()
    seen = []
    for node in core.cluster.nodes:
        listed = [g.group_id for g in CoreClient(core, node).send(ListGroupsRequest(), 3).groups]
        assert all(core.coordinator_for(g).node_id == node for g in listed)
        seen += listed
    assert sorted(seen) == sorted(names)
