"""Committed offsets through BrokerCore.handle: OffsetCommit v2–10, OffsetFetch v1–10 (v8+ many
groups, v10 topic ids), OffsetDelete, and the group checks that guard them."""

from __future__ import annotations

import uuid

import pytest

from kwire.broker.core.offsets import CommittedOffset, offset_store
from kwire.protocol.data.consumer_protocol_subscription import ConsumerProtocolSubscription
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.messages.offset_delete import OffsetDeleteRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.broker.groups_helpers import ClassicClient, coordinator_of, stable_group
from tests.broker.helpers import CoreClient, make_core

NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}


def commit(c: CoreClient, version: int, parts: dict[tuple[str, int], tuple[int, int, str | None]], *,
           group: str = "g", generation: int = -1, member_id: str = "", instance_id: str | None = None,
           core=None) -> dict[tuple[str, int], int]:
    by_topic: dict[str, list] = {}
    for (t, p), (off, epoch, meta) in parts.items():
        by_topic.setdefault(t, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_leader_epoch=epoch if version >= 6 else -1,
            committed_metadata=meta))
    topics = []
    for t, ps in by_topic.items():
        if version >= 10:
            topic = c.core.cluster.topics.get(t)
            tid = topic.topic_id if topic is not None else uuid.UUID(int=7)
            topics.append(OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=tid, partitions=ps))
        else:
            topics.append(OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps))
    resp = c.send(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                                      group_instance_id=instance_id if version >= 7 else None, topics=topics), version)
    out = {}
    names = {t.topic_id: t.name for t in c.core.cluster.topics.values()}
    for rt in resp.topics:
        name = rt.name if version < 10 else names.get(rt.topic_id, "?")
        for rp in rt.partitions:
            out[(name, rp.partition_index)] = rp.error_code
    return out


def fetch(c: CoreClient, version: int, topics: dict[str, list[int]] | None, group: str = "g", **kw):
    if version < 8:
        req = OffsetFetchRequest(group_id=group, require_stable=kw.get("require_stable", False), topics=None if topics is None else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        resp = c.send(req, version)
        return resp.error_code, {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata,
                                                               p.error_code) for t in resp.topics for p in t.partitions}
    groups = [OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None if topics is None else [
        OffsetFetchRequest.OffsetFetchRequestTopics(
            name=t if version < 10 else "", topic_id=c.core.cluster.topics[t].topic_id if version >= 10 else uuid.UUID(int=0),
            partition_indexes=ps) for t, ps in topics.items()])]
    resp = c.send(OffsetFetchRequest(groups=groups, require_stable=kw.get("require_stable", False)), version)
    g = resp.groups[0]
    names = {t.topic_id: t.name for t in c.core.cluster.topics.values()}
    return g.error_code, {((t.name if version < 10 else names[t.topic_id]), p.partition_index): (
        p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) for t in g.topics for p in t.partitions}


@pytest.fixture
def core():
    core, _ = make_core(settings=NO_DELAY)
    core.create_topic("t", 3)
    core.create_topic("u", 1)
    return core


@pytest.mark.parametrize("version", range(2, 11))
def test_commit_then_fetch_round_trip_every_commit_version(core, version):
    c = CoreClient(core)
    got = commit(c, version, {("t", 0): (10, 3, "meta"), ("t", 2): (20, 4, None), ("u", 0): (5, -1, "")})
    assert set(got.values()) == {E.NONE}
    fetch_version = min(version, 10) if version >= 8 else 7
    code, rows = fetch(c, fetch_version, {"t": [0, 1, 2], "u": [0]})
    assert code == E.NONE
    epoch = 3 if version >= 6 else -1
    assert rows[("t", 0)] == (10, epoch, "meta", E.NONE)
    assert rows[("t", 1)] == (-1, -1, "", E.NONE)  # nothing committed
    assert rows[("t", 2)][:3] == (20, 4 if version >= 6 else -1, "")  # a null metadata is stored as ""
    assert rows[("u", 0)][0] == 5


@pytest.mark.parametrize("version", range(1, 11))
def test_fetch_every_version_reads_what_was_committed(core, version):
    c = CoreClient(core)
    commit(c, 8, {("t", 1): (42, 7, "m")})
    code, rows = fetch(c, version, {"t": [1]})
    assert code == E.NONE
    assert rows[("t", 1)] == (42, 7 if version >= 5 else -1, "m", E.NONE)


