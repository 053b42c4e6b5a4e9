"""The transaction coordinator alone (sync, fake clock, markers and ids): TX-1..TX-24."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kwire.broker.core.offsets import CommittedOffset
from kwire.broker.core.producer_state import ProducerStateManager
from kwire.broker.core.txn_coordinator import (
    MARKER_RETRY_BACKOFF_MS,
    MAX_EPOCH,
    MOVES,
    OFFSETS_TOPIC,
    IllegalTransition,
    TransactionState,
    Trigger,
    describe_producers,
    offsets_partition_for,
    tv_for_request,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode as E
from kwire.records import BatchInfo
from tests.broker.core.txn_helpers import START_MS, TxnHarness

TP0 = ("t", 0)
TP1 = ("t", 1)


def code_of(fn, *args, **kwargs) -> int:
    with pytest.raises(KafkaError) as info:
        fn(*args, **kwargs)
    return info.value.code


@pytest.fixture
def h() -> TxnHarness:
    return TxnHarness()


def open_txn(h: TxnHarness, tid: str = "tx", tps=(TP0,), timeout_ms: int = 60_000, version: int = 3):
    got = h.coord.init_producer_id(tid, timeout_ms)
    h.coord.add_partitions(tid, got.producer_id, got.producer_epoch, tps, api_version=version)
    return got


# --- InitProducerId ------------------------------------------------------------------------------
@pytest.mark.rule("TX-1")
def test_empty_transactional_id_is_invalid_request(h):
    """TX-1: an empty transactional id is INVALID_REQUEST and creates nothing."""
    assert code_of(h.coord.init_producer_id, "", 60_000) == E.INVALID_REQUEST
    assert h.coord.transactions == {}


@pytest.mark.rule("TX-2")
def test_new_transactional_id_gets_new_producer_id_with_epoch_zero_and_reinit_bumps(h):
    """TX-2: a new id gets a fresh producer id and epoch 0; the next init bumps the epoch by one."""
    first = h.coord.init_producer_id("a", 60_000)
    other = h.coord.init_producer_id("b", 60_000)
    assert (first.producer_epoch, other.producer_epoch) == (0, 0)
    assert first.producer_id != other.producer_id
    again = h.coord.init_producer_id("a", 30_000)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)
    assert h.coord.transactions["a"].timeout_ms == 30_000
    # the previous holder is fenced
    assert code_of(h.coord.add_partitions, "a", first.producer_id, 0, [TP0]) == E.PRODUCER_FENCED


@pytest.mark.rule("TX-2")
@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_transaction_timeout_outside_range_is_invalid_transaction_timeout(h, timeout_ms):
    """TX-2: a timeout <= 0 or above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT."""
    assert code_of(h.coord.init_producer_id, "tx", timeout_ms) == E.INVALID_TRANSACTION_TIMEOUT
    assert "tx" not in h.coord.transactions


@pytest.mark.rule("TX-2")
def test_max_timeout_follows_the_config(h):
    """TX-2: the bound is transaction.max.timeout.ms as configured now."""
    h.set_config(transaction_max_timeout_ms=10_000)
    assert code_of(h.coord.init_producer_id, "tx", 10_001) == E.INVALID_TRANSACTION_TIMEOUT
    assert h.coord.init_producer_id("tx", 10_000).producer_epoch == 0


@pytest.mark.rule("TX-2")
def test_exhausted_epoch_rotates_to_a_new_producer_id(h):
    """TX-2: an init on an epoch >= 32766 gets a new producer id with epoch 0."""
    first = h.coord.init_producer_id("tx", 60_000)
    h.coord.transactions["tx"].producer_epoch = MAX_EPOCH
    got = h.coord.init_producer_id("tx", 60_000)
    assert got.producer_id != first.producer_id and got.producer_epoch == 0
    assert h.coord.producer_transactional_id(got.producer_id) == "tx"
    assert h.coord.producer_transactional_id(first.producer_id) is None


@pytest.mark.rule("TX-3")
def test_init_over_ongoing_transaction_aborts_it_and_answers_concurrent_transactions(h):
    """TX-3: the epoch is bumped, the open transaction aborted with it, the client told to retry;
    the retry gets a further-bumped epoch."""
    got = open_txn(h, tps=(TP0, TP1))
    assert code_of(h.coord.init_producer_id, "tx", 60_000) == E.CONCURRENT_TRANSACTIONS
    assert h.state("tx") == "PREPARE_ABORT"  # the abort's markers go out on the next tick
    assert code_of(h.coord.init_producer_id, "tx", 60_000) == E.CONCURRENT_TRANSACTIONS
    h.flush()
    call = h.markers.calls[-1]
    assert (call.commit, call.producer_epoch, call.partitions) == (False, got.producer_epoch + 1, (TP0, TP1))
    assert h.state("tx") == "COMPLETE_ABORT"
    retry = h.coord.init_producer_id("tx", 60_000)
    assert retry.producer_epoch == got.producer_epoch + 2


@pytest.mark.rule("TX-3")
def test_init_while_markers_pending_is_concurrent_transactions(h):
    """TX-3: PrepareCommit (markers not yet written) answers CONCURRENT_TRANSACTIONS, nothing changes."""
    got = open_txn(h)
    h.markers.failures[TP0] = 1
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, commit=True, api_version=3)
    h.flush()
    assert h.state("tx") == "PREPARE_COMMIT"
    assert code_of(h.coord.init_producer_id, "tx", 60_000) == E.CONCURRENT_TRANSACTIONS
    assert h.coord.transactions["tx"].producer_epoch == got.producer_epoch
    h.advance(MARKER_RETRY_BACKOFF_MS)
    assert h.state("tx") == "COMPLETE_COMMIT"
    assert h.coord.init_producer_id("tx", 60_000).producer_epoch == got.producer_epoch + 1


@pytest.mark.rule("TX-4")
def test_exactly_one_of_producer_id_and_epoch_is_invalid_request(h):
    """TX-4: producer id given without epoch (or the reverse) is INVALID_REQUEST."""
    assert code_of(h.coord.init_producer_id, "tx", 60_000, 4, 5, -1) == E.INVALID_REQUEST
    assert code_of(h.coord.init_producer_id, "tx", 60_000, 4, -1, 0) == E.INVALID_REQUEST


@pytest.mark.rule("TX-4")
@pytest.mark.parametrize(("version", "expected"), [(3, E.INVALID_PRODUCER_EPOCH), (4, E.PRODUCER_FENCED)])
def test_mismatching_current_epoch_is_fenced_by_version(h, version, expected):
    """TX-4: a stale current epoch is PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH in v3."""
    first = h.coord.init_producer_id("tx", 60_000)
    h.coord.init_producer_id("tx", 60_000)  # epoch 1
    h.coord.init_producer_id("tx", 60_000)  # epoch 2, last epoch reset: epoch 0 is now stale
    assert code_of(h.coord.init_producer_id, "tx", 60_000, version, first.producer_id, 0) == expected
    assert h.coord.transactions["tx"].producer_epoch == 2


@pytest.mark.rule("TX-4")
def test_mismatching_producer_id_is_fenced(h):
    """TX-4: a current producer id that is not this transactional id's is PRODUCER_FENCED."""
    first = h.coord.init_producer_id("tx", 60_000)
    assert code_of(h.coord.init_producer_id, "tx", 60_000, 4, first.producer_id + 77, 0) == E.PRODUCER_FENCED


