"""The group table: one namespace of group ids shared by every group type (classic, KIP-848
consumer, and share groups once they land), and the operations that span the types.

Theory of operation
-------------------
* Each group type has a manager that owns its state machine (``classic_groups``,
  ``consumer_groups``) and registers with the table. The table knows groups only through the
  ``Group`` protocol and their managers through ``GroupManager``: ListGroups, DescribeGroups'
  lookups, DeleteGroups, the offset checks of OffsetCommit/OffsetFetch/OffsetDelete and the
  metadata hooks dispatch on ``group.group_type``. A new type plugs in by registering a manager;
  no handler changes.
* A group id belongs to one type at a time. A manager that wants an id held by another type
  asks ``take_over``: an empty group gives way (its committed offsets stay, as upstream), a
  non-empty one keeps the id and the caller answers with its type's conflict error.
* Committed offsets alone (a data dir restored, or an admin's commit) make an empty classic
  group, as Kafka's coordinator loads offsets into a classic group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.core.context import Subsystem
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.classic_groups import ClassicGroupManager
    from kwire.broker.core.cluster import Partition, Topic
    from kwire.broker.core.consumer_groups import ConsumerGroupManager
    from kwire.broker.core.group_migration import GroupMigration

__all__ = ["Group", "GroupManager", "GroupTable", "ListedGroup", "group_table"]


class Group(Protocol):
    """What the table needs of any group."""

    group_id: str
    group_type: str  # "classic" | "consumer" | "share": ListGroups' GroupType

    @property
    def state_name(self) -> str: ...

    @property
    def protocol_type(self) -> str | None: ...

    def is_empty(self) -> bool: ...

    def statistics(self) -> Any: ...


class GroupManager(Protocol):
    """The owner of one group type's state machine, as the table sees it."""

    group_type: str

    def new_group(self, group_id: str) -> Group:
        """An empty group of this type (not yet in the table)."""
        ...

    def destroy(self, group: Any) -> None:
        """Stop the group's timers and members (it is being deleted or replaced)."""
        ...

    def delete_error(self, group: Any) -> int:
        """NONE when DeleteGroups may delete the group, else the error it answers."""
        ...

    def validate_offset_commit(self, group: Any, member_id: str, instance_id: str | None, generation_id: int,
                               api_version: int, transactional: bool) -> None:
        """Raise KafkaError when the commit must be refused."""
        ...

    def validate_offset_fetch(self, group: Any, member_id: str | None, member_epoch: int) -> bool:
        """False when the group reads as absent (every offset -1); raise KafkaError to refuse."""
        ...

    def offset_delete_subscriptions(self, group: Any) -> set[str]:
        """Topics whose offsets OffsetDelete may not remove; raise KafkaError for the request."""
        ...

    def on_metadata_change(self) -> None:
        """Topics were created, deleted or grew."""
        ...


