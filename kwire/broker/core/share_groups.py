"""KIP-932 share groups: ShareGroupHeartbeat membership, the simple assignor, and the data
ShareGroupDescribe prints. Sans-I/O: time from the injected clock, timers from an injected scheduler.

Theory of operation
-------------------
* A share group has a **group epoch** (bumped when a member joins, leaves or changes its
  subscription, and when the subscribed topics' partition counts change), a **target
  assignment** computed by the simple assignor at an **assignment epoch**, and members.
* Share groups have no revocation phase (HB-4): a member's heartbeat moves it straight to its
  target assignment and its member epoch to the assignment epoch. The first member of a new
  group sees epoch 1. Partitions are assigned at once (HB-6's mock note).
* The simple assignor (HB-6) spreads every partition of the subscribed topics over the members
  (uniform, balanced and sticky); when a topic has more subscribers than partitions, the
  members left without one share the partitions with the fewest holders.
* Session timeout (``share.session.timeout.ms``, else ``group.share.session.timeout.ms``) on the
  broker clock: a member that stops heartbeating is removed, as if it had left; its share
  sessions and acquired records are not the group's business and stay (SS-9).
* States (ShareGroup.ShareGroupState): Empty without members, Stable with, Dead once deleted.
* The class ``ShareGroup`` has what the group table's ``Group`` protocol needs (issue 8):
  ``group_type``, ``state_name``, ``member_ids``, ``is_empty``, ``check_deletable``.
"""

from __future__ import annotations

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
    "MAX_MEMBER_ID_LENGTH",
]

JOIN_GROUP_MEMBER_EPOCH = 0  # HB-2
LEAVE_GROUP_MEMBER_EPOCH = -1  # HB-2
SIMPLE_ASSIGNOR = "simple"  # HB-6
MAX_MEMBER_ID_LENGTH = 36  # HB-1 (KafkaApis)

NamedAssignment = dict[str, frozenset[int]]


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
    assignment: NamedAssignment = field(default_factory=dict)
    sent_assignment: NamedAssignment | None = None  # what the last response carried (HB-5)
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
    assignment: NamedAssignment | None  # None: unchanged and not asked for (HB-5)


@dataclass(slots=True, frozen=True)
class ShareMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: NamedAssignment


@dataclass(slots=True, frozen=True)
class ShareGroupDescription:
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[ShareMemberDescription, ...]


# --- the simple assignor ----------------------------------------------------------------------
def simple_assign(members: Mapping[str, Iterable[str]], topics: Mapping[str, int],
                  previous: Mapping[str, Mapping[str, Iterable[int]]] | None = None) -> dict[str, NamedAssignment]:
    """HB-6: every partition of a subscribed topic to at least one subscriber, counts balanced
    (difference at most 1 among members that could take more), sticky; members left without a
    partition share those with the fewest holders, so each partition of a topic with more
    subscribers than partitions gets about ceil(subscribers / partitions) members.

    Args:
        members: member id -> subscribed topic names.
        topics: topic name -> partition count (topics that exist).
        previous: the last target assignment.
    """
    from kwire.broker.core.consumer_groups import uniform_assign

    prev = {m: {t: set(ps) for t, ps in a.items()} for m, a in (previous or {}).items()}
    base = uniform_assign(members, topics, prev)
    out: dict[str, dict[str, set[int]]] = {m: {t: set(ps) for t, ps in a.items()} for m, a in base.items()}
    holders: dict[tuple[str, int], int] = {}
    for a in out.values():
        for t, ps in a.items():
            for p in ps:
                holders[(t, p)] = holders.get((t, p), 0) + 1
    for m in sorted(members):
        if any(out[m].values()):
            continue
        choices = [(t, p) for t in sorted(set(members[m])) if t in topics for p in range(topics[t])]
        if not choices:
            continue
        # Sticky first: a partition it shared before, if any; else the least-held one.
        before = [(t, p) for t, ps in sorted(prev.get(m, {}).items()) for p in sorted(ps) if (t, p) in choices]
        t, p = before[0] if before else min(choices, key=lambda tp: (holders.get(tp, 0), tp))
        out[m].setdefault(t, set()).add(p)
        holders[(t, p)] = holders.get((t, p), 0) + 1
    return {m: {t: frozenset(ps) for t, ps in a.items() if ps} for m, a in out.items()}


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
    """One share group: members, epochs and the target assignment."""

    group_type = "share"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareMember] = {}
        self.target: dict[str, NamedAssignment] = {}
        self.topic_counts: dict[str, int] = {}  # partition counts the target was computed for
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

    # --- assignment ---------------------------------------------------------------------------
    def refresh_target(self, topics: Mapping[str, int], *, bump: bool = False) -> None:
        """HB-4: bump the group epoch once if asked to (a member joined, left or changed its
        subscription) or if the subscribed topics' partition counts changed, and recompute the
        target when the group epoch is ahead of it."""
        counts = {t: topics[t] for t in sorted(self.subscribed_topics()) if t in topics}
        if counts != self.topic_counts:
            self.topic_counts = counts
            bump = True
        if bump:
            self.group_epoch += 1
        if self.group_epoch > self.assignment_epoch:
            subs = {m.member_id: m.subscribed_topic_names for m in self.members.values()}
            self.target = simple_assign(subs, counts, self.target)
            self.assignment_epoch = self.group_epoch


