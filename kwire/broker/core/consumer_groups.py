"""KIP-848 consumer groups: ConsumerGroupHeartbeat, the server-side assignors and reconciliation.

Theory of operation
-------------------
* A group has a **group epoch** (bumped when a member joins, leaves or changes its
  subscription, and when the subscribed topics' partitions change), a **target assignment**
  computed by the assignor at some **assignment epoch**, and members, each with its own
  **member epoch** and current assignment.
* The target is recomputed lazily: the first heartbeat that finds ``group_epoch >
  assignment_epoch`` runs the assignor for every member (uniform by default, range on request).
* Each heartbeat then reconciles that one member towards its target (upstream's
  CurrentAssignmentBuilder): partitions it keeps stay; partitions it must give up are put in
  *pending revocation* and left out of the answer while the member keeps its epoch
  (UNREVOKED_PARTITIONS); only once its heartbeat's owned partitions no longer list them does
  it move to the target epoch. A partition goes to its new owner only when no other member
  holds it, assigned or pending revocation (UNRELEASED_PARTITIONS until then). So a
  partition is never owned by two members at once.
* Timers on the broker clock: the session timeout (``consumer.session.timeout.ms``, group
  config falling back to ``group.consumer.session.timeout.ms``) fences a silent member; the
  member's rebalance timeout fences a member that does not revoke in time.
* Epochs: 0 joins (creating the group), -1 leaves, -2 is a static member's temporary leave
  (its partitions stay reserved until the session times out or the instance rejoins).
* Regular-expression subscriptions are resolved asynchronously, as upstream's
  GroupMetadataManager does (maybeUpdateRegularExpressions / handleRegularExpressionsResult):
  the heartbeat that brings a new regex stores it and answers without its topics; the
  resolution is a deadline on the broker clock, due at once (upstream hands it to the
  coordinator's executor and applies the result as a later write). When the resolved topics
  change, the group epoch is bumped and the following heartbeats assign them. A group's
  regexes are re-resolved together, from a heartbeat, at most once per
  ``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS`` (10 s), when one is unresolved, topics were
  created since the last resolution, or the last one is older than
  ``REGEX_REFRESH_INTERVAL_MS`` (upstream's ``group.consumer.regex.refresh.interval.ms``
  default, 10 min). A resolved regex is dropped when its last subscriber leaves it. Literal
  topic names take effect in the heartbeat that brings them.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, cast

from kwire.broker.core._group_common import (
    GroupDirectory,
    GroupError,
    GroupMigrationPort,
    GroupStats,
    broker_int,
    group_int,
    kafka_uuid_string,
)
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.deadlines import Deadline

__all__ = [
    "ConsumerGroup", "ConsumerMember", "ConsumerGroupManager", "ConsumerGroupState", "MemberState",
    "HeartbeatResult", "GroupStats", "uniform_assign", "range_assign", "reconcile", "Reconciled",
    "ResolvedRegex", "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH", "UNIFORM", "RANGE",
    "ASSIGNORS", "ClassicMetadata", "REGEX_BATCH_REFRESH_MIN_INTERVAL_MS", "REGEX_REFRESH_INTERVAL_MS", "REGEX_RESOLUTION_DELAY_MS",
]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
UNIFORM = "uniform"
RANGE = "range"
# Upstream GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: at most one resolution of a
# group's regexes per 10 s (a regex brought within 10 s of the last one waits for a later heartbeat).
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
# Upstream group.consumer.regex.refresh.interval.ms (an internal config) at its default, 10 minutes.
REGEX_REFRESH_INTERVAL_MS = 10 * 60 * 1000
# Upstream has no delay of its own: the executor resolves at once and the result is a separate
# write, applied after the heartbeat that asked for it has been answered. Due at once here too.
REGEX_RESOLUTION_DELAY_MS = 0

Assignment = dict[uuid.UUID, frozenset[int]]
NamedAssignment = dict[str, set[int]]


class ConsumerGroupState(Enum):
    """ConsumerGroup.ConsumerGroupState; the value is what Describe/ListGroups print."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    """modern.MemberState: where a member is in its reconciliation."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