@dataclass(slots=True, frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


class GroupTable(Subsystem):
    """Every group on the cluster, by id, and the managers of their types."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.groups: dict[str, Group] = {}
        self.managers: dict[str, GroupManager] = {}
        from kwire.broker.core.classic_groups import ClassicGroupManager
        from kwire.broker.core.consumer_groups import ConsumerGroupManager
        from kwire.broker.core.group_migration import GroupMigration

        self.classic: ClassicGroupManager = ClassicGroupManager(core, self)
        self.consumer: ConsumerGroupManager = ConsumerGroupManager(core, self)
        # Above both coordinators: converts one group type into the other (GM-*).
        self.migration: GroupMigration = GroupMigration(self.consumer, self.classic)
        self.register(self.classic)
        self.register(self.consumer)

    def register(self, manager: GroupManager) -> None:
        if manager.group_type in self.managers:
            raise ValueError(f"a manager for {manager.group_type!r} groups is registered already")
        self.managers[manager.group_type] = manager

    def manager(self, group: Group) -> GroupManager:
        return self.managers[group.group_type]

    # --- the namespace --------------------------------------------------------------------------
    def get(self, group_id: str) -> Group | None:
        """The group; committed offsets alone make an empty classic group."""
        g = self.groups.get(group_id)
        if g is None and self._offsets().has_offsets(group_id):
            g = self.groups[group_id] = self.classic.new_group(group_id)
        return g

    def of_type(self, group_id: str, group_type: str) -> Any | None:
        """The group if it exists and is of ``group_type``."""
        g = self.get(group_id)
        return g if g is not None and g.group_type == group_type else None

    def add(self, group: Group) -> None:
        self.groups[group.group_id] = group

    def take_over(self, group_id: str) -> bool:
        """Free ``group_id`` for another type: an empty group gives way (its offsets stay) and True
        comes back; a non-empty one stays and False comes back."""
        g = self.groups.get(group_id)
        if g is None:
            return True
        if not g.is_empty():
            return False
        self.manager(g).destroy(g)
        del self.groups[group_id]
        return True

    def _offsets(self) -> Any:
        from kwire.broker.core.offsets import offset_store

        return offset_store(self.core)

    # --- ListGroups / DeleteGroups ----------------------------------------------------------------
    def list_groups(self, broker_id: int, states: set[str] | None = None,
                    types: set[str] | None = None) -> list[ListedGroup]:
        out = []
        for gid in self._offsets().groups():
            self.get(gid)
        for gid, g in sorted(self.groups.items()):
            if not self.core.is_coordinator(broker_id, gid):
                continue
            state = g.state_name
            if states and state.lower() not in states:
                continue
            if types and g.group_type not in types:
                continue
            out.append(ListedGroup(gid, g.protocol_type or "", state, g.group_type))
        return out

    def delete_group(self, group_id: str) -> int:
        g = self.get(group_id)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        manager = self.manager(g)
        code = manager.delete_error(g)
        if code:
            return code
        manager.destroy(g)
        del self.groups[group_id]
        self._offsets().delete_group(group_id)
        return ErrorCode.NONE

    # --- offsets --------------------------------------------------------------------------------
    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
                               api_version: int, *, transactional: bool = False) -> None:
        """Raise KafkaError when the commit must be refused (upstream validateOffsetCommit)."""
        g = self.get(group_id)
        if g is None:
            if generation_id < 0:
                # A "simple" commit (admin, or a consumer without group management) creates an empty group.
                self.add(self.classic.new_group(group_id))
                return
            if api_version >= 9:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"Group {group_id} not found.")
        self.manager(g).validate_offset_commit(g, member_id, instance_id, generation_id, api_version, transactional)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> bool:
        """False when the group does not exist (every offset then reads as -1); raises KafkaError."""
        g = self.get(group_id)
        if g is None:
            return False
        return self.manager(g).validate_offset_fetch(g, member_id, member_epoch)

    def offset_delete_subscriptions(self, group_id: str) -> set[str]:
        """Topics whose offsets OffsetDelete may not remove; raises KafkaError for the whole request."""
        g = self.get(group_id)
        if g is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return self.manager(g).offset_delete_subscriptions(g)

    # --- hooks ----------------------------------------------------------------------------------
    def _metadata_changed(self) -> None:
        for m in self.managers.values():
            m.on_metadata_change()

    def on_topic_created(self, topic: Topic) -> None:
        self._metadata_changed()

    def on_partition_created(self, partition: Partition) -> None:
        self._metadata_changed()

    def on_topic_deleted(self, topic: Topic) -> None:
        self._metadata_changed()

    def on_metadata_changed(self) -> None:
        self._metadata_changed()

    def statistics(self) -> tuple[Any, ...]:
        """A frozen snapshot of every group, by group id."""
        return tuple(self.groups[gid].statistics() for gid in sorted(self.groups))


def group_table(core: Any) -> GroupTable:
    """The core's group table (installed by ``BrokerCore._init_subsystems``)."""
    return core.subsystems.groups
