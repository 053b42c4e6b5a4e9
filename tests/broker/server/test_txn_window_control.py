"""Broker.hold_txn_markers / release_txn_markers / txn_stats through a running broker, on the
manual clock (raw requests) and on the jump clock (a real client): the window between EndTxn's
answer and the markers (TX-15) as a test widens it (TransactionCoordinator.endTransaction answers
at PrepareCommit; TransactionMarkerChannelManager writes the markers after)."""

from __future__ import annotations

import pytest

from kwire.client import WireClient
from kwire.clock import JumpClock
from kwire.control import Broker, BrokerConfig
from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kwire.protocol.messages.end_txn import EndTxnRequest
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.produce import ProduceRequest
from tests.broker.helpers import batch

CONCURRENT_TRANSACTIONS = 51


def state(b: Broker, tid: str) -> str:
    return {t["transactional_id"]: t["state_name"] for t in b.transactions()}[tid]


def completed(tid: str):
    """A ``wait_until`` predicate (it runs on the broker's thread): ``tid`` is CompleteCommit."""
    return lambda core: core.subsystems.transactions.transactions[tid].state.kafka_name == "CompleteCommit"


def open_and_end(b: Broker, wc: WireClient, tid: str) -> int:
    """InitProducerId, AddPartitionsToTxn v3, a transactional Produce v9, EndTxn v3 (commit) to the
    transactional id's coordinator; returns the EndTxn error code."""
    found = wc.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), version=4)
    node = found.coordinators[0].node_id
    wc.metadata_nodes()
    got = wc.request(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
                                           producer_epoch=-1), node=node, version=3)
    pid, epoch = got.producer_id, got.producer_epoch
    wc.request(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[0])]),
        node=node, version=3)
    leader = b.leader_of("t", 0)
    records = batch([b"v"], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True)
    resp = wc.request(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=records)])]), node=leader, version=9)
    assert resp.responses[0].partition_responses[0].error_code == 0
    end = wc.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True),
                     node=node, version=3)
    return int(end.error_code)


@pytest.mark.rule("TX-15")
def test_hold_and_release_on_the_manual_clock() -> None:
    """TX-15: on a manual clock the markers go out on the next tick without any advance; held for
    500 ms they wait for ``advance(500)``; held until released they wait for
    ``release_txn_markers`` whatever the clock does."""
    with Broker(BrokerConfig(log_connections=False), manual_clock=True) as b:
        b.create_topic("t", partitions=1)
        with WireClient(b.bootstrap) as wc:
            assert open_and_end(b, wc, "next-tick") == 0
            b.wait_until(completed("next-tick"), timeout=10)

            b.hold_txn_markers(500)
            assert open_and_end(b, wc, "timed") == 0
            b.advance(499)
            assert state(b, "timed") == "PrepareCommit"
            assert b.partition_state("t", 0)["last_stable_offset"] < b.partition_state("t", 0)["high_watermark"]
            b.advance(1)
            assert state(b, "timed") == "CompleteCommit"
            b.release_txn_markers()

            b.hold_txn_markers()
            assert open_and_end(b, wc, "held") == 0
            b.advance(3_600_000)
            assert state(b, "held") == "PrepareCommit"
            assert b.release_txn_markers() == 1
            b.wait_until(completed("held"), timeout=10)
            part = b.partition_state("t", 0)
            assert part["last_stable_offset"] == part["high_watermark"]


@pytest.mark.rule("TX-15")
def test_a_real_client_retries_through_a_held_window_on_the_jump_clock() -> None:
    """TX-15: confluent-kafka commits and begins its next transaction at once while the broker
    holds the first one's markers for 1 s of broker time: its next add meets
    CONCURRENT_TRANSACTIONS (counted by ``txn_stats``), it retries, and both transactions land."""
    ck = pytest.importorskip("confluent_kafka")
    with Broker(BrokerConfig(log_connections=False), clock=JumpClock()) as b:
        b.create_topic("t", partitions=1)
        p = ck.Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "jump", "log_level": 0})
        p.init_transactions(20)
        p.begin_transaction()
        p.produce("t", b"one", partition=0)
        b.hold_txn_markers(1_000)
        p.commit_transaction(20)
        p.begin_transaction()
        p.produce("t", b"two", partition=0)
        p.commit_transaction(20)
        assert sum(b.txn_stats()["concurrent_transactions"].values()) > 0  # its add (TV1) or produce (TV2)
        b.release_txn_markers()
        b.wait_until(completed("jump"), timeout=10)
        assert [r.value for r in b.read("t", 0)] == [b"one", b"two"]
