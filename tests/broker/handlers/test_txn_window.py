"""The window between EndTxn's answer and the markers (TX-15), through the wire into a real core
(its coordinator, its log marker writer), plus the TV2 sequence rule (TX-8) and the hostile
produce and marker inputs of issue 21.

Kafka answers EndTxn once PrepareCommit/PrepareAbort is in the transaction log and hands the
markers to its marker channel (TransactionCoordinator.endTransaction's sendTxnMarkersCallback:
``prepareComplete`` leaves the id pending Complete*, then ``addTxnMarkersToSend``); the
transaction completes when every marker is written (TransactionMarkerChannelManager). kwire
writes the markers on the next broker tick (``core.advance(0)`` here), or later when widened.
"""

from __future__ import annotations

import logging

import pytest

from kwire.broker.core.txn_coordinator import txn_coordinator
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kwire.protocol.messages.describe_transactions import DescribeTransactionsRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from kwire.protocol.messages.write_txn_markers import WriteTxnMarkersRequest
from kwire.records import iter_batches
from tests.broker.handlers.test_transactions import add_v3, end, init
from tests.broker.helpers import CoreClient, batch, make_core


def core_with_topics(**settings: str):
    core, clock = make_core(settings=settings)
    core.create_topic("t", 2)
    core.create_topic("in", 1)
    return core, CoreClient(core)


def produce(c: CoreClient, tid: str | None, pid: int, epoch: int, seq: int, version: int, partition: int = 0,
            value: bytes = b"v", transactional: bool = True):
    records = batch([value], producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)
    req = ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])
    return c.send(req, version).responses[0].partition_responses[0]


def txn_offset_commit(c: CoreClient, tid: str, pid: int, epoch: int, offset: int, version: int) -> int:
    req = TxnOffsetCommitRequest(
        transactional_id=tid, group_id="g", producer_id=pid, producer_epoch=epoch,
        generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="in", partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                   committed_leader_epoch=-1,
                                                                   committed_metadata="")])])
    return int(c.send(req, version).topics[0].partitions[0].error_code)


def stable_offset(c: CoreClient) -> tuple[int, int]:
    r = c.send(OffsetFetchRequest(group_id="g", require_stable=True, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="in", partition_indexes=[0])]), 7)
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def read_committed(c: CoreClient, partition: int = 0) -> tuple[list[bytes], int]:
    """The data values a read_committed fetch returns from offset 0, and the LSO it reports."""
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                               topics=[FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                   partition_max_bytes=1 << 20)])]), 11)
    p = resp.responses[0].partitions[0]
    values = [bytes(r.value or b"") for b in iter_batches(bytes(p.records or b"")) if not b.is_control for r in b]
    return values, p.last_stable_offset


def describe_state(c: CoreClient, tid: str) -> str:
    return c.send(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0].transaction_state


