"""KIP-932 share groups: ShareGroupHeartbeat membership, the simple assignor, share-state
initialisation and the data ShareGroupDescribe prints. Sans-I/O: time from the injected clock,
timers from an injected scheduler.

Theory of operation
-------------------
* A share group has a **group epoch** (bumped when a member joins, leaves or changes its
  subscription, when the subscribed topics' ids or partition counts change, and when share state
  was initialised for partitions the target does not assign yet), a **target assignment**
  computed by the simple assignor at an **assignment epoch**, and members.
* Assignments are keyed by topic id, as Kafka keys them: a topic deleted and recreated under its
  name is another topic, so the member's assignment changes and the next heartbeat carries it.
* Only partitions whose share state is **initialised** are assignable (HB-6). The heartbeat
  that introduces a subscription answers first and then starts the initialisation
  (GroupMetadataManager.maybeCreateInitializeShareGroupStateRequest, run on a timer after the
  heartbeat); it completes on the broker clock ``kwire.share.initialize.delay.ms`` later (0 by
  default: at once after the answer; a test widens it). So the first member of a new group sees
  epoch 1 and an empty assignment, and a later heartbeat bumps the epoch and brings the partitions
  (``initializedAssignmentPending``).
* ``share.assignment.interval.ms`` (broker ``group.share.assignment.interval.ms``) paces target
  recomputation: a bumped group epoch waits until that long after the last computation, on a
  heartbeat (GroupMetadataManager.canComputeNextTargetAssignment); members stay at the previous
  target meanwhile.
* Share groups have no revocation phase (HB-4): a member's heartbeat moves it straight to its
  target assignment and its member epoch to the assignment epoch.
* The simple assignor (HB-6) spreads every assignable partition of the subscribed topics over the
  members (uniform, balanced and sticky); when a topic has more subscribers than partitions, the
  members left without one share the partitions with the fewest holders.
* Session timeout (``share.session.timeout.ms``, else ``group.share.session.timeout.ms``) on the
  broker clock: a member that stops heartbeating is removed, as if it had left; its share
  sessions and acquired records are not the group's business and stay (SS-9).
* States (ShareGroup.ShareGroupState): Empty without members, Stable with, Dead once deleted.
* The class ``ShareGroup`` has what the group table's ``Group`` protocol needs (issue 8):
  ``group_type``, ``state_name``, ``member_ids``, ``is_empty``, ``check_deletable``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from kwire.broker.core._group_common import GroupStats
from kwire.broker.core.share_config import ShareConfig
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = [
    "ShareGroup", "ShareMember", "ShareGroupState", "ShareGroupCoordinator", "ShareHeartbeat",
    "ShareHeartbeatResult", "ShareGroupDescription", "ShareMemberDescription", "simple_assign",
    "validate_heartbeat", "JOIN_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_MEMBER_EPOCH", "SIMPLE_ASSIGNOR",
    "MAX_MEMBER_ID_LENGTH", "Assignment", "TopicMeta", "can_compute_next_target_assignment",
]

JOIN_GROUP_MEMBER_EPOCH = 0  # HB-2
LEAVE_GROUP_MEMBER_EPOCH = -1  # HB-2
SIMPLE_ASSIGNOR = "simple"  # HB-6
MAX_MEMBER_ID_LENGTH = 36  # HB-1 (KafkaApis)

NamedAssignment = dict[str, frozenset[int]]  # what the assignor works in: topic name -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]  # what members hold and heartbeats carry: topic id -> partitions
TopicMeta = tuple[uuid.UUID, int]  # an existing topic: (topic id, partition count)


class ShareGroupState(Enum):
    """ShareGroup.ShareGroupState; the value is what ShareGroupDescribe and ListGroups print."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


class _Cancellable(Protocol):
    def cancel(self) -> None: ...


Scheduler = Callable[[int, Callable[[], None]], _Cancellable]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assignment: Assignment = field(default_factory=dict)
    session: _Cancellable | None = None


