"""The transaction APIs through the core (wire round trip), with the coordinator installed by
hand and a fake marker writer (the log-writing one comes with the core's marker append)."""

from __future__ import annotations

import importlib

import pytest

from kwire.broker.core.txn_coordinator import OFFSETS_TOPIC, coordinator_for_core, offsets_partition_for
from kwire.broker.handlers import HandlerSpec
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kwire.protocol.messages.describe_producers import DescribeProducersRequest
from kwire.protocol.messages.describe_transactions import DescribeTransactionsRequest
from kwire.protocol.messages.end_txn import EndTxnRequest
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.list_transactions import ListTransactionsRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from kwire.protocol.registry import ApiKey, api_info
from tests.broker.core.txn_helpers import FakeMarkers
from tests.broker.helpers import CoreClient, batch, make_core

TXN_HANDLERS = ("add_partitions_to_txn", "add_offsets_to_txn", "end_txn", "txn_offset_commit",
                "describe_transactions", "list_transactions", "describe_producers")


def txn_core(**settings: str):
    core, clock = make_core(settings=settings)
    markers = FakeMarkers()
    core.subsystems.transactions = coordinator_for_core(core, markers)  # fake markers: see what is asked for
    core.handlers = dict(core.handlers)  # this core only: the registry stays as main ships it
    for name in TXN_HANDLERS:
        mod = importlib.import_module(f"kwire.broker.handlers.{name}")
        key = int(mod.API_KEY)
        core.handlers[key] = HandlerSpec(key, api_info(key).name, *mod.VERSIONS, name, mod.handle,
                                         getattr(mod, "error_response", None))
    core.create_topic("t", 2)
    core.create_topic("in", 1)
    return core, clock, markers, CoreClient(core)


def init(c: CoreClient, tid: str = "tx", version: int = 5, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1):
    return c.send(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=pid,
                                        producer_epoch=epoch), version)


def add_v3(c: CoreClient, tid: str, pid: int, epoch: int, topics: dict[str, list[int]], version: int = 3):
    req = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                             for t, ps in topics.items()])
    resp = c.send(req, version)
    return {(t.name, p.partition_index): p.partition_error_code
            for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}


def end(c: CoreClient, tid: str, pid: int, epoch: int, commit: bool, version: int):
    return c.send(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
                  version)


def produce_txn(c: CoreClient, tid: str, pid: int, epoch: int, seq: int, version: int):
    records = batch([b"v"], producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    req = ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    return c.send(req, version).responses[0].partition_responses[0]


@pytest.mark.rule("TX-2")
def test_init_producer_id_transactional_through_the_wire():
    """TX-2: a transactional id gets a producer id and epoch 0, then a bump; a bad timeout is
    INVALID_TRANSACTION_TIMEOUT."""
    core, _, _, c = txn_core(**{"transaction.max.timeout.ms": "10000"})
    first = init(c, timeout_ms=10_000)
    assert (first.error_code, first.producer_epoch) == (0, 0) and first.producer_id >= 0
    second = init(c, timeout_ms=10_000)
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert init(c, timeout_ms=10_001).error_code == E.INVALID_TRANSACTION_TIMEOUT


@pytest.mark.rule("TX-4")
def test_init_producer_id_fenced_maps_by_version():
    """TX-4: a stale current epoch is PRODUCER_FENCED in v4+ and INVALID_PRODUCER_EPOCH in v3."""
    _, _, _, c = txn_core()
    first = init(c)
    init(c)
    init(c)
    assert init(c, version=4, pid=first.producer_id, epoch=0).error_code == E.PRODUCER_FENCED
    assert init(c, version=3, pid=first.producer_id, epoch=0).error_code == E.INVALID_PRODUCER_EPOCH


@pytest.mark.rule("TX-11")
def test_add_partitions_unknown_topic_and_operation_not_attempted():
    """TX-11: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED, and
    nothing is added; then a valid add succeeds and a wrong epoch is fenced by version."""
    core, _, _, c = txn_core()
    got = init(c)
    codes = add_v3(c, "tx", got.producer_id, got.producer_epoch, {"t": [0], "nope": [0]})
    assert codes == {("t", 0): E.OPERATION_NOT_ATTEMPTED, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert core.subsystems.transactions.transactions["tx"].partitions == set()
    assert add_v3(c, "tx", got.producer_id, got.producer_epoch, {"t": [0, 1]}) == {("t", 0): 0, ("t", 1): 0}
    assert add_v3(c, "tx", got.producer_id, 9, {"t": [0]}, version=1) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
    assert add_v3(c, "tx", got.producer_id, 9, {"t": [0]}, version=2) == {("t", 0): E.PRODUCER_FENCED}


@pytest.mark.rule("TX-12")
def test_add_partitions_v4_verify_only_batched():
    """TX-12: v4+ carries several transactions; VerifyOnly reports membership per partition."""
    _, _, _, c = txn_core()
    a = init(c, "a")
    b = init(c, "b")
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    T = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])
    resp = c.send(AddPartitionsToTxnRequest(transactions=[
        T(transactional_id="a", producer_id=a.producer_id, producer_epoch=a.producer_epoch, verify_only=True,
          topics=[topic]),
        T(transactional_id="b", producer_id=b.producer_id, producer_epoch=b.producer_epoch, verify_only=False,
          topics=[topic])]), 4)
    got = {(r.transactional_id, p.partition_index): p.partition_error_code
           for r in resp.results_by_transaction for t in r.topic_results for p in t.results_by_partition}
    assert got == {("a", 0): 0, ("a", 1): E.TRANSACTION_ABORTABLE, ("b", 0): 0, ("b", 1): 0}