@pytest.mark.rule("TX-15, TX-20, TX-23")
def test_tv1_end_txn_answers_at_prepare_commit_and_the_window_holds_until_the_markers():
    """TX-15: EndTxn v3 is answered with PrepareCommit recorded and no marker written. Until the
    markers: LSO at the transaction's first offset and read_committed sees nothing (TX-20), staged
    offsets pending (RequireStable: UNSTABLE_OFFSET_COMMIT, TX-23), DescribeTransactions says
    PrepareCommit, and AddPartitionsToTxn, produce verification (NOT_ENOUGH_REPLICAS before v12:
    ReplicaManager.appendRecordsWithTransactionVerification), EndTxn of either result
    (endTransactionWithTV1: pending transition) and InitProducerId get CONCURRENT_TRANSACTIONS.
    The next tick writes the markers: everything lands at once."""
    core, c = core_with_topics()
    a = init(c, "a", version=3)
    pid, ep = a.producer_id, a.producer_epoch
    assert add_v3(c, "a", pid, ep, {"t": [0]}) == {("t", 0): 0}
    assert produce(c, "a", pid, ep, 0, 9, value=b"x").error_code == 0
    assert c.send(AddOffsetsToTxnRequest(transactional_id="a", producer_id=pid, producer_epoch=ep, group_id="g"),
                  3).error_code == 0
    assert txn_offset_commit(c, "a", pid, ep, 17, 3) == 0
    assert end(c, "a", pid, ep, True, 3).error_code == 0
    log = core.cluster.topics["t"].partitions[0].log
    assert (log.last_stable_offset, log.high_watermark) == (0, 1)
    assert read_committed(c) == ([], 0)
    assert stable_offset(c) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    assert describe_state(c, "a") == "PrepareCommit"
    assert add_v3(c, "a", pid, ep, {"t": [1]}) == {("t", 1): E.CONCURRENT_TRANSACTIONS}
    assert produce(c, "a", pid, ep, 0, 9, partition=1).error_code == E.NOT_ENOUGH_REPLICAS
    assert end(c, "a", pid, ep, True, 3).error_code == E.CONCURRENT_TRANSACTIONS
    assert end(c, "a", pid, ep, False, 3).error_code == E.CONCURRENT_TRANSACTIONS
    assert init(c, "a", version=3).error_code == E.CONCURRENT_TRANSACTIONS
    assert core.cluster.topics["t"].partitions[1].log.log_end_offset == 0
    core.advance(0)
    assert describe_state(c, "a") == "CompleteCommit"
    assert read_committed(c) == ([b"x"], 2)
    assert stable_offset(c) == (0, 17)
    assert end(c, "a", pid, ep, True, 3).error_code == 0  # a retry of the same result
    assert end(c, "a", pid, ep, False, 3).error_code == E.INVALID_TXN_STATE  # the opposite one


def produce_request(tid: str, pid: int, epoch: int, seq: int, partition: int, value: bytes) -> ProduceRequest:
    records = batch([value], producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    return ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])


@pytest.mark.rule("TX-15, TX-16")
def test_tv2_producer_that_begins_its_next_transaction_at_once_meets_concurrent_transactions():
    """TX-15, TX-16: EndTxn v5 answers the bumped epoch at PrepareCommit; the producer's next
    transaction at that epoch meets the window: TxnOffsetCommit v5's implicit add and a retried
    EndTxn (TV2 checks the pending transition first) get CONCURRENT_TRANSACTIONS, and Produce v12 is
    held by the leader, which retries its verification every add.partitions.to.txn.retry.backoff.ms
    (20) up to add.partitions.to.txn.retry.backoff.max.ms (100) before answering
    CONCURRENT_TRANSACTIONS (ReplicaManager.appendRecordsWithTransactionVerification,
    maybeRetryOnConcurrentTransactions). Once the markers land the same requests succeed, and a
    produce held meanwhile is appended; nothing of either transaction is lost."""
    core, c = core_with_topics()
    coord = txn_coordinator(core)
    assert coord is not None
    a = init(c, "a")
    pid, ep = a.producer_id, a.producer_epoch
    assert produce(c, "a", pid, ep, 0, 12, value=b"first").error_code == 0
    coord.hold_markers()
    bumped = end(c, "a", pid, ep, True, 5)
    assert (bumped.error_code, bumped.producer_epoch) == (0, ep + 1)
    assert c.send(produce_request("a", pid, ep + 1, 0, 1, b"second"), 12) is None  # held by the leader
    core.advance(99)
    assert c.deferred() == []
    core.advance(1)
    (gave_up,) = c.deferred()
    assert gave_up.responses[0].partition_responses[0].error_code == E.CONCURRENT_TRANSACTIONS
    assert coord.statistics().concurrent_transactions["Produce"] == 1  # the answer, not the leader's retries
    assert txn_offset_commit(c, "a", pid, ep + 1, 5, 5) == E.CONCURRENT_TRANSACTIONS
    assert end(c, "a", pid, ep, True, 5).error_code == E.CONCURRENT_TRANSACTIONS  # retry of the commit
    assert core.cluster.topics["t"].partitions[1].log.log_end_offset == 0
    assert c.send(produce_request("a", pid, ep + 1, 0, 1, b"second"), 12) is None
    core.advance(20)
    coord.release_markers()
    core.advance(20)  # the markers on the tick, then the leader's next retry verifies and appends
    (appended,) = c.deferred()
    assert appended.responses[0].partition_responses[0].error_code == 0
    assert describe_state(c, "a") == "Ongoing"  # the next transaction, at the bumped epoch
    assert end(c, "a", pid, ep, True, 5).error_code == E.PRODUCER_FENCED  # too late for a retry now
    assert txn_offset_commit(c, "a", pid, ep + 1, 5, 5) == 0
    assert end(c, "a", pid, ep + 1, True, 5).producer_epoch == ep + 2
    core.advance(0)
    assert read_committed(c, 0)[0] == [b"first"] and read_committed(c, 1)[0] == [b"second"]
    assert stable_offset(c) == (0, 5)