@pytest.mark.rule("TX-4")
def test_retry_with_previous_epoch_returns_current_epoch_without_second_bump(h):
    """TX-4: after a bump with the current epoch, a retry carrying the old one returns the new one."""
    first = h.coord.init_producer_id("tx", 60_000)
    bumped = h.coord.init_producer_id("tx", 60_000, 4, first.producer_id, 0)
    assert bumped.producer_epoch == 1
    retry = h.coord.init_producer_id("tx", 60_000, 4, first.producer_id, 0)
    assert retry == bumped
    assert h.coord.init_producer_id("tx", 60_000, 4, first.producer_id, 1).producer_epoch == 2


@pytest.mark.rule("TX-4")
def test_retry_across_epoch_rotation_is_recognised(h):
    """TX-4, TX-2: with the current (exhausted) epoch given, the rotation is retried safely."""
    first = h.coord.init_producer_id("tx", 60_000)
    h.coord.transactions["tx"].producer_epoch = MAX_EPOCH
    rotated = h.coord.init_producer_id("tx", 60_000, 4, first.producer_id, MAX_EPOCH)
    assert rotated.producer_id != first.producer_id and rotated.producer_epoch == 0
    assert h.coord.init_producer_id("tx", 60_000, 4, first.producer_id, MAX_EPOCH) == rotated


# --- AddPartitionsToTxn / verification ---------------------------------------------------------
@pytest.mark.rule("TX-11")
def test_add_partitions_starts_the_transaction(h):
    """TX-11: success moves Empty -> Ongoing with the partitions and a start time."""
    got = h.coord.init_producer_id("tx", 60_000)
    h.advance(5)
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP0])
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP1])
    meta = h.coord.transactions["tx"]
    assert (meta.state, meta.partitions, meta.start_ms) == (TransactionState.ONGOING, {TP0, TP1}, START_MS + 5)


@pytest.mark.rule("TX-11")
@pytest.mark.parametrize(("version", "fenced"), [(1, E.INVALID_PRODUCER_EPOCH), (2, E.PRODUCER_FENCED)])
def test_add_partitions_errors(h, version, fenced):
    """TX-11: unknown id or pid mismatch -> INVALID_PRODUCER_ID_MAPPING; epoch mismatch fenced by
    version; Prepare* -> CONCURRENT_TRANSACTIONS; none of them changes the state."""
    got = h.coord.init_producer_id("tx", 60_000)
    pid, ep = got.producer_id, got.producer_epoch
    add = h.coord.add_partitions
    assert code_of(add, "nope", pid, ep, [TP0], api_version=version) == E.INVALID_PRODUCER_ID_MAPPING
    assert code_of(add, "tx", pid + 1, ep, [TP0], api_version=version) == E.INVALID_PRODUCER_ID_MAPPING
    assert code_of(add, "tx", pid, ep + 1, [TP0], api_version=version) == fenced
    assert h.state("tx") == "EMPTY"
    add("tx", pid, ep, [TP0], api_version=version)
    h.markers.fail_all = True
    h.coord.end_txn("tx", pid, ep, commit=True, api_version=version)
    assert code_of(add, "tx", pid, ep, [TP1], api_version=version) == E.CONCURRENT_TRANSACTIONS
    assert h.coord.transactions["tx"].partitions == {TP0}