@dataclass(slots=True, frozen=True)
class ShareHeartbeat:
    """A ShareGroupHeartbeat request, as the core sees it."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: Sequence[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True, frozen=True)
class ShareHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: unchanged and not asked for (HB-5)


@dataclass(slots=True, frozen=True)
class ShareMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


@dataclass(slots=True, frozen=True)
class ShareGroupDescription:
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[ShareMemberDescription, ...]


# --- the simple assignor ----------------------------------------------------------------------
def simple_assign(members: Mapping[str, Iterable[str]], topics: Mapping[str, Sequence[int]],
                  previous: Mapping[str, Mapping[str, Iterable[int]]] | None = None) -> dict[str, NamedAssignment]:
    """HB-6: every assignable partition of a subscribed topic to at least one subscriber, counts
    balanced (difference at most 1 among members that could take more), sticky; members left
    without a partition share those with the fewest holders, so each partition of a topic with
    more subscribers than partitions gets about ceil(subscribers / partitions) members.

    Args:
        members: member id -> subscribed topic names.
        topics: topic name -> its assignable partitions (those whose share state is initialised).
        previous: the last target assignment.
    """
    from kwire.broker.core.consumer_groups import uniform_assign

    # The uniform assignor numbers partitions 0..n-1; map them onto the assignable ones.
    index = {t: sorted(set(ps)) for t, ps in topics.items() if ps}
    slot = {t: {p: i for i, p in enumerate(ps)} for t, ps in index.items()}
    prev = {m: {t: {slot[t][p] for p in ps if p in slot[t]} for t, ps in a.items() if t in slot}
            for m, a in (previous or {}).items()}
    base = uniform_assign(members, {t: len(ps) for t, ps in index.items()}, prev)
    out: dict[str, dict[str, set[int]]] = {m: {t: set(ps) for t, ps in a.items()} for m, a in base.items()}
    holders: dict[tuple[str, int], int] = {}
    for a in out.values():
        for t, ps in a.items():
            for p in ps:
                holders[(t, p)] = holders.get((t, p), 0) + 1
    for m in sorted(members):
        if any(out[m].values()):
            continue
        choices = [(t, p) for t in sorted(set(members[m])) if t in index for p in range(len(index[t]))]
        if not choices:
            continue
        # Sticky first: a partition it shared before, if any; else the least-held one.
        before = [(t, p) for t, ps in sorted(prev.get(m, {}).items()) for p in sorted(ps) if (t, p) in choices]
        t, p = before[0] if before else min(choices, key=lambda tp: (holders.get(tp, 0), tp))
        out[m].setdefault(t, set()).add(p)
        holders[(t, p)] = holders.get((t, p), 0) + 1
    return {m: {t: frozenset(index[t][i] for i in ps) for t, ps in a.items() if ps} for m, a in out.items()}


def can_compute_next_target_assignment(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """GroupMetadataManager.canComputeNextTargetAssignment: at once without a previous target
    (timestamp 0) or with interval 0, else once the interval since the last computation passed."""
    if assignment_timestamp_ms == 0 or interval_ms == 0:
        return True
    return now_ms >= assignment_timestamp_ms + interval_ms


def validate_heartbeat(hb: ShareHeartbeat) -> None:
    """HB-1's request checks.

    Raises:
        KafkaError: INVALID_REQUEST.
    """
    if not hb.group_id.strip():
        raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if not hb.member_id.strip() or len(hb.member_id) > MAX_MEMBER_ID_LENGTH:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty or longer than 36 characters.")
    if hb.rack_id is not None and not hb.rack_id.strip():
        raise KafkaError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if hb.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"MemberEpoch is invalid: {hb.member_epoch}")
    if hb.member_epoch == JOIN_GROUP_MEMBER_EPOCH and not hb.subscribed_topic_names:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")


class ShareGroup:
    """One share group: members, epochs, the target assignment and its share-state initialisation."""

    group_type = "share"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0  # when the target was last computed (0: never)
        self.members: dict[str, ShareMember] = {}
        self.target: dict[str, Assignment] = {}
        # the subscribed topics' ids and partition counts the group epoch reflects (HB-4)
        self.metadata: dict[str, TopicMeta] = {}
        # share state of (topic id, partitions): initialised ones are assignable, initialising
        # ones complete on the broker clock (ShareGroupStatePartitionMetadata's two maps)
        self.initialized: dict[uuid.UUID, frozenset[int]] = {}
        self.initializing: dict[uuid.UUID, frozenset[int]] = {}
        # partitions added to a topic the group already knew: their share state starts at offset
        # 0, not at share.auto.offset.reset, so records written before the first fetch are kept
        # (GroupMetadataManager.buildInitializeShareGroupStateRequest's alreadyKnownTopics)
        self.start_at_zero: set[tuple[uuid.UUID, int]] = set()
        self.dead = False

    # --- Group protocol -----------------------------------------------------------------------
    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    @property
    def state_name(self) -> str:
        return self.state.value

    @property
    def protocol_type(self) -> str:
        return "share"  # ListGroups' ProtocolType of a share group

    def statistics(self) -> GroupStats:
        return GroupStats(self.group_id, self.group_type, self.state_name, self.group_epoch, len(self.members),
                          sum(1 for m in self.members.values() if m.member_epoch != self.assignment_epoch))

    def member_ids(self) -> list[str]:
        return sorted(self.members)

    def is_empty(self) -> bool:
        return not self.members

    def check_deletable(self) -> None:
        """DeleteGroups: only an empty share group may go.

        Raises:
            KafkaError: NON_EMPTY_GROUP.
        """
        if self.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"share group {self.group_id} has members")

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def describe(self) -> ShareGroupDescription:
        return ShareGroupDescription(
            self.group_id, self.state_name, self.group_epoch, self.assignment_epoch, SIMPLE_ASSIGNOR,
            tuple(ShareMemberDescription(m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                         m.subscribed_topic_names, dict(m.assignment))
                  for m in sorted(self.members.values(), key=lambda m: m.member_id)),
        )

    # --- share-state initialisation -----------------------------------------------------------
    def mark_initialized(self, topic_id: uuid.UUID, partitions: Iterable[int]) -> None:
        """Share state exists for these partitions (initialisation finished, or
        AlterShareGroupOffsets wrote it): they become assignable."""
        parts = frozenset(partitions)
        self.initialized[topic_id] = self.initialized.get(topic_id, frozenset()) | parts
        left = self.initializing.get(topic_id, frozenset()) - parts
        if left:
            self.initializing[topic_id] = left
        else:
            self.initializing.pop(topic_id, None)

    def forget_topic(self, topic_id: uuid.UUID) -> None:
        """The topic was deleted, or its share-group offsets were (DeleteShareGroupOffsets): its
        share state is gone and must be initialised again before it is assigned."""
        self.initialized.pop(topic_id, None)
        self.initializing.pop(topic_id, None)
        self.start_at_zero = {(t, p) for t, p in self.start_at_zero if t != topic_id}

    def uninitialized(self, topics: Mapping[str, TopicMeta]) -> dict[uuid.UUID, frozenset[int]]:
        """GroupMetadataManager.subscribedTopicsChangeMap: the subscribed topics' partitions whose
        share state is neither initialised nor being initialised."""
        out = {}
        for name in sorted(self.subscribed_topics()):
            if name not in topics:
                continue
            tid, count = topics[name]
            known = self.initialized.get(tid, frozenset()) | self.initializing.get(tid, frozenset())
            missing = frozenset(range(count)) - known
            if missing:
                out[tid] = missing
        return out

    def initialized_assignment_pending(self, topics: Mapping[str, TopicMeta]) -> bool:
        """GroupMetadataManager.initializedAssignmentPending: a subscribed topic has initialised
        partitions the target does not hold exactly, so a new target is due."""
        if not self.members or not self.initialized:
            return False
        ids = {topics[n][0] for n in self.subscribed_topics() if n in topics}
        assigned: dict[uuid.UUID, set[int]] = {}
        for a in self.target.values():
            for tid, ps in a.items():
                assigned.setdefault(tid, set()).update(ps)
        return any(tid in ids and assigned.get(tid) != set(ps) for tid, ps in self.initialized.items())

    # --- assignment ---------------------------------------------------------------------------
    def compute_target(self, now_ms: int) -> None:
        """The simple assignor over the initialised partitions of the subscribed topics (HB-6),
        at the group epoch (ShareTargetAssignmentBuilder.withTopicAssignablePartitionsMap)."""
        names = {tid: name for name, (tid, _) in self.metadata.items()}
        assignable = {name: sorted(p for p in self.initialized.get(tid, ()) if p < count)
                      for name, (tid, count) in self.metadata.items()}
        subs = {m.member_id: m.subscribed_topic_names for m in self.members.values()}
        previous = {mid: {names[tid]: ps for tid, ps in a.items() if tid in names} for mid, a in self.target.items()}
        named = simple_assign(subs, assignable, previous)
        self.target = {mid: {self.metadata[t][0]: ps for t, ps in a.items()} for mid, a in named.items()}
        self.assignment_epoch = self.group_epoch
        self.assignment_timestamp_ms = now_ms


class ShareGroupCoordinator:
    """The share groups of this broker and the ShareGroupHeartbeat state machine (HB-, SG- rules).

    Args:
        clock: ``now_ms()``.
        schedule: ``schedule(at_ms, fn) -> handle with cancel()`` (the core's ``deadlines.at``).
        config: group id -> its effective ``ShareConfig``.
        topics: topic name -> (topic id, partition count), for the topics that exist now.
        other_group_type: the type of a non-share group with this id, or None (HB-3: the group
            table answers it once issue 8's table lands).
        on_member_removed: (group id, member id) after a leave or a session timeout (the share
            coordinator passes none: sessions and locks outlive membership, SS-9).
    """

    def __init__(self, *, now_ms: Callable[[], int], schedule: Scheduler, config: Callable[[str], ShareConfig],
                 topics: Callable[[], Mapping[str, TopicMeta]],
                 other_group_type: Callable[[str], str | None] = lambda _g: None,
                 on_member_removed: Callable[[str, str], None] | None = None) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self._now_ms = now_ms
        self._schedule = schedule
        self._config = config
        self._topics = topics
        self._other_group_type = other_group_type
        self.on_member_removed = on_member_removed

    def get(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def heartbeat(self, hb: ShareHeartbeat) -> ShareHeartbeatResult:
        """One ShareGroupHeartbeat (HB-1..HB-6), as GroupMetadataManager.shareGroupHeartbeat runs it.

        Raises:
            KafkaError: INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED,
                FENCED_MEMBER_EPOCH; nothing has changed then.
        """
        validate_heartbeat(hb)
        cfg = self._config(hb.group_id)
        group = self.groups.get(hb.group_id)
        if self._other_group_type(hb.group_id) is not None:  # HB-3
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} is not a share group.")
        if group is None:
            if hb.member_epoch != JOIN_GROUP_MEMBER_EPOCH:  # HB-3
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} not found.")
            group = ShareGroup(hb.group_id)  # added only once the join is accepted below
        if hb.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(group, hb.member_id, cfg)
        member = group.members.get(hb.member_id)
        if member is None:
            if hb.member_epoch != JOIN_GROUP_MEMBER_EPOCH:  # HB-3
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {hb.member_id} is not a member of group {hb.group_id}.")
            if len(group.members) >= cfg.group_max_size:  # HB-3
                raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of {cfg.group_max_size} members.")
        elif hb.member_epoch != JOIN_GROUP_MEMBER_EPOCH and (
                hb.member_epoch > member.member_epoch
                or (hb.member_epoch < member.member_epoch and hb.member_epoch != member.previous_member_epoch)):
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,  # HB-3
                             f"The share group member has a smaller member epoch ({hb.member_epoch}) than the "
                             f"one known by the group coordinator ({member.member_epoch}).")
        # Accepted: from here on the group changes.
        now = self._now_ms()
        topics = self._topics()
        self.groups.setdefault(group.group_id, group)
        group.dead = False
        bump = member is None  # HB-4: a member joined
        if member is None:
            member = group.members[hb.member_id] = ShareMember(hb.member_id)
        before = dict(member.assignment)
        if hb.subscribed_topic_names is not None:
            subs = tuple(sorted(set(hb.subscribed_topic_names)))
            if subs != member.subscribed_topic_names:
                member.subscribed_topic_names = subs
                bump = True  # HB-4: its subscription changed
        if hb.rack_id is not None:
            member.rack_id = hb.rack_id
        if hb.client_id:
            member.client_id = hb.client_id
        if hb.client_host:
            member.client_host = hb.client_host
        if group.assignment_epoch >= group.group_epoch:
            # HB-6: share state was initialised for partitions the target does not assign yet.
            bump |= group.initialized_assignment_pending(topics)
        # HB-4: the subscribed topics' ids or partition counts changed (created, deleted and
        # recreated, grown): upstream's metadata hash.
        metadata = {t: topics[t] for t in sorted(group.subscribed_topics()) if t in topics}
        if metadata != group.metadata:
            group.metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
        if group.assignment_epoch < group.group_epoch and can_compute_next_target_assignment(
                group.assignment_timestamp_ms, cfg.assignment_interval_ms, now):
            group.compute_target(now)
        self._reconcile(group, member, topics, subscription_changed=bump)
        self._restart_session(group, member, cfg)
        full = hb.member_epoch == JOIN_GROUP_MEMBER_EPOCH or hb.subscribed_topic_names is not None
        send = full or member.assignment != before  # HB-5, by topic id
        result = ShareHeartbeatResult(member.member_id, member.member_epoch, cfg.heartbeat_interval_ms,
                                      dict(member.assignment) if send else None)
        self._start_initialization(group, topics, cfg)  # HB-6: after the answer
        return result

    def _reconcile(self, group: ShareGroup, member: ShareMember, topics: Mapping[str, TopicMeta], *,
                   subscription_changed: bool) -> None:
        """ShareGroupAssignmentBuilder: no revocation phase (HB-4); straight to the target at the
        assignment epoch, keeping only topics the member subscribes to that exist now."""
        if member.member_epoch == group.assignment_epoch and not subscription_changed:
            return
        ids = {topics[n][0] for n in member.subscribed_topic_names if n in topics}
        member.assignment = {tid: ps for tid, ps in group.target.get(member.member_id, {}).items() if tid in ids}
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch

    def _start_initialization(self, group: ShareGroup, topics: Mapping[str, TopicMeta], cfg: ShareConfig) -> None:
        """GroupMetadataManager.maybeCreateInitializeShareGroupStateRequest: the subscribed
        partitions without share state are initialised, completing ``initialize_delay_ms`` later
        on the broker clock (GroupCoordinatorService runs it on a timer after the heartbeat)."""
        todo = group.uninitialized(topics)
        if not todo:
            return
        for tid, parts in todo.items():
            if tid in group.initialized or tid in group.initializing:  # new partitions of a known topic
                group.start_at_zero.update((tid, p) for p in parts)
            group.initializing[tid] = group.initializing.get(tid, frozenset()) | parts
        gid = group.group_id
        self._schedule(self._now_ms() + cfg.initialize_delay_ms, lambda: self._initialized(gid, group, todo))

    def _initialized(self, group_id: str, group: ShareGroup, done: Mapping[uuid.UUID, frozenset[int]]) -> None:
        if self.groups.get(group_id) is not group:
            return  # the group was deleted meanwhile
        existing = {tid for tid, _ in self._topics().values()}
        for tid, parts in done.items():
            if tid in existing and parts <= group.initializing.get(tid, frozenset()):
                group.mark_initialized(tid, parts)

    def _leave(self, group: ShareGroup, member_id: str, cfg: ShareConfig) -> ShareHeartbeatResult:
        if member_id not in group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                          f"{group.group_id}.")
        self.remove_member(group.group_id, member_id)
        return ShareHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH, cfg.heartbeat_interval_ms, None)  # HB-5

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """A member left, timed out or was fenced (fault injection): the group epoch moves on and
        the others get a new target on their next heartbeat (HB-4)."""
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return False
        member = group.members.pop(member_id)
        if member.session is not None:
            member.session.cancel()
        group.target.pop(member_id, None)
        group.group_epoch += 1
        if self.on_member_removed is not None:
            self.on_member_removed(group_id, member_id)
        return True

    def _restart_session(self, group: ShareGroup, member: ShareMember, cfg: ShareConfig) -> None:
        if member.session is not None:
            member.session.cancel()
        gid, mid = group.group_id, member.member_id
        member.session = self._schedule(self._now_ms() + cfg.session_timeout_ms,
                                        lambda: self._session_expired(gid, mid, member))

    def _session_expired(self, group_id: str, member_id: str, member: ShareMember) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.members.get(member_id) is member:
            member.session = None
            self.remove_member(group_id, member_id)

    def topics_changed(self) -> None:
        """Topics were created, deleted or grew. Groups notice on their next heartbeat (HB-4);
        here the share state of deleted topics goes (GroupMetadataManager.maybeCleanupShareGroupState)."""
        existing = {tid for tid, _ in self._topics().values()}
        for group in self.groups.values():
            for tid in [*group.initialized, *group.initializing]:
                if tid not in existing:
                    group.forget_topic(tid)

    def delete(self, group_id: str) -> None:
        """DeleteGroups on a share group.

        Raises:
            KafkaError: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP.
        """
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        group.check_deletable()
        group.dead = True
        del self.groups[group_id]

    def describe(self, group_id: str) -> ShareGroupDescription:
        """ShareGroupDescribe of one group.

        Raises:
            KafkaError: GROUP_ID_NOT_FOUND (absent, or a group of another type).
        """
        group = self.groups.get(group_id)
        if group is None or self._other_group_type(group_id) is not None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group.describe()
