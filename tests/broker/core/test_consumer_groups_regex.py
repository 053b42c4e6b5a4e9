"""KIP-848 regex subscriptions through BrokerCore.handle, on the manual clock: the regex is
resolved asynchronously (a deadline due at once), the group epoch is bumped when the
resolution lands and the topics are assigned on the following heartbeats; new topics wait for
the next refresh (at most one per 10 s); literal topics take effect at once; an invalid regex is
refused. Upstream: GroupMetadataManager.maybeUpdateRegularExpressions and
handleRegularExpressionsResult."""

from __future__ import annotations

import pytest

from kwire.broker.core.consumer_groups import (
    REGEX_BATCH_REFRESH_MIN_INTERVAL_MS,
    REGEX_REFRESH_INTERVAL_MS,
    ConsumerGroup,
    MemberState,
)
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from tests.broker.groups_helpers import ConsumerClient, coordinator_of
from tests.broker.helpers import CoreClient, make_core


@pytest.fixture
def core():
    core, _ = make_core()
    core.create_topic("t", 4)
    core.create_topic("orders-1", 2)
    core.create_topic("orders-2", 1)
    return core


def group(core) -> ConsumerGroup:
    g = coordinator_of(core).groups["g"]
    assert isinstance(g, ConsumerGroup)
    return g


def parts(core, *topics: str) -> set[tuple[str, int]]:
    return {(t, p) for t in topics for p in range(len(core.cluster.topics[t].partitions))}


def tid(core, topic: str):
    return core.cluster.topics[topic].topic_id


def describe(core):
    (d,) = CoreClient(core).send(ConsumerGroupDescribeRequest(group_ids=["g"]), 1).groups
    assert d.error_code == E.NONE
    return d


def named(a) -> set[tuple[str, int]]:
    return {(t.topic_name, p) for t in a.topic_partitions for p in t.partitions}


def resolved(core, a: ConsumerClient) -> None:
    """Join ``a`` (a regex subscriber), let the resolution land and take the assignment."""
    a.heartbeat()
    core.advance(0)
    a.heartbeat()


def test_the_regex_topics_appear_only_after_the_resolution_has_run(core):
    a = ConsumerClient(core, regex="orders-.*")
    first = a.heartbeat()
    # The joining heartbeat stores the regex and answers without its topics.
    assert (first.error_code, first.member_epoch) == (E.NONE, 1)
    assert first.assignment is not None and first.assignment.topic_partitions == []
    g = group(core)
    assert (g.group_epoch, g.assignment_epoch) == (1, 1)
    assert g.resolved_regexes == {} and g.regex_task is not None
    d = describe(core)
    (m,) = d.members
    assert (m.subscribed_topic_regex, m.subscribed_topic_names) == ("orders-.*", [])
    assert named(m.assignment) == named(m.target_assignment) == set()
    assert (d.group_epoch, d.assignment_epoch, d.group_state) == (1, 1, "Stable")
    # Until the deadline runs nothing changes, however often the member asks.
    again = a.heartbeat()
    assert (again.member_epoch, again.assignment) == (1, None)
    # The resolution is due at once on the broker clock; it bumps the group epoch only.
    assert core.advance(0) == core.clock.now_ms()
    assert g.regex_task is None and g.resolved_regexes["orders-.*"].topics == {"orders-1", "orders-2"}
    assert (g.group_epoch, g.assignment_epoch) == (2, 1)
    assert describe(core).group_state == "Assigning"
    # The next heartbeat computes the target and hands the topics over.
    nxt = a.heartbeat()
    assert nxt.member_epoch == 2 and a.partitions(core) == parts(core, "orders-1", "orders-2")
    d = describe(core)
    (m,) = d.members
    assert named(m.assignment) == named(m.target_assignment) == parts(core, "orders-1", "orders-2")
    assert (d.group_epoch, d.assignment_epoch, d.group_state) == (2, 2, "Stable")


def test_a_member_bringing_a_new_regex_into_a_group_does_not_bump_the_epoch_until_resolved(core):
    b = ConsumerClient(core, topics=["t"])
    b.heartbeat()
    a = ConsumerClient(core, regex="orders-1")
    ra = a.heartbeat()
    assert (ra.member_epoch, group(core).group_epoch) == (1, 1)  # joins at the current epoch, empty
    assert ra.assignment is not None and ra.assignment.topic_partitions == []
    core.advance(0)
    assert group(core).group_epoch == 2
    assert a.heartbeat().member_epoch == 2 and a.partitions(core) == parts(core, "orders-1")
    assert b.heartbeat().member_epoch == 2 and b.partitions(core) == parts(core, "t")