@pytest.mark.rule("TX-12")
def test_verify_only_checks_membership_without_changing_state(h):
    """TX-12: VerifyOnly answers NONE / TRANSACTION_ABORTABLE per partition and adds nothing."""
    got = open_txn(h)
    out = h.coord.verify_partitions("tx", got.producer_id, got.producer_epoch, [TP0, TP1])
    assert out == {TP0: E.NONE, TP1: E.TRANSACTION_ABORTABLE}
    assert h.coord.transactions["tx"].partitions == {TP0}
    assert h.coord.verify_partitions("tx", got.producer_id, 9, [TP0]) == {TP0: E.PRODUCER_FENCED}


@pytest.mark.rule("TX-13")
def test_produce_v12_adds_the_partition_implicitly(h):
    """TX-13: Produce v12+ under TV2 adds the partition on the first transactional append."""
    got = h.coord.init_producer_id("tx", 60_000)
    assert h.coord.verify_append(got.producer_id, got.producer_epoch, TP0, 12, leader_has_open_txn=False) == 0
    meta = h.coord.transactions["tx"]
    assert (meta.state, meta.partitions, meta.transaction_version) == (TransactionState.ONGOING, {TP0}, 2)


@pytest.mark.rule("TX-13")
@pytest.mark.parametrize(("version", "expected"), [(11, E.TRANSACTION_ABORTABLE), (10, E.INVALID_TXN_STATE),
                                                   (3, E.INVALID_TXN_STATE)])
def test_produce_before_v12_only_verifies(h, version, expected):
    """TX-13: v11 verifies with TRANSACTION_ABORTABLE, v10 and below with INVALID_TXN_STATE."""
    got = h.coord.init_producer_id("tx", 60_000)
    assert h.coord.verify_append(got.producer_id, got.producer_epoch, TP0, version, False) == expected
    assert h.state("tx") == "EMPTY"
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP0])
    assert h.coord.verify_append(got.producer_id, got.producer_epoch, TP0, version, False) == E.NONE


@pytest.mark.rule("TX-13")
def test_produce_verification_fenced_is_invalid_producer_epoch(h):
    """TX-13: PRODUCER_FENCED from the coordinator reaches the producer as INVALID_PRODUCER_EPOCH;
    an unknown producer id is INVALID_PRODUCER_ID_MAPPING."""
    got = h.coord.init_producer_id("tx", 60_000)
    h.coord.init_producer_id("tx", 60_000)
    assert h.coord.verify_append(got.producer_id, 0, TP0, 12, False) == E.INVALID_PRODUCER_EPOCH
    assert h.coord.verify_append(4242, 0, TP0, 12, False) == E.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.rule("TX-13")
def test_check_produce_skips_verification_when_leader_has_the_transaction_open(h):
    """TX-13: only the first transactional append of a transaction is verified; non-transactional
    batches are not the coordinator's business."""
    got = h.coord.init_producer_id("tx", 60_000)
    part = SimpleNamespace(topic="t", index=0, producers=ProducerStateManager())
    ctx = SimpleNamespace(api_version=10)
    info = BatchInfo(0, 0, 1, 70, 0, 0, 0, 0, got.producer_id, got.producer_epoch, 0, True, False, 0)
    assert h.coord.check_produce(ctx, part, info) == E.INVALID_TXN_STATE  # not added, TV1 client
    assert h.coord.check_produce(ctx, part, info._replace(is_transactional=False)) == 0
    part.producers.record(info, 0, 0)  # the leader now has the transaction open
    assert h.coord.check_produce(ctx, part, info) == 0


# --- EndTxn --------------------------------------------------------------------------------------
@pytest.mark.rule("TX-14")
def test_state_ids_are_kafkas():
    """TX-14: persisted state ids."""
    assert [(s.name, int(s)) for s in TransactionState] == [
        ("EMPTY", 0), ("ONGOING", 1), ("PREPARE_COMMIT", 2), ("PREPARE_ABORT", 3), ("COMPLETE_COMMIT", 4),
        ("COMPLETE_ABORT", 5), ("DEAD", 6), ("PREPARE_EPOCH_FENCE", 7)]
    assert TransactionState.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"


@pytest.mark.rule("TX-15")
def test_tv1_commit_writes_markers_then_completes(h):
    """TX-15, TX-18: Ongoing -> PrepareCommit -> markers on every data partition -> CompleteCommit."""
    got = open_txn(h, tps=(TP1, TP0))
    resp = h.coord.end_txn("tx", got.producer_id, got.producer_epoch, commit=True, api_version=3)
    assert resp == got  # TV1: no bump
    assert h.state("tx") == "PREPARE_COMMIT" and h.markers.calls == []  # answered before the markers
    h.flush()
    assert h.markers.calls[-1].partitions == (TP0, TP1) and h.markers.calls[-1].commit
    assert h.markers.calls[-1].producer_epoch == got.producer_epoch
    assert h.state("tx") == "COMPLETE_COMMIT"
    assert h.coord.transactions["tx"].partitions == set()