@pytest.mark.rule("TX-15")
def test_marker_delay_setting_and_hold_widen_the_window_on_the_broker_clock():
    """TX-15: kwire.transaction.marker.delay.ms keeps the markers that long after the answer;
    ``hold_markers`` (Broker.hold_txn_markers) overrides it with a time or holds them until
    ``release_markers``, whatever the clock does."""
    core, c = core_with_topics(**{"kwire.transaction.marker.delay.ms": "500"})
    coord = txn_coordinator(core)
    assert coord is not None
    a = init(c, "a", version=3)
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    assert end(c, "a", a.producer_id, a.producer_epoch, False, 3).error_code == 0
    core.advance(499)
    assert describe_state(c, "a") == "PrepareAbort"
    core.advance(1)
    assert describe_state(c, "a") == "CompleteAbort"

    coord.hold_markers()
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    assert end(c, "a", a.producer_id, a.producer_epoch, True, 3).error_code == 0
    core.advance(3_600_000)
    assert describe_state(c, "a") == "PrepareCommit"
    assert coord.release_markers() == 1
    assert describe_state(c, "a") == "PrepareCommit"  # released to the next tick
    core.advance(0)
    assert describe_state(c, "a") == "CompleteCommit"

    coord.hold_markers(2_000)
    add_v3(c, "a", a.producer_id, a.producer_epoch, {"t": [0]})
    end(c, "a", a.producer_id, a.producer_epoch, True, 3)
    core.advance(1_999)
    assert describe_state(c, "a") == "PrepareCommit"
    core.advance(1)
    assert describe_state(c, "a") == "CompleteCommit"


@pytest.mark.rule("TX-17")
def test_timeout_is_aborted_by_the_scan_and_the_fenced_producer_may_reinit_with_its_old_epoch():
    """TX-17 on a real core: a 1 s transaction started at 0 is still Ongoing at 9.999 s and aborted by
    the scan at 10 s (transaction.abort.timed.out.transaction.cleanup.interval.ms); under TV2 its
    producer's InitProducerId(pid, old epoch) is a retry answered with the current epoch
    (TransactionMetadata.prepareIncrementProducerEpoch), and its old epoch is fenced at the leader."""
    core, c = core_with_topics()
    a = init(c, "a", timeout_ms=1_000)
    assert produce(c, "a", a.producer_id, a.producer_epoch, 0, 12).error_code == 0
    core.advance(9_999)
    assert describe_state(c, "a") == "Ongoing"
    core.advance(1)
    assert describe_state(c, "a") == "CompleteAbort"
    again = init(c, "a", version=5, pid=a.producer_id, epoch=a.producer_epoch)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, a.producer_id, a.producer_epoch + 1)
    assert produce(c, "a", a.producer_id, a.producer_epoch, 1, 12).error_code == E.INVALID_PRODUCER_EPOCH


