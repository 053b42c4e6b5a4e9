"""A share partition: the records of one (group, topic-partition) that share consumers acquire and
acknowledge (KIP-932, KIP-1222). Sans-I/O: time from the injected clock, timers from an injected
scheduler, records from a narrow log reader.

Theory of operation
-------------------
* **Window.** The share-partition start offset (SPSO) is the lowest unfinished offset; the
  *in-flight* region holds every offset from there to the last offset ever acquired (SPEO,
  ST-2). Offsets before SPSO are finished; offsets after SPEO have never been delivered.
* **Batches.** The in-flight region is a sorted map of in-flight batches keyed by first offset.
  A batch is tracked whole (one state, delivery count, holder and lock) until something needs
  different states inside it; then it is split, irreversibly, into one entry per offset, each
  inheriting the batch lock's deadline (ST-1).
* **The table.** Every state change goes through ``_MOVES`` (unconditional rows) or one of the
  named choice functions (delivery limit reached, offset below SPSO): ``next_state``. A pair
  missing from both is ``INVALID_RECORD_STATE`` and leaves the record as it was (ST-4).
* **Failure archiving (the DLQ hook).** A REJECT, or a release at the delivery-count limit,
  moves the record to ARCHIVING and hands it to ``failure_archiver`` (share.version 2's DLQ
  writer, issue 10). The archiver calls ``complete_archiving`` when it is done, successful or
  not, and the record becomes ARCHIVED; without an archiver that happens at once. ARCHIVING
  holds the SPSO back (ST-7). GAP, log-start moves and aborted data archive directly (DLQ-3).
* **Acknowledgements** are planned first against the current state (and the plan's own earlier
  steps), then committed; a failure anywhere leaves the partition untouched (AK-7..AK-12).
* **Locks.** Each acquisition schedules a deadline ``lock duration`` from now (AQ-12). Expiry,
  release and session release go through the same release choice (AQ-11). RENEW reschedules
  the lock from now and changes nothing else (RN-4).
* **Reading.** Acquisition walks the log's batches (``ShareLog``), so new in-flight batches end
  on log-batch boundaries (AQ-3, AQ-4). Under read_committed it stops at the last stable offset
  and archives the data of aborted transactions (AQ-9).
* **The lock limit is soft** (AQ-2): a fetch takes min(MaxRecords, limit - in flight) records,
  rounded up to the end of the log batch; in record-limit mode the rest of that batch is in
  flight AVAILABLE with delivery count 0. At the limit only AVAILABLE records inside the window
  are acquired. A parked fetch is woken when records become AVAILABLE or the SPSO moves.
* **Compaction** (AQ-10): a log read starts at the first batch the log still has, so holes are
  never acquired; the SPSO steps over holes between in-flight batches, and AVAILABLE records
  between the fetch offset and that first batch are archived.
* The mock commits state changes at once (ST-5's mock note): nothing is ever "in transition".
  Every change but an acquisition calls ``on_change``; with a data dir the share coordinator
  writes the new state before the request is answered, so the write and the answer keep ST-5's order.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any, Protocol

from kwire.broker.core.share_config import AutoOffsetReset, IsolationLevel, ShareConfig
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = [
    "RecordState", "AckType", "Trigger", "ShareAcquireMode", "AckBatch", "AcquiredRecords", "ArchiveCause",
    "ArchiveRequest", "SharePartition", "SharePartitionStats", "OffsetStats", "ShareLog", "ShareLogBatch",
    "Scheduler", "Cancellable", "next_state", "validate_ack_batches", "MOVES", "CHOICES", "TERMINAL",
    "MAX_ACK_TYPE_V1", "MAX_ACK_TYPE_V2", "SharePartitions",
]

MAX_ACK_TYPE_V1 = 3  # AK-5: ShareFetch/ShareAcknowledge v1 know GAP..REJECT
MAX_ACK_TYPE_V2 = 4  # AK-5: v2 adds RENEW (KIP-1222)


class RecordState(IntEnum):
    """Record states; the values are the persisted ids (ST-3)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # KIP-1191: on its way to the dead-letter queue
    ARCHIVED = 4


TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})  # ST-3


class AckType(IntEnum):
    """Acknowledge type ids on the wire (section 1.7)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class ShareAcquireMode(IntEnum):
    """ShareFetch v2 ``ShareAcquireMode`` (AQ-3)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class Trigger(Enum):
    """What may move a record."""

    ACQUIRE = "acquire"  # a fetch hands it to a member
    ACCEPT = "accept"
    RELEASE = "release"
    REJECT = "reject"
    GAP = "gap"
    RENEW = "renew"
    LOCK_EXPIRY = "lock_expiry"
    SESSION_RELEASE = "session_release"  # share session closed or its connection dropped
    LOG_START_MOVED = "log_start_moved"  # retention, DeleteRecords, compaction (ST-8, AQ-10)
    ABORTED = "aborted"  # data of an aborted transaction under read_committed (AQ-9)
    ARCHIVE_DONE = "archive_done"  # the failure archiver (DLQ writer) finished, either way


_ACK_TRIGGERS = {
    AckType.GAP: Trigger.GAP, AckType.ACCEPT: Trigger.ACCEPT, AckType.RELEASE: Trigger.RELEASE,
    AckType.REJECT: Trigger.REJECT, AckType.RENEW: Trigger.RENEW,
}

S, T = RecordState, Trigger

# Unconditional moves (ST-4). The delivery count changes only on ACQUIRE (AQ-11).
MOVES: dict[tuple[RecordState, Trigger], RecordState] = {
    (S.AVAILABLE, T.ACQUIRE): S.ACQUIRED,  # ST-4: re-fetch, count + 1
    (S.ACQUIRED, T.ACCEPT): S.ACKNOWLEDGED,  # ST-4, AK-12
    (S.ACQUIRED, T.REJECT): S.ARCHIVING,  # ST-4, AK-12: archived for failure (DLQ hook, DLQ-3)
    (S.ACQUIRED, T.GAP): S.ARCHIVED,  # ST-4, AK-12: never through the DLQ
    (S.ACQUIRED, T.RENEW): S.ACQUIRED,  # ST-4, RN-4: the lock restarts, nothing else
    (S.ACQUIRED, T.ABORTED): S.ARCHIVED,  # ST-4, AQ-9
    (S.AVAILABLE, T.LOG_START_MOVED): S.ARCHIVED,  # ST-4, ST-8, AQ-10
    (S.ARCHIVING, T.ARCHIVE_DONE): S.ARCHIVED,  # ST-4: DLQ phase 2 finished (success or failure)
}


@dataclass(slots=True, frozen=True)
class _Facts:
    """What a conditional move looks at."""

    offset: int
    delivery_count: int
    delivery_count_limit: int
    spso: int