@pytest.mark.rule("TX-15")
def test_tv1_end_txn_matrix(h):
    """TX-15: same-result retry in Complete* succeeds; opposite result or Empty -> INVALID_TXN_STATE;
    pid mismatch -> INVALID_PRODUCER_ID_MAPPING; epoch mismatch -> PRODUCER_FENCED (v2+),
    INVALID_PRODUCER_EPOCH (v0-1)."""
    got = h.coord.init_producer_id("tx", 60_000)
    pid, ep = got.producer_id, got.producer_epoch
    end = h.coord.end_txn
    assert code_of(end, "tx", pid, ep, True, 3) == E.INVALID_TXN_STATE  # Empty
    assert code_of(end, "tx", pid, ep, False, 3) == E.INVALID_TXN_STATE
    assert code_of(end, "unknown", pid, ep, True, 3) == E.INVALID_PRODUCER_ID_MAPPING
    assert code_of(end, "", pid, ep, True, 3) == E.INVALID_REQUEST
    h.coord.add_partitions("tx", pid, ep, [TP0])
    assert code_of(end, "tx", pid + 1, ep, True, 3) == E.INVALID_PRODUCER_ID_MAPPING
    assert code_of(end, "tx", pid, ep + 1, True, 2) == E.PRODUCER_FENCED
    assert code_of(end, "tx", pid, ep + 1, True, 1) == E.INVALID_PRODUCER_EPOCH
    assert h.state("tx") == "ONGOING"
    end("tx", pid, ep, False, 3)
    h.flush()
    assert end("tx", pid, ep, False, 3) == got  # retry
    assert code_of(end, "tx", pid, ep, True, 3) == E.INVALID_TXN_STATE
    assert len(h.markers.calls) == 1


@pytest.mark.rule("TX-15")
def test_failed_marker_keeps_prepare_and_retries_on_the_clock(h):
    """TX-15: while a marker fails the transaction stays in PrepareCommit, pending CompleteCommit,
    so an EndTxn of either result is CONCURRENT_TRANSACTIONS (endTransactionWithTV1 checks the
    pending transition before the state); only failed partitions are retried."""
    got = open_txn(h, tps=(TP0, TP1))
    h.markers.failures[TP1] = 2
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 3)
    h.flush()
    assert h.state("tx") == "PREPARE_COMMIT"
    assert code_of(h.coord.end_txn, "tx", got.producer_id, got.producer_epoch, True, 3) == E.CONCURRENT_TRANSACTIONS
    assert code_of(h.coord.end_txn, "tx", got.producer_id, got.producer_epoch, False, 3) == E.CONCURRENT_TRANSACTIONS
    h.advance(MARKER_RETRY_BACKOFF_MS - 1)
    assert len(h.markers.calls) == 1
    h.advance(1)
    assert h.markers.calls[-1].partitions == (TP1,) and h.state("tx") == "PREPARE_COMMIT"
    h.advance(MARKER_RETRY_BACKOFF_MS)
    assert h.state("tx") == "COMPLETE_COMMIT"
    assert [c.partitions for c in h.markers.calls] == [(TP0, TP1), (TP1,), (TP1,)]


@pytest.mark.rule("TX-16")
def test_tv2_end_bumps_epoch_and_retry_is_recognised(h):
    """TX-16: EndTxn v5 bumps the epoch, returns it, markers carry it; a retry with epoch - 1
    succeeds without another bump."""
    got = h.coord.init_producer_id("tx", 60_000)
    h.coord.verify_append(got.producer_id, got.producer_epoch, TP0, 12, False)
    resp = h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 5)
    assert resp.producer_id == got.producer_id and resp.producer_epoch == got.producer_epoch + 1
    h.flush()
    assert h.markers.calls[-1].producer_epoch == resp.producer_epoch
    assert h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 5) == resp  # retry
    assert h.coord.transactions["tx"].producer_epoch == resp.producer_epoch
    assert code_of(h.coord.end_txn, "tx", got.producer_id, got.producer_epoch, False, 5) == E.INVALID_TXN_STATE


@pytest.mark.rule("TX-16")
def test_tv2_end_matrix(h):
    """TX-16: Empty+abort bumps, Empty+commit INVALID_TXN_STATE, CompleteAbort+abort(current)
    bumps, +commit INVALID_TXN_STATE, CompleteCommit+abort(current) bumps, wrong epoch fenced."""
    got = h.coord.init_producer_id("tx", 60_000)
    pid, ep = got.producer_id, got.producer_epoch
    end = h.coord.end_txn
    assert code_of(end, "tx", pid, ep, True, 5) == E.INVALID_TXN_STATE
    r1 = end("tx", pid, ep, False, 5)
    h.flush()
    assert r1.producer_epoch == ep + 1 and h.state("tx") == "COMPLETE_ABORT"
    assert h.markers.calls == []  # nothing was in the transaction
    assert end("tx", pid, ep, False, 5) == r1  # retry
    assert code_of(end, "tx", pid, r1.producer_epoch, True, 5) == E.INVALID_TXN_STATE
    r2 = end("tx", pid, r1.producer_epoch, False, 5)
    h.flush()
    assert r2.producer_epoch == ep + 2
    assert code_of(end, "tx", pid, ep + 7, False, 5) == E.PRODUCER_FENCED
    h.coord.verify_append(pid, r2.producer_epoch, TP0, 12, False)
    r3 = end("tx", pid, r2.producer_epoch, True, 5)
    h.flush()
    assert h.state("tx") == "COMPLETE_COMMIT"
    assert code_of(end, "tx", pid, r2.producer_epoch, False, 5) == E.INVALID_TXN_STATE  # abort retry of commit
    r4 = end("tx", pid, r3.producer_epoch, False, 5)
    h.flush()
    assert r4.producer_epoch == r3.producer_epoch + 1 and h.state("tx") == "COMPLETE_ABORT"