@pytest.mark.rule("TX-8")
def test_tv2_transactional_producer_without_state_starts_at_sequence_zero():
    """TX-8: ProducerAppendInfo.checkSequence: with a TV2 verification entry (Produce v12+) and no
    batches of the producer at the leader, a first sequence other than 0 is
    OUT_OF_ORDER_SEQUENCE_NUMBER; before v12 any sequence is taken (no state, no check)."""
    core, c = core_with_topics()
    a = init(c, "a")
    r = produce(c, "a", a.producer_id, a.producer_epoch, 5, 12)
    assert r.error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 0
    assert produce(c, "a", a.producer_id, a.producer_epoch, 0, 12).error_code == 0
    assert produce(c, "a", a.producer_id, a.producer_epoch, 1, 12).error_code == 0
    b = init(c, "b", version=3)
    add_v3(c, "b", b.producer_id, b.producer_epoch, {"t": [1]})
    assert produce(c, "b", b.producer_id, b.producer_epoch, 5, 11, partition=1).error_code == 0


@pytest.mark.rule("TX-10")
def test_transactional_batch_without_transactional_id_is_unauthorized():
    """KafkaApis.handleProduceRequest: transactional records in a Produce without TransactionalId
    are TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition; nothing joins the producer's
    open transaction."""
    core, c = core_with_topics()
    a = init(c, "a")
    assert produce(c, "a", a.producer_id, a.producer_epoch, 0, 12).error_code == 0
    r = produce(c, None, a.producer_id, a.producer_epoch, 1, 12)
    assert r.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert core.cluster.topics["t"].partitions[0].log.log_end_offset == 1
    plain = produce(c, None, -1, -1, -1, 9, transactional=False)  # a plain batch is fine
    assert plain.error_code == 0


@pytest.mark.rule("TX-18")
def test_write_txn_markers_with_negative_producer_id(caplog: pytest.LogCaptureFixture):
    """KafkaApis.handleWriteTxnMarkersRequest: producer id -1 (or epoch -1) on a partition the
    broker has makes MemoryRecordsBuilder throw, so every partition of the request is
    UNKNOWN_SERVER_ERROR (WriteTxnMarkersRequest.getErrorResponse), logged without a traceback;
    a producer id below -1 is written as given, a control batch no producer state tracks
    (AbstractRecordBatch.hasProducerId is false); a marker for unknown partitions only is
    UNKNOWN_TOPIC_OR_PARTITION."""
    core, c = core_with_topics()
    M = WriteTxnMarkersRequest

    def markers(pid: int, epoch: int, parts: dict[str, list[int]]):
        resp = c.send(M(markers=[M.WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=True,
                                                     topics=[M.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                                                             for t, ps in parts.items()],
                                                     coordinator_epoch=0, transaction_version=0)]), 1)
        return {(t.name, p.partition_index): p.error_code for m in resp.markers for t in m.topics
                for p in t.partitions}

    with caplog.at_level(logging.WARNING, logger="kwire.broker"):
        assert markers(-1, 0, {"t": [0], "zz": [0]}) == {("t", 0): E.UNKNOWN_SERVER_ERROR,
                                                         ("zz", 0): E.UNKNOWN_SERVER_ERROR}
        assert markers(5, -1, {"t": [0]}) == {("t", 0): E.UNKNOWN_SERVER_ERROR}
    assert not [r for r in caplog.records if r.exc_info]
    assert markers(-1, 0, {"zz": [0]}) == {("zz", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert markers(-5, 0, {"t": [1], "zz": [0]}) == {("t", 1): 0, ("zz", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    log = core.cluster.topics["t"].partitions[1].log
    assert [(b.producer_id, b.is_control) for b in log.batches] == [(-5, True)]
    assert log.last_stable_offset == log.high_watermark == 1 and log.producers.entries == {}
    assert markers(7, -5, {"t": [0]}) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