@pytest.mark.parametrize("version", [2, 7, 8, 10])
def test_fetch_with_null_topics_returns_every_committed_offset(core, version):
    c = CoreClient(core)
    commit(c, 8, {("t", 2): (2, -1, ""), ("u", 0): (1, -1, ""), ("t", 0): (0, -1, "")})
    code, rows = fetch(c, version, None)
    assert code == E.NONE
    assert sorted(rows) == [("t", 0), ("t", 2), ("u", 0)]


def test_fetch_v8_answers_several_groups_each_with_its_own_error():
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    core.create_topic("t", 1)
    groups = ["ga", "gb", "gc", "gd", "ge"]
    coord = core.coordinator_for("ga").node_id
    c = CoreClient(core, coord)
    mine = [g for g in groups if core.coordinator_for(g).node_id == coord]
    others = [g for g in groups if g not in mine]
    assert others, "pick group ids that spread over the brokers"
    for i, g in enumerate(mine):
        commit(c, 8, {("t", 0): (100 + i, -1, g)}, group=g)
    req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=None) for g in groups])
    resp = c.send(req, 8)
    by_group = {g.group_id: g for g in resp.groups}
    for i, g in enumerate(mine):
        assert by_group[g].error_code == E.NONE
        assert [(p.committed_offset, p.metadata) for t in by_group[g].topics for p in t.partitions] == [(100 + i, g)]
    for g in others:
        assert by_group[g].error_code == E.NOT_COORDINATOR


def test_v10_names_topics_by_id_and_unknown_ids_are_unknown_topic_id(core):
    c = CoreClient(core)
    tid = core.cluster.topics["t"].topic_id
    ghost = uuid.UUID(int=99)
    resp = c.send(OffsetCommitRequest(group_id="g", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=tid, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=9)]),
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=ghost, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=9)])]), 10)
    assert [(t.topic_id, t.partitions[0].error_code) for t in resp.topics] == [(tid, E.NONE), (ghost, E.UNKNOWN_TOPIC_ID)]
    resp = c.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(topic_id=tid, partition_indexes=[0]),
        OffsetFetchRequest.OffsetFetchRequestTopics(topic_id=ghost, partition_indexes=[0])])]), 10)
    t0, t1 = resp.groups[0].topics
    assert (t0.topic_id, t0.partitions[0].committed_offset) == (tid, 9)
    assert (t1.topic_id, t1.partitions[0].error_code) == (ghost, E.UNKNOWN_TOPIC_ID)
    everything = c.send(OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g",
                                                                                              topics=None)]), 10)
    assert [t.topic_id for t in everything.groups[0].topics] == [tid]


def test_unknown_topics_and_partitions_are_refused_per_partition(core):
    c = CoreClient(core)
    got = commit(c, 8, {("t", 0): (1, -1, ""), ("t", 3): (1, -1, ""), ("nope", 0): (1, -1, "")})
    assert got == {("t", 0): E.NONE, ("t", 3): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


def test_metadata_over_the_limit_is_offset_metadata_too_large(core):
    got = commit(CoreClient(core), 8, {("t", 0): (1, -1, "x" * 4097), ("t", 1): (1, -1, "x" * 4096)})
    assert got == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}


def test_simple_commit_creates_an_empty_group_and_group_commits_need_a_group(core):
    c = CoreClient(core)
    assert commit(c, 8, {("t", 0): (1, -1, "")}, group="nobody", generation=3, member_id="m") == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert commit(c, 9, {("t", 0): (1, -1, "")}, group="nobody", generation=3, member_id="m") == {
        ("t", 0): E.GROUP_ID_NOT_FOUND}
    assert commit(c, 8, {("t", 0): (1, -1, "")}, group="simple") == {("t", 0): E.NONE}
    assert coordinator_of(core).groups["simple"].state_name == "Empty"


def test_commits_of_a_classic_group_member_are_checked_against_the_generation(core):
    a, b = stable_group(core, 2)
    ok = commit(a, 7, {("t", 0): (5, -1, "")}, generation=a.generation, member_id=a.member_id)
    assert ok == {("t", 0): E.NONE}
    assert commit(a, 7, {("t", 0): (5, -1, "")}, generation=a.generation + 1, member_id=a.member_id) == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert commit(a, 7, {("t", 0): (5, -1, "")}, generation=a.generation, member_id="ghost") == {
        ("t", 0): E.UNKNOWN_MEMBER_ID}
    assert commit(a, 7, {("t", 0): (5, -1, "")}) == {("t", 0): E.UNKNOWN_MEMBER_ID}  # no member, group not empty
    # During CompletingRebalance commits wait for the new generation.
    newcomer = ClassicClient(core)
    newcomer.join_with_id()
    a.join(), b.join()
    a.answers(), newcomer.answers()
    assert a.generation == b.generation == 2
    assert commit(a, 7, {("t", 0): (6, -1, "")}, generation=a.generation, member_id=a.member_id) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS}