# --- assignors --------------------------------------------------------------------------------
def uniform_assign(members: Mapping[str, Iterable[str]], topics: Mapping[str, int],
                   previous: Mapping[str, Mapping[str, Iterable[int]]] | None = None) -> dict[str, NamedAssignment]:
    """The uniform assignor: every partition of a subscribed topic to exactly one subscriber.

    Balanced: no member could take a partition from another member holding two or more
    partitions more than it does (with one subscription for all, sizes differ by at most 1).
    Sticky: a partition stays with its previous owner unless balance needs it elsewhere.
    Deterministic: members and partitions are visited in sorted order.

    Args:
        members: member id -> subscribed topic names.
        topics: topic name -> partition count (topics that exist).
        previous: the last target assignment (member -> topic -> partitions).
    """
    mids = sorted(members)
    subs = {m: frozenset(t for t in members[m] if t in topics) for m in mids}
    eligible: dict[str, list[str]] = {t: [m for m in mids if t in subs[m]] for t in sorted(topics)}
    owned: dict[str, dict[str, set[int]]] = {m: {} for m in mids}
    count = dict.fromkeys(mids, 0)
    taken: set[tuple[str, int]] = set()

    def give(m: str, t: str, p: int) -> None:
        owned[m].setdefault(t, set()).add(p)
        count[m] += 1
        taken.add((t, p))

    for m in mids:  # keep what each member had and may still have
        for t, parts in sorted((previous or {}).get(m, {}).items()):
            if t in subs[m]:
                for p in sorted(parts):
                    if 0 <= p < topics[t] and (t, p) not in taken:
                        give(m, t, p)
    for t, subscribers in eligible.items():  # then the rest, each to the least loaded subscriber
        for p in range(topics[t]) if subscribers else ():
            if (t, p) not in taken:
                give(min(subscribers, key=lambda x: (count[x], x)), t, p)
    while True:
        # One partition at a time from the most loaded holder to a subscriber holding 2+ fewer:
        # every move lowers the spread, and none is made that balance does not need (sticky).
        lightest = {t: min(subs_t, key=lambda x: (count[x], x)) for t, subs_t in eligible.items() if subs_t}
        move = None
        for a in sorted(mids, key=lambda x: (-count[x], x)):
            for t in sorted(owned[a]):
                if owned[a][t] and count[lightest[t]] <= count[a] - 2:
                    move = (a, lightest[t], t, max(owned[a][t]))
                    break
            if move is not None:
                break
        if move is None:
            break
        a, b, t, p = move
        owned[a][t].discard(p)
        count[a] -= 1
        give(b, t, p)
    return {m: {t: ps for t, ps in owned[m].items() if ps} for m in mids}