class ShareGroupCoordinator:
    """The share groups of this broker and the ShareGroupHeartbeat state machine (HB-, SG- rules).

    Args:
        clock: ``now_ms()``.
        schedule: ``schedule(at_ms, fn) -> handle with cancel()`` (the core's ``deadlines.at``).
        config: group id -> its effective ``ShareConfig``.
        topics: topic name -> partition count, for the topics that exist now.
        other_group_type: the type of a non-share group with this id, or None (HB-3: the group
            table answers it once issue 8's table lands).
        on_member_removed: (group id, member id) after a leave or a session timeout (the share
            coordinator passes none: sessions and locks outlive membership, SS-9).
    """

    def __init__(self, *, now_ms: Callable[[], int], schedule: Scheduler, config: Callable[[str], ShareConfig],
                 topics: Callable[[], Mapping[str, int]],
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
        """One ShareGroupHeartbeat (HB-1..HB-6).

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
        self.groups.setdefault(group.group_id, group)
        group.dead = False
        bump = member is None  # HB-4: a member joined
        if member is None:
            member = group.members[hb.member_id] = ShareMember(hb.member_id)
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
        group.refresh_target(self._topics(), bump=bump)
        # HB-4: no revocation phase; straight to the target at the assignment epoch.
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assignment = dict(group.target.get(member.member_id, {}))
        self._restart_session(group, member, cfg)
        full = hb.member_epoch == JOIN_GROUP_MEMBER_EPOCH or hb.subscribed_topic_names is not None
        send = full or member.sent_assignment != member.assignment  # HB-5
        if send:
            member.sent_assignment = dict(member.assignment)
        return ShareHeartbeatResult(member.member_id, member.member_epoch, cfg.heartbeat_interval_ms,
                                    dict(member.assignment) if send else None)

    def _leave(self, group: ShareGroup, member_id: str, cfg: ShareConfig) -> ShareHeartbeatResult:
        if member_id not in group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                          f"{group.group_id}.")
        self.remove_member(group.group_id, member_id)
        return ShareHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH, cfg.heartbeat_interval_ms, None)  # HB-5

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """A member left, timed out or was fenced (fault injection): the group epoch moves on."""
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return False
        member = group.members.pop(member_id)
        if member.session is not None:
            member.session.cancel()
        group.refresh_target(self._topics(), bump=True)  # HB-4
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
        """Topics were created, deleted or grew: groups subscribed to them move their epoch (HB-4)."""
        topics = self._topics()
        for group in self.groups.values():
            group.refresh_target(topics)

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