def _release_choice(f: _Facts) -> RecordState:
    """ST-4, AQ-11, AQ-12: a released record goes back to AVAILABLE, unless it lies below the SPSO
    (ARCHIVED, ST-8) or has been delivered ``limit`` times (archived for failure: ARCHIVING)."""
    if f.offset < f.spso:
        return RecordState.ARCHIVED
    if f.delivery_count >= f.delivery_count_limit:
        return RecordState.ARCHIVING
    return RecordState.AVAILABLE


# Conditional moves: one named choice per pair.
CHOICES: dict[tuple[RecordState, Trigger], Callable[[_Facts], RecordState]] = {
    (S.ACQUIRED, T.RELEASE): _release_choice,  # AK-12
    (S.ACQUIRED, T.LOCK_EXPIRY): _release_choice,  # AQ-12
    (S.ACQUIRED, T.SESSION_RELEASE): _release_choice,  # SS-4, SS-8
}

del S, T


def next_state(state: RecordState, trigger: Trigger, facts: _Facts | None = None) -> RecordState:
    """The state ``trigger`` moves a record in ``state`` to.

    Raises:
        KafkaError: INVALID_RECORD_STATE when the table has no such move (ST-4).
    """
    target = MOVES.get((state, trigger))
    if target is not None:
        return target
    choice = CHOICES.get((state, trigger))
    if choice is not None:
        return choice(facts if facts is not None else _Facts(0, 0, 1 << 30, 0))
    raise KafkaError(ErrorCode.INVALID_RECORD_STATE, f"a {state.name} record cannot take {trigger.value}")


# --- interfaces -------------------------------------------------------------------------------
class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """``schedule(at_ms, fn)``: run ``fn`` when the clock reaches ``at_ms`` (the core's ``deadlines.at``)."""

    def __call__(self, at_ms: int, fn: Callable[[], None], /) -> Cancellable: ...


class ShareLogBatch(Protocol):
    """One log record batch as acquisition sees it (``log.StoredBatch`` fits)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def data(self) -> Sized: ...


class _Aborted(Protocol):
    @property
    def producer_id(self) -> int: ...
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...


class ShareLog(Protocol):
    """What a share partition reads from its partition's log (``log.PartitionLog`` fits)."""

    @property
    def log_start_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...
    @property
    def batches(self) -> Sequence[ShareLogBatch]: ...
    def index_for(self, offset: int) -> int:
        """Index in ``batches`` of the first batch whose last offset is >= ``offset``."""
        ...
    def aborted_in_range(self, start: int, end: int) -> Sequence[_Aborted]: ...
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None: ...


class _Clock(Protocol):
    def now_ms(self) -> int: ...


# --- values in and out ------------------------------------------------------------------------
@dataclass(slots=True, frozen=True)
class AckBatch:
    """One acknowledgement batch: a range and one type for all of it or one per offset (AK-4)."""

    first_offset: int
    last_offset: int
    ack_types: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class AcquiredRecords:
    """A range the member now holds (AQ-5)."""

    first_offset: int
    last_offset: int
    delivery_count: int


class ArchiveCause(Enum):
    REJECTED = "rejected"  # REJECT acknowledgement
    DELIVERY_LIMIT = "delivery_limit"  # released (RELEASE, lock expiry, session) at the limit


@dataclass(slots=True, frozen=True)
class ArchiveRequest:
    """Records that went to ARCHIVING; the archiver calls ``partition.complete_archiving(offsets)``."""

    partition: SharePartition
    offsets: tuple[int, ...]
    delivery_counts: tuple[int, ...]
    causes: tuple[ArchiveCause, ...]
    member_id: str | None


@dataclass(slots=True, frozen=True)
class OffsetStats:
    offset: int
    state: RecordState
    delivery_count: int
    member_id: str | None
    lock_deadline_ms: int | None


@dataclass(slots=True, frozen=True)
class SharePartitionStats:
    """A frozen snapshot of a share partition (style.md section 7)."""

    group_id: str
    topic: str
    partition: int
    initialized: bool
    start_offset: int  # SPSO
    end_offset: int  # SPEO
    in_flight_records: int
    offsets: tuple[OffsetStats, ...]
    batches: tuple[tuple[int, int, bool], ...]  # (first, last, split into offsets)


# --- in-flight state --------------------------------------------------------------------------
@dataclass(slots=True)
class _Rec:
    """State of a whole batch or of one offset."""

    state: RecordState
    delivery_count: int
    member_id: str | None = None
    lock: Cancellable | None = None
    deadline_ms: int | None = None


@dataclass(slots=True)
class _Batch:
    first: int
    last: int
    whole: _Rec | None  # batch-tracked
    offsets: dict[int, _Rec] | None = None  # per-offset once split (ST-1)

    def recs(self) -> Iterable[tuple[int, _Rec]]:
        if self.offsets is not None:
            return self.offsets.items()
        assert self.whole is not None
        return ((o, self.whole) for o in range(self.first, self.last + 1))

    def rec(self, offset: int) -> _Rec:
        if self.offsets is not None:
            return self.offsets[offset]
        assert self.whole is not None
        return self.whole


@dataclass(slots=True)
class _Step:
    """One planned acknowledgement move: a whole batch (offset None) or one offset."""

    batch: _Batch
    offset: int | None
    trigger: Trigger


def validate_ack_batches(batches: Sequence[AckBatch], *, version: int, is_renew_ack: bool) -> None:
    """Request-level acknowledgement checks of one partition (AK-1..AK-6).

    Raises:
        KafkaError: INVALID_REQUEST; then none of the partition's batches may be applied.
    """
    prev_last: int | None = None
    top = MAX_ACK_TYPE_V1 if version < 2 else MAX_ACK_TYPE_V2
    for b in batches:
        if b.first_offset > b.last_offset:  # AK-1
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"first offset {b.first_offset} > last {b.last_offset}")
        if prev_last is not None and b.first_offset < prev_last:  # AK-2 (equality is accepted)
            raise KafkaError(ErrorCode.INVALID_REQUEST, "acknowledgement batches are not in ascending order")
        if not b.ack_types:  # AK-3
            raise KafkaError(ErrorCode.INVALID_REQUEST, "no acknowledge types")
        if len(b.ack_types) > 1 and len(b.ack_types) != b.last_offset - b.first_offset + 1:  # AK-4
            raise KafkaError(ErrorCode.INVALID_REQUEST, "acknowledge types do not match the range")
        for t in b.ack_types:
            if t < 0 or t > top:  # AK-5
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"acknowledge type {t} is not valid at v{version}")
            if t == AckType.RENEW and not is_renew_ack:  # AK-6
                raise KafkaError(ErrorCode.INVALID_REQUEST, "RENEW without IsRenewAck")
        prev_last = b.last_offset