@pytest.mark.rule("TX-16")
def test_tv2_epoch_overflow_rotates_producer_id(h):
    """TX-16: ending at an exhausted epoch writes markers at 32767 and returns a new id, epoch 0;
    a retry with the old id and epoch is still a success."""
    got = h.coord.init_producer_id("tx", 60_000)
    h.coord.transactions["tx"].producer_epoch = MAX_EPOCH
    h.coord.verify_append(got.producer_id, MAX_EPOCH, TP0, 12, False)
    resp = h.coord.end_txn("tx", got.producer_id, MAX_EPOCH, True, 5)
    assert resp.producer_id != got.producer_id and resp.producer_epoch == 0
    h.flush()
    call = h.markers.calls[-1]
    assert (call.producer_id, call.producer_epoch) == (got.producer_id, MAX_EPOCH + 1)
    meta = h.coord.transactions["tx"]
    assert (meta.producer_id, meta.producer_epoch, meta.state) == (resp.producer_id, 0, TransactionState.COMPLETE_COMMIT)
    assert h.coord.end_txn("tx", got.producer_id, MAX_EPOCH, True, 5) == resp
    assert h.coord.producer_transactional_id(resp.producer_id) == "tx"


@pytest.mark.rule("TX-17")
def test_timeout_aborts_on_the_coordinators_scan_with_epoch_bump(h):
    """TX-17: an Ongoing transaction whose start + timeout is before now is aborted by the next
    scan (TransactionCoordinator.abortTimedOutTransactions every
    transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s, from start-up;
    TransactionStateManager.timedOutTransactions), not at the exact deadline; the bumped epoch
    fences the producer."""
    got = open_txn(h, timeout_ms=10_000)
    h.advance(10_000)  # the scan at 10 s: start + timeout is not before now
    assert h.state("tx") == "ONGOING"
    h.advance(9_999)  # past the deadline, but no scan yet
    assert h.state("tx") == "ONGOING" and h.markers.calls == []
    h.advance(1)  # the scan at 20 s
    assert h.state("tx") == "COMPLETE_ABORT"
    call = h.markers.calls[-1]
    assert (call.commit, call.producer_epoch, call.partitions) == (False, got.producer_epoch + 1, (TP0,))
    assert code_of(h.coord.end_txn, "tx", got.producer_id, got.producer_epoch, True, 3) == E.PRODUCER_FENCED


@pytest.mark.rule("TX-17")
def test_scan_interval_follows_the_config():
    """TX-17: the scan runs at the configured interval (here 1 s) on the broker clock."""
    h = TxnHarness(abort_timed_out_interval_ms=1_000)
    open_txn(h, timeout_ms=2_500)
    h.advance(2_999)
    assert h.state("tx") == "ONGOING"
    h.advance(1)
    assert h.state("tx") == "COMPLETE_ABORT"


@pytest.mark.rule("TX-17")
def test_tv2_timeout_keeps_the_old_epoch_so_init_with_it_is_a_retry(h):
    """TX-17: under TV2 the coordinator's fence bumps once and keeps the old epoch as last producer
    epoch (TransactionCoordinator.endTransaction with isEpochFence, TransactionMetadata
    .prepareAbortOrCommit), so InitProducerId(pid, old epoch) is a retry answered with the current
    epoch (prepareIncrementProducerEpoch), not PRODUCER_FENCED; markers are TV2 at the new epoch."""
    got = open_txn(h, timeout_ms=1_000)
    h.advance(10_000)
    meta = h.coord.transactions["tx"]
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (
        TransactionState.COMPLETE_ABORT, got.producer_epoch + 1, got.producer_epoch)
    again = h.coord.init_producer_id("tx", 60_000, 5, got.producer_id, got.producer_epoch)
    assert (again.producer_id, again.producer_epoch) == (got.producer_id, got.producer_epoch + 1)
    assert h.coord.transactions["tx"].producer_epoch == got.producer_epoch + 1  # no second bump


@pytest.mark.rule("TX-17")
def test_tv1_timeout_fences_the_old_epoch():
    """TX-17: with transaction.version below 2 the fence is endTransactionWithTV1's: the bumped
    epoch with no last epoch, so InitProducerId(pid, old epoch) is PRODUCER_FENCED."""
    h = TxnHarness(transaction_version=1)
    got = open_txn(h, timeout_ms=1_000)
    h.advance(10_000)
    meta = h.coord.transactions["tx"]
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch) == (
        TransactionState.COMPLETE_ABORT, got.producer_epoch + 1, -1)
    assert code_of(h.coord.init_producer_id, "tx", 60_000, 5, got.producer_id, got.producer_epoch) == \
        E.PRODUCER_FENCED


@pytest.mark.rule("TX-17")
def test_ended_transaction_does_not_time_out(h):
    """TX-17: the timeout only applies to an Ongoing transaction; a new one is timed from its own start."""
    got = open_txn(h, timeout_ms=10_000)
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 3)
    h.advance(5_000)
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP1])
    h.advance(6_000)  # the scan at 10 s: the first transaction ended, the second started at 5 s
    assert h.state("tx") == "ONGOING"
    h.advance(4_000)  # 15 s: past the second one's deadline, before the next scan
    assert h.state("tx") == "ONGOING"
    h.advance(5_000)  # the scan at 20 s
    assert h.state("tx") == "COMPLETE_ABORT"
    assert [c.commit for c in h.markers.calls] == [True, False]