@pytest.mark.rule("TX-13")
def test_produce_v12_implicitly_adds_and_v10_is_refused_when_not_added():
    """TX-13: Produce v12 under TV2 adds the partition on the first transactional append; a v10
    producer that never added the partition gets INVALID_TXN_STATE and nothing is appended."""
    core, _, _, c = txn_core()
    a = init(c, "a")
    assert produce_txn(c, "a", a.producer_id, a.producer_epoch, 0, 12).error_code == 0
    assert core.subsystems.transactions.transactions["a"].partitions == {("t", 0)}
    b = init(c, "b")
    r = produce_txn(c, "b", b.producer_id, b.producer_epoch, 0, 10)
    assert r.error_code == E.INVALID_TXN_STATE
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 1


@pytest.mark.rule("TX-16")
def test_end_txn_v5_returns_bumped_epoch_and_markers_are_asked_for():
    """TX-16, TX-18: EndTxn v5 bumps the epoch, answers it, and asks for markers at it."""
    _, _, markers, c = txn_core()
    a = init(c, "a")
    produce_txn(c, "a", a.producer_id, a.producer_epoch, 0, 12)
    resp = end(c, "a", a.producer_id, a.producer_epoch, True, 5)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (0, a.producer_id, a.producer_epoch + 1)
    assert markers.calls == []  # answered before the markers (TX-15)
    c.core.advance(0)
    assert markers.calls[-1].partitions == (("t", 0),) and markers.calls[-1].producer_epoch == resp.producer_epoch
    bad = end(c, "a", a.producer_id, a.producer_epoch + 5, True, 5)
    assert (bad.error_code, bad.producer_id, bad.producer_epoch) == (E.PRODUCER_FENCED, -1, -1)


@pytest.mark.rule("TX-15")
def test_end_txn_v1_without_transaction_is_invalid_txn_state():
    """TX-15: EndTxn in Empty → INVALID_TXN_STATE; fenced below v2 → INVALID_PRODUCER_EPOCH."""
    _, _, _, c = txn_core()
    a = init(c, "a")
    assert end(c, "a", a.producer_id, a.producer_epoch, True, 1).error_code == E.INVALID_TXN_STATE
    assert end(c, "a", a.producer_id, 7, True, 1).error_code == E.INVALID_PRODUCER_EPOCH
    assert end(c, "zz", a.producer_id, 0, True, 3).error_code == E.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.rule("TX-23")
