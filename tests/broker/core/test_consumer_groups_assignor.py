"""The KIP-848 server-side assignors as functions (Hypothesis): every subscribed partition to
exactly one subscriber, balanced, deterministic and sticky; and a state machine of members
heartbeating against the coordinator, asserting a partition is never held by two members."""

from __future__ import annotations

import os
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kwire.broker.core.consumer_groups import ConsumerGroup, range_assign, uniform_assign
from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.groups_helpers import ConsumerClient, coordinator_of
from tests.broker.helpers import make_core

DEEP = os.environ.get("KWIRE_HYPOTHESIS_PROFILE") == "deep"
EXAMPLES = 1_000 if DEEP else 150

TOPICS = ["a", "b", "c", "d"]
topics_st = st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 12), min_size=1)


@st.composite
def groups(draw, homogeneous: bool = False):
    topics = draw(topics_st)
    names = sorted(topics) + ["missing"]
    n = draw(st.integers(1, 7))
    if homogeneous:
        sub = draw(st.sets(st.sampled_from(names), min_size=1))
        members = {f"m{i}": sub for i in range(n)}
    else:
        members = {f"m{i}": draw(st.sets(st.sampled_from(names))) for i in range(n)}
    return members, topics


def check_exactly_once(members, topics, out):
    owners: dict[tuple[str, int], list[str]] = {}
    for m, a in out.items():
        for t, ps in a.items():
            assert t in members[m], f"{m} got {t} without subscribing"
            for p in ps:
                assert 0 <= p < topics[t]
                owners.setdefault((t, p), []).append(m)
    subscribed = {t for s in members.values() for t in s if t in topics}
    want = {(t, p) for t in subscribed for p in range(topics[t])}
    assert set(owners) == want
    assert all(len(v) == 1 for v in owners.values())


def sizes(out):
    return {m: sum(len(ps) for ps in a.values()) for m, a in out.items()}


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups())
def test_uniform_assigns_every_subscribed_partition_to_exactly_one_subscriber(g):
    members, topics = g
    check_exactly_once(members, topics, uniform_assign(members, topics))


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_sizes_differ_by_at_most_one_when_all_subscribe_alike(g):
    members, topics = g
    out = uniform_assign(members, topics)
    check_exactly_once(members, topics, out)
    counts = sizes(out).values()
    assert max(counts) - min(counts) <= 1


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups())
def test_uniform_leaves_no_partition_that_a_lighter_subscriber_should_take(g):
    """Heterogeneous subscriptions cannot always differ by at most one overall; what holds is that
    no partition sits with a member holding two or more partitions more than another subscriber."""
    members, topics = g
    out = uniform_assign(members, topics)
    count = sizes(out)
    for m, a in out.items():
        for t in a:
            for other in members:
                if t in members[other]:
                    assert count[other] >= count[m] - 1, (m, other, t, count)


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups(), st.randoms(use_true_random=False))
def test_uniform_is_deterministic_whatever_the_input_order(g, rnd):
    members, topics = g
    shuffled_members = list(members.items())
    rnd.shuffle(shuffled_members)
    shuffled_topics = list(topics.items())
    rnd.shuffle(shuffled_topics)
    assert uniform_assign(dict(shuffled_members), dict(shuffled_topics)) == uniform_assign(members, topics)


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups(homogeneous=True), st.integers(0, 6))
def test_uniform_is_sticky_when_a_member_joins(g, extra):
    members, topics = g
    before = uniform_assign(members, topics)
    joined = dict(members)
    new = f"new{extra}"
    joined[new] = next(iter(members.values()))
    after = uniform_assign(joined, topics, before)
    check_exactly_once(joined, topics, after)
    moved = sum(len(ps - after[m].get(t, set())) for m, a in before.items() for t, ps in a.items())
    # Only what the newcomer must receive moves: its fair share, nothing more.
    assert moved == sizes(after)[new]
    assert uniform_assign(members, topics, before) == before  # nothing changed: nothing moves