def test_static_member_commit_with_a_stale_member_id_is_fenced(core):
    s = ClassicClient(core, instance_id="i-1")
    s.join(7)
    core.fire_due()
    s.answer()
    s.sync(assignments={s.member_id: b""})
    assert commit(s, 7, {("t", 0): (1, -1, "")}, generation=s.generation, member_id="old",
                  instance_id="i-1") == {("t", 0): E.FENCED_INSTANCE_ID}


def test_commits_on_a_non_coordinator_broker_are_not_coordinator():
    core, _ = make_core(brokers=3, settings=NO_DELAY)
    core.create_topic("t", 1)
    wrong = next(n for n in core.cluster.nodes if n != core.coordinator_for("g").node_id)
    c = CoreClient(core, wrong)
    assert commit(c, 8, {("t", 0): (1, -1, "")}) == {("t", 0): E.NOT_COORDINATOR}
    assert fetch(c, 7, {"t": [0]})[0] == E.NOT_COORDINATOR
    code, rows = fetch(c, 1, {"t": [0]})  # v1 has no top-level error: it goes on the partitions
    assert rows[("t", 0)][3] == E.NOT_COORDINATOR


def test_require_stable_reports_unstable_offset_commit_while_a_transaction_is_open(core):
    c = CoreClient(core)
    store = offset_store(core)
    commit(c, 8, {("t", 0): (1, -1, "")})
    store.stage("g", 77, "t", 0, CommittedOffset(50))
    _, rows = fetch(c, 7, {"t": [0]}, require_stable=True)
    assert rows[("t", 0)][3] == E.UNSTABLE_OFFSET_COMMIT
    _, rows = fetch(c, 7, {"t": [0]})
    assert rows[("t", 0)][:1] == (1,)
    store.complete("g", 77, commit=True)
    _, rows = fetch(c, 8, {"t": [0]}, require_stable=True)
    assert rows[("t", 0)] == (50, -1, "", E.NONE)
    store.stage("g", 78, "t", 0, CommittedOffset(60))
    store.complete("g", 78, commit=False)
    assert fetch(c, 8, {"t": [0]})[1][("t", 0)][0] == 50


def test_deleting_a_topic_drops_its_offsets(core):
    c = CoreClient(core)
    commit(c, 8, {("t", 0): (1, -1, ""), ("u", 0): (2, -1, "")})
    core.delete_topic("t")
    assert sorted(fetch(c, 8, None)[1]) == [("u", 0)]


def test_offset_delete_refuses_subscribed_topics_of_a_consumer_protocol_group(core):
    sub = ConsumerProtocolSubscription(topics=["t"]).encode(0)
    meta = (0).to_bytes(2, "big") + sub
    a = ClassicClient(core)
    a.join_with_id(protocols=(("range", meta),))
    core.fire_due()
    a.answer()
    a.sync(assignments={a.member_id: b""})
    commit(a, 8, {("t", 0): (1, -1, ""), ("u", 0): (1, -1, "")}, generation=a.generation, member_id=a.member_id)
    resp = a.send(OffsetDeleteRequest(group_id="g", topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name=n, partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]) for n in ("t", "u", "nope")]), 0)
    assert resp.error_code == E.NONE
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("u", E.NONE), ("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert sorted(fetch(a, 8, None)[1]) == [("t", 0)]
    missing = a.send(OffsetDeleteRequest(group_id="missing"), 0)
    assert missing.error_code == E.GROUP_ID_NOT_FOUND


def test_offset_delete_of_a_non_consumer_protocol_group_in_use_is_non_empty_group(core):
    a = ClassicClient(core)
    a.join_with_id(protocol_type="connect")
    core.fire_due()
    a.answer()
    resp = a.send(OffsetDeleteRequest(group_id="g", topics=[]), 0)
    assert resp.error_code == E.NON_EMPTY_GROUP


def test_offsets_restored_without_a_group_object_still_read_and_list(core):
    offset_store(core).commit("restored", "t", 0, CommittedOffset(11, 2, "r"))
    c = CoreClient(core)
    assert fetch(c, 8, {"t": [0]}, group="restored")[1][("t", 0)] == (11, 2, "r", E.NONE)
    from kwire.protocol.messages.list_groups import ListGroupsRequest

    assert [(g.group_id, g.group_state) for g in c.send(ListGroupsRequest(), 4).groups] == [("restored", "Empty")]