def test_txn_offset_commit_unstable_until_commit():
    """TX-23: AddOffsetsToTxn, TxnOffsetCommit; RequireStable OffsetFetch answers
    UNSTABLE_OFFSET_COMMIT until the commit, then the offset."""
    core, _, _, c = txn_core()
    a = init(c, "a", version=3)
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    resp = c.send(AddOffsetsToTxnRequest(transactional_id="a", producer_id=a.producer_id,
                                         producer_epoch=a.producer_epoch, group_id="g"), 3)
    assert resp.error_code == 0
    req = TxnOffsetCommitRequest(
        transactional_id="a", group_id="g", producer_id=a.producer_id, producer_epoch=a.producer_epoch,
        generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="in", partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=17,
                                                                   committed_leader_epoch=-1,
                                                                   committed_metadata="m")])])
    out = c.send(req, 3)
    assert out.topics[0].partitions[0].error_code == 0

    def fetch():
        r = c.send(OffsetFetchRequest(group_id="g", require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name="in", partition_indexes=[0])]), 7)
        p = r.topics[0].partitions[0]
        return p.error_code, p.committed_offset

    assert fetch() == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert end(c, "a", a.producer_id, a.producer_epoch, True, 3).error_code == 0
    assert fetch() == (E.UNSTABLE_OFFSET_COMMIT, -1)  # PrepareCommit: the markers are not out yet (TX-15)
    core.advance(0)
    assert fetch() == (0, 17)


@pytest.mark.rule("TX-23")
def test_txn_offset_commit_v3_without_add_offsets_is_invalid_txn_state():
    """TX-23: before TV2, offsets of a group whose partition was never added are refused."""
    _, _, _, c = txn_core()
    a = init(c, "a", version=3)
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    req = TxnOffsetCommitRequest(
        transactional_id="a", group_id="g", producer_id=a.producer_id, producer_epoch=a.producer_epoch,
        generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="in", partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                                   committed_leader_epoch=-1,
                                                                   committed_metadata="")])])
    assert c.send(req, 3).topics[0].partitions[0].error_code == E.INVALID_TXN_STATE


def test_describe_and_list_transactions_through_the_wire():
    """DescribeTransactions and ListTransactions (state filter, unknown filters, id pattern)."""
    _, _, _, c = txn_core()
    a = init(c, "alpha")
    init(c, "beta")
    add_v3(c, "alpha", a.producer_id, a.producer_epoch, {"t": [1, 0]})
    c.send(AddOffsetsToTxnRequest(transactional_id="alpha", producer_id=a.producer_id,
                                  producer_epoch=a.producer_epoch, group_id="g"), 3)
    d = c.send(DescribeTransactionsRequest(transactional_ids=["alpha", "nope"]), 0).transaction_states
    assert (d[0].error_code, d[0].transaction_state, d[0].producer_id) == (0, "Ongoing", a.producer_id)
    assert {(t.topic, tuple(t.partitions)) for t in d[0].topics} == {
        ("t", (0, 1)), (OFFSETS_TOPIC, (offsets_partition_for("g"),))}
    assert d[1].error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    r = c.send(ListTransactionsRequest(state_filters=["Ongoing", "Nope"], producer_id_filters=[]), 0)
    assert [t.transactional_id for t in r.transaction_states] == ["alpha"] and r.unknown_state_filters == ["Nope"]
    r = c.send(ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1,
                                       transactional_id_pattern="b.*"), 2)
    assert [t.transactional_id for t in r.transaction_states] == ["beta"]
    r = c.send(ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1,
                                       transactional_id_pattern="("), 2)
    assert r.error_code == E.INVALID_REGULAR_EXPRESSION


def test_find_coordinator_transaction_key_and_not_coordinator_elsewhere():
    """FindCoordinator with key type TRANSACTION names the broker; the other one answers NOT_COORDINATOR."""
    core, _, _, c = txn_core()
    resp = c.send(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), 4)
    assert resp.coordinators[0].error_code == 0
    assert resp.coordinators[0].node_id == core.coordinator_for("tx").node_id


