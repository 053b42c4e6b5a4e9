"""The data dir keeps every acknowledged transaction step: a crash (no clean stop, no time for the
periodic metadata write) in the middle of a commit, or with offsets staged in a transaction, loses
nothing the broker answered. The steps go through the wire into a real core, as a client's would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.storage import TXN_JOURNAL
from kwire.broker.core.txn_coordinator import txn_coordinator
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kwire.protocol.messages.end_txn import EndTxnRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from tests.broker.helpers import CoreClient, batch, make_core


def start(data_dir: Path) -> tuple[BrokerCore, CoreClient]:
    core, _ = make_core(data_dir=str(data_dir), settings={"transaction.version": "1"})
    return core, CoreClient(core)


def state(core: BrokerCore, tid: str) -> str:
    coord = txn_coordinator(core)
    assert coord is not None
    return coord.transactions[tid].state.kafka_name


def open_txn(c: CoreClient, tid: str, partitions: list[int]) -> tuple[int, int]:
    r = c.send(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
                                     producer_epoch=-1), 4)
    assert r.error_code == 0
    pid, epoch = r.producer_id, r.producer_epoch
    resp = c.send(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=partitions)]), 3)
    assert all(p.partition_error_code == 0 for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition)
    for part in partitions:
        records = batch([b"in-txn"], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True)
        out = c.send(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name="t", partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=records)])]), 9)
        assert out.responses[0].partition_responses[0].error_code == 0
    return pid, epoch


def end(c: CoreClient, tid: str, pid: int, epoch: int, commit: bool = True) -> Any:
    return c.send(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit), 3)


@pytest.mark.rule("TX-15, TX-18, TX-20")
def test_a_crash_in_the_middle_of_a_commit_completes_it_on_restart(tmp_path: Path) -> None:
    """TX-15: EndTxn answered (PrepareCommit written) while a marker cannot be written; the process
    dies before any metadata write. On restart the coordinator finds PrepareCommit and completes
    it: the marker is written and the partition's LSO reaches its high watermark (TX-18, TX-20)."""
    core, c = start(tmp_path)
    core.create_topic("t", 2)
    pid, epoch = open_txn(c, "crash", [0, 1])
    coord = txn_coordinator(core)
    assert coord is not None
    coord.markers.forced_failures.append(["t", 0, E.NOT_LEADER_OR_FOLLOWER, None])  # type: ignore[attr-defined]
    assert end(c, "crash", pid, epoch).error_code == 0
    core.advance(0)  # the next tick: the markers go out, partition 0's fails
    assert state(core, "crash") == "PrepareCommit"
    assert (tmp_path / TXN_JOURNAL).read_text().strip()
    # kill -9: no close(), no time passes, so only the journal holds the step
    core2, _ = start(tmp_path)
    assert state(core2, "crash") == "CompleteCommit"
    # The coordinator sends every marker again on load (which ones landed is not trusted, as in
    # Kafka): partition 1 holds its marker twice, partition 0 gets its first.
    for part, end_offset in ((0, 2), (1, 3)):
        log = core2.cluster.topics["t"].partitions[part].log
        assert log.last_stable_offset == log.high_watermark == end_offset
        assert log.aborted_txns == [] and log.open_txn_first_offsets == {}


@pytest.mark.rule("TX-23")
def test_offsets_staged_in_a_transaction_survive_a_crash_and_appear_at_its_commit(tmp_path: Path) -> None:
    """TX-23: a TxnOffsetCommit acknowledged before a crash is still staged after the restart
    (invisible) and becomes the group's committed offset when the transaction commits."""
    core, c = start(tmp_path)
    core.create_topic("t", 1)
    pid, epoch = open_txn(c, "eos", [0])
    assert c.send(AddOffsetsToTxnRequest(transactional_id="eos", producer_id=pid, producer_epoch=epoch,
                                         group_id="g"), 3).error_code == 0
    r = c.send(TxnOffsetCommitRequest(transactional_id="eos", group_id="g", producer_id=pid, producer_epoch=epoch,
                                      topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                                          TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=7, committed_metadata="m")])]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    core2, c2 = start(tmp_path)
    store = core2.subsystems.offsets
    assert store.get("g", "t", 0) is None and store.is_pending("g", "t", 0)
    assert state(core2, "eos") == "Ongoing"
    assert end(c2, "eos", pid, epoch).error_code == 0
    assert store.get("g", "t", 0) is None  # pending until the markers (TX-15)
    core2.advance(0)
    got = store.get("g", "t", 0)
    assert got is not None and got.offset == 7
    core3, _ = start(tmp_path)  # and the commit itself is durable
    again = core3.subsystems.offsets.get("g", "t", 0)
    assert again is not None and again.offset == 7 and not core3.subsystems.offsets.is_pending("g", "t", 0)


def test_an_aborted_transaction_before_a_crash_stays_aborted(tmp_path: Path) -> None:
    """An abort answered before the crash: the restarted broker has CompleteAbort and an aborted range."""
    core, c = start(tmp_path)
    core.create_topic("t", 1)
    pid, epoch = open_txn(c, "gone", [0])
    assert end(c, "gone", pid, epoch, commit=False).error_code == 0
    core2, _ = start(tmp_path)
    assert state(core2, "gone") == "CompleteAbort"
    log = core2.cluster.topics["t"].partitions[0].log
    assert [(a.producer_id, a.first_offset) for a in log.aborted_txns] == [(pid, 0)]


def test_a_torn_last_journal_line_is_reported_and_the_steps_before_it_kept(tmp_path: Path) -> None:
    core, c = start(tmp_path)
    core.create_topic("t", 1)
    open_txn(c, "torn", [0])
    with (tmp_path / TXN_JOURNAL).open("a") as f:
        f.write('{"txn": "torn", "meta": {"trunc')
    core2, _ = start(tmp_path)
    storage = core2.subsystems.storage
    assert storage is not None
    assert state(core2, "torn") == "Ongoing"
    assert any(TXN_JOURNAL in r and "unreadable" in r for r in storage.problems)
