"""Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/DescribeGroups): their state machine
and their side of the checks OffsetCommit, OffsetFetch, OffsetDelete and DeleteGroups make. The
group ids they share with the other group types live in ``group_table``.

Theory of operation (classic groups, upstream ClassicGroup / GroupMetadataManager)
---------------------------------------------------------------------------------
* States and moves are the ``_MOVES`` table: Empty → PreparingRebalance (a member joins)
  → CompletingRebalance (the join phase ends; a generation is born) → Stable (the leader's
  SyncGroup brings the assignment); any change during CompletingRebalance or Stable starts a
  new PreparingRebalance; a join phase that ends with nobody left goes back to Empty.
* JoinGroup and SyncGroup answers wait. The coordinator keeps the member's callback and calls
  it when the phase completes: the join phase ends when every known member has rejoined
  (and no member id handed out by MEMBER_ID_REQUIRED is still outstanding) or when the
  group's rebalance timeout (the largest of its members') passes. A group that was Empty
  waits ``group.initial.rebalance.delay.ms`` first, extended while new members keep coming,
  up to the rebalance timeout.
* Timers live on the broker clock (``core.deadlines``): each member's session timeout
  (suspended while it waits on a JoinGroup or SyncGroup), the join phase, the sync phase
  (members that do not SyncGroup within the rebalance timeout are dropped), and the timeout
  of member ids handed out but not yet used.
* The leader's SyncGroup carries the assignment, which Kafka writes to ``__consumer_offsets``
  before the group turns Stable and any SyncGroup is answered. ``kwire.group.assignment.write.delay.ms``
  is that write on the broker clock (0: at once); meanwhile the group stays CompletingRebalance,
  SyncGroups wait, and a JoinGroup that starts a rebalance voids the assignment.
* Static members (``group.instance.id``) keep their place across restarts: a rejoin under
  a new member id replaces the old id (the old one is fenced with FENCED_INSTANCE_ID) and,
  in a Stable group whose protocol does not change, gets the current generation back at
  once without a rebalance. Static members that do not rejoin are not dropped when the join
  phase ends; their session timeout removes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, cast

from kwire.broker.core._group_common import (
    GroupDirectory,
    GroupError,
    GroupStats,
    broker_int,
    java_uuid_string,
)
from kwire.errors import KwireError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.deadlines import Deadline

__all__ = [
    "ClassicGroupManager", "ClassicGroup", "ClassicMember", "GroupState", "Trigger", "JoinRequest", "JoinResult",
    "SyncResult", "GroupSummary", "MemberSummary", "GroupError", "IllegalGroupTransition",
    "DEFAULT_NEW_MEMBER_JOIN_TIMEOUT_MS", "CONSUMER_PROTOCOL_TYPE",
]

# GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a new member's JoinGroup may
# wait this long before the member is dropped (it cannot heartbeat without a member id).
DEFAULT_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
CONSUMER_PROTOCOL_TYPE = "consumer"
# The assignment write of the leader's SyncGroup on the broker clock (see the module docstring).
ASSIGNMENT_WRITE_DELAY = "kwire.group.assignment.write.delay.ms"


class GroupState(Enum):
    """ClassicGroupState; the value is what DescribeGroups and ListGroups print."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class Trigger(Enum):
    REBALANCE = "rebalance"  # a member joined, left, changed its metadata, or timed out
    JOIN_DONE = "join_done"  # the join phase ended with members: a new generation
    JOIN_DONE_EMPTY = "join_done_empty"  # the join phase ended with nobody left
    ASSIGNED = "assigned"  # the leader's SyncGroup carried the assignment
    DELETE = "delete"  # DeleteGroups


