"""OffsetDelete handler (v0): top-level and per-partition errors, and deletion."""

from __future__ import annotations

from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.offset_delete import OffsetDeleteRequest
from tests.broker.core.test_groups_offsets import commit, fetch
from tests.broker.groups_helpers import ConsumerClient
from tests.broker.helpers import CoreClient, make_core


def delete(c, group, *names):
    return c.send(OffsetDeleteRequest(group_id=group, topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name=n, partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]) for n in names]), 0)


def test_offsets_of_an_empty_group_are_deleted():
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    commit(c, 8, {("t", 0): (5, -1, "")})
    resp = delete(c, "g", "t")
    assert (resp.error_code, resp.topics[0].partitions[0].error_code) == (E.NONE, E.NONE)
    assert fetch(c, 8, None)[1] == {}


def test_kip848_subscriptions_protect_their_offsets_and_other_brokers_are_not_coordinator():
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1)
    core.create_topic("u", 1)
    coord = core.coordinator_for("g").node_id
    m = ConsumerClient(core, topics=["t"], broker_id=coord)
    m.heartbeat()
    c = CoreClient(core, coord)
    commit(c, 8, {("u", 0): (1, -1, "")})
    resp = delete(c, "g", "t", "u")
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("u", E.NONE)]
    other = next(n for n in core.cluster.nodes if n != coord)
    assert delete(CoreClient(core, other), "g", "t").error_code == E.NOT_COORDINATOR