def range_assign(members: Mapping[str, Iterable[str]], topics: Mapping[str, int],
                 previous: Mapping[str, Mapping[str, Iterable[int]]] | None = None) -> dict[str, NamedAssignment]:
    """The range assignor: per topic, contiguous ranges to its subscribers in member-id order."""
    del previous  # range is not sticky
    mids = sorted(members)
    out: dict[str, NamedAssignment] = {m: {} for m in mids}
    for t in sorted(topics):
        subscribers = [m for m in mids if t in set(members[m])]
        if not subscribers:
            continue
        n = topics[t]
        per, extra = divmod(n, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = per + (1 if i < extra else 0)
            if size:
                out[m][t] = set(range(start, start + size))
            start += size
    return out


ASSIGNORS: dict[str, Callable[..., dict[str, NamedAssignment]]] = {UNIFORM: uniform_assign, RANGE: range_assign}


# --- members and groups -----------------------------------------------------------------------
@dataclass(slots=True, frozen=True)
class ClassicMetadata:
    """What a member using the classic protocol joined with (upstream ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(slots=True, eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str = ""  # upstream's default; "" also means "no regex" when a client clears it
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session: Deadline | None = None
    rebalance: Deadline | None = None
    # a member using the classic protocol (JoinGroup/SyncGroup), and its join and sync timeouts
    classic: ClassicMetadata | None = None
    join_timer: Deadline | None = None
    sync_timer: Deadline | None = None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def cancel_timers(self) -> None:
        for d in (self.session, self.rebalance, self.join_timer, self.sync_timer):
            if d is not None:
                d.cancel()
        self.session = self.rebalance = self.join_timer = self.sync_timer = None


@dataclass(slots=True, frozen=True)
class ResolvedRegex:
    """Upstream ResolvedRegularExpression: the topics a regex matched, at which topics version and when."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


class _RegexUpdate(Enum):
    """Upstream UpdateRegularExpressionStatus."""

    NO_CHANGE = 0
    UPDATED = 1
    UPDATED_AND_RESOLVED = 2


class ConsumerGroup:
    """One KIP-848 group: epochs, members, the target assignment and who holds which partition."""

    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        self.owners: dict[tuple[uuid.UUID, int], str] = {}
        self.assignor_name = UNIFORM
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.regex_task: Deadline | None = None  # a resolution scheduled and not yet run

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def state_name(self) -> str:
        return self.state().value

    def is_empty(self) -> bool:
        return not self.members

    def statistics(self) -> GroupStats:
        waiting = sum(1 for m in self.members.values() if not m.is_reconciled_to(self.assignment_epoch))
        return GroupStats(self.group_id, self.group_type, self.state_name, self.group_epoch, len(self.members), waiting)

    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    def release(self, member: ConsumerMember) -> None:
        for part in (member.assigned, member.pending_revocation):
            for tid, ps in part.items():
                for p in ps:
                    if self.owners.get((tid, p)) == member.member_id:
                        del self.owners[(tid, p)]

    def claim(self, member: ConsumerMember) -> None:
        for part in (member.assigned, member.pending_revocation):
            for tid, ps in part.items():
                for p in ps:
                    self.owners[(tid, p)] = member.member_id

    def member_topics(self, m: ConsumerMember) -> set[str]:
        """The member's literal topics and what its regex resolved to (nothing while unresolved)."""
        out = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(m.subscribed_topic_regex)
            if resolved is not None:
                out |= resolved.topics
        return out

    def subscribed_names(self) -> set[str]:
        """Topic names any member subscribes to, literally or through a resolved regex."""
        names: set[str] = set()
        for m in self.members.values():
            names |= self.member_topics(m)
        return names

    def subscribed_regexes(self) -> Counter[str]:
        """How many members subscribe to each regex."""
        return Counter(m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex)

    def last_regex_refresh_ms(self) -> int | None:
        """When the regexes were last resolved (they are resolved together: the first stands for all)."""
        return next((r.timestamp_ms for r in self.resolved_regexes.values()), None)

    def last_regex_version(self) -> int:
        return next((r.version for r in self.resolved_regexes.values()), 0)

    def drop_unsubscribed_regexes(self) -> None:
        """Forget resolved regexes no member subscribes to any more (upstream writes tombstones)."""
        counts = self.subscribed_regexes()
        for regex in [r for r in self.resolved_regexes if not counts[r]]:
            del self.resolved_regexes[regex]


# --- reconciliation (upstream CurrentAssignmentBuilder) ---------------------------------------
@dataclass(slots=True, frozen=True)
class Reconciled:
    state: MemberState
    member_epoch: int
    assigned: Assignment
    pending_revocation: Assignment


def _owns_any(owned: Assignment | None, revoking: Assignment) -> bool:
    """Does the member still hold any partition it must give up? Unknown (None) counts as yes."""
    if owned is None:
        return True
    return any(owned.get(tid, frozenset()) & ps for tid, ps in revoking.items())


def _next_assignment(member: ConsumerMember, epoch: int, target_epoch: int, target: Assignment,
                     owner_of: Callable[[uuid.UUID, int], str | None], owned: Assignment | None,
                     subscribed: AbstractSet[uuid.UUID] | None = None) -> Reconciled:
    assigned: Assignment = {}
    revoking: Assignment = {}
    incoming: Assignment = {}
    unreleased = False
    for tid in set(target) | set(member.assigned):
        # A topic the member no longer subscribes to (or whose regex is unresolved) is not given.
        want = target.get(tid, frozenset()) if subscribed is None or tid in subscribed else frozenset()
        have = member.assigned.get(tid, frozenset())
        if have & want:
            assigned[tid] = frozenset(have & want)
        if have - want:
            revoking[tid] = frozenset(have - want)
        free = frozenset(p for p in want - have if owner_of(tid, p) in (None, member.member_id))
        if len(free) != len(want - have):
            unreleased = True
        if free:
            incoming[tid] = free
    if revoking and _owns_any(owned, revoking):
        # Revoke first: keep the epoch, answer with what remains, wait for the member to let go.
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, epoch, assigned, revoking)
    for tid, ps in incoming.items():
        assigned[tid] = assigned.get(tid, frozenset()) | ps
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(state, target_epoch, assigned, {})


