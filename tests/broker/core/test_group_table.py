"""The group table: one namespace over every group type, operations that dispatch on the type,
and the seam a new type (share groups next) plugs into without touching a handler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kwire.broker.core._group_common import GroupStats
from kwire.broker.core.group_table import GroupTable, group_table
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.delete_groups import DeleteGroupsRequest
from kwire.protocol.messages.describe_groups import DescribeGroupsRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.broker.groups_helpers import ClassicClient, ConsumerClient, stable_group
from tests.broker.helpers import CoreClient, make_core


@dataclass(slots=True)
class FakeGroup:
    group_id: str
    members: set[str] = field(default_factory=set)
    group_type: str = "fake"
    protocol_type: str | None = "fakeproto"

    @property
    def state_name(self) -> str:
        return "Busy" if self.members else "Idle"

    def is_empty(self) -> bool:
        return not self.members

    def statistics(self) -> GroupStats:
        return GroupStats(self.group_id, self.group_type, self.state_name, 0, len(self.members), 0)


class FakeManager:
    """A third group type: its own rules for deletes and offsets, nothing else of the broker touched."""

    group_type = "fake"

    def __init__(self) -> None:
        self.destroyed: list[str] = []
        self.metadata_changes = 0

    def new_group(self, group_id: str) -> FakeGroup:
        return FakeGroup(group_id)

    def destroy(self, group: FakeGroup) -> None:
        self.destroyed.append(group.group_id)

    def delete_error(self, group: FakeGroup) -> int:
        return E.NON_EMPTY_GROUP if group.members else E.NONE

    def validate_offset_commit(self, group: FakeGroup, member_id: str, instance_id: str | None, generation_id: int,
                               api_version: int, transactional: bool) -> None:
        if member_id not in group.members:
            raise KafkaError(E.UNKNOWN_MEMBER_ID, f"{member_id!r} is not a fake member")

    def validate_offset_fetch(self, group: FakeGroup, member_id: str | None, member_epoch: int) -> bool:
        return True

    def offset_delete_subscriptions(self, group: FakeGroup) -> set[str]:
        return set()

    def on_metadata_change(self) -> None:
        self.metadata_changes += 1


@pytest.fixture
def core() -> Any:
    c, _ = make_core(settings={"group.initial.rebalance.delay.ms": "0"})
    c.create_topic("t", 2)
    return c


def test_a_third_group_type_plugs_in_without_touching_a_handler(core: Any) -> None:
    table = group_table(core)
    fake = FakeManager()
    table.register(fake)
    table.add(FakeGroup("f", {"m1"}))
    stable_group(core, 1)  # classic "g"
    c = CoreClient(core)
    listed = c.send(ListGroupsRequest(), 5).groups
    assert {(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed} >= {
        ("f", "fake", "Busy", "fakeproto"), ("g", "classic", "Stable", "consumer")}
    assert [g.group_id for g in c.send(ListGroupsRequest(types_filter=["fake"]), 5).groups] == ["f"]
    assert [g.group_id for g in c.send(ListGroupsRequest(states_filter=["idle"]), 5).groups] == []

    def commit(member: str) -> int:
        req = OffsetCommitRequest(group_id="f", generation_id_or_member_epoch=1, member_id=member, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=7)])])
        return c.send(req, 9).topics[0].partitions[0].error_code

    assert commit("nobody") == E.UNKNOWN_MEMBER_ID
    assert commit("m1") == E.NONE
    fetched = c.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="f", topics=None)]), 9).groups[0]
    assert fetched.topics[0].partitions[0].committed_offset == 7
    assert c.send(DeleteGroupsRequest(groups_names=["f"]), 2).results[0].error_code == E.NON_EMPTY_GROUP
    table.groups["f"].members.clear()  # type: ignore[attr-defined]
    assert c.send(DeleteGroupsRequest(groups_names=["f"]), 2).results[0].error_code == E.NONE
    assert fake.destroyed == ["f"] and "f" not in table.groups
    core.create_topic("u", 1)
    assert fake.metadata_changes >= 1  # topic and partition hooks both reach every manager
    assert [s.group_id for s in table.statistics()] == ["g"]


def test_a_type_registers_once(core: Any) -> None:
    with pytest.raises(ValueError):
        group_table(core).register(group_table(core).classic)


def test_ids_conflict_across_types_and_an_empty_group_gives_way_keeping_its_offsets(core: Any) -> None:
    table: GroupTable = group_table(core)
    table.register(FakeManager())
    table.add(FakeGroup("g", {"m"}))
    assert ClassicClient(core).join(3).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert ConsumerClient(core, topics=["t"]).heartbeat().error_code == E.GROUP_ID_NOT_FOUND
    table.groups["g"].members.clear()  # type: ignore[attr-defined]
    assert table.take_over("g") and "g" not in table.groups
    # A classic group with committed offsets gives way to a KIP-848 group; the offsets stay.
    c = CoreClient(core)
    req = OffsetCommitRequest(group_id="h", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=1, committed_offset=3)])])
    assert c.send(req, 8).topics[0].partitions[0].error_code == E.NONE
    assert table.groups["h"].group_type == "classic"
    member = ConsumerClient(core, group="h", topics=["t"])
    assert member.heartbeat().error_code == E.NONE
    assert table.groups["h"].group_type == "consumer"
    fetched = c.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="h", topics=None)]), 9).groups[0]
    assert [(p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] == [(1, 3)]


def test_describe_groups_describes_classic_groups_and_not_other_types(core: Any) -> None:
    stable_group(core, 2)
    k = ConsumerClient(core, group="k", topics=["t"])
    k.heartbeat()
    c = CoreClient(core)
    described = {g.group_id: g for g in c.send(DescribeGroupsRequest(groups=["g", "k"]), 6).groups}
    assert (described["g"].error_code, described["g"].group_state, len(described["g"].members)) == (E.NONE, "Stable", 2)
    assert described["k"].error_code == E.GROUP_ID_NOT_FOUND
    listed = {g.group_id: g.group_type for g in c.send(ListGroupsRequest(), 5).groups}
    assert listed == {"g": "classic", "k": "consumer"}