def test_a_member_joining_with_a_regex_already_resolved_bumps_at_once(core):
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    b = ConsumerClient(core, regex="orders-.*")
    rb = b.heartbeat()
    assert group(core).group_epoch == 3 and group(core).regex_task is None  # no new resolution needed
    assert rb.member_epoch == 3 and group(core).target[b.member_id]  # a share is targeted at once


def test_a_new_matching_topic_is_picked_up_by_the_next_refresh_not_before(core):
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    g = group(core)
    refreshed = g.last_regex_refresh_ms()
    assert refreshed == core.clock.now_ms() and g.group_epoch == 2
    core.create_topic("orders-3", 3)
    core.create_topic("other", 1)
    assert g.group_epoch == 2  # creating a topic does not touch the regex's resolution
    # Heartbeats within the minimum interval do not refresh.
    core.advance(REGEX_BATCH_REFRESH_MIN_INTERVAL_MS)
    assert a.heartbeat().assignment is None and g.regex_task is None
    # The first heartbeat after it schedules the refresh; its answer is still the old assignment.
    core.advance(1)
    assert a.heartbeat().assignment is None and g.regex_task is not None
    core.advance(0)
    assert g.resolved_regexes["orders-.*"].topics == {"orders-1", "orders-2", "orders-3"}
    assert g.group_epoch == 3
    assert a.heartbeat().member_epoch == 3
    assert a.partitions(core) == parts(core, "orders-1", "orders-2", "orders-3")


def test_a_refresh_without_new_topics_waits_for_the_refresh_interval_and_changes_nothing(core):
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    g = group(core)
    refreshed = g.last_regex_refresh_ms()
    while core.clock.now_ms() < refreshed + REGEX_REFRESH_INTERVAL_MS:
        core.advance(5_000)  # heartbeats keep the session alive
        assert a.heartbeat().error_code == E.NONE
        assert g.regex_task is None  # nothing unresolved, no new topic, not stale yet
    core.advance(1)
    a.heartbeat()
    assert g.regex_task is not None
    core.advance(0)
    assert g.group_epoch == 2 and g.last_regex_refresh_ms() == core.clock.now_ms()


def test_switching_from_a_regex_to_literal_topics_takes_effect_in_that_heartbeat(core):
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    assert a.partitions(core) == parts(core, "orders-1", "orders-2")
    # As the Java consumer does: the new names, and "" to drop the regex.
    r = a.heartbeat(subscribed_topic_names=["t"], subscribed_topic_regex="")
    g = group(core)
    assert g.group_epoch == 3 and g.resolved_regexes == {} and g.regex_task is None
    # The regex's partitions are revoked first; t follows once they are released.
    assert r.member_epoch == 2 and r.assignment is not None and a.owned == {}
    assert g.members[a.member_id].state is MemberState.UNREVOKED_PARTITIONS
    r = a.heartbeat()
    assert r.member_epoch == 3 and a.partitions(core) == parts(core, "t")
    (m,) = describe(core).members
    assert (m.subscribed_topic_regex, m.subscribed_topic_names) == ("", ["t"])
    assert named(m.assignment) == named(m.target_assignment) == parts(core, "t")


def test_a_regex_changed_soon_after_a_resolution_is_resolved_from_the_next_heartbeat(core):
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    core.advance(1_000)
    r = a.heartbeat(subscribed_topic_regex="t|orders-1")
    g = group(core)
    # Unresolved: the member holds nothing it subscribes to, so it gives everything up at once.
    assert r.member_epoch == 2 and r.assignment is not None and a.owned == {}
    assert g.resolved_regexes == {} and g.regex_task is None and g.group_epoch == 2
    r = a.heartbeat()
    assert g.regex_task is not None and r.member_epoch == 2 and a.owned == {}
    core.advance(0)
    assert g.group_epoch == 3
    assert a.heartbeat().member_epoch == 3 and a.partitions(core) == parts(core, "t", "orders-1")


def test_the_last_subscriber_leaving_drops_the_resolved_regex(core):
    a, b = ConsumerClient(core, regex="orders-.*"), ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    b.heartbeat()
    a.leave()
    assert "orders-.*" in group(core).resolved_regexes
    b.leave()
    assert group(core).resolved_regexes == {}


def test_an_invalid_regex_is_invalid_regular_expression_and_changes_nothing(core):
    resp = ConsumerClient(core, regex="(unclosed").heartbeat()
    assert resp.error_code == E.INVALID_REGULAR_EXPRESSION
    assert resp.error_message.startswith("SubscribedTopicRegex `(unclosed` is not a valid regular expression")
    a = ConsumerClient(core, regex="orders-.*")
    resolved(core, a)
    bad = a.heartbeat(subscribed_topic_regex="[")
    assert bad.error_code == E.INVALID_REGULAR_EXPRESSION
    m = group(core).members[a.member_id]
    assert m.subscribed_topic_regex == "orders-.*" and group(core).group_epoch == 2