def _drop_unsubscribed(member: ConsumerMember, subscribed: AbstractSet[uuid.UUID] | None,
                       owned: Assignment | None) -> Reconciled:
    """Upstream updateCurrentAssignment: after a subscription change, give up unsubscribed topics now."""
    same = Reconciled(member.state, member.member_epoch, member.assigned, member.pending_revocation)
    if subscribed is None:
        return same
    assigned = {tid: ps for tid, ps in member.assigned.items() if tid in subscribed}
    if assigned == member.assigned:
        return same
    revoking = dict(member.pending_revocation)
    for tid, ps in member.assigned.items():
        if tid not in subscribed:
            revoking[tid] = revoking.get(tid, frozenset()) | ps
    if _owns_any(owned, revoking):
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, member.member_epoch, assigned, revoking)
    # Already let go: the assignment only shrinks, the state and epoch stay.
    return Reconciled(member.state, member.member_epoch, assigned, member.pending_revocation)


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              owner_of: Callable[[uuid.UUID, int], str | None], owned: Assignment | None,
              subscribed: AbstractSet[uuid.UUID] | None = None, subscription_changed: bool = False) -> Reconciled:
    """The member's next state on its way to ``target`` (a pure function; nothing is changed).

    ``subscribed``: the topic ids the member subscribes to now (None: do not filter); with
    ``subscription_changed`` the assignment is made consistent with it even at the target epoch.
    """
    same = Reconciled(member.state, member.member_epoch, member.assigned, member.pending_revocation)
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, owner_of, owned, subscribed)
        if subscription_changed:
            return _drop_unsubscribed(member, subscribed, owned)
        return same
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return _drop_unsubscribed(member, subscribed, owned) if subscription_changed else same
        return _next_assignment(member, min(member.member_epoch + 1, target_epoch), target_epoch, target,
                                owner_of, owned, subscribed)
    return _next_assignment(member, member.member_epoch, target_epoch, target, owner_of, owned, subscribed)


# --- the manager ------------------------------------------------------------------------------
@dataclass(slots=True)
class HeartbeatResult:
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