S, T = GroupState, Trigger
_MOVES: dict[tuple[GroupState, Trigger], GroupState] = {
    (S.EMPTY, T.REBALANCE): S.PREPARING_REBALANCE,  # ClassicGroupState.PREPARING_REBALANCE valid previous states
    (S.STABLE, T.REBALANCE): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.REBALANCE): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.JOIN_DONE): S.COMPLETING_REBALANCE,
    (S.PREPARING_REBALANCE, T.JOIN_DONE_EMPTY): S.EMPTY,
    (S.COMPLETING_REBALANCE, T.ASSIGNED): S.STABLE,
    (S.EMPTY, T.DELETE): S.DEAD,
    (S.STABLE, T.DELETE): S.DEAD,
    (S.PREPARING_REBALANCE, T.DELETE): S.DEAD,
    (S.COMPLETING_REBALANCE, T.DELETE): S.DEAD,
    (S.DEAD, T.DELETE): S.DEAD,
}
del S, T


class IllegalGroupTransition(KwireError):
    """A (state, trigger) pair the classic group state machine has no move for; state unchanged."""


# --- values exchanged with the handlers ---------------------------------------------------------
@dataclass(slots=True, frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True  # JoinGroup v4+ without an instance id
    reason: str | None = None


@dataclass(slots=True, frozen=True)
class JoinResult:
    error_code: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata)
    skip_assignment: bool = False


@dataclass(slots=True, frozen=True)
class SyncResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True, frozen=True)
class MemberSummary:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(slots=True, frozen=True)
class GroupSummary:
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[MemberSummary, ...]


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


# --- classic groups -----------------------------------------------------------------------------
@dataclass(slots=True, eq=False)
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    join_cb: JoinCallback | None = None
    sync_cb: SyncCallback | None = None
    is_new: bool = False
    session: Deadline | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_cb is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalGroupTransition(f"member {self.member_id} supports none of {sorted(candidates)}")


