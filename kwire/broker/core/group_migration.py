"""Online migration between classic and KIP-848 consumer groups, and the classic protocol inside a
consumer group, as upstream's GroupMetadataManager runs them (rules GM-1..GM-13, docs/group-migration.md).

Theory of operation
-------------------
* **Upgrade.** A ConsumerGroupHeartbeat with epoch 0 for a non-empty classic group converts it
  (``getOrMaybeCreateConsumerGroup`` → ``validateOnlineUpgrade`` → ``convertToConsumerGroup``):
  every classic member becomes a consumer-group member that keeps using the classic protocol,
  at member epoch = the classic generation, Stable, with its subscription taken from its
  ConsumerProtocolSubscription and its current and target assignment from its last SyncGroup
  assignment (``ConsumerGroup.fromClassicGroup``). Joins and syncs still waiting are answered
  REBALANCE_IN_PROGRESS so those members rejoin.
* **Classic members in a consumer group** (``classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup``).
  JoinGroup updates the member from its subscription, bumps the group epoch when its topics
  changed, recomputes the target with the group's server-side assignor and reconciles the
  member against the partitions it says it owns; the answer comes at once, with the member
  epoch as generation and no leader work (leader ""). SyncGroup hands the member its current
  assignment, serialised as a ConsumerProtocolAssignment at its subscription's version.
  Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin: a newer assignment
  epoch, partitions to revoke, or partitions it waited for that are free now. Timers: the
  classic session timeout, a sync timeout after each join and a join timeout after a
  REBALANCE_IN_PROGRESS (both the rebalance timeout); each fences the member.
* **Downgrade.** When members leave or are fenced and every one left uses the classic
  protocol, the group converts back (``validateOnlineDowngradeWithFencedMembers`` →
  ``convertToClassicGroup`` → ``ClassicGroup.fromConsumerGroup``): a Stable classic group at
  generation = the group epoch whose members hold their target assignment, which then
  rebalances at once.
* ``group.consumer.migration.policy`` gates both ways (BIDIRECTIONAL, UPGRADE, DOWNGRADE,
  DISABLED; DISABLED also keeps classic members out of consumer groups). Committed offsets are
  kept per group id outside either group, so every conversion keeps them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from kwire.broker.core._group_common import GroupError, broker_int, kafka_uuid_string
from kwire.broker.core.classic_groups import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    ClassicMember,
    GroupState,
    JoinCallback,
    JoinRequest,
    JoinResult,
    SyncCallback,
    SyncResult,
)
from kwire.broker.core.configs import ResourceType
from kwire.broker.core.consumer_groups import (
    Assignment,
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    _RegexUpdate,
)
from kwire.errors import KwireError
from kwire.protocol.data.consumer_protocol_assignment import ConsumerProtocolAssignment
from kwire.protocol.data.consumer_protocol_subscription import ConsumerProtocolSubscription
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.classic_groups import ClassicGroupManager
    from kwire.broker.core.consumer_groups import ConsumerGroupManager

__all__ = ["MigrationPolicy", "migration_policy", "GroupMigration", "decode_subscription", "encode_assignment"]

# ConsumerProtocol's highest subscription/assignment version (ConsumerProtocolSubscription.json).
_CONSUMER_PROTOCOL_MAX_VERSION = 3


class MigrationPolicy(Enum):
    """ConsumerGroupMigrationPolicy: (upgrade enabled, downgrade enabled)."""

    BIDIRECTIONAL = (True, True)
    UPGRADE = (True, False)
    DOWNGRADE = (False, True)
    DISABLED = (False, False)

    @property
    def upgrade(self) -> bool:
        return self.value[0]

    @property
    def downgrade(self) -> bool:
        return self.value[1]


def migration_policy(configs: Any) -> MigrationPolicy:
    """``group.consumer.migration.policy``, parsed as ConsumerGroupMigrationPolicy.parse does
    (case-insensitive; an unknown name is DISABLED)."""
    raw = configs.get(ResourceType.BROKER, "", "group.consumer.migration.policy") or ""
    return MigrationPolicy.__members__.get(raw.strip().upper(), MigrationPolicy.DISABLED)


def _version(meta: bytes) -> int:
    """ConsumerProtocol.deserializeVersion: the leading int16."""
    if len(meta) < 2:
        raise KwireError("the embedded consumer protocol is shorter than its version")
    return int(struct.unpack_from(">h", meta)[0])


def decode_subscription(meta: bytes) -> ConsumerProtocolSubscription:
    """ConsumerProtocol.deserializeConsumerProtocolSubscription (a newer version is read as the
    highest known, as its tagged-free layout allows). Raises KwireError when malformed."""
    version = _version(meta)
    if version < 0:
        raise KwireError(f"unsupported consumer protocol version {version}")
    sub, _ = ConsumerProtocolSubscription.decode_from(memoryview(meta), 2, min(version, _CONSUMER_PROTOCOL_MAX_VERSION))
    return sub


def encode_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    """ConsumerProtocol.serializeAssignment at ``version`` (capped at the highest known)."""
    version = max(0, min(version, _CONSUMER_PROTOCOL_MAX_VERSION))
    body = ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(partitions.items())
    ]).encode(version)
    return struct.pack(">h", version) + body


@dataclass(slots=True, frozen=True)
class _Subscription:
    topics: tuple[str, ...]
    owned: Assignment
    rack_id: str | None


class GroupMigration:
    """The migration paths of one ConsumerGroupManager (upstream GroupMetadataManager's)."""

    def __init__(self, manager: ConsumerGroupManager, classic: ClassicGroupManager) -> None:
        self.mgr = manager
        self.classic = classic
        self.core = manager.core
        self.table = manager.table

    # --- helpers ------------------------------------------------------------------------------
    def policy(self) -> MigrationPolicy:
        return migration_policy(self.core.configs)

    def _ids(self, named: Iterable[tuple[str, Iterable[int]]]) -> Assignment:
        """Topic names to ids (unknown topics dropped, as toTopicPartitionMap does)."""
        topics = self.core.cluster.topics
        out: Assignment = {}
        for name, ps in named:
            t = topics.get(name)
            if t is not None:
                out[t.topic_id] = out.get(t.topic_id, frozenset()) | frozenset(ps)
        return {tid: ps for tid, ps in out.items() if ps}

    def _names(self, assignment: Assignment) -> dict[str, list[int]]:
        by_id = {t.topic_id: t.name for t in self.core.cluster.topics.values()}
        return {by_id[tid]: sorted(ps) for tid, ps in assignment.items() if tid in by_id and ps}

    def _subscription(self, meta: bytes) -> _Subscription:
        sub = decode_subscription(meta)
        return _Subscription(tuple(sub.topics), self._ids((tp.topic, tp.partitions) for tp in sub.owned_partitions),
                             sub.rack_id)

    def _assignment_bytes(self, m: ConsumerMember, assignment: Assignment, protocol: str | None = None) -> bytes:
        """The member's assignment for the classic protocol, at the version of its subscription
        (the chosen protocol's metadata; its first protocol's in a consumer group)."""
        assert m.classic is not None
        protocols = m.classic.protocols
        meta = next((md for n, md in protocols if n == protocol), protocols[0][1] if protocols else b"")
        try:
            version = _version(meta)
        except KwireError:
            version = 0
        return encode_assignment(self._names(assignment), version)

    # --- upgrade (getOrMaybeCreateConsumerGroup, validateOnlineUpgrade, convertToConsumerGroup) --
    def upgrade(self, cg: ClassicGroup) -> ConsumerGroup:
        """Convert a non-empty classic group; raises GroupError GROUP_ID_NOT_FOUND when it may not."""
        gid = cg.group_id
        if not self.policy().upgrade:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group "
                                                           f"because online upgrade is disabled.")
        if cg.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {gid} to consumer group because the group does not use "
                             f"the consumer embedded protocol.")
        if len(cg.members) > broker_int(self.core.configs, "group.consumer.max.size"):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {gid} to consumer group because the group size exceeds "
                             f"the consumer group maximum size.")
        g = ConsumerGroup(gid)
        g.group_epoch = g.assignment_epoch = cg.generation_id
        for cm in cg.members.values():
            g.members[cm.member_id] = self._from_classic_member(cg, cm)
            if cm.instance_id is not None:
                g.static_members[cm.instance_id] = cm.member_id
            g.target[cm.member_id] = dict(g.members[cm.member_id].assigned)
        g.subscription_metadata = self.mgr._topic_metadata(g.subscribed_names())
        # The conversion succeeded: waiting members learn of the new rebalance and rejoin.
        for cm in cg.members.values():
            if cm.join_cb is not None:
                cb, cm.join_cb = cm.join_cb, None
                cb(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, cm.member_id))
            if cm.sync_cb is not None:
                sync_cb, cm.sync_cb = cm.sync_cb, None
                sync_cb(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        cg.destroy()
        self.table.groups[gid] = g
        for m in g.members.values():
            g.claim(m)
            self.mgr._schedule_session(g, m)
        return g

    def _from_classic_member(self, cg: ClassicGroup, cm: ClassicMember) -> ConsumerMember:
        """ConsumerGroup.fromClassicGroup for one member."""
        gid = cg.group_id
        assigned: Assignment = {}
        if cm.assignment:
            try:
                a = ConsumerProtocolAssignment.decode(cm.assignment[2:], min(max(_version(cm.assignment), 0),
                                                                             _CONSUMER_PROTOCOL_MAX_VERSION))
            except KwireError:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {gid} to consumer group because the embedded consumer "
                                 f"protocol is malformed.") from None
            if a.user_data:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {gid} to consumer group because an unsupported custom "
                                 f"assignor is in use. Please refer to the documentation or switch to a default "
                                 f"assignor before re-attempting the upgrade.")
            assigned = self._ids((tp.topic, tp.partitions) for tp in a.assigned_partitions)
        meta = cm.metadata(cg.protocol_name) if cg.protocol_name else (cm.protocols[0][1] if cm.protocols else b"")
        try:
            sub = decode_subscription(meta)
        except KwireError:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {gid} to consumer group because the embedded consumer "
                             f"protocol is malformed.") from None
        gen = cg.generation_id
        return ConsumerMember(
            cm.member_id, instance_id=cm.instance_id, rack_id=sub.rack_id, client_id=cm.client_id,
            client_host=cm.client_host, rebalance_timeout_ms=cm.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sub.topics), state=MemberState.STABLE, member_epoch=gen,
            previous_member_epoch=gen, assigned=assigned,
            classic=ClassicMetadata(cm.session_timeout_ms, cm.protocols))

    # --- downgrade (validateOnlineDowngradeWithFencedMembers, convertToClassicGroup) -------------
    def maybe_downgrade(self, g: ConsumerGroup, leaving: list[ConsumerMember]) -> bool:
        """Convert ``g`` to a classic group instead of removing ``leaving`` when every member left
        uses the classic protocol and the policy and group.max.size allow it; True when converted."""
        gone = {m.member_id for m in leaving}
        remaining = [m for m in g.members.values() if m.member_id not in gone]
        if not remaining or any(m.classic is None for m in remaining):
            return False
        if not self.policy().downgrade or len(remaining) > broker_int(self.core.configs, "group.max.size"):
            return False
        self._convert_to_classic(g, remaining, rebalance=True)
        return True

    def _convert_to_classic(self, g: ConsumerGroup, remaining: list[ConsumerMember], *, rebalance: bool) -> None:
        """ClassicGroup.fromConsumerGroup, then (``rebalance``) a rebalance of the classic group."""
        classic_mgr = self.classic
        cg = ClassicGroup(g.group_id)
        cg.state = GroupState.STABLE
        cg.generation_id = g.group_epoch
        cg.protocol_type = CONSUMER_PROTOCOL_TYPE
        for m in remaining:
            assert m.classic is not None
            cg.add(ClassicMember(m.member_id, m.instance_id, m.client_id, m.client_host, m.classic.session_timeout_ms,
                                 m.rebalance_timeout_ms, CONSUMER_PROTOCOL_TYPE, m.classic.protocols), None)
        cg.protocol_name = cg.select_protocol()
        by_id = {m.member_id: m for m in remaining}
        for cm in cg.members.values():
            cm.assignment = self._assignment_bytes(by_id[cm.member_id], g.target.get(cm.member_id, {}),
                                                   cg.protocol_name)
        self.mgr.destroy(g)
        self.table.groups[g.group_id] = cg
        for cm in cg.members.values():
            classic_mgr._schedule_session(cg, cm)
        if rebalance:
            classic_mgr._prepare_rebalance(cg)

    # --- classic members in a consumer group ----------------------------------------------------
    def _member(self, g: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        """validateConsumerGroupMember."""
        if instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                              f"{g.group_id}.")
            return m
        mid = g.static_members.get(instance_id)
        m = g.members.get(mid) if mid is not None else None
        if m is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member with instance id {instance_id} is not a member of group {g.group_id}.")
        if m.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {instance_id} is fenced by existing "
                             f"member {m.member_id}.")
        return m

    @staticmethod
    def _classic_member(m: ConsumerMember, generation_id: int) -> ClassicMetadata:
        """throwIfMemberDoesNotUseClassicProtocol, throwIfGenerationIdUnmatched."""
        if m.classic is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {m.member_id} does not use the classic protocol.")
        if generation_id != m.member_epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                             f"The request generation id {generation_id} is not equal to the member epoch "
                             f"{m.member_epoch} of member {m.member_id}.")
        return m.classic

    def _supports(self, g: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        classic = [m.classic for m in g.members.values() if m.classic is not None]
        if not classic:
            return bool(names)
        return any(all(n in {p for p, _ in c.protocols} for c in classic) for n in names)

    def join(self, g: ConsumerGroup, req: JoinRequest, cb: JoinCallback) -> None:
        """classicGroupJoinToConsumerGroup; ``cb`` is answered before this returns."""
        try:
            cb(self._join(g, req))
        except GroupError as exc:
            cb(JoinResult(exc.code, req.member_id))

    def _join(self, g: ConsumerGroup, req: JoinRequest) -> JoinResult:
        if self.policy() is MigrationPolicy.DISABLED:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Cannot join the consumer group {g.group_id} with the classic protocol because the "
                             f"group migration is disabled.")
        unknown = not req.member_id
        member_id = req.member_id or kafka_uuid_string(self.core.rng)
        max_size = broker_int(self.core.configs, "group.consumer.max.size")
        if (req.instance_id is None or req.instance_id not in g.static_members) and len(g.members) >= max_size \
                and member_id not in g.members:
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {max_size} members.")
        if not self._supports(g, req.protocol_type, {n for n, _ in req.protocols}):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if unknown and req.require_known_member_id:
            # KIP-394: the id first; the member is created when it comes back with it.
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        try:
            sub = self._subscription(req.protocols[0][1])
        except KwireError:
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             "Malformed embedded consumer protocol in subscription deserialization.") from None
        downgrade = self._downgrade_on_replacement(g, req.instance_id)
        m = self._join_member(g, member_id, req, unknown)
        regex_counts = g.subscribed_regexes()
        old_names, old_regex = m.subscribed_topic_names, m.subscribed_topic_regex
        if req.instance_id is not None:
            m.instance_id = req.instance_id
        if sub.rack_id is not None:
            m.rack_id = sub.rack_id
        if req.rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.subscribed_topic_names = sub.topics
        m.subscribed_topic_regex = ""  # no regex subscription through the classic protocol
        m.client_id, m.client_host = req.client_id, req.client_host
        m.classic = ClassicMetadata(req.session_timeout_ms, req.protocols)
        names_changed = m.subscribed_topic_names != old_names
        regex_update = self.mgr._update_regexes(g, old_regex, "", regex_counts)
        bump = names_changed or regex_update is not _RegexUpdate.NO_CHANGE
        if bump:
            self.mgr._refresh_metadata(g)
            g.group_epoch += 1
        name = req.protocols[0][0]
        if downgrade:
            # The instance replaced the group's last consumer-protocol member: back to classic now,
            # rebalancing only when the target is stale.
            rebalance = g.assignment_epoch < g.group_epoch
            if not rebalance:
                self.mgr._reconcile(g, m, sub.owned, bump)
            self._convert_to_classic(g, list(g.members.values()), rebalance=rebalance)
            return JoinResult(ErrorCode.NONE, m.member_id, m.member_epoch, CONSUMER_PROTOCOL_TYPE, name, "")
        if g.group_epoch > g.assignment_epoch:
            self.mgr._compute_target(g)
        self.mgr._reconcile(g, m, sub.owned, bump)
        # The join is answered: no join timeout any more; a session and a sync timeout instead.
        _cancel(m.join_timer)
        m.join_timer = None
        self.mgr._schedule_session(g, m)
        _cancel(m.sync_timer)
        m.sync_timer = self._fence_after(g, m, req.rebalance_timeout_ms)
        return JoinResult(ErrorCode.NONE, m.member_id, m.member_epoch, CONSUMER_PROTOCOL_TYPE, name, "")

    def _downgrade_on_replacement(self, g: ConsumerGroup, instance_id: str | None) -> bool:
        """validateOnlineDowngradeWithReplacedMember: the static member this join replaces is the
        only one not using the classic protocol, the policy allows a downgrade, and the group fits
        group.max.size."""
        old_id = g.static_members.get(instance_id) if instance_id is not None else None
        old = g.members.get(old_id) if old_id is not None else None
        if old is None or old.classic is not None:
            return False
        if any(o.classic is None for o in g.members.values() if o is not old):
            return False
        return self.policy().downgrade and len(g.members) <= broker_int(self.core.configs, "group.max.size")

    def _join_member(self, g: ConsumerGroup, member_id: str, req: JoinRequest, unknown: bool) -> ConsumerMember:
        """getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic member."""
        if req.instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                m = g.members[member_id] = ConsumerMember(member_id)
            return m
        old_id = g.static_members.get(req.instance_id)
        old = g.members.get(old_id) if old_id is not None else None
        if old is None:
            if not unknown:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            m = g.members[member_id] = ConsumerMember(member_id, instance_id=req.instance_id)
            g.static_members[req.instance_id] = member_id
            return m
        if not unknown:
            if old.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {req.instance_id} is fenced by "
                                 f"existing member {old.member_id}.")
            return old
        # A new instance of the static member takes over its place, partitions and target.
        g.release(old)
        old.cancel_timers()
        del g.members[old.member_id]
        target = g.target.pop(old.member_id, None)
        m = ConsumerMember(member_id, instance_id=req.instance_id, rack_id=old.rack_id,
                           rebalance_timeout_ms=old.rebalance_timeout_ms,
                           subscribed_topic_names=old.subscribed_topic_names,
                           subscribed_topic_regex=old.subscribed_topic_regex, server_assignor=old.server_assignor,
                           state=old.state, member_epoch=0, previous_member_epoch=0, assigned=dict(old.assigned))
        g.members[member_id] = m
        g.static_members[req.instance_id] = member_id
        if target is not None:
            g.target[member_id] = target
        g.claim(m)
        return m

    def sync(self, g: ConsumerGroup, generation_id: int, member_id: str, instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None, cb: SyncCallback) -> None:
        """classicGroupSyncToConsumerGroup; answered at once."""
        try:
            if g.is_empty():
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            m = self._member(g, member_id, instance_id)
            classic = self._classic_member(m, generation_id)
            name = classic.protocols[0][0] if classic.protocols else ""
            if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                    protocol_name is not None and protocol_name != name):
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._raise_if_rebalancing(g, m)
        except GroupError as exc:
            return cb(SyncResult(exc.code))
        _cancel(m.sync_timer)
        m.sync_timer = None
        self.mgr._schedule_session(g, m)
        cb(SyncResult(ErrorCode.NONE, protocol_type, protocol_name, self._assignment_bytes(m, m.assigned)))

    def _raise_if_rebalancing(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        """throwIfRebalanceInProgress: a newer target to catch up with (unless still revoking)."""
        if g.assignment_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
            self._join_timeout_if_absent(g, m)
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    def heartbeat(self, g: ConsumerGroup, generation_id: int, member_id: str, instance_id: str | None) -> int:
        """classicGroupHeartbeatToConsumerGroup."""
        try:
            m = self._member(g, member_id, instance_id)
            self._classic_member(m, generation_id)
        except GroupError as exc:
            return exc.code
        self.mgr._schedule_session(g, m)
        if (m.member_epoch < g.assignment_epoch or m.state is MemberState.UNREVOKED_PARTITIONS
                or (m.state is MemberState.UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(g, m))):
            self._join_timeout_if_absent(g, m)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _waiting_on_unreleased(g: ConsumerGroup, m: ConsumerMember) -> bool:
        """ConsumerGroup.waitingOnUnreleasedPartition: a target partition someone else still holds."""
        for tid, ps in g.target.get(m.member_id, {}).items():
            have = m.assigned.get(tid, frozenset())
            if any(p not in have and g.owner_of(tid, p) is not None for p in ps):
                return True
        return False

    def leave(self, g: ConsumerGroup, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """classicGroupLeaveToConsumerGroup: the valid members are fenced together."""
        codes: list[int] = []
        leaving: list[ConsumerMember] = []
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    m = g.members.get(member_id)
                    if m is None:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    mid = g.static_members.get(instance_id)
                    m = g.members.get(mid) if mid is not None else None
                    if m is None:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
                    if member_id and member_id != m.member_id:
                        raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
            except GroupError as exc:
                codes.append(exc.code)
                continue
            codes.append(ErrorCode.NONE)
            if m not in leaving:
                leaving.append(m)
        if leaving:
            self.mgr.fence_members(g, leaving)
        return ErrorCode.NONE, codes

    # --- timers ---------------------------------------------------------------------------------
    def _fence_after(self, g: ConsumerGroup, m: ConsumerMember, delay_ms: int) -> Any:
        group_id, member_id = g.group_id, m.member_id

        def due() -> None:
            cur = self.table.groups.get(group_id)
            if isinstance(cur, ConsumerGroup) and cur.members.get(member_id) is m:
                self.mgr.fence(cur, m)

        return self.core.deadlines.at(self.mgr.now_ms() + max(0, delay_ms), due)

    def _join_timeout_if_absent(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: rejoin within the rebalance timeout or be fenced."""
        if m.join_timer is None:
            m.join_timer = self._fence_after(g, m, m.rebalance_timeout_ms)


def _cancel(d: Any) -> None:
    if d is not None:
        d.cancel()