@pytest.mark.rule("TX-18")
def test_markers_skip_offsets_partition_and_carry_coordinator_epoch(h):
    """TX-18: markers go to every data partition of the transaction with the coordinator epoch;
    the group's offsets partition is settled through the offset store instead."""
    got = open_txn(h, tps=(TP0,))
    h.coord.add_offsets("tx", got.producer_id, got.producer_epoch, "g")
    assert (OFFSETS_TOPIC, offsets_partition_for("g")) in h.coord.transactions["tx"].partitions
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 3)
    h.flush()
    call = h.markers.calls[-1]
    assert call.partitions == (TP0,) and call.coordinator_epoch == h.coord.coordinator_epoch


# --- offsets -----------------------------------------------------------------------------------
@pytest.mark.rule("TX-23")
def test_txn_offsets_visible_only_after_commit(h):
    """TX-23: TxnOffsetCommit stages offsets (RequireStable sees them pending) until the commit."""
    got = open_txn(h)
    h.coord.add_offsets("tx", got.producer_id, got.producer_epoch, "g")
    h.coord.txn_offset_commit("tx", got.producer_id, got.producer_epoch, "g", {("in", 0): CommittedOffset(42)}, 3)
    assert h.offsets.get("g", "in", 0) is None
    assert h.coord.is_offset_pending("g", "in", 0)
    h.markers.failures[TP0] = 1
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 3)
    assert h.offsets.get("g", "in", 0) is None  # markers not all written yet
    h.advance(MARKER_RETRY_BACKOFF_MS)
    assert h.offsets.get("g", "in", 0).offset == 42
    assert not h.coord.is_offset_pending("g", "in", 0)


@pytest.mark.rule("TX-23")
def test_aborted_txn_offsets_vanish(h):
    """TX-23: an abort drops the staged offsets."""
    got = open_txn(h)
    h.coord.add_offsets("tx", got.producer_id, got.producer_epoch, "g")
    h.coord.txn_offset_commit("tx", got.producer_id, got.producer_epoch, "g", {("in", 0): CommittedOffset(7)}, 3)
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, False, 3)
    assert h.coord.is_offset_pending("g", "in", 0)  # until the markers
    h.flush()
    assert h.offsets.get("g", "in", 0) is None and not h.coord.is_offset_pending("g", "in", 0)


@pytest.mark.rule("TX-23")
@pytest.mark.parametrize(("version", "expected"), [(3, E.INVALID_TXN_STATE), (4, E.TRANSACTION_ABORTABLE)])
def test_txn_offset_commit_without_add_offsets_before_v5_fails(h, version, expected):
    """TX-23, TX-13: before v5 the offsets partition must have been added (AddOffsetsToTxn)."""
    got = open_txn(h)
    assert code_of(h.coord.txn_offset_commit, "tx", got.producer_id, got.producer_epoch, "g",
                   {("in", 0): CommittedOffset(1)}, version) == expected
    assert not h.coord.is_offset_pending("g", "in", 0)


@pytest.mark.rule("TX-23")
def test_txn_offset_commit_v5_adds_offsets_partition_under_tv2(h):
    """TX-23: with TV2 (v5+) AddOffsetsToTxn is skipped and the broker adds the partition itself."""
    got = h.coord.init_producer_id("tx", 60_000)
    h.coord.txn_offset_commit("tx", got.producer_id, got.producer_epoch, "g", {("in", 0): CommittedOffset(9)}, 5)
    assert (OFFSETS_TOPIC, offsets_partition_for("g")) in h.coord.transactions["tx"].partitions
    resp = h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 5)
    assert resp.producer_epoch == got.producer_epoch + 1
    h.flush()
    assert h.offsets.get("g", "in", 0).offset == 9


@pytest.mark.rule("TX-24")
def test_request_versions_choose_the_flow_whatever_the_feature_level(h):
    """TX-24: clients pick TV1 or TV2 from the finalized feature; the coordinator follows the
    request versions they then send (Kafka's transactionVersionFor*): on a level-1 cluster a
    TV1 client (Produce v11, EndTxn v4) gets the TV1 flow, and an EndTxn v5 still bumps."""
    h.set_config(transaction_version=1)
    got = h.coord.init_producer_id("tx", 60_000)
    assert h.coord.transactions["tx"].transaction_version == 1  # new metadata records the level
    assert h.coord.verify_append(got.producer_id, got.producer_epoch, TP0, 11, False) == E.TRANSACTION_ABORTABLE
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP0], api_version=3)
    assert h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 4) == got
    h.flush()
    assert h.coord.transactions["tx"].transaction_version == 0
    h.coord.add_partitions("tx", got.producer_id, got.producer_epoch, [TP0], api_version=3)
    bumped = h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 5)
    assert bumped.producer_epoch == got.producer_epoch + 1
    assert h.coord.transactions["tx"].transaction_version == 2


@pytest.mark.rule("TX-24")
def test_tv_for_request_follows_request_versions():
    """TX-24, TX-16: EndTxn v5+, AddPartitionsToTxn v4+, Produce v12+, TxnOffsetCommit v5+ are TV2."""
    assert [tv_for_request("end_txn", v) for v in (4, 5)] == [0, 2]
    assert [tv_for_request("add_partitions", v) for v in (3, 4)] == [0, 2]
    assert [tv_for_request("produce", v) for v in (11, 12)] == [0, 2]
    assert [tv_for_request("txn_offset_commit", v) for v in (4, 5)] == [0, 2]


