"""Per-partition producer state for idempotent and transactional produce (KIP-98).

For each producer id the leader keeps the current epoch and the metadata of the last five
batches (TX-6); a retried batch is recognised and answered with its original offset instead
of being appended twice. Sequence and epoch rules are TX-7 and TX-8; batch checks TX-10.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kwire.protocol.error_codes import ErrorCode
from kwire.records import BatchInfo

__all__ = ["ProducerStateManager", "ProducerEntry", "Duplicate", "NUM_BATCHES_TO_RETAIN"]

NUM_BATCHES_TO_RETAIN = 5  # TX-6: ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_INT32_MAX = 2**31 - 1


@dataclass(slots=True, frozen=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    txn_first_offset: int | None = None  # first offset of the open transaction, if any
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


@dataclass(slots=True, frozen=True)
class Duplicate:
    """TX-6: the batch was already appended; answer success with its original offset."""

    base_offset: int
    timestamp: int


def _next_seq(seq: int) -> int:
    return 0 if seq == _INT32_MAX else seq + 1  # RB-3 wrap


class ProducerStateManager:
    """The producer entries of one partition."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, info: BatchInfo) -> Duplicate | ErrorCode | None:
        """Validate a client batch against producer state; None means append it."""
        pid = info.producer_id
        if pid < 0:
            return None
        if info.base_sequence < 0:
            return ErrorCode.INVALID_RECORD  # TX-10: a batch with a producer id needs a sequence
        entry = self.entries.get(pid)
        if entry is None:
            return None  # TX-8: no state, any sequence is accepted
        epoch = info.producer_epoch
        if epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH  # TX-7
        if epoch == entry.epoch:
            for b in entry.batches:  # TX-6
                if b.first_seq == info.base_sequence and b.last_seq == info.last_sequence:
                    return Duplicate(b.base_offset, b.timestamp)
            last = entry.last_seq
            if last is not None and info.base_sequence != _next_seq(last):
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # TX-8
        elif info.base_sequence != 0 and entry.epoch >= 0:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # TX-8: a new epoch starts at 0
        if not info.is_transactional and entry.txn_first_offset is not None:
            return ErrorCode.INVALID_TXN_STATE  # TX-10
        return None

    def record(self, info: BatchInfo, base_offset: int, timestamp: int) -> ProducerEntry | None:
        """Remember an appended batch (after ``check`` accepted it)."""
        pid = info.producer_id
        if pid < 0:
            return None
        entry = self.entries.get(pid)
        if entry is None or info.producer_epoch > entry.epoch:
            old = entry
            entry = ProducerEntry(pid, info.producer_epoch)
            if old is not None:
                entry.txn_first_offset = old.txn_first_offset
                entry.coordinator_epoch = old.coordinator_epoch
            self.entries[pid] = entry
        last_offset = base_offset + (info.last_offset - info.base_offset)
        entry.batches.append(BatchMeta(info.base_sequence, info.last_sequence, base_offset, last_offset, timestamp))
        if info.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = base_offset
        return entry

    def fence(self, producer_id: int, epoch: int) -> None:
        """A newer epoch reached the partition (a transaction marker): older ones are rejected
        from now on and the batches of the old epoch are forgotten."""
        entry = self.entries.get(producer_id)
        if entry is None:
            self.entries[producer_id] = ProducerEntry(producer_id, epoch)
        elif epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