def test_not_coordinator_on_the_wrong_broker():
    """A transactional request on a broker that does not coordinate the id → NOT_COORDINATOR."""
    core, clock = make_core(brokers=3)
    core.subsystems.transactions = coordinator_for_core(core, FakeMarkers())
    core.handlers = dict(core.handlers)
    mod = importlib.import_module("kwire.broker.handlers.end_txn")
    core.handlers[int(mod.API_KEY)] = HandlerSpec(int(mod.API_KEY), "EndTxn", *mod.VERSIONS, "end_txn", mod.handle,
                                                  mod.error_response)
    home = core.coordinator_for("tx").node_id
    other = next(n for n in core.cluster.nodes if n != home)
    c = CoreClient(core, other)
    assert init(c).error_code == E.NOT_COORDINATOR
    assert end(c, "tx", 1, 0, True, 3).error_code == E.NOT_COORDINATOR
    assert init(CoreClient(core, home)).error_code == 0


def test_describe_producers_reports_open_transaction():
    """DescribeProducers: the transactional producer with its epoch, sequence and open transaction."""
    _, _, _, c = txn_core()
    a = init(c, "a")
    produce_txn(c, "a", a.producer_id, a.producer_epoch, 0, 12)
    resp = c.send(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name="t", partition_indexes=[0, 1, 9])]), 0)
    p0, p1, p9 = resp.topics[0].partitions
    assert [(s.producer_id, s.producer_epoch, s.last_sequence, s.current_txn_start_offset)
            for s in p0.active_producers] == [(a.producer_id, a.producer_epoch, 0, 0)]
    assert (p1.error_code, p1.active_producers) == (0, [])
    assert p9.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.rule("TX-17")
def test_timeout_on_the_core_clock_fences_the_producer():
    """TX-17: on the core's clock (``core.advance``) an Ongoing transaction is aborted by the
    coordinator's scan (every 10 s from start-up) after its deadline, with a bumped epoch; the
    old epoch's EndTxn is then PRODUCER_FENCED."""
    core, _, markers, c = txn_core()
    a = init(c, "a", version=3, timeout_ms=30_000)
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    core.advance(39_999)  # the scan at 30 s finds start + timeout not before now
    assert markers.calls == []
    core.advance(1)
    assert (markers.calls[-1].commit, markers.calls[-1].producer_epoch) == (False, a.producer_epoch + 1)
    assert end(c, "a", a.producer_id, a.producer_epoch, True, 3).error_code == E.PRODUCER_FENCED
    d = c.send(DescribeTransactionsRequest(transactional_ids=["a"]), 0).transaction_states[0]
    assert (d.transaction_state, d.producer_epoch) == ("CompleteAbort", a.producer_epoch + 1)


@pytest.mark.rule("TX-5")
def test_init_producer_id_v6_is_not_advertised() -> None:
    """TX-5: InitProducerId v6 (KIP-939 two-phase commit) is unstable upstream: ApiVersions says 5."""
    from kwire.protocol.messages.api_versions import ApiVersionsRequest

    core, _, _, c = txn_core()
    keys = {k.api_key: k.max_version for k in c.send(ApiVersionsRequest(), 3).api_keys}
    assert keys[ApiKey.INIT_PRODUCER_ID] == 5


@pytest.mark.rule("TX-24")
@pytest.mark.parametrize("level", ["3", "7", "-1"])
def test_transaction_version_outside_what_the_broker_supports_is_refused(level: str) -> None:
    """TX-24: transaction.version is finalized within the supported range 0-2 (ApiVersions'
    SupportedFeatures); a level outside it is refused, as share.version's is."""
    from kwire.broker.core.configs import ResourceType
    from kwire.errors import ConfigError

    core, _ = make_core()
    with pytest.raises(ConfigError):
        core.configs.set(ResourceType.BROKER, "", "transaction.version", level)
    core.configs.set(ResourceType.BROKER, "", "transaction.version", "1")