class SharePartition:
    """The share state of one (group, topic, partition). See the module docstring."""

    def __init__(self, group_id: str, topic: str, partition: int, log: ShareLog, *, clock: _Clock,
                 schedule: Scheduler, config: Callable[[], ShareConfig],
                 failure_archiver: Callable[[ArchiveRequest], None] | None = None,
                 on_available: Callable[[SharePartition], None] | None = None) -> None:
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.log = log
        self._clock = clock
        self._schedule = schedule
        self._config = config
        # The DLQ hook (issue 10): gets records that entered ARCHIVING; None archives at once.
        self.failure_archiver = failure_archiver
        # Called when a parked ShareFetch may now acquire: records became AVAILABLE again, or the
        # SPSO moved and so made room under the lock limit (AQ-2, AQ-7; upstream notifies the
        # delayed share fetches of the partition after acknowledgements, releases, lock expiry
        # and DLQ archiving).
        self.on_available = on_available
        # Called after a change the share coordinator persists (the data dir's share journal).
        self.on_change: Callable[[SharePartition], None] | None = None
        self.state_epoch = 0  # bumped when the start offset is reset (AlterShareGroupOffsets)
        self.initialized = False
        self.spso = 0
        self._next_new = 0  # first offset never acquired (SPEO + 1, or SPSO when nothing is in flight)
        self._firsts: list[int] = []
        self._batches: dict[int, _Batch] = {}

    # --- offsets ------------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        """SPSO (ST-2)."""
        return self.spso

    @property
    def end_offset(self) -> int:
        """SPEO (ST-2): the last in-flight offset; SPSO when nothing is in flight."""
        return self._next_new - 1 if self._batches and self._next_new > self.spso else self.spso

    def in_flight_count(self) -> int:
        """ST-2: SPEO - SPSO + 1 when the in-flight map is non-empty, else 0."""
        return max(0, self._next_new - self.spso) if self._batches else 0

    def initialize(self, start_offset: int | None = None) -> None:
        """ST-6: set the SPSO from a persisted value, or from ``share.auto.offset.reset``."""
        if self.initialized:
            return
        if start_offset is None:
            cfg = self._config()
            log = self.log
            if cfg.auto_offset_reset is AutoOffsetReset.EARLIEST:
                start_offset = log.log_start_offset
            elif cfg.auto_offset_reset is AutoOffsetReset.BY_DURATION:
                found = log.offset_for_timestamp(self._clock.now_ms() - cfg.auto_offset_reset_duration_ms)
                start_offset = found[0] if found is not None else log.high_watermark
            else:
                start_offset = log.high_watermark
        self.spso = self._next_new = max(start_offset, self.log.log_start_offset)
        self.initialized = True
        self._changed()  # Kafka initialises the share state through the persister

    # --- acquisition --------------------------------------------------------------------------
    def acquire(self, member_id: str, max_records: int, *, batch_size: int | None = None,
                mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
                max_bytes: int | None = None) -> list[AcquiredRecords]:
        """Acquire records for ``member_id`` (AQ-1..AQ-6, AQ-9, AQ-10, ST-9): AVAILABLE records
        inside the window first, then new records from the log. At most ``max_records`` in
        record-limit mode, whole in-flight and log batches in batch-optimized mode; the lock limit
        is soft (AQ-2). Only what one log read at the fetch offset returns is acquired: whole
        batches up to ``max_bytes``, but always the first (KIP-74, AQ-7); ``max_bytes`` 0 reads
        and acquires nothing (SS-11).

        Returns the acquired ranges with their delivery counts, in offset order; the caller serves
        the log batches that hold them.
        """
        self.initialize()
        self.sync_log_start()
        if max_records <= 0 or max_bytes == 0:
            return []
        cfg = self._config()
        upto = self._read_upto(cfg)
        fetch_offset = self._fetch_offset()
        if fetch_offset < self._next_new:  # AQ-10: what the log read at the fetch offset returns first
            self._archive_compacted(fetch_offset, upto)
            fetch_offset = self._fetch_offset()
        # AQ-2 (lastOffsetAndMaxRecordsToAcquire): min(MaxRecords, room under the lock limit). At
        # the limit only AVAILABLE records inside the window are acquired, up to SPEO.
        budget = min(max_records, cfg.partition_max_record_locks - self.in_flight_count())
        read_new = True
        if budget <= 0:
            if fetch_offset >= self._next_new:
                return []  # canAcquireRecords: at the limit with nothing AVAILABLE inside
            budget = min(max_records, self._next_new - fetch_offset)
            read_new = False
        # AQ-7: the log read at the fetch offset (upstream acquires from the fetched batches only).
        # It is walked no further than acquisition can use: the window, then ``budget`` new records.
        stop = self._next_new - 1
        if read_new:
            first_new = self._first_log_batch(self._next_new, upto)
            if first_new is not None:
                stop = max(stop, max(self._next_new, first_new.base_offset) + budget - 1)
        read_last = self._read_last(fetch_offset, upto, max_bytes, stop)
        if read_last is None:
            return []
        now = self._clock.now_ms()
        deadline = now + cfg.record_lock_duration_ms
        out: list[AcquiredRecords] = []
        record_limit = mode is ShareAcquireMode.RECORD_LIMIT
        # 1. AVAILABLE records inside the window, lowest first (ST-9).
        limit = cfg.delivery_count_limit
        threshold = max(2, -(-limit // 2))  # AQ-6: delivery-attempt isolation starts here
        for first in list(self._firsts):
            if budget <= 0:
                break
            b = self._batches[first]
            if b.last < self.spso:
                continue
            if b.first > read_last:
                break  # past what the read returned
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is not RecordState.AVAILABLE:
                    continue
                size = b.last - max(b.first, self.spso) + 1
                if (b.first >= self.spso and b.last <= read_last and (not record_limit or size <= budget)
                        and b.whole.delivery_count < threshold):
                    self._take(b, None, b.whole, member_id, deadline)
                    out.append(AcquiredRecords(b.first, b.last, b.whole.delivery_count))
                    budget -= size
                    continue
                self._split(b)  # ST-1: partial re-acquisition or read, SPSO inside the batch, or AQ-6
            assert b.offsets is not None
            for off, rec in b.offsets.items():
                if (budget <= 0 and record_limit) or off > read_last:
                    break  # record-limit mode stops at MaxRecords; batch-optimized takes the whole batch
                if off < self.spso or rec.state is not RecordState.AVAILABLE:
                    continue
                if rec.delivery_count >= threshold:
                    # AQ-6: a record that keeps failing goes out in a shrinking group (half the
                    # batch per extra attempt, at least 1), alone for its last allowed delivery,
                    # and nothing else joins this acquisition.
                    if not out:
                        group = 1 if limit > 2 and rec.delivery_count + 1 >= limit else \
                            max(1, (b.last - b.first + 1) >> (rec.delivery_count - threshold + 1))
                        for o, r in b.offsets.items():
                            if group <= 0:
                                break
                            if (o >= off and r.state is RecordState.AVAILABLE and r.delivery_count >= threshold
                                    and not (limit > 2 and r.delivery_count + 1 >= limit and o != off)):
                                self._take(b, o, r, member_id, deadline)
                                _append_merged(out, o, r.delivery_count)
                                group -= 1
                    out.sort(key=lambda r: r.first_offset)
                    return out
                self._take(b, off, rec, member_id, deadline)
                _append_merged(out, off, rec.delivery_count)
                budget -= 1
        # 2. New records from the log (AQ-1), for what is left of the budget (AQ-2, AQ-3).
        if budget > 0 and read_new and read_last >= self._next_new:
            out.extend(self._acquire_new(member_id, budget, batch_size, record_limit, deadline, cfg, upto,
                                         read_last))
        out.sort(key=lambda r: r.first_offset)
        return out

    def _read_upto(self, cfg: ShareConfig) -> int:
        """AQ-9: the log is read up to the last stable offset under read_committed, else the high watermark."""
        log = self.log
        return log.last_stable_offset if cfg.isolation_level is IsolationLevel.READ_COMMITTED else log.high_watermark

    def _fetch_offset(self) -> int:
        """ST-9: the lowest AVAILABLE offset in the window, else the first offset never acquired."""
        spso = self.spso
        for first in self._firsts:
            b = self._batches[first]
            if b.last < spso:
                continue
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is RecordState.AVAILABLE:
                    return max(b.first, spso)
                continue
            for off, rec in b.offsets.items():
                if off >= spso and rec.state is RecordState.AVAILABLE:
                    return off
        return self._next_new

    def _first_log_batch(self, offset: int, upto: int) -> ShareLogBatch | None:
        """The first batch a log read at ``offset`` returns (the one holding it, or the next one
        left after compaction), None when the read returns nothing."""
        batches = self.log.batches
        i = self.log.index_for(offset)
        if i >= len(batches) or batches[i].base_offset >= upto:
            return None
        return batches[i]

    def _read_last(self, offset: int, upto: int, max_bytes: int | None, stop: int) -> int | None:
        """The last offset a log read at ``offset`` returns (KIP-74, AQ-7): whole batches below
        ``upto`` up to ``max_bytes``, but always the first; looked at no further than ``stop``.
        None when the read returns nothing."""
        batches = self.log.batches
        i = self.log.index_for(offset)
        last: int | None = None
        size = 0
        for b in itertools.islice(batches, i, None):
            if b.base_offset >= upto:
                break
            size += len(b.data)
            if last is not None and max_bytes is not None and size > max_bytes:
                break
            last = min(b.last_offset, upto - 1)
            if last >= stop:
                break
        return last

    def _archive_compacted(self, fetch_offset: int, upto: int) -> None:
        """AQ-10 (maybeArchiveStaleBatches): AVAILABLE in-flight records between the fetch offset and
        the first batch the log returns were compacted away: archived, never delivered again."""
        first = self._first_log_batch(fetch_offset, upto)
        if first is None or first.base_offset <= fetch_offset:
            return
        if self._archive_available(fetch_offset, first.base_offset):
            self._advance_start()

    def _archive_available(self, lo: int, end: int) -> bool:
        """Archive the AVAILABLE in-flight records in [lo, end) (ST-8, AQ-10: LOG_START_MOVED);
        a batch only partly in the range is split (ST-1). Returns whether anything moved."""
        moved = False
        i = max(0, bisect.bisect_right(self._firsts, lo) - 1)
        for first in self._firsts[i:]:
            b = self._batches[first]
            if b.first >= end:
                break
            if b.last < lo:
                continue
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is not RecordState.AVAILABLE:
                    continue
                if b.first >= lo and b.last < end:
                    b.whole.state = next_state(b.whole.state, Trigger.LOG_START_MOVED)
                    moved = True
                    continue
                self._split(b)
            assert b.offsets is not None
            for off, rec in b.offsets.items():
                if lo <= off < end and rec.state is RecordState.AVAILABLE:
                    rec.state = next_state(rec.state, Trigger.LOG_START_MOVED)
                    moved = True
        return moved

    def _acquire_new(self, member_id: str, want: int, batch_size: int | None, record_limit: bool,
                     deadline: int, cfg: ShareConfig, upto: int, read_last: int) -> list[AcquiredRecords]:
        """Acquire ``want`` new records from the first offset never acquired (AQ-1) up to
        ``read_last``, rounded up to the end of the log batch holding the last of them (AQ-2, AQ-3; SharePartition
        ``acquireNewBatchRecords``, ``lastOffsetFromBatchWithRequestOffset``). In record-limit
        mode exactly ``want`` are ACQUIRED and the rest of that in-flight batch is AVAILABLE with
        delivery count 0 (``createBatches``)."""
        log = self.log
        start = self._next_new
        if start >= upto:
            return []
        first_batch = self._first_log_batch(start, upto)
        if first_batch is None:
            return []
        # AQ-10: acquisition starts at the first batch the log returns; a compaction hole before
        # it is never acquired.
        start = max(start, first_batch.base_offset)
        cap = start + want - 1
        last = start - 1
        cuts: list[int] = []  # last offsets of log batches (where BatchSize may cut, AQ-4)
        all_batches = log.batches
        i = log.index_for(start)
        for b in itertools.islice(all_batches, i, None):
            if b.base_offset >= upto or b.base_offset > read_last:
                break  # past what the read returned
            if b.base_offset > cap:
                last = cap  # the cap lies in a compaction hole: no batch to round up to
                break
            last = min(b.last_offset, upto - 1)
            cuts.append(last)
            if last >= cap:
                break
        if last < start:
            return []
        batches_read = list(itertools.islice(all_batches, i, i + len(cuts)))
        read_committed = cfg.isolation_level is IsolationLevel.READ_COMMITTED
        aborted = self._aborted_offsets(batches_read, start, last) if read_committed else set()
        out: list[AcquiredRecords] = []
        if not self._batches:
            self.spso = start  # the window restarts at the first offset acquired
        self._next_new = last + 1
        if record_limit and last - start + 1 > want:
            # AQ-2, AQ-3: one in-flight batch over the whole range; only ``want`` are acquired.
            ib = _Batch(start, last, None, {})
            assert ib.offsets is not None
            self._insert(ib)
            for off in range(start, last + 1):
                if off > cap:
                    ib.offsets[off] = _Rec(RecordState.AVAILABLE, 0)
                    continue
                r = ib.offsets[off] = _Rec(RecordState.ACQUIRED, 1, member_id)
                if off in aborted:
                    r.state = next_state(r.state, Trigger.ABORTED)  # AQ-9: straight to ARCHIVED
                    r.member_id = None
                else:
                    self._lock(ib, off, r, deadline)
                    _append_merged(out, off, 1)
        else:
            # AQ-4: cut into entries of at least batch_size records on log-batch boundaries.
            ranges: list[tuple[int, int]] = []
            lo = start
            if batch_size and batch_size > 0 and not record_limit:
                for c in cuts:
                    if c >= last:
                        break
                    if c - lo + 1 >= batch_size:
                        ranges.append((lo, c))
                        lo = c + 1
            ranges.append((lo, last))
            for lo, hi in ranges:
                rec = _Rec(RecordState.ACQUIRED, 1, member_id)  # ST-4: first fetch, count 1
                ib = _Batch(lo, hi, rec)
                self._insert(ib)
                if aborted and not aborted.isdisjoint(range(lo, hi + 1)):  # no per-record set without aborts
                    self._split(ib)
                    assert ib.offsets is not None
                    for off, r in ib.offsets.items():
                        if off in aborted:
                            r.state = next_state(r.state, Trigger.ABORTED)  # AQ-9: straight to ARCHIVED
                            r.member_id = None
                        else:
                            self._lock(ib, off, r, deadline)
                            _append_merged(out, off, 1)
                else:
                    self._lock(ib, None, rec, deadline)
                    out.append(AcquiredRecords(lo, hi, 1))
        if aborted:
            self._advance_start()
        return out

    def _aborted_offsets(self, batches: Sequence[ShareLogBatch], start: int, last: int) -> set[int]:
        """AQ-9: offsets of data batches that belong to an aborted transaction (control batches stay)."""
        txns = self.log.aborted_in_range(start, last + 1)
        if not txns:
            return set()
        out: set[int] = set()
        for b in batches:
            if b.base_offset > last:
                break
            if not b.is_transactional or b.is_control:
                continue
            if any(t.producer_id == b.producer_id and t.first_offset <= b.base_offset <= t.last_offset for t in txns):
                out.update(range(max(b.base_offset, start), min(b.last_offset, last) + 1))
        return out

    def _take(self, b: _Batch, offset: int | None, rec: _Rec, member_id: str, deadline: int) -> None:
        rec.state = next_state(rec.state, Trigger.ACQUIRE)
        rec.delivery_count += 1  # ST-4, AQ-11: only acquisition counts
        rec.member_id = member_id
        self._lock(b, offset, rec, deadline)

    def _lock(self, b: _Batch, offset: int | None, rec: _Rec, deadline: int) -> None:
        if rec.lock is not None:
            rec.lock.cancel()
        rec.deadline_ms = deadline
        rec.lock = self._schedule(deadline, lambda: self._expire(b, offset, rec))

    def _unlock(self, rec: _Rec) -> None:
        if rec.lock is not None:
            rec.lock.cancel()
        rec.lock = None
        rec.deadline_ms = None

    # --- batch map ----------------------------------------------------------------------------
    def _insert(self, b: _Batch) -> None:
        bisect.insort(self._firsts, b.first)
        self._batches[b.first] = b

    def _split(self, b: _Batch) -> None:
        """ST-1: per-offset tracking; each offset keeps the batch lock's deadline."""
        if b.offsets is not None:
            return
        whole = b.whole
        assert whole is not None
        b.offsets = {}
        for off in range(b.first, b.last + 1):
            r = _Rec(whole.state, whole.delivery_count, whole.member_id)
            b.offsets[off] = r
            if whole.deadline_ms is not None and whole.state is RecordState.ACQUIRED:
                self._lock(b, off, r, whole.deadline_ms)
        self._unlock(whole)
        b.whole = None

    def _batch_at_or_before(self, offset: int) -> _Batch | None:
        i = bisect.bisect_right(self._firsts, offset) - 1
        return self._batches[self._firsts[i]] if i >= 0 else None

    # --- acknowledgements ---------------------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], *, version: int = 2,
                    is_renew_ack: bool = False) -> None:
        """Apply one partition's acknowledgement batches for ``member_id``, all or nothing, but
        for RENEW: a lock renewed before the failing batch or offset stays renewed, as upstream's
        renewal is applied at once and never enters the rollback list (SharePartition
        ``acknowledgeCompleteBatch``, ``acknowledgePerOffsetBatchRecords``,
        ``rollbackOrProcessStateUpdates``).

        Raises:
            KafkaError: INVALID_REQUEST (AK-1..AK-6, AK-9) or INVALID_RECORD_STATE (AK-8, AK-10,
                AK-11, RN-5, RN-6); no state changed then, only those earlier renewals.
        """
        validate_ack_batches(batches, version=version, is_renew_ack=is_renew_ack)
        if not self.initialized:  # AK-13: nothing was ever fetched here, so nothing can be acknowledged
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"no share state for {self.topic}-{self.partition} in group {self.group_id}")
        cfg = self._config()
        steps: list[_Step] = []
        try:
            self._plan(member_id, batches, cfg, steps)
        except KafkaError:
            # ST-5 rolls back state transitions; a RENEW is none (RN-4), so it is kept.
            self._commit([s for s in steps if s.trigger is Trigger.RENEW], cfg)
            raise
        self._commit(steps, cfg)

    def _plan(self, member_id: str, batches: Sequence[AckBatch], cfg: ShareConfig, steps: list[_Step]) -> None:
        """Check ``batches`` against the current state and append their moves to ``steps``, in
        order (AK-7..AK-11); raises at the first refusal with ``steps`` holding what came before."""
        planned: dict[int, RecordState] = {}  # offsets this request already moved
        top = [-1]  # the highest offset in ``planned``

        def check(offset: int, rec: _Rec, trigger: Trigger) -> None:
            if offset > top[0]:
                top[0] = offset
            state = planned.get(offset, rec.state)
            if state is not RecordState.ACQUIRED or rec.member_id != member_id:  # AK-10, AK-11, RN-5
                raise KafkaError(ErrorCode.INVALID_RECORD_STATE,
                                 f"offset {offset} is {state.name}" + ("" if rec.member_id == member_id
                                                                       else " and not held by this member"))
            if trigger is Trigger.RENEW and not cfg.renew_acknowledge_enable:  # RN-6
                raise KafkaError(ErrorCode.INVALID_RECORD_STATE, "RENEW is disabled for this group")
            planned[offset] = next_state(state, trigger, _Facts(offset, rec.delivery_count,
                                                                 cfg.delivery_count_limit, self.spso))

        for ab in batches:
            lo, hi = ab.first_offset, ab.last_offset
            if hi < self.spso:  # AK-7
                continue
            first_b = self._batch_at_or_before(lo)
            if first_b is None and not (lo <= self.spso <= hi and self._firsts and self._firsts[0] <= hi):  # AK-8
                raise KafkaError(ErrorCode.INVALID_RECORD_STATE, f"offset {lo} is not in flight")
            last_b = self._batch_at_or_before(hi)
            if last_b is None or last_b.last < lo or last_b.last < hi:  # AK-9
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"range {lo}-{hi} runs past the acquired records")
            i = bisect.bisect_right(self._firsts, lo) - 1
            i = max(i, 0)
            covered = max(lo, self.spso)
            per_offset_types = len(ab.ack_types) > 1
            for first in self._firsts[i:]:
                b = self._batches[first]
                if b.first > hi:
                    break
                if b.last < lo:
                    continue
                if b.first > covered:  # AK-9: a hole between in-flight batches
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"offsets {covered}-{b.first - 1} are not in flight")
                covered = b.last + 1
                whole = (b.offsets is None and not per_offset_types and lo <= b.first and hi >= b.last
                         and b.first >= self.spso)
                if whole:  # AK-10
                    assert b.whole is not None
                    trigger = _ACK_TRIGGERS[AckType(ab.ack_types[0])]
                    if b.first > top[0]:
                        # No offset of the batch moved yet: every one is in the same state, held by
                        # the same member, at or above SPSO, so each check is the first's (the
                        # move depends on the offset only below SPSO) and the first raises as
                        # the loop below would.
                        check(b.first, b.whole, trigger)
                        planned.update(dict.fromkeys(range(b.first + 1, b.last + 1), planned[b.first]))
                        top[0] = b.last
                    else:
                        for off in range(b.first, b.last + 1):
                            check(off, b.whole, trigger)
                    steps.append(_Step(b, None, trigger))
                    continue
                for off in range(max(b.first, lo, self.spso), min(b.last, hi) + 1):  # AK-11
                    t = ab.ack_types[off - lo] if per_offset_types else ab.ack_types[0]
                    trigger = _ACK_TRIGGERS[AckType(t)]
                    check(off, b.rec(off), trigger)
                    steps.append(_Step(b, off, trigger))

    def _commit(self, steps: list[_Step], cfg: ShareConfig) -> None:
        now = self._clock.now_ms()
        archiving: list[tuple[int, int, ArchiveCause, str | None]] = []
        freed = False
        for step in steps:
            b = step.batch
            if step.offset is None and b.offsets is None:
                assert b.whole is not None
                targets: list[tuple[int | None, _Rec]] = [(None, b.whole)]
                offsets = range(b.first, b.last + 1)
            else:
                if b.offsets is None:
                    self._split(b)
                assert step.offset is not None or b.offsets is not None
                if step.offset is None:
                    assert b.offsets is not None
                    targets = list(b.offsets.items())
                else:
                    targets = [(step.offset, b.rec(step.offset))]
                offsets = range(0)
            for off, rec in targets:
                if step.trigger is Trigger.RENEW:  # RN-4: the lock restarts from now, nothing else
                    rec.state = next_state(rec.state, Trigger.RENEW)
                    self._lock(b, off, rec, now + cfg.record_lock_duration_ms)
                    continue
                holder = rec.member_id
                first_off = b.first if off is None else off
                rec.state = next_state(rec.state, step.trigger,
                                       _Facts(first_off, rec.delivery_count, cfg.delivery_count_limit, self.spso))
                rec.member_id = None
                self._unlock(rec)
                if rec.state is RecordState.AVAILABLE:
                    freed = True
                elif rec.state is RecordState.ARCHIVING:
                    cause = ArchiveCause.REJECTED if step.trigger is Trigger.REJECT else ArchiveCause.DELIVERY_LIMIT
                    for o in (offsets if off is None else (off,)):
                        archiving.append((o, rec.delivery_count, cause, holder))
        self._after_change(archiving, freed)

    # --- releases -----------------------------------------------------------------------------
    def _expire(self, b: _Batch, offset: int | None, rec: _Rec) -> None:
        """AQ-12: the acquisition lock ran out."""
        if self._batches.get(b.first) is not b or rec.state is not RecordState.ACQUIRED:
            return
        if offset is None and b.offsets is not None:
            return  # split since; the per-offset locks took over
        rec.lock = None
        self._release([(b, offset, rec)], Trigger.LOCK_EXPIRY)

    def expire_now(self, offsets: Iterable[int] | None = None) -> int:
        """Fault injection: expire the locks of ``offsets`` (all acquired ones if None) now."""
        wanted = None if offsets is None else set(offsets)
        items = self._held(lambda off, rec: wanted is None or off in wanted)
        self._release(items, Trigger.LOCK_EXPIRY)
        return len(items)

    def release_member(self, member_id: str) -> int:
        """SS-4, SS-8: a member's share session closed or its connection dropped; every record it
        still holds here is released (AVAILABLE, or archived at the delivery limit). Returns how many."""
        items = self._held(lambda off, rec: rec.member_id == member_id)
        self._release(items, Trigger.SESSION_RELEASE)
        return sum(b.last - b.first + 1 if o is None else 1 for b, o, _ in items)

    def _held(self, want: Callable[[int, _Rec], bool]) -> list[tuple[_Batch, int | None, _Rec]]:
        items: list[tuple[_Batch, int | None, _Rec]] = []
        for first in self._firsts:
            b = self._batches[first]
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is RecordState.ACQUIRED:
                    hits = [o for o in range(b.first, b.last + 1) if want(o, b.whole)]
                    if len(hits) == b.last - b.first + 1:
                        items.append((b, None, b.whole))
                    elif hits:
                        self._split(b)
                        assert b.offsets is not None
                        items.extend((b, o, b.offsets[o]) for o in hits)
                continue
            items.extend((b, o, r) for o, r in b.offsets.items() if r.state is RecordState.ACQUIRED and want(o, r))
        return items

    def _release(self, items: Sequence[tuple[_Batch, int | None, _Rec]], trigger: Trigger) -> None:
        cfg = self._config()
        archiving: list[tuple[int, int, ArchiveCause, str | None]] = []
        freed = False
        for b, off, rec in items:
            holder = rec.member_id
            if b.offsets is None and off is None and b.first < self.spso <= b.last:
                self._split(b)  # ST-8: the offsets below SPSO archive, the rest go back
                assert b.offsets is not None
                self._release([(b, o, r) for o, r in b.offsets.items() if r.state is RecordState.ACQUIRED], trigger)
                continue
            first_off = b.first if off is None else off
            rec.state = next_state(rec.state, trigger,
                                   _Facts(first_off, rec.delivery_count, cfg.delivery_count_limit, self.spso))
            rec.member_id = None
            self._unlock(rec)
            if rec.state is RecordState.AVAILABLE:
                freed = True
            elif rec.state is RecordState.ARCHIVING:
                for o in (range(b.first, b.last + 1) if off is None else (off,)):
                    archiving.append((o, rec.delivery_count, ArchiveCause.DELIVERY_LIMIT, holder))
        self._after_change(archiving, freed)

    # --- archiving (the DLQ hook) ---------------------------------------------------------------
    def _after_change(self, archiving: list[tuple[int, int, ArchiveCause, str | None]], freed: bool) -> None:
        if archiving:
            archiving.sort()
            req = ArchiveRequest(self, tuple(a[0] for a in archiving), tuple(a[1] for a in archiving),
                                 tuple(a[2] for a in archiving), archiving[0][3])
            if self.failure_archiver is None:
                self.complete_archiving(req.offsets)
            else:
                self.failure_archiver(req)
        before = self.spso
        self._advance_start()
        if (freed or self.spso > before) and self.on_available is not None:
            self.on_available(self)

    def complete_archiving(self, offsets: Iterable[int]) -> None:
        """The failure archiver is done with ``offsets`` (written or not): ARCHIVING -> ARCHIVED."""
        done = set(offsets)
        for first in list(self._firsts):
            b = self._batches[first]
            if b.last < min(done, default=0) or b.first > max(done, default=-1):
                continue
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state is not RecordState.ARCHIVING:
                    continue
                if all(o in done for o in range(b.first, b.last + 1)):
                    b.whole.state = next_state(b.whole.state, Trigger.ARCHIVE_DONE)
                    continue
                self._split(b)  # ST-1: only part of the batch is done
            assert b.offsets is not None
            for off, rec in b.offsets.items():
                if off in done and rec.state is RecordState.ARCHIVING:
                    rec.state = next_state(rec.state, Trigger.ARCHIVE_DONE)
        before = self.spso
        self._advance_start()
        if self.spso > before and self.on_available is not None:
            self.on_available(self)  # room under the lock limit (AQ-2)

    # --- start offset -------------------------------------------------------------------------
    def _advance_start(self) -> None:
        """ST-7: move SPSO past consecutive terminal offsets; drop finished batches below it."""
        spso = self.spso
        for first in self._firsts:
            b = self._batches[first]
            if b.last < spso:
                continue
            # A hole between in-flight batches (compaction, AQ-10) holds nothing to finish: SPSO
            # moves to the next batch as upstream's moves to the next key.
            spso = max(spso, b.first)
            if b.offsets is None:
                assert b.whole is not None
                if b.whole.state not in TERMINAL:
                    break
                spso = b.last + 1
                continue
            stopped = False
            for off in range(max(spso, b.first), b.last + 1):
                if b.offsets[off].state not in TERMINAL:
                    stopped = True
                    break
                spso = off + 1
            if stopped:
                break
        if spso > self.spso:
            self.spso = spso
        self._drop_finished()
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def _drop_finished(self) -> None:
        keep = []
        for first in self._firsts:
            b = self._batches[first]
            if b.last < self.spso and (b.whole.state in TERMINAL if b.whole is not None and b.offsets is None
                                       else all(r.state in TERMINAL for _, r in b.recs())):
                del self._batches[first]
            else:
                keep.append(first)
        self._firsts = keep
        if not self._batches:
            self.spso = self._next_new = max(self.spso, self._next_new)

    def sync_log_start(self) -> None:
        """ST-8: if the log start moved past SPSO (retention, DeleteRecords), SPSO follows it and
        AVAILABLE records below it are archived; ACQUIRED ones wait for their lock or session."""
        if not self.initialized:
            return
        start = self.log.log_start_offset
        if start <= self.spso:
            return
        self.spso = start
        self._next_new = max(self._next_new, start)
        self._archive_available(0, start)
        self._advance_start()

    # --- reading ------------------------------------------------------------------------------
    def has_acquirable(self) -> bool:
        """Whether a fetch could acquire something now (AQ-2 ``canAcquireRecords``, AQ-7: parked
        fetches wake on this): an AVAILABLE record in the window that the log still holds (AQ-10),
        or new records while the window is under the lock limit."""
        self.initialize()
        cfg = self._config()
        upto = self._read_upto(cfg)
        fetch_offset = self._fetch_offset()
        if fetch_offset < self._next_new:
            self._archive_compacted(fetch_offset, upto)
            if self._fetch_offset() < self._next_new:
                return True
        if self.in_flight_count() >= cfg.partition_max_record_locks:
            return False
        return self._next_new < upto

    # --- persistence (what Kafka's share coordinator keeps) ---------------------------------------
    def persisted(self) -> dict[str, object]:
        """The share state as Kafka's share coordinator keeps it (ShareSnapshotValue): the state
        epoch, the SPSO and state batches ``[first, last, state, delivery count]`` covering every
        in-flight offset from the SPSO on, equal neighbours merged (PersisterStateBatchCombiner).

        Acquisition is never written (ST-3, SharePartition.acquire writes nothing): an ACQUIRED
        record is kept as it was before, AVAILABLE with one delivery fewer, so it comes back as
        Kafka's does after a crash (a record acquired for the first time has count 0: delivered
        as new). ARCHIVING is written (DLQ-4) and its dead-letter write resumes on ``restore``.
        """
        batches: list[list[int]] = []

        def add(first: int, last: int, r: _Rec) -> None:
            state, count = int(r.state), r.delivery_count
            if r.state is RecordState.ACQUIRED:
                state, count = int(RecordState.AVAILABLE), count - 1
            prev = batches[-1] if batches else None
            if prev is not None and prev[1] == first - 1 and prev[2] == state and prev[3] == count:
                prev[1] = last
            else:
                batches.append([first, last, state, count])

        for first in self._firsts:
            b = self._batches[first]
            if b.last < self.spso:
                continue
            if b.offsets is None:
                assert b.whole is not None
                add(max(b.first, self.spso), b.last, b.whole)
                continue
            for off, r in b.offsets.items():
                if off >= self.spso:
                    add(off, off, r)
        return {"state_epoch": self.state_epoch, "start": self.spso, "next": self._next_new, "batches": batches}

    def restore(self, saved: dict[str, Any]) -> None:
        """Load ``persisted()`` output (a broker restarting on its data dir); the per-offset
        ``records`` form of earlier data dirs is read too.

        Raises:
            ValueError: state batches out of order or overlapping (Kafka refuses such a state on
                initialisation too); the partition is then left empty.
        """
        self.close()
        self._firsts.clear()
        self._batches.clear()
        self.state_epoch = int(saved.get("state_epoch", 0))
        self.spso = max(int(saved["start"]), self.log.log_start_offset)
        self._next_new = max(int(saved["next"]), self.spso)
        if "batches" in saved:
            prev_last = self.spso - 1
            for first, last, state, count in saved["batches"]:
                first, last = max(int(first), self.spso), int(last)
                if last < first:
                    continue
                if first <= prev_last:
                    self._firsts.clear()
                    self._batches.clear()
                    raise ValueError(f"state batch {first}-{last} overlaps the one before it")
                prev_last = last
                self._insert(_Batch(first, last, _Rec(RecordState(state), int(count))))
                self._next_new = max(self._next_new, last + 1)
        else:
            run: list[tuple[int, _Rec]] = []

            def flush() -> None:
                if run:
                    self._insert(_Batch(run[0][0], run[-1][0], None, dict(run)))
                    run.clear()

            for off, state, count in saved["records"]:
                if off < self.spso:
                    continue
                if run and off != run[-1][0] + 1:
                    flush()
                run.append((int(off), _Rec(RecordState(state), int(count))))
            flush()
        self.initialized = True
        self._advance_start()
        # DLQ-4: ARCHIVING found on reload resumes phase 2; the cause follows from the count.
        pending = [(off, r.delivery_count) for first in self._firsts for off, r in self._batches[first].recs()
                   if r.state is RecordState.ARCHIVING]
        if pending:
            limit = self._config().delivery_count_limit
            req = ArchiveRequest(self, tuple(o for o, _ in pending), tuple(c for _, c in pending),
                                 tuple(ArchiveCause.DELIVERY_LIMIT if c >= limit else ArchiveCause.REJECTED
                                       for _, c in pending), None)
            if self.failure_archiver is None:
                self.complete_archiving(req.offsets)
            else:
                self.failure_archiver(req)

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: forget every in-flight record and start again at ``start_offset``
        (never below the log start), in a new state epoch as Kafka's initializeState writes it."""
        self.close()
        self._firsts.clear()
        self._batches.clear()
        self.spso = self._next_new = max(start_offset, self.log.log_start_offset)
        self.state_epoch += 1 if self.initialized else 0
        self.initialized = True
        self._changed()

    def lag(self) -> int:
        """Records from the start offset to the high watermark not yet finished (DescribeShareGroupOffsets v1)."""
        finished = sum(1 for first in self._firsts for off, r in self._batches[first].recs()
                       if off >= self.spso and r.state in TERMINAL)
        return max(0, self.log.high_watermark - self.spso - finished)

    def close(self) -> None:
        """Cancel every lock timer (the partition, its topic or its group is going away)."""
        for first in self._firsts:
            for _, rec in self._batches[first].recs():
                self._unlock(rec)

    def record_state(self, offset: int) -> tuple[RecordState, int, str | None] | None:
        """(state, delivery count, holder) of an in-flight offset, None when not in flight."""
        b = self._batch_at_or_before(offset)
        if b is None or offset > b.last:
            return None
        r = b.rec(offset)
        return r.state, r.delivery_count, r.member_id

    def statistics(self) -> SharePartitionStats:
        offsets: list[OffsetStats] = []
        for first in self._firsts:
            b = self._batches[first]
            for off, r in b.recs():
                offsets.append(OffsetStats(off, r.state, r.delivery_count, r.member_id, r.deadline_ms))
        return SharePartitionStats(
            self.group_id, self.topic, self.partition, self.initialized, self.spso, self.end_offset,
            self.in_flight_count(), tuple(offsets),
            tuple((b.first, b.last, b.offsets is not None) for b in (self._batches[f] for f in self._firsts)),
        )