class ClassicGroup:
    """One classic group: its members, generation, leader and timers."""

    group_type = "classic"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, Deadline] = {}
        self.pending_sync: set[str] = set()
        self.join_timer: Deadline | None = None
        self.sync_timer: Deadline | None = None
        self.new_member_added = False

    # --- the state machine --------------------------------------------------------------------
    def transition(self, trigger: Trigger) -> GroupState:
        new = _MOVES.get((self.state, trigger))
        if new is None:
            raise IllegalGroupTransition(f"group {self.group_id}: no move for {trigger.value} in {self.state.value}")
        self.previous_state, self.state = self.state, new
        return new

    @property
    def state_name(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    # --- members ------------------------------------------------------------------------------
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return all(m.awaiting_join for m in self.members.values()) and not self.pending_members

    def candidate_protocols(self) -> set[str]:
        counts = Counter(name for m in self.members.values() for name in {n for n, _ in m.protocols})
        return {name for name, c in counts.items() if c == len(self.members)}

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return min(votes, key=lambda name: (-votes[name], name))

    def supports(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        candidates = self.candidate_protocols()
        return protocol_type == self.protocol_type and any(name in candidates for name, _ in protocols)

    def add(self, m: ClassicMember, join_cb: JoinCallback | None) -> None:
        if not self.members:
            self.protocol_type = m.protocol_type
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        if self.leader_id is None:
            self.leader_id = m.member_id
        m.join_cb = join_cb

    def remove(self, member_id: str) -> ClassicMember | None:
        m = self.members.pop(member_id, None)
        if m is not None and m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return m

    def member_list(self) -> tuple[tuple[str, str | None, bytes], ...]:
        return tuple((m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values())

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol only; None when not known)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.state is GroupState.EMPTY:
            return None
        from kwire.protocol.data.consumer_protocol_subscription import ConsumerProtocolSubscription

        out: set[str] = set()
        for m in self.members.values():
            meta = m.metadata(self.protocol_name) if self.protocol_name else (m.protocols[0][1] if m.protocols else b"")
            if len(meta) < 2:
                continue
            version = int.from_bytes(meta[:2], "big", signed=True)
            try:
                sub, _ = ConsumerProtocolSubscription.decode_from(memoryview(meta), 2, max(0, min(version, 3)))
            except KwireError:
                return None
            out.update(sub.topics)
        return out

    def summary(self) -> GroupSummary:
        stable = self.state is GroupState.STABLE
        members = tuple(
            MemberSummary(m.member_id, m.instance_id, m.client_id, m.client_host,
                          m.metadata(self.protocol_name) if stable else b"", m.assignment if stable else b"")
            for m in self.members.values())
        return GroupSummary(self.group_id, self.state.value, self.protocol_type or "",
                            (self.protocol_name or "") if stable else "", members)

    def statistics(self) -> GroupStats:
        waiting = sum((m.join_cb is not None) + (m.sync_cb is not None) for m in self.members.values())
        return GroupStats(self.group_id, self.group_type, self.state.value, self.generation_id, len(self.members),
                          waiting)

    def destroy(self) -> None:
        """Cancel every timer (the group is being deleted or replaced)."""
        for m in self.members.values():
            if m.session is not None:
                m.session.cancel()
        for d in self.pending_members.values():
            d.cancel()
        for timer in (self.join_timer, self.sync_timer):
            if timer is not None:
                timer.cancel()


# --- the manager -------------------------------------------------------------------------------
class ClassicGroupManager:
    """The classic groups of the table: their protocol and their side of the shared checks."""

    group_type = "classic"

    def __init__(self, core: Any, table: GroupDirectory) -> None:
        self.core = core
        self.table = table

    def now_ms(self) -> int:
        return int(self.core.clock.now_ms())

    def _at(self, delay_ms: int, fn: Callable[[], None]) -> Deadline:
        return cast("Deadline", self.core.deadlines.at(self.now_ms() + max(0, delay_ms), fn))

    def new_group(self, group_id: str) -> ClassicGroup:
        return ClassicGroup(group_id)

    def classic(self, group_id: str) -> ClassicGroup | None:
        return cast("ClassicGroup | None", self.table.of_type(group_id, self.group_type))

    def _consumer_group(self, group_id: str) -> Any | None:
        """The KIP-848 group holding the id, whose classic-protocol members come through here."""
        return self.table.of_type(group_id, "consumer")

    def session_timeout_error(self, session_timeout_ms: int) -> int:
        lo = broker_int(self.core.configs, "group.min.session.timeout.ms")
        hi = broker_int(self.core.configs, "group.max.session.timeout.ms")
        return ErrorCode.NONE if lo <= session_timeout_ms <= hi else ErrorCode.INVALID_SESSION_TIMEOUT

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{java_uuid_string(self.core.rng)}"

    # --- JoinGroup ----------------------------------------------------------------------------
    def join(self, req: JoinRequest, cb: JoinCallback) -> None:
        """Join (or rejoin) a classic group; ``cb`` receives the answer, now or when the phase ends."""

        def fail(code: int, member_id: str = req.member_id) -> None:
            cb(JoinResult(code, member_id))

        found = self.table.get(req.group_id)
        if found is not None and found.group_type != self.group_type:
            # Another type holds the id: an empty group gives way; a live consumer group takes
            # the member in through the classic protocol (GM-3); any other live one is a conflict.
            if found.group_type == "consumer" and not found.is_empty():
                return self.table.migration.join(found, req, cb)
            if not self.table.take_over(req.group_id):
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            found = None
        g = cast("ClassicGroup | None", found)
        if g is None:
            if req.member_id:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            g = ClassicGroup(req.group_id)
            self.table.add(g)
        if g.state is GroupState.DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not g.supports(req.protocol_type, req.protocols):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        is_unknown = not req.member_id or req.member_id in g.pending_members
        if is_unknown and len(g.members) >= broker_int(self.core.configs, "group.max.size"):
            return fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not req.member_id:
            if req.instance_id is not None:
                return self._join_new_static(g, req, cb)
            member_id = self._new_member_id(req.client_id)
            if req.require_known_member_id:
                # KIP-394: hand out the id first; the member must come back with it.
                gid = g.group_id
                g.pending_members[member_id] = self._at(req.session_timeout_ms,
                                                        lambda: self._expire_pending(gid, member_id))
                return cb(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            return self._add_member(g, req, member_id, cb)
        if req.member_id in g.pending_members and req.instance_id is None:
            g.pending_members.pop(req.member_id).cancel()
            return self._add_member(g, req, req.member_id, cb)
        try:
            m = self._existing_member(g, req.member_id, req.instance_id)
        except GroupError as exc:
            return fail(exc.code)
        self._join_existing(g, m, req, cb)

    def _existing_member(self, g: ClassicGroup, member_id: str, instance_id: str | None) -> ClassicMember:
        if instance_id is not None:
            known = g.static_members.get(instance_id)
            if known is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown instance id {instance_id}")
            if known != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID,
                                 f"instance {instance_id} is now member {known}, not {member_id}")
        m = g.members.get(member_id)
        if m is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {g.group_id}")
        return m

    def _join_existing(self, g: ClassicGroup, m: ClassicMember, req: JoinRequest, cb: JoinCallback) -> None:
        if g.state is GroupState.PREPARING_REBALANCE:
            return self._update_member(g, m, req, cb)
        if g.state is GroupState.COMPLETING_REBALANCE:
            if m.protocols == req.protocols:
                # A repeated JoinGroup (a lost answer): the same generation again.
                return cb(self._join_result(g, m))
            return self._update_member(g, m, req, cb)
        if g.state is GroupState.STABLE:
            if g.leader_id == m.member_id or m.protocols != req.protocols:
                # The leader's rejoin forces a rebalance (its view of the topics may have changed).
                return self._update_member(g, m, req, cb)
            return cb(JoinResult(ErrorCode.NONE, m.member_id, g.generation_id, g.protocol_type, g.protocol_name,
                                 g.leader_id or ""))
        cb(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, m.member_id))

    def _join_result(self, g: ClassicGroup, m: ClassicMember, skip_assignment: bool = False) -> JoinResult:
        leader = g.leader_id == m.member_id
        return JoinResult(ErrorCode.NONE, m.member_id, g.generation_id, g.protocol_type, g.protocol_name,
                          g.leader_id or "", g.member_list() if leader else (), skip_assignment and leader)

    def _add_member(self, g: ClassicGroup, req: JoinRequest, member_id: str, cb: JoinCallback) -> None:
        m = ClassicMember(member_id, req.instance_id, req.client_id, req.client_host, req.session_timeout_ms,
                          req.rebalance_timeout_ms, req.protocol_type, req.protocols, is_new=True)
        if g.state is GroupState.PREPARING_REBALANCE:
            g.new_member_added = True
        g.add(m, cb)
        # A new member cannot heartbeat while its JoinGroup waits; bound that wait instead.
        self._schedule_session(g, m, DEFAULT_NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_rebalance(g)

    def _update_member(self, g: ClassicGroup, m: ClassicMember, req: JoinRequest, cb: JoinCallback) -> None:
        m.protocols = req.protocols
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.session_timeout_ms = req.session_timeout_ms
        m.client_id, m.client_host = req.client_id, req.client_host
        if m.join_cb is not None and m.join_cb is not cb:
            old, m.join_cb = m.join_cb, None
            old(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, m.member_id))
        m.join_cb = cb
        self._maybe_rebalance(g)

    def _join_new_static(self, g: ClassicGroup, req: JoinRequest, cb: JoinCallback) -> None:
        assert req.instance_id is not None
        new_id = self._new_member_id(req.instance_id)
        old_id = g.static_members.get(req.instance_id)
        if old_id is None:
            return self._add_member(g, req, new_id, cb)
        old = g.members[old_id]
        # The new id replaces the old one everywhere; whoever still uses the old id is fenced.
        if old.join_cb is not None:
            fenced, old.join_cb = old.join_cb, None
            fenced(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        if old.sync_cb is not None:
            fenced_sync, old.sync_cb = old.sync_cb, None
            fenced_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        if old.session is not None:
            old.session.cancel()
        del g.members[old_id]
        old.member_id = new_id
        g.members[new_id] = old
        g.static_members[req.instance_id] = new_id
        if g.leader_id == old_id:
            g.leader_id = new_id
        if old_id in g.pending_sync:
            g.pending_sync.discard(old_id)
            g.pending_sync.add(new_id)
        m = old
        m.protocols = req.protocols
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.session_timeout_ms = req.session_timeout_ms
        m.client_id, m.client_host = req.client_id, req.client_host
        self._schedule_session(g, m)
        if g.state is GroupState.STABLE:
            if g.select_protocol() == g.protocol_name:
                # The static member is back with nothing that changes the group: no rebalance.
                return cb(self._join_result(g, m, skip_assignment=True))
            m.join_cb = cb
            return self._prepare_rebalance(g)
        m.join_cb = cb
        if g.state is GroupState.COMPLETING_REBALANCE:
            return self._prepare_rebalance(g)
        self._maybe_complete_join(g)

    def _maybe_rebalance(self, g: ClassicGroup) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(g)
        else:
            self._maybe_complete_join(g)

    def _prepare_rebalance(self, g: ClassicGroup) -> None:
        if g.state is GroupState.COMPLETING_REBALANCE:
            # The assignment being synced is void: waiting SyncGroups learn of the new rebalance.
            for m in g.members.values():
                m.assignment = b""
                if m.sync_cb is not None:
                    sync_cb, m.sync_cb = m.sync_cb, None
                    sync_cb(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        if g.sync_timer is not None:
            g.sync_timer.cancel()
            g.sync_timer = None
        g.pending_sync.clear()
        if g.join_timer is not None:
            g.join_timer.cancel()
        initial = g.state is GroupState.EMPTY
        g.transition(Trigger.REBALANCE)
        gid = g.group_id
        if initial:
            delay = broker_int(self.core.configs, "group.initial.rebalance.delay.ms")
            remaining = max(g.rebalance_timeout_ms() - delay, 0)
            g.new_member_added = False
            g.join_timer = self._at(delay, lambda: self._initial_join_due(gid, delay, remaining))
        else:
            g.join_timer = self._at(g.rebalance_timeout_ms(), lambda: self._join_due(gid))
            self._maybe_complete_join(g)

    def _initial_join_due(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        g = self.classic(group_id)
        if g is None or g.state is not GroupState.PREPARING_REBALANCE:
            return
        if g.new_member_added and remaining_ms > 0:
            # Members are still arriving: wait a little longer, within the rebalance timeout.
            g.new_member_added = False
            configured = broker_int(self.core.configs, "group.initial.rebalance.delay.ms")
            nxt = min(configured, remaining_ms)
            left = max(remaining_ms - delay_ms, 0)
            g.join_timer = self._at(nxt, lambda: self._initial_join_due(group_id, nxt, left))
            return
        self._complete_join(g)

    def _join_due(self, group_id: str) -> None:
        g = self.classic(group_id)
        if g is not None and g.state is GroupState.PREPARING_REBALANCE:
            self._complete_join(g)

    def _maybe_complete_join(self, g: ClassicGroup) -> None:
        if (g.state is GroupState.PREPARING_REBALANCE and g.has_all_members_joined()
                and g.previous_state is not GroupState.EMPTY):
            self._complete_join(g)

    def _elect_joined_leader(self, g: ClassicGroup) -> bool:
        leader = g.members.get(g.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return True
        for m in g.members.values():
            if m.awaiting_join:
                g.leader_id = m.member_id
                return True
        return False

    def _complete_join(self, g: ClassicGroup) -> None:
        if g.join_timer is not None:
            g.join_timer.cancel()
            g.join_timer = None
        for m in [m for m in g.members.values() if not m.awaiting_join and m.instance_id is None]:
            if m.session is not None:
                m.session.cancel()
            g.remove(m.member_id)
        if g.members and not self._elect_joined_leader(g):
            # Only static members that have not rejoined are left: wait for them (or their sessions).
            gid = g.group_id
            g.join_timer = self._at(g.rebalance_timeout_ms(), lambda: self._join_due(gid))
            return
        g.generation_id += 1
        if not g.members:
            g.protocol_name = None
            g.leader_id = None
            g.transition(Trigger.JOIN_DONE_EMPTY)
            return
        g.protocol_name = g.select_protocol()
        g.transition(Trigger.JOIN_DONE)
        g.pending_sync = set(g.members)
        gid, generation = g.group_id, g.generation_id
        g.sync_timer = self._at(g.rebalance_timeout_ms(), lambda: self._sync_due(gid, generation))
        for m in list(g.members.values()):
            if m.join_cb is None:
                continue
            cb, m.join_cb = m.join_cb, None
            m.is_new = False
            self._schedule_session(g, m)
            cb(self._join_result(g, m))

    # --- SyncGroup ----------------------------------------------------------------------------
    def sync(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
             cb: SyncCallback) -> None:
        g = self.classic(group_id)
        if g is None:
            cg = self._consumer_group(group_id)
            if cg is not None:  # GM-4
                return self.table.migration.sync(cg, generation_id, member_id, instance_id, protocol_type,
                                                          protocol_name, cb)
            return cb(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if g.state is GroupState.DEAD:
            return cb(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        try:
            m = self._existing_member(g, member_id, instance_id)
        except GroupError as exc:
            return cb(SyncResult(exc.code))
        if generation_id != g.generation_id:
            return cb(SyncResult(ErrorCode.ILLEGAL_GENERATION))
        if (protocol_type is not None and protocol_type != g.protocol_type) or (
                protocol_name is not None and protocol_name != g.protocol_name):
            return cb(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        if g.state is GroupState.EMPTY:
            return cb(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if g.state is GroupState.PREPARING_REBALANCE:
            return cb(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        g.pending_sync.discard(member_id)
        if g.state is GroupState.STABLE:
            self._schedule_session(g, m)
            return cb(SyncResult(ErrorCode.NONE, g.protocol_type, g.protocol_name, m.assignment))
        # CompletingRebalance: wait for the leader's assignment.
        if m.sync_cb is not None and m.sync_cb is not cb:
            old, m.sync_cb = m.sync_cb, None
            old(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        m.sync_cb = cb
        if g.leader_id == member_id:
            stored = {mid: assignments.get(mid, b"") for mid in g.members}
            delay = broker_int(self.core.configs, ASSIGNMENT_WRITE_DELAY)
            if delay <= 0:
                return self._assignment_stored(g.group_id, g.generation_id, stored)
            gid, generation = g.group_id, g.generation_id
            self._at(delay, lambda: self._assignment_stored(gid, generation, stored))

    def _assignment_stored(self, group_id: str, generation_id: int, assignments: dict[str, bytes]) -> None:
        """The leader's assignment is committed: the group turns Stable and every waiting SyncGroup
        is answered (GroupMetadataManager.classicGroupSyncToLeader's appendFuture). A rebalance or
        a new generation that came first voids it, as upstream's callback checks."""
        g = self.classic(group_id)
        if g is None or g.state is not GroupState.COMPLETING_REBALANCE or g.generation_id != generation_id:
            return
        for other in g.members.values():
            other.assignment = assignments.get(other.member_id, b"")
        g.transition(Trigger.ASSIGNED)
        for other in list(g.members.values()):
            if other.sync_cb is None:
                continue
            sync_cb, other.sync_cb = other.sync_cb, None
            self._schedule_session(g, other)
            sync_cb(SyncResult(ErrorCode.NONE, g.protocol_type, g.protocol_name, other.assignment))

    def _sync_due(self, group_id: str, generation_id: int) -> None:
        """Members of this generation that never sent SyncGroup are dropped, and the group rebalances."""
        g = self.classic(group_id)
        if g is None or g.generation_id != generation_id or not g.pending_sync:
            return
        if g.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for member_id in sorted(g.pending_sync):
            m = g.remove(member_id)
            if m is not None and m.session is not None:
                m.session.cancel()
        g.pending_sync.clear()
        g.sync_timer = None
        self._prepare_rebalance(g)

    # --- Heartbeat ----------------------------------------------------------------------------
    def heartbeat(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None) -> int:
        g = self.classic(group_id)
        if g is None:
            cg = self._consumer_group(group_id)
            if cg is not None:  # GM-5
                return self.table.migration.heartbeat(cg, generation_id, member_id, instance_id)
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            m = self._existing_member(g, member_id, instance_id)
        except GroupError as exc:
            return exc.code
        if generation_id != g.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if g.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_session(g, m)
        if g.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # --- sessions -----------------------------------------------------------------------------
    def _schedule_session(self, g: ClassicGroup, m: ClassicMember, timeout_ms: int | None = None) -> None:
        if m.session is not None:
            m.session.cancel()
        gid, mid = g.group_id, m.member_id
        m.session = self._at(m.session_timeout_ms if timeout_ms is None else timeout_ms,
                             lambda: self._session_due(gid, mid, m))

    def _session_due(self, group_id: str, member_id: str, m: ClassicMember) -> None:
        g = self.classic(group_id)
        if g is None or g.members.get(member_id) is not m:
            return
        if not m.is_new and (m.awaiting_join or m.sync_cb is not None):
            self._schedule_session(g, m)  # waiting on a rebalance counts as alive
            return
        self._remove_member(g, m)

    def _expire_pending(self, group_id: str, member_id: str) -> None:
        g = self.classic(group_id)
        if g is None or g.pending_members.pop(member_id, None) is None:
            return
        if g.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(g)

    def _remove_member(self, g: ClassicGroup, m: ClassicMember) -> None:
        if m.join_cb is not None:
            cb, m.join_cb = m.join_cb, None
            cb(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, m.member_id))
        if m.sync_cb is not None:
            sync_cb, m.sync_cb = m.sync_cb, None
            sync_cb(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if m.session is not None:
            m.session.cancel()
            m.session = None
        g.remove(m.member_id)
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(g)
        elif g.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(g)

    # --- LeaveGroup ---------------------------------------------------------------------------
    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, one error per member)."""
        g = self.classic(group_id)
        if g is None:
            cg = self._consumer_group(group_id)
            if cg is not None:  # GM-6
                return self.table.migration.leave(cg, members)
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if g.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        codes: list[int] = []
        for member_id, instance_id in members:
            if instance_id is None:
                if member_id in g.pending_members:
                    g.pending_members.pop(member_id).cancel()
                    if g.state is GroupState.PREPARING_REBALANCE:
                        self._maybe_complete_join(g)
                    codes.append(ErrorCode.NONE)
                    continue
                m = g.members.get(member_id)
                if m is None:
                    codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
            else:
                known = g.static_members.get(instance_id)
                if known is None:
                    codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    codes.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                m = g.members[known]
            self._remove_member(g, m)
            codes.append(ErrorCode.NONE)
        return ErrorCode.NONE, codes

    # --- DescribeGroups / ListGroups / DeleteGroups -------------------------------------------
    def describe(self, group_id: str) -> GroupSummary | None:
        g = self.classic(group_id)
        return None if g is None or g.state is GroupState.DEAD else g.summary()

    # --- the table's checks, for classic groups ------------------------------------------------
    def destroy(self, g: ClassicGroup) -> None:
        if g.state is GroupState.EMPTY:
            g.transition(Trigger.DELETE)  # deleted or replaced by another type: Dead
        g.destroy()

    def delete_error(self, g: ClassicGroup) -> int:
        if g.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if g.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        return ErrorCode.NONE

    def validate_offset_commit(self, g: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int,
                               api_version: int, transactional: bool) -> None:
        """Raise GroupError when the commit must be refused (upstream validateOffsetCommit)."""
        if g.state is GroupState.DEAD:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and g.state is GroupState.EMPTY:
            return
        if generation_id >= 0 or member_id or instance_id is not None:
            self._existing_member(g, member_id, instance_id)
            if generation_id != g.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                                 f"generation {generation_id} is not the group's {g.generation_id}")
        elif not transactional and g.state is not GroupState.EMPTY:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, "commits without a member id need an empty group")
        if not transactional and g.state is GroupState.COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    def validate_offset_fetch(self, g: ClassicGroup, member_id: str | None, member_epoch: int) -> bool:
        return g.state is not GroupState.DEAD

    def offset_delete_subscriptions(self, g: ClassicGroup) -> set[str]:
        if g.state is GroupState.DEAD:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {g.group_id} not found.")
        if g.state is GroupState.EMPTY:
            return set()
        if g.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)
        return g.subscribed_topics() or set()

    def on_metadata_change(self) -> None:
        """Classic groups follow topic changes through their members' rejoins."""