class ConsumerGroupManager:
    """ConsumerGroupHeartbeat and friends: the KIP-848 groups of the shared group table."""

    group_type = "consumer"

    def __init__(self, core: Any, table: GroupDirectory) -> None:
        self.core = core
        self.table = table
        # Upstream compares a resolution's metadata image version with the last image that created
        # topics; here a counter moved whenever the set of topic ids changes stands for the version.
        self._topic_ids: frozenset[uuid.UUID] | None = None
        self._topics_version = 0
        self._new_topics_version = 0

    @property
    def migration(self) -> GroupMigrationPort:
        """Classic <-> consumer conversions and classic members of a consumer group (the table's)."""
        return self.table.migration

    def new_group(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id)

    # --- configs ------------------------------------------------------------------------------
    def session_timeout_ms(self, group_id: str) -> int:
        return group_int(self.core.configs, group_id, "consumer.session.timeout.ms",
                         "group.consumer.session.timeout.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return group_int(self.core.configs, group_id, "consumer.heartbeat.interval.ms",
                         "group.consumer.heartbeat.interval.ms")

    def now_ms(self) -> int:
        return int(self.core.clock.now_ms())

    # --- lookups ------------------------------------------------------------------------------
    def group(self, group_id: str) -> ConsumerGroup:
        g = self.table.groups.get(group_id)
        if g is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if g.group_type != self.group_type:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return cast(ConsumerGroup, g)

    def _get_or_create(self, group_id: str, create: bool) -> ConsumerGroup:
        g = self.table.groups.get(group_id)
        if g is not None and g.group_type == self.group_type:
            return cast(ConsumerGroup, g)
        if not create:
            return self.group(group_id)  # raises GROUP_ID_NOT_FOUND
        # Another type holds the id: an empty group gives way (its offsets stay); a live classic
        # group is converted online (GM-1).
        if not self.table.take_over(group_id):
            if g is not None and g.group_type == "classic":
                return cast(ConsumerGroup, self.migration.upgrade(g))
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        new = ConsumerGroup(group_id)
        self.table.add(new)
        return new

    def _topic_metadata(self, names: Iterable[str]) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self.core.cluster.topics
        return {n: (topics[n].topic_id, len(topics[n].partitions)) for n in sorted(names) if n in topics}

    def _all_topic_names(self) -> list[str]:
        return [t.name for t in self.core.cluster.topics.values() if not t.internal]

    # --- the heartbeat ------------------------------------------------------------------------
    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        try:
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except GroupError as exc:
            return HeartbeatResult(error_code=exc.code, error_message=exc.message or None)

    def _heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        if req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                                 f"expression: {exc}.") from None
        create = req.member_epoch == 0
        g = self._get_or_create(req.group_id, create)
        max_size = broker_int(self.core.configs, "group.consumer.max.size")
        if len(g.members) >= max_size and (not req.member_id or req.member_id not in g.members):
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {max_size} members.")
        member_id = req.member_id or kafka_uuid_string(self.core.rng)
        if req.instance_id is None:
            m, _ = self._dynamic_member(g, member_id, req, create)
        else:
            m, _ = self._static_member(g, member_id, req, create)
        old_assigned = dict(m.assigned)
        old_names, old_regex = m.subscribed_topic_names, m.subscribed_topic_regex
        old_assignor = self._preferred_assignor(g)
        regex_counts = g.subscribed_regexes()  # before this member's update, as upstream counts them
        if req.instance_id is not None:
            m.instance_id = req.instance_id
        if req.rack_id is not None:
            m.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            m.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            m.subscribed_topic_names = tuple(req.subscribed_topic_names)
        if req.subscribed_topic_regex is not None:
            m.subscribed_topic_regex = req.subscribed_topic_regex
        m.client_id = req.client_id
        m.client_host = req.client_host
        names_changed = m.subscribed_topic_names != old_names
        regex_update = self._update_regexes(g, old_regex, m.subscribed_topic_regex, regex_counts)
        # Upstream bumps for new literal names, for a regex already resolved (or one dropped), and
        # for a new preferred assignor; a regex still unresolved waits for its resolution's bump.
        # Epoch 0 is a new group, which must move off it (kwire numbers from 0, as upstream did
        # before KAFKA-20268 started groups at 1).
        bump = (g.group_epoch == 0 or names_changed or regex_update is _RegexUpdate.UPDATED_AND_RESOLVED
                or self._preferred_assignor(g) != old_assignor)
        if bump:
            self._refresh_metadata(g)
            g.group_epoch += 1
        if g.group_epoch > g.assignment_epoch:
            self._compute_target(g)
        self._reconcile(g, m, req.owned, names_changed or regex_update is not _RegexUpdate.NO_CHANGE)
        self._schedule_session(g, m)
        full = req.member_epoch == 0 or (req.rebalance_timeout_ms != -1 and req.owned is not None and (
            req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
        return HeartbeatResult(
            member_id=m.member_id, member_epoch=m.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(g.group_id),
            assignment=dict(m.assigned) if full or m.assigned != old_assigned else None,
        )

    def _check_epoch(self, m: ConsumerMember, received: int, owned: Assignment | None) -> None:
        if received > m.member_epoch:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({received}) than the one "
                             f"known by the group coordinator ({m.member_epoch}). The member must abandon all "
                             f"its partitions and rejoin.")
        if received < m.member_epoch:
            # The previous epoch is tolerated with a subset of the assignment: a response may be lost.
            subset = owned is not None and all(ps <= m.assigned.get(tid, frozenset()) for tid, ps in owned.items())
            if received != m.previous_member_epoch or not subset:
                raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({received}) than the one "
                                 f"known by the group coordinator ({m.member_epoch}). The member must abandon all "
                                 f"its partitions and rejoin.")

    def _dynamic_member(self, g: ConsumerGroup, member_id: str, req: HeartbeatRequest,
                        create: bool) -> tuple[ConsumerMember, bool]:
        m = g.members.get(member_id)
        if m is None:
            if not create:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {g.group_id}.")
            m = ConsumerMember(member_id)
            g.members[member_id] = m
            return m, True
        self._check_epoch(m, req.member_epoch, req.owned)
        return m, False

    def _static_member(self, g: ConsumerGroup, member_id: str, req: HeartbeatRequest,
                       create: bool) -> tuple[ConsumerMember, bool]:
        assert req.instance_id is not None
        old_id = g.static_members.get(req.instance_id)
        old = g.members.get(old_id) if old_id is not None else None
        if create:
            if old is None:
                m = g.members.get(member_id)
                if m is not None:
                    self._check_epoch(m, req.member_epoch, req.owned)
                    return m, False
                m = ConsumerMember(member_id, instance_id=req.instance_id)
                g.members[member_id] = m
                g.static_members[req.instance_id] = member_id
                return m, True
            # An instance held by a classic-protocol member is taken over at once (a classic static
            # member never sends a leave; upstream checks release only between consumer members).
            if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and old.classic is None:
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {req.instance_id} cannot join the "
                                 f"group because the instance id is owned by {old.member_id} member.")
            # The rejoining instance takes over the departed one's place, partitions and target.
            g.release(old)
            old.cancel_timers()
            del g.members[old.member_id]
            target = g.target.pop(old.member_id, None)
            m = ConsumerMember(
                member_id, instance_id=req.instance_id, rack_id=old.rack_id, rebalance_timeout_ms=old.rebalance_timeout_ms,
                subscribed_topic_names=old.subscribed_topic_names, subscribed_topic_regex=old.subscribed_topic_regex,
                server_assignor=old.server_assignor, state=old.state, member_epoch=0, previous_member_epoch=0,
                assigned=dict(old.assigned), pending_revocation={},
            )
            g.members[member_id] = m
            g.static_members[req.instance_id] = member_id
            if target is not None:
                g.target[member_id] = target
            g.claim(m)
            return m, False
        if old is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if old.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {member_id} with instance id {req.instance_id} is fenced by "
                             f"existing member {old.member_id}.")
        self._check_epoch(old, req.member_epoch, req.owned)
        return old, False

    # --- regular expressions (upstream maybeUpdateRegularExpressions and friends) ----------------
    def _note_topics(self) -> None:
        """Move the topics version when the set of topics changed; remember when topics were created."""
        ids = frozenset(t.topic_id for t in self.core.cluster.topics.values())
        if self._topic_ids is not None and ids != self._topic_ids:
            self._topics_version += 1
            if ids - self._topic_ids:
                self._new_topics_version = self._topics_version
        self._topic_ids = ids

    def _update_regexes(self, g: ConsumerGroup, old: str, new: str, counts: Counter[str]) -> _RegexUpdate:
        """Note a member's regex change and schedule a resolution when one is due.

        ``counts``: subscribers per regex before the change. Runs on every heartbeat, which is
        how upstream notices new topics and stale resolutions.
        """
        # Read before the old regex is dropped: upstream's tombstone is applied only after the heartbeat.
        last_refresh = g.last_regex_refresh_ms()
        resolved_before = len(g.resolved_regexes)
        status = _RegexUpdate.NO_CHANGE
        require = False
        if old != new:
            status = _RegexUpdate.UPDATED
            if old and counts[old] == 1:
                g.resolved_regexes.pop(old, None)  # its last subscriber left it
            if new:
                if not counts[new]:
                    require = True  # a regex new to the group (validated before anything changed)
                elif new in g.resolved_regexes:
                    status = _RegexUpdate.UPDATED_AND_RESOLVED
            elif old:
                status = _RegexUpdate.UPDATED_AND_RESOLVED  # back to literal names only
        if not require and not counts:
            return status
        if g.regex_task is not None:
            return status  # one resolution at a time per group
        now = self.now_ms()
        if last_refresh is not None and now <= last_refresh + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return status
        after = counts.copy()
        if old != new:
            if old:
                after[old] -= 1
            if new:
                after[new] += 1
        regexes = frozenset(r for r, n in after.items() if n > 0)
        self._note_topics()
        require = (require or len(regexes) != resolved_before
                   or g.last_regex_version() < self._new_topics_version
                   or last_refresh is None or now > last_refresh + REGEX_REFRESH_INTERVAL_MS)
        if require and regexes:
            self._schedule_resolution(g, regexes, now)
        return status

    def _schedule_resolution(self, g: ConsumerGroup, regexes: frozenset[str], now: int) -> None:
        group_id = g.group_id

        def resolve() -> None:
            self._resolve_regexes(group_id, regexes, task)

        task = self.core.deadlines.at(now + REGEX_RESOLUTION_DELAY_MS, resolve)
        g.regex_task = task

    def _resolve_regexes(self, group_id: str, regexes: frozenset[str], task: Deadline) -> None:
        """Upstream handleRegularExpressionsResult: store the resolutions; bump when topics changed."""
        g = self.table.groups.get(group_id)
        if not isinstance(g, ConsumerGroup) or g.regex_task is not task:
            return  # the group is gone (or was recreated)
        g.regex_task = None
        self._note_topics()
        names = self._all_topic_names()
        counts = g.subscribed_regexes()
        now = self.now_ms()
        bump = False
        for regex in sorted(regexes):
            if not counts[regex]:
                continue  # nobody subscribes to it any more
            try:
                pattern = re.compile(regex)
            except re.error:
                topics: frozenset[str] = frozenset()  # validated on the way in; upstream ignores it too
            else:
                topics = frozenset(t for t in names if pattern.fullmatch(t))
            old = g.resolved_regexes.get(regex)
            if (old.topics if old is not None else frozenset()) != topics:
                bump = True
            g.resolved_regexes[regex] = ResolvedRegex(topics, self._topics_version, now)
        if self._refresh_metadata(g):
            bump = True
        if bump:
            g.group_epoch += 1

    def _preferred_assignor(self, g: ConsumerGroup) -> str:
        """The assignor most members ask for (uniform when none does or it is unknown)."""
        wanted = Counter(m.server_assignor for m in g.members.values() if m.server_assignor)
        name = max(sorted(wanted), key=lambda n: wanted[n]) if wanted else UNIFORM
        return name if name in ASSIGNORS else UNIFORM

    def _subscribed_ids(self, g: ConsumerGroup, m: ConsumerMember) -> set[uuid.UUID]:
        topics = self.core.cluster.topics
        return {topics[n].topic_id for n in g.member_topics(m) if n in topics}

    def _refresh_metadata(self, g: ConsumerGroup) -> bool:
        """Recompute the subscribed topics' ids and partition counts; True when they changed."""
        meta = self._topic_metadata(g.subscribed_names())
        if meta == g.subscription_metadata:
            return False
        g.subscription_metadata = meta
        return True

    def _compute_target(self, g: ConsumerGroup) -> None:
        meta = g.subscription_metadata
        by_id = {tid: name for name, (tid, _) in meta.items()}
        subs = {mid: g.member_topics(m) & meta.keys() for mid, m in g.members.items()}
        previous = {mid: {by_id[tid]: set(ps) for tid, ps in a.items() if tid in by_id}
                    for mid, a in g.target.items() if mid in g.members}
        g.assignor_name = self._preferred_assignor(g)
        result = ASSIGNORS[g.assignor_name](subs, {n: c for n, (_, c) in meta.items()}, previous)
        g.target = {mid: {meta[t][0]: frozenset(ps) for t, ps in a.items() if ps} for mid, a in result.items()}
        g.assignment_epoch = g.group_epoch

    def _reconcile(self, g: ConsumerGroup, m: ConsumerMember, owned: Assignment | None,
                   subscription_changed: bool = False) -> None:
        if m.is_reconciled_to(g.assignment_epoch) and not subscription_changed:
            return
        nxt = reconcile(m, g.assignment_epoch, g.target.get(m.member_id, {}), g.owner_of, owned,
                        self._subscribed_ids(g, m), subscription_changed)
        g.release(m)
        if nxt.member_epoch != m.member_epoch:
            m.previous_member_epoch = m.member_epoch
        m.member_epoch = nxt.member_epoch
        m.state = nxt.state
        m.assigned = nxt.assigned
        m.pending_revocation = nxt.pending_revocation
        g.claim(m)
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            if m.rebalance is None:
                self._schedule_rebalance(g, m)
        elif m.rebalance is not None:
            m.rebalance.cancel()
            m.rebalance = None

    # --- timers -------------------------------------------------------------------------------
    def _schedule_session(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        if m.session is not None:
            m.session.cancel()
        group_id, member_id = g.group_id, m.member_id
        # a member using the classic protocol keeps the session timeout it joined with (GM-7)
        timeout = m.classic.session_timeout_ms if m.classic is not None else self.session_timeout_ms(group_id)
        m.session = self.core.deadlines.at(self.now_ms() + timeout, lambda: self._expire(group_id, member_id, None))

    def _schedule_rebalance(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        group_id, member_id, epoch = g.group_id, m.member_id, m.member_epoch
        timeout = m.rebalance_timeout_ms if m.rebalance_timeout_ms >= 0 else self.session_timeout_ms(group_id)
        m.rebalance = self.core.deadlines.at(self.now_ms() + timeout,
                                             lambda: self._expire(group_id, member_id, epoch))

    def _expire(self, group_id: str, member_id: str, epoch: int | None) -> None:
        """Session timeout (epoch None) or a revocation that took longer than the rebalance timeout."""
        g = self.table.groups.get(group_id)
        if not isinstance(g, ConsumerGroup):
            return
        m = g.members.get(member_id)
        if m is None or (epoch is not None and m.member_epoch != epoch):
            return
        self.fence(g, m)

    def fence(self, g: ConsumerGroup, m: ConsumerMember) -> None:
        """Remove a member (leave, session or rebalance timeout): its partitions are free at once."""
        self.fence_members(g, [m])

    def fence_members(self, g: ConsumerGroup, members: list[ConsumerMember]) -> None:
        """consumerGroupFenceMembers: the group goes back to classic when only classic-protocol
        members would be left (GM-9); else the members go and the group epoch is bumped once."""
        if self.migration.maybe_downgrade(g, members):
            return
        for m in members:
            m.cancel_timers()
            g.release(m)
            g.members.pop(m.member_id, None)
            g.target.pop(m.member_id, None)
            if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
                del g.static_members[m.instance_id]
        g.drop_unsubscribed_regexes()
        self._refresh_metadata(g)
        g.group_epoch += 1

    # --- leaving ------------------------------------------------------------------------------
    def _leave(self, req: HeartbeatRequest) -> HeartbeatResult:
        g = self.group(req.group_id)
        if req.instance_id is None:
            m = g.members.get(req.member_id)
            if m is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {g.group_id}.")
            self.fence(g, m)
            return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)
        mid = g.static_members.get(req.instance_id)
        m = g.members.get(mid) if mid is not None else None
        if m is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if m.member_id != req.member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {req.member_id} with instance id {req.instance_id} is fenced by "
                             f"existing member {m.member_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A temporary leave: the partitions stay reserved for the instance until its session ends.
            g.release(m)
            m.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            m.pending_revocation = {}
            if m.rebalance is not None:
                m.rebalance.cancel()
                m.rebalance = None
            g.claim(m)
            return HeartbeatResult(member_id=m.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self.fence(g, m)
        return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)

    # --- offsets --------------------------------------------------------------------------------
    def validate_offset_commit(self, g: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int,
                               api_version: int, transactional: bool = False) -> None:
        if epoch < 0 and not g.members:
            return  # an admin (or a consumer without group management) commits for an empty group
        m = g.members.get(member_id)
        if m is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
        if m.classic is not None:
            # a classic-protocol member commits with its generation, the member epoch (GM-11)
            if epoch != m.member_epoch:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                                 f"Received generation id {epoch} is not the current member epoch {m.member_epoch}.")
            return
        if not transactional and api_version < 9:
            raise GroupError(ErrorCode.UNSUPPORTED_VERSION,
                             "OffsetCommit version 9 or above must be used by members using the consumer group "
                             "protocol")
        if epoch != m.member_epoch:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH,
                             f"The member epoch {epoch} does not match the current member epoch {m.member_epoch}.")

    def validate_offset_fetch(self, g: ConsumerGroup, member_id: str | None, epoch: int) -> bool:
        if member_id is None and epoch < 0:
            return True
        m = g.members.get(member_id or "")
        if m is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
        if m.classic is not None and epoch != m.member_epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                             f"The member epoch {epoch} does not match the current member epoch {m.member_epoch}.")
        if epoch != m.member_epoch:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH,
                             f"The member epoch {epoch} does not match the current member epoch {m.member_epoch}.")
        return True

    def offset_delete_subscriptions(self, g: ConsumerGroup) -> set[str]:
        return g.subscribed_names()

    def delete_error(self, g: ConsumerGroup) -> int:
        return ErrorCode.NON_EMPTY_GROUP if g.members else ErrorCode.NONE

    # --- hooks ----------------------------------------------------------------------------------
    def on_metadata_change(self) -> None:
        """Topics were created, deleted or grew: groups whose subscribed metadata changed rebalance.

        A created topic matching a regex waits for the group's next resolution, as upstream's does.
        """
        self._note_topics()
        for g in list(self.table.groups.values()):
            if isinstance(g, ConsumerGroup) and g.members and self._refresh_metadata(g):
                g.group_epoch += 1

    def destroy(self, g: ConsumerGroup) -> None:
        if g.regex_task is not None:
            g.regex_task.cancel()
            g.regex_task = None
        g.resolved_regexes.clear()
        for m in g.members.values():
            m.cancel_timers()
        g.members.clear()