def _append_merged(out: list[AcquiredRecords], offset: int, count: int) -> None:
    """AQ-5: single re-acquired offsets merge into contiguous ranges with equal delivery counts."""
    if out and out[-1].last_offset == offset - 1 and out[-1].delivery_count == count:
        prev = out[-1]
        out[-1] = AcquiredRecords(prev.first_offset, offset, count)
    else:
        out.append(AcquiredRecords(offset, offset, count))


class SharePartitions:
    """Every share partition on this broker, keyed by (group id, topic, partition), created on first
    fetch (ST-6). ``make`` builds a partition for a key (the core supplies log, clock, scheduler)."""

    __slots__ = ("_parts", "_make")

    def __init__(self, make: Callable[[str, str, int], SharePartition]) -> None:
        self._parts: dict[tuple[str, str, int], SharePartition] = {}
        self._make = make

    def for_fetch(self, group_id: str, topic: str, partition: int) -> SharePartition:
        key = (group_id, topic, partition)
        sp = self._parts.get(key)
        if sp is None:
            sp = self._parts[key] = self._make(group_id, topic, partition)
            sp.initialize()
        return sp

    def for_acknowledge(self, group_id: str, topic: str, partition: int) -> SharePartition:
        """AK-13: acknowledging a partition this group never fetched here is UNKNOWN_TOPIC_OR_PARTITION."""
        sp = self._parts.get((group_id, topic, partition))
        if sp is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no share state for {topic}-{partition}")
        return sp

    def get(self, group_id: str, topic: str, partition: int) -> SharePartition | None:
        return self._parts.get((group_id, topic, partition))

    def create(self, group_id: str, topic: str, partition: int) -> SharePartition:
        """A share partition that is not initialised yet (AlterShareGroupOffsets, restore)."""
        sp = self._parts[(group_id, topic, partition)] = self._make(group_id, topic, partition)
        return sp

    def remove(self, group_id: str, topic: str, partition: int) -> None:
        self._parts.pop((group_id, topic, partition), None)

    def of_group(self, group_id: str) -> list[SharePartition]:
        return [sp for (g, _, _), sp in self._parts.items() if g == group_id]

    def release_member(self, group_id: str, member_id: str,
                       partitions: Iterable[tuple[str, int]] | None = None) -> int:
        """SS-4, SS-8: release what ``member_id`` holds in ``partitions`` (all of the group's if None)."""
        if partitions is None:
            targets = self.of_group(group_id)
        else:
            targets = [sp for sp in (self._parts.get((group_id, t, p)) for t, p in partitions) if sp is not None]
        return sum(sp.release_member(member_id) for sp in targets)

    def of_topic(self, topic: str) -> list[SharePartition]:
        return [sp for (_, t, _), sp in self._parts.items() if t == topic]

    def all(self) -> list[SharePartition]:
        return list(self._parts.values())

    def drop_topic(self, topic: str) -> None:
        for key in [k for k in self._parts if k[1] == topic]:
            del self._parts[key]

    def drop_group(self, group_id: str) -> None:
        for key in [k for k in self._parts if k[0] == group_id]:
            del self._parts[key]

    def __len__(self) -> int:
        return len(self._parts)