@settings(max_examples=EXAMPLES, deadline=None)
@given(groups())
def test_range_assigns_every_subscribed_partition_once(g):
    members, topics = g
    check_exactly_once(members, topics, range_assign(members, topics))


# --- the coordinator under random heartbeats ----------------------------------------------------
class ConsumerGroupMachine(RuleBasedStateMachine):
    """Members join, heartbeat (acknowledging what they were told, or not), leave and time out.

    Invariants: a partition is never held by two members (assigned or pending revocation); what
    a client was told it owns is only ever held by it in the coordinator; group epochs only grow.
    """

    @initialize(partitions=st.integers(1, 8))
    def setup(self, partitions):
        self.core, self.clock = make_core()
        self.core.create_topic("t", partitions)
        self.clients: list[ConsumerClient] = []
        self.epoch = 0

    def _group(self) -> ConsumerGroup | None:
        g = coordinator_of(self.core).groups.get("g")
        return g if isinstance(g, ConsumerGroup) else None

    @precondition(lambda self: len(self.clients) < 4)
    @rule()
    def join(self):
        c = ConsumerClient(self.core, topics=["t"], rebalance_ms=10_000)
        c.member_id = str(uuid.UUID(int=len(self.clients) + 1))
        assert c.heartbeat().error_code == E.NONE
        self.clients.append(c)

    @precondition(lambda self: self.clients)
    @rule(i=st.integers(0, 3), acknowledge=st.booleans())
    def heartbeat(self, i, acknowledge):
        c = self.clients[i % len(self.clients)]
        if c.epoch <= 0:
            return
        before = {t: set(ps) for t, ps in c.owned.items()}
        resp = c.heartbeat(send_owned=True) if acknowledge else c.heartbeat(send_owned=False)
        if resp.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH):
            c.epoch, c.owned = 0, {}  # fenced: a client drops everything and rejoins later
            c.member_id = str(uuid.uuid5(uuid.NAMESPACE_OID, c.member_id))
            return
        assert resp.error_code == E.NONE
        if not acknowledge:
            c.owned = before if resp.assignment is None else c.owned

    @precondition(lambda self: self.clients)
    @rule(i=st.integers(0, 3))
    def rejoin(self, i):
        c = self.clients[i % len(self.clients)]
        if c.epoch == 0:
            assert c.heartbeat().error_code == E.NONE

    @precondition(lambda self: self.clients)
    @rule(i=st.integers(0, 3))
    def leave(self, i):
        c = self.clients[i % len(self.clients)]
        if c.epoch > 0:
            assert c.leave().error_code == E.NONE
            c.epoch, c.owned = 0, {}

    @rule(ms=st.sampled_from([1_000, 10_000, 50_000]))
    def advance(self, ms):
        self.clock.advance(ms)
        self.core.fire_due()
        g = self._group()
        for c in self.clients:
            if g is None or c.member_id not in g.members:
                c.epoch, c.owned = 0, {}

    @invariant()
    def a_partition_is_never_held_twice(self):
        g = self._group()
        if g is None:
            return
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for m in g.members.values():
            for part in (m.assigned, m.pending_revocation):
                for tid, ps in part.items():
                    for p in ps:
                        assert (tid, p) not in seen, f"{(tid, p)} held by {seen.get((tid, p))} and {m.member_id}"
                        seen[(tid, p)] = m.member_id
        assert seen == g.owners

    @invariant()
    def clients_only_own_what_the_coordinator_gave_them(self):
        g = self._group()
        held: dict[tuple[uuid.UUID, int], str] = {}
        if g is not None:
            held = dict(g.owners)
        for c in self.clients:
            if c.epoch <= 0:
                continue
            for tid, ps in c.owned.items():
                for p in ps:
                    assert held.get((tid, p)) == c.member_id

    @invariant()
    def group_epoch_only_grows(self):
        g = self._group()
        if g is not None:
            assert g.group_epoch >= self.epoch
            self.epoch = g.group_epoch


TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
TestConsumerGroupMachine.settings = settings(max_examples=300 if DEEP else 60, stateful_step_count=40,
                                             deadline=None, suppress_health_check=[HealthCheck.too_slow])
