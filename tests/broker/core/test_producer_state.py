"""ProducerStateManager alone: what it retains (TX-6), how epochs move (TX-7, fence)."""

from __future__ import annotations

import pytest

from kwire.broker.core.producer_state import NUM_BATCHES_TO_RETAIN, Duplicate, ProducerStateManager
from kwire.protocol.error_codes import ErrorCode
from kwire.records import BatchBuilder, validate_and_assign
from kwire.records.batch import BatchInfo


def info(pid: int, epoch: int, seq: int, n: int = 1, base: int = 0, txn: bool = False) -> BatchInfo:
    b = BatchBuilder(0, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)
    for _ in range(n):
        b.append(b"v", timestamp_ms=1)
    return validate_and_assign(bytearray(b.build()), base, 0)


@pytest.mark.rule("TX-6")
def test_tx6_only_the_last_five_batches_are_recognised_as_duplicates() -> None:
    """TX-6: five batches are retained; a retry of an older one is out of order (TX-8)."""
    m = ProducerStateManager()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        i = info(1, 0, seq, base=seq)
        assert m.check(i) is None
        m.record(i, seq, 1)
    assert m.check(info(1, 0, NUM_BATCHES_TO_RETAIN)) == Duplicate(NUM_BATCHES_TO_RETAIN, 1)
    assert m.check(info(1, 0, 1)) == Duplicate(1, 1)
    assert m.check(info(1, 0, 0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_fence_raises_the_epoch_and_forgets_the_old_epochs_batches() -> None:
    m = ProducerStateManager()
    m.record(info(1, 0, 0), 0, 1)
    m.fence(1, 1)
    assert m.entries[1].epoch == 1 and not m.entries[1].batches
    assert m.check(info(1, 0, 1)) == ErrorCode.INVALID_PRODUCER_EPOCH
    m.fence(1, 0)  # never backwards
    assert m.entries[1].epoch == 1
    m.fence(2, 3)  # an unknown producer gets an entry at that epoch
    assert m.entries[2].epoch == 3


def test_a_new_epoch_keeps_the_open_transaction_and_the_coordinator_epoch() -> None:
    m = ProducerStateManager()
    e = m.record(info(1, 0, 0, txn=True), 10, 1)
    assert e is not None and e.txn_first_offset == 10
    e.coordinator_epoch = 4
    e2 = m.record(info(1, 1, 0, txn=True), 11, 1)
    assert e2 is not None and (e2.epoch, e2.txn_first_offset, e2.coordinator_epoch) == (1, 10, 4)
