"""Share groups on the broker (KIP-932, KIP-1222): the one subsystem that ties the share-group
membership (``share_groups``), the share sessions (``share_session``) and the share partitions
(``share_partition``) to the core's clock, deadlines, logs, configs, group table and long polls.

Theory of operation
-------------------
* ``core.subsystems.share_groups`` is a ``ShareCoordinator``; ``core.subsystems.share_sessions``
  is its session cache (a subsystem too: a dropped connection releases its sessions, SS-8).
* Share groups live in the shared group table (one namespace with classic and KIP-848 groups);
  ``ShareGroupManager`` is the table's manager for the "share" type: ListGroups, DescribeGroups
  lookups and DeleteGroups reach share groups through it without a handler knowing.
* A share partition is made on the first ShareFetch of (group, topic, partition) and reads its
  topic-partition's ``PartitionLog`` directly. Its settings come from the group and broker
  configs each time they are read, so IncrementalAlterConfigs on a GROUP applies at once.
* Wake-ups: a parked ShareFetch waits on its partitions' data keys ``(topic, partition)`` (woken
  by every append) and on ``("share", group, topic, partition)``, woken when records become
  acquirable again (release, lock expiry, session release).
* Records a member rejects, or that reach the delivery limit, go to ``share_dlq.DlqWriter``
  (KIP-1191): written to the group's dead-letter topic, then archived.
* Leaving the group, a session timeout, fencing from the control API take the member out of the
  group only: its share sessions and the records it holds stay (SS-9) until the locks run out, a
  session closes (epoch -1, SS-4) or its connection drops (SS-8).
* A session on broker B releases only the partitions B leads: in Kafka each broker's share
  partitions are its own, here one core holds them all.
* Persistence (with a data dir): every share-partition change but acquisition marks the partition
  dirty; the data dir journals ``take_dirty()`` before the request's answer or after the timer
  (ST-5: an acknowledgement is answered only once its state is written), and ``snapshot()`` with
  the metadata. A restart replays both (``replay``, ``restore``).
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_config import ShareConfig, share_config
from kwire.broker.core.share_dlq import DlqCore, DlqWriter
from kwire.broker.core.share_groups import ShareGroup, ShareGroupCoordinator, TopicMeta
from kwire.broker.core.share_partition import SharePartition, SharePartitions

if TYPE_CHECKING:
    from kwire.broker.core.share_partition import ShareLog
from kwire.broker.core.context import CoreContext, Subsystem
from kwire.broker.core.share_session import ShareSession, ShareSessionCache
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.cluster import Topic
    from kwire.broker.core.faults import Faults
    from kwire.broker.core.group_table import GroupTable

__all__ = ["ShareCoordinator", "ShareGroupManager", "ShareSessions", "share_coordinator", "share_wake_key",
           "share_enabled"]

SHARE = "share"
PartitionKey = tuple[uuid.UUID, int]  # a share session's partition: (topic id, partition)


_MAX_CACHED_CONFIGS = 4096  # ShareCoordinator.config's cache: cleared when this full


class ShareCore(DlqCore, Protocol):
    """What the share coordinator uses of the broker (``BrokerCore`` has it)."""

    def wake(self, key: Hashable) -> None:
        """Long polls waiting on ``key`` (a share partition's) may be ready now."""
        ...

    @property
    def faults(self) -> Faults:
        """Injected errors (the share handlers consult its acknowledgement rules)."""
        ...


class _ShareSubsystems(Protocol):
    @property
    def share_groups(self) -> ShareCoordinator | None: ...


class WithShareGroups(Protocol):
    """A core whose subsystems may include the share coordinator (``BrokerCore``)."""

    @property
    def subsystems(self) -> _ShareSubsystems: ...


def share_wake_key(group_id: str, topic: str, partition: int) -> Hashable:
    """The long-poll key woken when records of a share partition become acquirable again."""
    return (SHARE, group_id, topic, partition)


def share_enabled(core: CoreContext) -> bool:
    """SG-1: share groups are on when the finalized ``share.version`` is at least 1."""
    return core.configs.get_int(ResourceType.BROKER, "", "share.version") >= 1


class ShareSessions(ShareSessionCache[PartitionKey], Subsystem):
    """The share-session cache as a core subsystem: a closed connection ends its sessions (SS-8)."""

    def on_disconnect(self, conn_id: int) -> None:
        self.disconnect(conn_id)


class ShareGroupManager:
    """The group table's manager for share groups (group type "share")."""

    group_type = SHARE

    def __init__(self, owner: ShareCoordinator) -> None:
        self.owner = owner

    def new_group(self, group_id: str) -> ShareGroup:
        return ShareGroup(group_id)

    def destroy(self, group: Any) -> None:
        self.owner.forget_group(group.group_id)

    def delete_error(self, group: Any) -> int:
        return ErrorCode.NON_EMPTY_GROUP if group.members else ErrorCode.NONE

    def validate_offset_commit(self, group: Any, member_id: str, instance_id: str | None, generation_id: int,
                               api_version: int, transactional: bool) -> None:
        # A share group has no committed consumer offsets (its progress is the share state).
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a share group.")

    def validate_offset_fetch(self, group: Any, member_id: str | None, member_epoch: int) -> bool:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a share group.")

    def offset_delete_subscriptions(self, group: Any) -> set[str]:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a share group.")

    def on_metadata_change(self) -> None:
        self.owner.groups.topics_changed()


class ShareCoordinator(Subsystem):
    """Share groups, sessions and partitions of one core. See the module docstring."""

    def __init__(self, core: ShareCore, table: GroupTable) -> None:
        self.core = core
        self.table = table
        self.partitions = SharePartitions(self._make_partition)
        self.sessions: ShareSessions = ShareSessions(
            max_sessions=lambda: core.configs.get_int(ResourceType.BROKER, "", "group.share.max.share.sessions"),
            now_ms=core.clock.now_ms, release=self._release_session, is_member=self._is_member)
        # SS-9: no on_member_removed hook: leaving the group ends neither sessions nor locks.
        self.groups = ShareGroupCoordinator(
            now_ms=core.clock.now_ms, schedule=core.deadlines.at, config=self.config, topics=self._topics,
            other_group_type=self._other_group_type)
        self.manager = ShareGroupManager(self)
        table.register(self.manager)
        # Records entering ARCHIVING (REJECT, the delivery limit) go to the dead-letter writer.
        self.dlq = DlqWriter(core)
        # What changed since the data dir last wrote it (``take_dirty``): a share partition by its
        # (group, topic, partition) key (None: removed), or a group id (True: made, False: deleted).
        # Empty unless share state moved: the data dir checks it after every request.
        self.dirty: dict[tuple[str, str, int] | str, SharePartition | bool | None] = {}
        self._configs: dict[Hashable, ShareConfig] = {}  # see config

    # --- settings -------------------------------------------------------------------------------
    def config(self, group_id: str) -> ShareConfig:
        """The group's effective settings; read several times per share request, so resolved
        once per (group, its overrides, the broker's), the overrides' current items being the key
        (they are changed in place and replaced)."""
        store = self.core.configs
        key = store.overrides_key(ResourceType.GROUP, group_id)
        cached = self._configs.get(key)
        if cached is None:
            if len(self._configs) >= _MAX_CACHED_CONFIGS:
                self._configs.clear()
            cached = self._configs[key] = share_config(store, group_id)
        return cached

    def _topics(self) -> Mapping[str, TopicMeta]:
        return {t.name: (t.topic_id, len(t.partitions)) for t in self.core.cluster.topics.values() if not t.internal}

    def _other_group_type(self, group_id: str) -> str | None:
        g = self.table.groups.get(group_id)
        return g.group_type if g is not None and g.group_type != SHARE else None

    # --- share partitions -----------------------------------------------------------------------
    def _make_partition(self, group_id: str, topic: str, partition: int) -> SharePartition:
        t = self.core.cluster.topics[topic]
        log = t.partitions[partition].log
        key = share_wake_key(group_id, topic, partition)
        sp = SharePartition(group_id, topic, partition, cast("ShareLog", log), clock=self.core.clock,
                            schedule=self.core.deadlines.at, config=lambda: self.config(group_id),
                            failure_archiver=self._archive,
                            on_available=lambda _sp: self.core.wake(key))
        sp.on_change = self._changed
        g = self.groups.get(group_id)
        if g is not None and (t.topic_id, partition) in g.start_at_zero:
            sp.initialize(0)  # a partition added to a topic the group knew starts at 0 (HB-6)
        return sp

    def _changed(self, sp: SharePartition) -> None:
        self.dirty[(sp.group_id, sp.topic, sp.partition)] = sp

    def _archive(self, request: Any) -> None:
        self.dlq.archive(request)

    def _release_session(self, session: ShareSession[PartitionKey]) -> None:
        """SS-4, SS-8: the member's acquired records in the session's partitions that the session's
        broker leads (another broker's share partitions are not this broker's to release)."""
        by_id = self.core.cluster.topics_by_id
        named = []
        for tid, p in session.partitions:
            topic = by_id.get(tid)
            if topic is not None and 0 <= p < len(topic.partitions) \
                    and topic.partitions[p].leader_id == session.broker_id:
                named.append((topic.name, p))
        self.partitions.release_member(session.group_id, session.member_id, named)

    def _is_member(self, group_id: str, member_id: str) -> bool:
        g = self.groups.get(group_id)
        return g is not None and member_id in g.members

    # --- membership -----------------------------------------------------------------------------
    def heartbeat_accepted(self, group_id: str) -> None:
        """Keep the table in step with the coordinator after a heartbeat made or kept a group."""
        g = self.groups.get(group_id)
        if g is not None and self.table.groups.get(group_id) is not g:
            self.table.take_over(group_id)
            self.table.add(g)
            self.dirty[group_id] = True

    def forget_group(self, group_id: str) -> None:
        """DeleteGroups: the group and its share state go."""
        g = self.groups.groups.pop(group_id, None)
        if g is not None:
            for m in list(g.members.values()):
                if m.session is not None:
                    m.session.cancel()
            g.dead = True
        for sp in self.partitions.of_group(group_id):
            sp.close()
            self.dirty[(sp.group_id, sp.topic, sp.partition)] = None
        self.partitions.drop_group(group_id)
        self.dirty[group_id] = False

    # --- share-group offsets (the admin APIs) ----------------------------------------------------
    def group_for_offsets(self, group_id: str, *, create: bool) -> ShareGroup:
        """The share group an offsets request is about.

        Raises:
            KafkaError: GROUP_ID_NOT_FOUND (absent and not ``create``, or another type's id).
        """
        if self._other_group_type(group_id) is not None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        g = self.groups.get(group_id)
        if g is None:
            if not create:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            g = self.groups.groups[group_id] = ShareGroup(group_id)
            self.heartbeat_accepted(group_id)
        return g

    def alter_start_offset(self, group_id: str, topic: str, partition: int, start_offset: int) -> None:
        """AlterShareGroupOffsets for one partition (the group must be empty, checked by the caller)."""
        sp = self.partitions.get(group_id, topic, partition)
        if sp is None:
            sp = self.partitions.create(group_id, topic, partition)
        sp.reset(start_offset)
        g = self.groups.get(group_id)
        if g is not None:  # the share state now exists: the partition is assignable (HB-6)
            g.mark_initialized(self.core.cluster.topics[topic].topic_id, (partition,))

    def delete_offsets(self, group_id: str, topic: str) -> None:
        """DeleteShareGroupOffsets for a topic: its share state goes; the next fetch starts from
        ``share.auto.offset.reset`` again."""
        for sp in self.partitions.of_topic(topic):
            if sp.group_id == group_id:
                sp.close()
                self.partitions.remove(group_id, topic, sp.partition)
                self.dirty[(group_id, topic, sp.partition)] = None
        g = self.groups.get(group_id)
        if g is not None and topic in self.core.cluster.topics:  # to be initialised again (HB-6)
            g.forget_topic(self.core.cluster.topics[topic].topic_id)

    # --- persistence ----------------------------------------------------------------------------
    # Kafka's share coordinator writes each share-state change (SharePartition.writeShareGroupState:
    # the state epoch, the start offset and the changed state batches) before the acknowledgement
    # completes (ST-5). Here the data dir takes ``take_dirty()`` after every handler and timer,
    # before anything is answered (the core's ``before_answer``), and ``snapshot()`` with the metadata.
    def snapshot(self) -> dict[str, Any]:
        """Share groups (ids) and share-partition state, for the data dir's metadata file."""
        parts: dict[str, list[Any]] = {}
        for sp in self.partitions.all():
            if sp.initialized:
                parts.setdefault(sp.group_id, []).append([sp.topic, sp.partition, sp.persisted()])
        # which partitions have share state (HB-6): a rejoining group is assigned them at once
        initialized = {gid: {str(tid): sorted(ps) for tid, ps in g.initialized.items()}
                       for gid, g in self.groups.groups.items() if g.initialized}
        return {"groups": sorted(self.groups.groups), "partitions": parts, "initialized": initialized}

    def take_dirty(self) -> list[dict[str, Any]]:
        """Journal entries for what changed since the last call: each is the whole current state
        of one share partition (None: removed) or whether a group exists, so the last entry per
        key wins on replay (``replay``)."""
        out: list[dict[str, Any]] = []
        for key, value in self.dirty.items():
            if isinstance(key, str):
                out.append({"group": key, "exists": bool(value) and key in self.groups.groups})
                continue
            gid, topic, partition = key
            sp = value if isinstance(value, SharePartition) else None
            live = sp is not None and sp.initialized and self.partitions.get(gid, topic, partition) is sp
            out.append({"sp": [gid, topic, partition], "state": sp.persisted() if live and sp is not None else None})
        self.dirty.clear()
        return out

    @staticmethod
    def replay(saved: dict[str, Any] | None, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """``snapshot()`` output with ``take_dirty()`` entries applied in order (the data dir's
        journal over its metadata), ready for ``restore``."""
        groups = set((saved or {}).get("groups", ()))
        parts: dict[tuple[str, str, int], Any] = {}
        for gid, rows in (saved or {}).get("partitions", {}).items():
            for topic, partition, state in rows:
                parts[(gid, topic, int(partition))] = state
        for e in entries:
            if "group" in e:
                if e["exists"]:
                    groups.add(e["group"])
                else:
                    groups.discard(e["group"])
                    parts = {k: v for k, v in parts.items() if k[0] != e["group"]}
            else:
                gid, topic, partition = e["sp"]
                if e["state"] is None:
                    parts.pop((gid, topic, int(partition)), None)
                else:
                    parts[(gid, topic, int(partition))] = e["state"]
        out: dict[str, list[Any]] = {}
        for (gid, topic, partition), state in sorted(parts.items()):
            out.setdefault(gid, []).append([topic, partition, state])
        # which partitions have share state (HB-6) travels with the metadata snapshot only
        return {"groups": sorted(groups), "partitions": out, "initialized": (saved or {}).get("initialized", {})}

    def restore(self, saved: dict[str, Any]) -> None:
        """Bring back ``snapshot()``: empty share groups (members rejoin) and their share partitions.
        ARCHIVING records found resume their dead-letter write, skipping what is already written."""
        for gid in saved.get("groups", ()):
            if self._other_group_type(gid) is None and gid not in self.groups.groups:
                self.groups.groups[gid] = ShareGroup(gid)
                self.heartbeat_accepted(gid)
        by_id = self.core.cluster.topics_by_id
        for gid, topics_ in saved.get("initialized", {}).items():
            g = self.groups.get(gid)
            for tid, ps in topics_.items():
                if g is not None and uuid.UUID(tid) in by_id:
                    g.mark_initialized(uuid.UUID(tid), ps)
        topics = self.core.cluster.topics
        self.dlq.resuming = True
        try:
            for gid, rows in saved.get("partitions", {}).items():
                for topic, partition, state in rows:
                    if topic in topics and 0 <= partition < len(topics[topic].partitions):
                        self.partitions.create(gid, topic, partition).restore(state)
        finally:
            self.dlq.resuming = False
        self.dirty.clear()

    def fence_member(self, group_id: str, member_id: str) -> bool:
        """Fault injection: the member is removed now, as if its session had timed out; its share
        sessions and acquired records stay (SS-9)."""
        return self.groups.remove_member(group_id, member_id)

    # --- hooks ----------------------------------------------------------------------------------
    def on_topic_deleted(self, topic: Topic) -> None:
        for sp in self.partitions.of_topic(topic.name):
            sp.close()
            self.dirty[(sp.group_id, sp.topic, sp.partition)] = None
        self.partitions.drop_topic(topic.name)

    def on_metadata_changed(self) -> None:
        # Log start offsets may have moved (retention, DeleteRecords): archive what fell below (ST-8).
        for sp in self.partitions.all():
            sp.sync_log_start()

    def on_close(self) -> None:
        for sp in self.partitions.all():
            sp.close()


def share_coordinator(core: WithShareGroups) -> ShareCoordinator:
    """The core's share coordinator (installed by ``BrokerCore._init_subsystems``)."""
    sub = core.subsystems.share_groups
    if sub is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "share groups are not installed on this broker")
    return sub