# --- expiration, describe, list, persistence ------------------------------------------------------
def test_idle_transactional_id_expires():
    """transactional.id.expiration.ms: an idle Empty/Complete id is forgotten; an Ongoing one is not."""
    h = TxnHarness(transactional_id_expiration_ms=50_000, transaction_max_timeout_ms=900_000)
    got = h.coord.init_producer_id("idle", 60_000)
    busy = h.coord.init_producer_id("busy", 900_000)
    h.advance(10_000)
    h.coord.add_partitions("busy", busy.producer_id, busy.producer_epoch, [TP0])
    h.advance(40_000)
    assert "idle" not in h.coord.transactions and h.coord.producer_transactional_id(got.producer_id) is None
    assert h.state("busy") == "ONGOING"
    h.advance(100_000)
    assert h.state("busy") == "ONGOING"
    assert code_of(h.coord.end_txn, "idle", got.producer_id, 0, True, 3) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.coord.init_producer_id("idle", 60_000).producer_epoch == 0


def test_describe_and_list_transactions(h):
    """DescribeTransactions and ListTransactions with state, producer id and duration filters."""
    a = open_txn(h, "a", tps=(TP1, TP0))
    h.advance(1_000)
    b = open_txn(h, "b")
    h.coord.init_producer_id("c", 60_000)
    d = h.coord.describe_transaction("a")
    assert (d.state, d.start_ms, d.partitions, d.producer_id) == ("Ongoing", START_MS, (TP0, TP1), a.producer_id)
    assert code_of(h.coord.describe_transaction, "zz") == E.TRANSACTIONAL_ID_NOT_FOUND
    listed, unknown = h.coord.list_transactions()
    assert [t.transactional_id for t in listed] == ["a", "b", "c"] and unknown == []
    listed, unknown = h.coord.list_transactions(states=["Ongoing", "Bogus"])
    assert [t.transactional_id for t in listed] == ["a", "b"] and unknown == ["Bogus"]
    listed, _ = h.coord.list_transactions(producer_ids=[b.producer_id])
    assert [t.transactional_id for t in listed] == ["b"]
    listed, _ = h.coord.list_transactions(states=["Ongoing"], duration_ms=500)
    assert [t.transactional_id for t in listed] == ["a"]


def test_describe_producers_reports_partition_state():
    """DescribeProducers: epoch, last sequence and timestamp, open transaction start per producer."""
    part = SimpleNamespace(topic="t", index=0, producers=ProducerStateManager())
    info = BatchInfo(0, 2, 3, 90, 0, 0, 5, 5, 77, 3, 10, True, False, 0)
    part.producers.record(info, 40, 5)
    (p,) = describe_producers(part)
    assert (p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp, p.current_txn_start_offset) == \
        (77, 3, 12, 5, 40)


def test_snapshot_restore_round_trip_and_prepare_commit_completes(h):
    """A PrepareCommit found on restore writes its markers again (new coordinator epoch) and completes,
    staged offsets included; Ongoing keeps its timeout."""
    got = open_txn(h, "c", tps=(TP0,))
    h.coord.add_offsets("c", got.producer_id, got.producer_epoch, "g")
    h.coord.txn_offset_commit("c", got.producer_id, got.producer_epoch, "g", {("in", 0): CommittedOffset(5)}, 3)
    ongoing = open_txn(h, "o", tps=(TP1,), timeout_ms=20_000)
    h.markers.fail_all = True
    h.coord.end_txn("c", got.producer_id, got.producer_epoch, True, 3)
    snap = h.coord.snapshot()
    snap = json.loads(json.dumps(snap))
    h.coord.on_close()
    h.markers.fail_all = False
    h.markers.calls.clear()
    fresh = h.new_coordinator()
    fresh.restore(snap)
    assert fresh.coordinator_epoch == 1
    assert fresh.transactions["c"].state is TransactionState.COMPLETE_COMMIT
    assert h.markers.calls[0].partitions == (TP0,) and h.markers.calls[0].coordinator_epoch == 1
    assert h.offsets.get("g", "in", 0).offset == 5
    assert fresh.transactions["o"].state is TransactionState.ONGOING
    h.advance(30_000)  # the fresh coordinator's scan at 30 s: started at 0 with 20 s
    assert fresh.transactions["o"].state is TransactionState.COMPLETE_ABORT
    assert fresh.transactions["o"].producer_epoch == ongoing.producer_epoch + 1
    assert fresh.producer_transactional_id(got.producer_id) == "c"


def test_no_move_out_of_dead_and_prepare_states_leave_only_by_markers():
    """The table has no move out of Dead, and Prepare* leave only when their markers are written."""
    assert not [k for k in MOVES if k[0] is TransactionState.DEAD]
    assert {t for (s, t) in MOVES if s in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)} == \
        {Trigger.MARKERS_DONE}


def test_illegal_move_raises_and_leaves_state(h):
    """A move missing from the table raises IllegalTransition, state unchanged."""
    h.coord.init_producer_id("tx", 60_000)
    meta = h.coord.transactions["tx"]
    with pytest.raises(IllegalTransition):
        h.coord._move(meta, Trigger.MARKERS_DONE)
    assert meta.state is TransactionState.EMPTY


