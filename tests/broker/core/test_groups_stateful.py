"""A Hypothesis state machine for classic groups: clients join (any version, static or not),
sync, heartbeat, leave and restart while the broker clock jumps; the coordinator's group must
keep its invariants after every step, and every waiting request must be answered in the end."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kwire.broker.core.classic_groups import ClassicGroup, GroupState
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.join_group import JoinGroupResponse
from kwire.protocol.messages.sync_group import SyncGroupResponse
from tests.broker.groups_helpers import ClassicClient, coordinator_of
from tests.broker.helpers import make_core

DEEP = os.environ.get("KWIRE_HYPOTHESIS_PROFILE") == "deep"
SLOTS = 3
STATIC_SLOT = 2  # this slot runs a static member ("i-2"); the others are dynamic


@dataclass
class Slot:
    client: ClassicClient
    outstanding: str | None = None  # "join" | "sync": a connection has one request in flight
    generations: list[int] = field(default_factory=list)


class ClassicGroupMachine(RuleBasedStateMachine):
    @initialize(delay=st.sampled_from(["0", "1000"]))
    def setup(self, delay):
        self.core, self.clock = make_core(settings={"group.initial.rebalance.delay.ms": delay,
                                                    "group.min.session.timeout.ms": "1000"})
        self.slots = [Slot(self._client(i)) for i in range(SLOTS)]
        self.dead_conns: set[int] = set()
        self.max_generation = 0

    def _client(self, i: int) -> ClassicClient:
        return ClassicClient(self.core, instance_id="i-2" if i == STATIC_SLOT else None)

    def _group(self) -> ClassicGroup | None:
        g = coordinator_of(self.core).groups.get("g")
        return g if isinstance(g, ClassicGroup) else None

    # --- what clients do with answers ---------------------------------------------------------
    def _react(self, slot: Slot, resp) -> None:
        c = slot.client
        if isinstance(resp, JoinGroupResponse):
            if resp.error_code == E.NONE:
                if slot.generations:
                    assert resp.generation_id >= slot.generations[-1], "a client's generation went back"
                slot.generations.append(resp.generation_id)
            elif resp.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
                c.member_id, c.generation = "", -1
        elif isinstance(resp, SyncGroupResponse) and resp.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1

    def _collect(self) -> None:
        for slot in self.slots:
            for resp in slot.client.answers():
                assert slot.outstanding is not None, f"an answer nobody waited for: {resp}"
                assert (slot.outstanding == "join") == isinstance(resp, JoinGroupResponse)
                slot.outstanding = None
                self._react(slot, resp)
        self.core.outbox[:] = [(cid, d) for cid, d in self.core.outbox if cid not in self.dead_conns]
        assert not self.core.outbox, f"answers for no live connection: {self.core.outbox}"

    def _send(self, slot: Slot, kind: str, resp) -> None:
        if resp is None:
            slot.outstanding = kind
        else:
            self._react(slot, resp)
        self._collect()

    # --- rules ----------------------------------------------------------------------------------
    @rule(i=st.integers(0, SLOTS - 1), version=st.sampled_from([1, 3, 4, 5, 7, 9]),
          session=st.sampled_from([3_000, 10_000]), rebalance=st.sampled_from([5_000, 20_000]))
    def join(self, i, version, session, rebalance):
        slot = self.slots[i]
        if slot.outstanding is not None:
            return
        if i == STATIC_SLOT:
            version = max(version, 5)
        kw = {"session_ms": session, "rebalance_ms": rebalance}
        resp = slot.client.join(version, **kw)
        if resp is not None and resp.error_code == E.MEMBER_ID_REQUIRED:
            resp = slot.client.join(version, **kw)
        self._send(slot, "join", resp)

    @rule(i=st.integers(0, SLOTS - 1))
    def sync(self, i):
        slot = self.slots[i]
        c = slot.client
        if slot.outstanding is not None or not c.member_id or c.generation < 0:
            return
        assignments = {m.member_id: b"as-" + m.member_id.encode() for m in c.members} if c.leader == c.member_id else {}
        self._send(slot, "sync", c.sync(3, assignments=assignments))

    @rule(version=st.sampled_from([3, 5]))
    def everyone_joins(self, version):
        for i in range(SLOTS):
            self.join(i, version, 10_000, 20_000)

    @rule(leader_last=st.booleans())
    def everyone_syncs(self, leader_last):
        order = sorted(range(SLOTS), key=lambda i: (self.slots[i].client.leader == self.slots[i].client.member_id)
                       == leader_last)
        for i in order:
            self.sync(i)

    @rule(i=st.integers(0, SLOTS - 1))
    def heartbeat(self, i):
        slot = self.slots[i]
        c = slot.client
        if slot.outstanding is not None or not c.member_id:
            return
        code = c.heartbeat()
        if code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
        self._collect()

    @rule(i=st.integers(0, SLOTS - 1))
    def leave(self, i):
        slot = self.slots[i]
        c = slot.client
        if slot.outstanding is not None or not c.member_id:
            return
        c.leave()
        c.member_id, c.generation = "", -1
        self._collect()

    @precondition(lambda self: True)
    @rule(i=st.integers(0, SLOTS - 1))
    def restart(self, i):
        """The process dies (its connection and any waiting request with it) and starts afresh."""
        self.dead_conns.add(self.slots[i].client.conn.conn_id)
        self.slots[i] = Slot(self._client(i))
        self._collect()

    @rule(ms=st.sampled_from([100, 1_000, 3_000, 10_000, 40_000]))
    def advance(self, ms):
        self.clock.advance(ms)
        self.core.fire_due()
        self._collect()

    # --- invariants ----------------------------------------------------------------------------
    @invariant()
    def generation_only_grows(self):
        g = self._group()
        if g is not None:
            event(f"state {g.state.value} with {len(g.members)} members")
            assert g.generation_id >= self.max_generation
            self.max_generation = g.generation_id

    @invariant()
    def at_most_one_leader_and_it_is_a_member(self):
        g = self._group()
        if g is None:
            return
        assert (g.leader_id is None) == (not g.members)
        assert g.leader_id is None or g.leader_id in g.members

    @invariant()
    def stable_members_all_have_assignments(self):
        g = self._group()
        if g is not None and g.state is GroupState.STABLE:
            assert all(m.assignment for m in g.members.values()), {m.member_id: m.assignment for m in g.members.values()}

    @invariant()
    def waiting_requests_match_the_state(self):
        g = self._group()
        if g is None:
            return
        for m in g.members.values():
            assert m.join_cb is None or g.state is GroupState.PREPARING_REBALANCE
            assert m.sync_cb is None or g.state is GroupState.COMPLETING_REBALANCE
            assert m.session is not None and not m.session.cancelled, f"{m.member_id} has no live session timer"
        assert g.pending_sync <= set(g.members)
        if g.state is GroupState.PREPARING_REBALANCE:
            assert g.join_timer is not None and not g.join_timer.cancelled
        if g.state is GroupState.EMPTY:
            assert not g.members

    @invariant()
    def static_members_map_to_members(self):
        g = self._group()
        if g is not None:
            for iid, mid in g.static_members.items():
                assert g.members[mid].instance_id == iid

    def teardown(self):
        # Liveness: whatever waits is answered once enough broker time passes.
        if not hasattr(self, "core"):
            return
        for _ in range(6):
            self.clock.advance(40_000)
            self.core.fire_due()
            self._collect()
        assert all(s.outstanding is None for s in self.slots), [s.outstanding for s in self.slots]


TestClassicGroupMachine = ClassicGroupMachine.TestCase
TestClassicGroupMachine.settings = settings(max_examples=400 if DEEP else 80, stateful_step_count=50,
                                            deadline=None, suppress_health_check=[HealthCheck.too_slow])