def test_deleted_topic_releases_pending_markers(h):
    """Markers stop waiting for a deleted topic's partitions; the transaction then completes."""
    got = open_txn(h, tps=(TP0, ("u", 0)))
    h.markers.failures[TP0] = 99
    h.coord.end_txn("tx", got.producer_id, got.producer_epoch, True, 3)
    h.flush()
    assert h.state("tx") == "PREPARE_COMMIT"
    h.coord.on_topic_deleted(SimpleNamespace(name="t"))
    assert h.state("tx") == "COMPLETE_COMMIT"
    stats = h.coord.statistics()
    assert (stats.transactional_ids, stats.by_state, stats.pending_markers) == (1, {"CompleteCommit": 1}, 0)


# --- every (state, request) pair (h2-style) --------------------------------------------------------
def _to_state(h: TxnHarness, state: str):
    """Drive ``tx`` into ``state`` with real requests; returns its current (pid, epoch)."""
    got = h.coord.init_producer_id("tx", 60_000)
    pid, ep = got.producer_id, got.producer_epoch
    if state == "EMPTY":
        return pid, ep
    h.coord.add_partitions("tx", pid, ep, [TP0])
    if state == "ONGOING":
        return pid, ep
    commit = state.endswith("COMMIT")
    h.coord.end_txn("tx", pid, ep, commit, 3)
    if state.startswith("COMPLETE"):
        h.flush()  # Prepare*: the window before the markers (TX-15)
    return pid, ep


REQUESTS = {
    "init": lambda c, pid, ep: c.init_producer_id("tx", 60_000),
    "init_current": lambda c, pid, ep: c.init_producer_id("tx", 60_000, 4, pid, ep),
    "add_v3": lambda c, pid, ep: c.add_partitions("tx", pid, ep, [TP1], api_version=3),
    "add_v5": lambda c, pid, ep: c.add_partitions("tx", pid, ep, [TP1], api_version=5),
    "produce_v12": lambda c, pid, ep: c.verify_append(pid, ep, TP1, 12, False),
    "produce_v11": lambda c, pid, ep: c.verify_append(pid, ep, TP1, 11, False),
    "verify": lambda c, pid, ep: c.verify_partitions("tx", pid, ep, [TP1]),
    "add_offsets": lambda c, pid, ep: c.add_offsets("tx", pid, ep, "g"),
    "offsets_v3": lambda c, pid, ep: c.txn_offset_commit("tx", pid, ep, "g", {("in", 0): CommittedOffset(1)}, 3),
    "offsets_v5": lambda c, pid, ep: c.txn_offset_commit("tx", pid, ep, "g", {("in", 0): CommittedOffset(1)}, 5),
    "commit_v3": lambda c, pid, ep: c.end_txn("tx", pid, ep, True, 3),
    "abort_v3": lambda c, pid, ep: c.end_txn("tx", pid, ep, False, 3),
    "commit_v5": lambda c, pid, ep: c.end_txn("tx", pid, ep, True, 5),
    "abort_v5": lambda c, pid, ep: c.end_txn("tx", pid, ep, False, 5),
    "stale_epoch_commit": lambda c, pid, ep: c.end_txn("tx", pid, ep - 1, True, 3),
    "wrong_pid_add": lambda c, pid, ep: c.add_partitions("tx", pid + 100, ep, [TP1]),
}


@pytest.mark.rule("TX-14")
@pytest.mark.parametrize("state", ["EMPTY", "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT",
                                   "COMPLETE_ABORT"])
@pytest.mark.parametrize("request_name", sorted(REQUESTS))
def test_every_state_and_request_is_a_table_move_or_an_error_without_change(state, request_name):
    """TX-14: from every state each request either moves along the table or raises a typed Kafka
    error (or answers a per-partition code) with the transaction unchanged. The one error that
    moves is InitProducerId over an Ongoing transaction (TX-3: fence, abort, retry)."""
    h = TxnHarness()
    pid, ep = _to_state(h, state)
    assert h.state("tx") == state
    moves = []
    h.coord.on_move.append(lambda tid, old, trig, new: moves.append((old, trig, new)))
    before = json.dumps(h.coord.transactions["tx"].to_json(), sort_keys=True)
    try:
        result = REQUESTS[request_name](h.coord, pid, ep)
    except KafkaError as exc:
        assert exc.code in set(E), exc
        result = exc.code
    failed = (isinstance(result, int) and result != 0) or (
        isinstance(result, dict) and any(result.values()))
    fence = state == "ONGOING" and request_name.startswith("init")
    if fence:
        assert result == E.CONCURRENT_TRANSACTIONS and h.state("tx") == "PREPARE_ABORT"
    elif failed or not moves:
        assert moves == []
        assert json.dumps(h.coord.transactions["tx"].to_json(), sort_keys=True) == before
    for old, trig, new in moves:
        assert MOVES[(old, trig)] is new
    if moves:
        assert moves[0][0].name == state
        assert h.state("tx") == moves[-1][2].name


@pytest.mark.rule("TX-17")
def test_inspect_shows_timeout_deadline_of_open_transactions(h):
    """TX-17: the control view names when an Ongoing transaction will be aborted."""
    open_txn(h, "a", timeout_ms=7_000)
    h.coord.init_producer_id("b", 60_000)
    rows = {r["transactional_id"]: r for r in h.coord.inspect()}
    assert rows["a"]["timeout_deadline_ms"] == START_MS + 7_000 and rows["a"]["state_name"] == "Ongoing"
    assert rows["b"]["timeout_deadline_ms"] is None and rows["a"]["partitions"] == [["t", 0]]
    json.dumps(rows)
