"""A partition's log: stored batches, offsets and watermarks (sans-I/O, no clock of its own).

Batches are kept as the bytes a client sent, with base offset and leader epoch rewritten in
place (``kwire.records.validate_and_assign``), so a fetch serves them without re-encoding.
Single-replica semantics: the high watermark is the log end offset once a batch is appended.
The last stable offset is the high watermark minus whatever open transactions hold back
(``open_txn_first_offsets``).

Appending has one entry, ``append(buf, origin, ...)``, as Kafka's ``UnifiedLog.append`` with
its ``AppendOrigin``: a client's Produce, the transaction coordinator's markers
(``append_marker``), the broker's own dead-letter-queue records, and batches restored from a
data dir all pass through it. In that one place: offsets and the leader epoch are written into
the batch, the client checks run (size, codec, control batches, producer id/epoch/sequence:
TX-6..TX-10), LogAppendTime is stamped, the producer state (``producers``) and the
open/aborted transaction index (TX-18..TX-20) are updated, the segment rolls, and the
listeners (persistence, long-poll wake-ups) hear of it. Restored batches keep their offsets
and skip the client checks and the listeners, so a restart rebuilds exactly the state the live
appends made.

``segments`` mirror Kafka's log segments in memory: a new one starts when the active one would
pass ``segment.bytes`` or its records span more than ``segment.ms`` (``roll_if_needed``, called
by whoever appends with the topic's configs). Retention (``apply_retention``) deletes whole
segments from the front, as Kafka's ``deleteOldSegments`` does, and moves the log start offset.

``epochs`` is the leader-epoch history (Kafka's LeaderEpochFileCache): (epoch, first offset)
pairs, ascending in both. A new leader records its epoch at the log end; an appended or
loaded batch of a newer epoch records itself; DeleteRecords trims the front. OffsetForLeaderEpoch
answers from it (``end_offset_for_epoch``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from kwire.broker.core.producer_state import Duplicate, ProducerStateManager
from kwire.errors import CorruptBatchError, KafkaError, RecordError, RecordErrorsError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.splice import Buffer, RecordChain
from kwire.records import (
    BatchInfo,
    Compression,
    ControlRecordType,
    EndTxnMarker,
    RecordBatch,
    build_control_batch,
    parse_control_record,
    set_log_append_time,
    validate_and_assign,
)

__all__ = ["PartitionLog", "StoredBatch", "Segment", "AbortedTxn", "AppendOrigin", "LogConfig", "AppendResult",
           "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

UNDEFINED_EPOCH = -1  # RecordBatch.NO_PARTITION_LEADER_EPOCH
UNDEFINED_EPOCH_OFFSET = -1  # EpochEndOffset.UNDEFINED_EPOCH_OFFSET
_EPOCH_AT = slice(12, 16)  # partitionLeaderEpoch: after baseOffset int64 and batchLength int32
_EPOCH = struct.Struct(">i")


def _batch_epoch(data: Buffer) -> int:
    """A stored batch's partitionLeaderEpoch (-1 when it has none)."""
    return int.from_bytes(data[_EPOCH_AT], "big", signed=True) if len(data) >= _EPOCH_AT.stop else UNDEFINED_EPOCH


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    # The batch as received: often a view into its produce request's buffer (never copied).
    data: Buffer
    producer_id: int
    is_transactional: bool
    is_control: bool


@dataclass(slots=True)
class Segment:
    """One in-memory log segment: where it starts, its bytes, and its record timestamps."""

    base_offset: int
    size: int = 0
    first_timestamp: int = -1  # of its first batch (segment.ms rolls from it)
    max_timestamp: int = -1  # the largest in it (retention.ms expires by it)


@dataclass(slots=True, frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int


class AppendOrigin(Enum):
    """Who appends (Kafka's AppendOrigin): which checks run and who hears of the batch."""

    CLIENT = "client"  # Produce: every client check, producer state checked and recorded
    COORDINATOR = "coordinator"  # transaction markers the broker writes (append_marker)
    DLQ = "dlq"  # records the broker itself writes to a share group's dead-letter queue
    RESTORE = "restore"  # batches read back from a data dir: offsets as stored, no listeners


@dataclass(slots=True, frozen=True)
class LogConfig:
    """The topic settings an append needs (the core resolves them from the config store)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    max_message_bytes: int = 1048588
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    compacted: bool = False  # cleanup.policy includes compact: every record needs a key


DEFAULT_LOG_CONFIG = LogConfig()


class AppendResult(NamedTuple):
    """Where a batch went. ``duplicate``: a retried idempotent batch answered with its original
    offset and not appended again (TX-6); ``log_append_time`` is -1 for CreateTime topics.
    (Immutable like BatchInfo, and as cheap to make: one per Produce.)"""

    base_offset: int
    last_offset: int
    log_append_time: int = -1
    duplicate: bool = False


class _MarkerMemo:
    """The last marker batch built (``_marker_batch``), as one (inputs, bytes) pair: read and
    replaced whole, so brokers on other threads cannot mix one pair's key with another's bytes."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[tuple[ControlRecordType, int, int, int, int], bytes] | None = None


_MARKER_MEMO = _MarkerMemo()


def _marker_batch(kind: ControlRecordType, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                  now_ms: int) -> bytes:
    """``build_control_batch`` at base offset 0, built once per distinct input (it is a pure
    function of them): a transaction's markers, one per partition, are the same bytes until each
    log assigns offsets in its own copy."""
    key = (kind, producer_id, producer_epoch, coordinator_epoch, now_ms)
    last = _MARKER_MEMO.last
    if last is not None and last[0] == key:
        return last[1]
    data = build_control_batch(kind, producer_id, producer_epoch, coordinator_epoch, 0, now_ms)
    _MARKER_MEMO.last = (key, data)
    return data


@dataclass(slots=True)
class PartitionLog:
    """The batches of one partition, with the offsets a broker reports."""

    topic: str
    partition: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    batches: list[StoredBatch] = field(default_factory=list)
    _bases: list[int] = field(default_factory=list)
    # producer id -> first offset of its open transaction (holds the LSO back)
    open_txn_first_offsets: dict[int, int] = field(default_factory=dict)
    aborted_txns: list[AbortedTxn] = field(default_factory=list)
    # called with each stored batch after append (persistence, wake-ups)
    on_append: list[Callable[[StoredBatch], None]] = field(default_factory=list)
    size_bytes: int = 0
    # leader-epoch history: (epoch, start offset), ascending in both
    epochs: list[tuple[int, int]] = field(default_factory=list)
    # in-memory segments, oldest first; the last is the active one
    segments: list[Segment] = field(default_factory=list)
    # producer id -> epoch, last batches, open transaction (Kafka's ProducerStateManager)
    producers: ProducerStateManager = field(default_factory=ProducerStateManager)
    # Persistence before the append counts: called with each live batch before any state
    # changes; raising KafkaError (KAFKA_STORAGE_ERROR) refuses the batch (a data dir's writer).
    write_ahead: Callable[[Buffer, BatchInfo], None] | None = None
    # Why the log is offline (its data dir failed), or None: every read and write is refused
    # with KAFKA_STORAGE_ERROR, as a partition in an offline log dir is.
    offline: str | None = None
    # The log cleaner's checkpoint: the first dirty offset (everything below it is compacted).
    cleaner_checkpoint: int = 0

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        if not self.open_txn_first_offsets:
            return self.log_end_offset
        return min(self.log_end_offset, min(self.open_txn_first_offsets.values()))

    def append(self, buf: bytearray | memoryview, origin: AppendOrigin, *, now_ms: int, leader_epoch: int = UNDEFINED_EPOCH,
               config: LogConfig = DEFAULT_LOG_CONFIG, info: BatchInfo | None = None,
               allow_zstd: bool = True, verify: Callable[[BatchInfo], None] | None = None,
               marker: EndTxnMarker | None = None) -> AppendResult:
        """Append one magic-2 batch (the one append path; see the module docstring).

        ``buf`` must be writable (offsets, epoch and LogAppendTime are written in place); it is
        stored as it is, not copied. ``info`` is the batch's header as read from disk (RESTORE
        only). ``allow_zstd`` is False for Produce before v7. ``verify`` (CLIENT) runs after the
        batch checks and before the producer state, raising KafkaError to refuse (the transaction
        coordinator's check, TX-13). ``marker`` (COORDINATOR only) is the transaction marker
        ``buf`` was built from (``append_marker``), so it is not parsed back. Raises ``KafkaError`` with the code a
        broker answers (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
        UNSUPPORTED_COMPRESSION_TYPE, INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, ...);
        nothing changes then.
        """
        if origin is AppendOrigin.RESTORE:
            if info is None:
                raise ValueError("a restored batch needs its BatchInfo")
            if info.base_offset < self.log_end_offset:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"batch at offset {info.base_offset} overlaps the log "
                                                            f"end {self.log_end_offset}")
        else:
            try:
                info = validate_and_assign(buf, self.log_end_offset, leader_epoch)
            except CorruptBatchError as exc:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
            except RecordError as exc:
                raise KafkaError(ErrorCode.INVALID_RECORD, str(exc)) from None
        if origin is AppendOrigin.CLIENT:
            if config.compacted and not info.is_control:
                self._check_keys(buf)
            dup = self._check_client_batch(info, config, allow_zstd, verify)
            if dup is not None:
                return AppendResult(dup.base_offset, dup.base_offset + info.last_offset - info.base_offset,
                                    -1, duplicate=True)
        append_time = -1
        if config.log_append_time and origin is not AppendOrigin.RESTORE:
            set_log_append_time(buf, now_ms)
            info = info._replace(max_timestamp=now_ms, timestamp_type=1)
            append_time = now_ms
        if origin is not AppendOrigin.RESTORE:
            if self.offline is not None:
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, self.offline)
            if self.write_ahead is not None:
                self.write_ahead(buf, info)  # raises KafkaError: nothing has changed yet
        if info.producer_id >= 0:
            if info.is_control:
                self._complete_txn(buf, info, marker if origin is AppendOrigin.COORDINATOR else None)
            else:
                entry = self.producers.record(info, info.base_offset, info.max_timestamp)
                if entry is not None and info.is_transactional:
                    first = entry.txn_first_offset if entry.txn_first_offset is not None else info.base_offset
                    self.open_txn_first_offsets.setdefault(info.producer_id, first)
        self.roll_if_needed(len(buf), info.max_timestamp, config.segment_bytes, config.segment_ms)
        batch = self._store(buf, info)
        if origin is not AppendOrigin.RESTORE:
            for fn in self.on_append:
                fn(batch)
        return AppendResult(info.base_offset, info.last_offset, append_time)

    def _check_keys(self, buf: Buffer) -> None:
        """LogValidator.validateKey: a compacted topic refuses records without a key, naming each."""
        try:
            missing = [i for i, rec in enumerate(RecordBatch(buf)) if rec.key is None]
        except RecordError as exc:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        if missing:
            text = f"Compacted topic cannot accept message without key in topic partition {self.topic}-{self.partition}."
            errors = [(i, text) for i in missing]
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            raise RecordErrorsError(
                ErrorCode.INVALID_RECORD,
                f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
                f"showing the first three errors at most: [{shown}]", errors)

    def _check_client_batch(self, info: BatchInfo, config: LogConfig, allow_zstd: bool,
                            verify: Callable[[BatchInfo], None] | None) -> Duplicate | None:
        """What LogValidator and ProducerAppendInfo refuse from a client, in their order."""
        if info.size_in_bytes > config.max_message_bytes:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"the batch of {info.size_in_bytes} bytes exceeds "
                                                          f"max.message.bytes {config.max_message_bytes}")
        if info.compression == Compression.ZSTD and not allow_zstd:
            raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs produce v7 or later")
        if info.is_control:
            raise KafkaError(ErrorCode.INVALID_RECORD, "control batches may only be written by the broker")
        if info.producer_id >= 0 and info.producer_epoch < 0:
            raise KafkaError(ErrorCode.INVALID_RECORD, "a batch with a producer id needs a producer epoch")
        if verify is not None:
            verify(info)
        if info.producer_id < 0:
            return None  # no producer state to check (ProducerStateManager.check's own first test)
        verdict = self.producers.check(info)
        if isinstance(verdict, Duplicate):  # TX-6
            return verdict
        if verdict is not None:
            raise KafkaError(verdict)
        return None

    def _complete_txn(self, buf: Buffer, info: BatchInfo, marker: EndTxnMarker | None = None) -> None:
        """A COMMIT/ABORT marker ends its producer's transaction (TX-18, TX-20): the LSO moves past
        it, an aborted one joins ``aborted_txns`` (TX-21) and the producer's epoch is the marker's.
        ``marker``: the one ``buf`` holds, when the caller built it (else it is parsed)."""
        if marker is None:
            try:
                marker = parse_control_record(next(iter(RecordBatch(buf))))
            except (StopIteration, RecordError):
                return  # not a transaction marker (another control type): nothing to track
        pid = info.producer_id
        first = self.open_txn_first_offsets.pop(pid, None)
        entry = self.producers.entries.get(pid)
        if first is None and entry is not None:
            first = entry.txn_first_offset
        # ProducerStateEntry.update: the marker's epoch becomes the producer's (a newer one
        # fences what came before), its coordinator epoch is remembered, the transaction ends.
        self.producers.fence(pid, info.producer_epoch)
        entry = self.producers.entries[pid]
        entry.txn_first_offset = None
        entry.coordinator_epoch = max(entry.coordinator_epoch, marker.coordinator_epoch)
        if marker.type == ControlRecordType.ABORT and first is not None:
            self.aborted_txns.append(AbortedTxn(pid, first, info.last_offset))

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, *, coordinator_epoch: int,
                      now_ms: int, leader_epoch: int = UNDEFINED_EPOCH, config: LogConfig = DEFAULT_LOG_CONFIG,
                      transaction_version: int = 2) -> AppendResult:
        """Write a COMMIT or ABORT control batch for ``producer_id`` (WriteTxnMarkers at the leader).

        TX-19: a marker older than the producer's epoch → INVALID_PRODUCER_EPOCH; with TV2 (version
        2) the marker's epoch must be above the epoch of the open transaction (a repeat at the
        same epoch once the transaction ended is an idempotent retry); an older coordinator epoch
        → TRANSACTION_COORDINATOR_FENCED. The marker carries the broker's time.
        """
        entry = self.producers.entries.get(producer_id)
        if entry is not None:
            if producer_epoch < entry.epoch:
                raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                 f"marker epoch {producer_epoch} of producer {producer_id} is older than {entry.epoch}")
            if transaction_version >= 2 and producer_epoch == entry.epoch and entry.txn_first_offset is not None:
                raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                 f"a TV2 marker for producer {producer_id} needs an epoch above {entry.epoch}")
            if coordinator_epoch < entry.coordinator_epoch:
                raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                                 f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}")
        elif producer_id >= 0 and producer_epoch < -1:  # below a new entry's NO_PRODUCER_EPOCH (checkProducerEpoch)
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"marker epoch {producer_epoch} of producer {producer_id} is negative")
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        buf = bytearray(_marker_batch(kind, producer_id, producer_epoch, coordinator_epoch, now_ms))
        return self.append(buf, AppendOrigin.COORDINATOR, now_ms=now_ms, leader_epoch=leader_epoch, config=config,
                           marker=EndTxnMarker(kind, coordinator_epoch))

    def _store(self, data: Buffer, info: BatchInfo) -> StoredBatch:
        batch = StoredBatch(
            info.base_offset, info.last_offset, info.max_timestamp, data, info.producer_id,
            info.is_transactional, info.is_control,
        )
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.log_end_offset = batch.last_offset + 1
        self.size_bytes += len(data)
        if not self.segments:
            self.segments.append(Segment(batch.base_offset))
        seg = self.segments[-1]
        seg.size += len(data)
        if seg.first_timestamp < 0:
            seg.first_timestamp = info.max_timestamp
        if info.max_timestamp > seg.max_timestamp:
            seg.max_timestamp = info.max_timestamp
        if len(data) >= _EPOCH_AT.stop:
            epoch = _EPOCH.unpack_from(data, _EPOCH_AT.start)[0]
            epochs = self.epochs
            # assign_epoch's own first test, here: most batches carry the epoch the log has
            if epoch >= 0 and not (epochs and epochs[-1][0] == epoch and batch.base_offset >= epochs[-1][1]):
                self.assign_epoch(epoch, batch.base_offset)
        return batch

    # --- segments and retention ---------------------------------------------------------------
    def roll_if_needed(self, size: int, max_timestamp: int, segment_bytes: int, segment_ms: int) -> bool:
        """Start a new segment at the log end if a batch of ``size`` bytes does not belong in the
        active one (LogSegment.shouldRoll: full, or the records span more than segment.ms)."""
        if not self.segments:
            return False
        seg = self.segments[-1]
        if seg.size == 0:
            return False
        if seg.size + size > segment_bytes or (
            seg.first_timestamp >= 0 and max_timestamp - seg.first_timestamp > segment_ms
        ):
            self.segments.append(Segment(self.log_end_offset))
            return True
        return False

    def apply_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Delete whole segments from the front as cleanup.policy=delete does; returns how many.

        UnifiedLog.deleteOldSegments: first those whose newest record is older than
        ``retention_ms``, then as long as the log stays at or above ``retention_bytes`` without
        the segment; -1 disables either. When every segment goes, the active one is rolled
        first and the log keeps an empty segment at its end. The log start offset moves to the
        first segment left.
        """
        segs = self.segments
        n = 0
        if retention_ms >= 0:
            # A segment without record timestamps (-1, legacy data) is never expired by time:
            # Kafka falls back to the file's modification time, which an in-memory log lacks.
            while (n < len(segs) and segs[n].size and segs[n].max_timestamp >= 0
                   and now_ms - segs[n].max_timestamp > retention_ms):
                n += 1
        if retention_bytes >= 0:
            diff = self.size_bytes - retention_bytes - sum(s.size for s in segs[:n])
            while n < len(segs) and segs[n].size and diff - segs[n].size >= 0:
                diff -= segs[n].size
                n += 1
        if not n:
            return 0
        if n == len(segs):
            segs.append(Segment(self.log_end_offset))
        self.truncate_before(segs[n].base_offset)
        return n

    # --- leader epochs (LeaderEpochFileCache) -------------------------------------------------
    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``; later or non-monotonic entries go."""
        if self.epochs:
            last_epoch, last_start = self.epochs[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return  # nothing new (LeaderEpochFileCache.isUpdateNeeded)
        self.epochs = [(e, s) for e, s in self.epochs if e < epoch and s < start_offset]
        self.epochs.append((epoch, start_offset))

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as LeaderEpochFileCache.endOffsetFor answers.

        The latest epoch ends at the log end; an older one where the next known epoch starts
        (reporting the largest known epoch not above the one asked for); an unknown newer
        one, or -1, gives (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        if epoch == UNDEFINED_EPOCH or not self.epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.epochs[-1][0] == epoch:
            return epoch, self.log_end_offset
        higher = next(((e, s) for e, s in self.epochs if e > epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e, _ in self.epochs if e <= epoch]
        # Below every known epoch: the data is gone; the first known epoch's start is the answer.
        return (floor[-1] if floor else epoch), higher[1]

    def index_for(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= ``offset`` (``len(batches)`` if none)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self.batches[i].last_offset < offset:
            return i + 1
        return i

    def read(self, offset: int, max_bytes: int, *, upto: int | None = None, min_one: bool = True) -> RecordChain:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``, by reference.

        As KIP-74 requires, the first batch is returned even when larger than ``max_bytes``
        (``min_one``) so that a consumer always makes progress. ``upto`` is an exclusive
        offset bound (the high watermark, or the LSO for read_committed). The stored batches
        are not copied: the chain is spliced into the response as it goes to the socket.
        """
        end = self.log_end_offset if upto is None else upto
        if offset >= end:
            return RecordChain()
        parts: list[Buffer] = []
        size = 0
        batches = self.batches
        for i in range(self.index_for(offset), len(batches)):
            b = batches[i]
            if b.base_offset >= end:
                break
            n = len(b.data)
            if size + n > max_bytes and (parts or not min_one):
                break
            parts.append(b.data)
            size += n
        return RecordChain(parts, size)

    def aborted_in_range(self, start: int, end: int) -> list[AbortedTxn]:
        return [a for a in self.aborted_txns if a.last_offset >= start and a.first_offset < end]

    def _segment_batches(self, seg_index: int) -> list[StoredBatch]:
        segs = self.segments
        lo = bisect.bisect_left(self._bases, segs[seg_index].base_offset)
        hi = (bisect.bisect_left(self._bases, segs[seg_index + 1].base_offset)
              if seg_index + 1 < len(segs) else len(self.batches))
        return self.batches[lo:hi]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, batch leader epoch) of the first record at or after ``timestamp``.

        As UnifiedLog.searchOffsetInLocalLog: the first segment whose largest timestamp is at
        least ``timestamp``, then in it (FileRecords.searchForTimestamp) the first batch whose
        max timestamp is, and in that batch the first record whose own timestamp is and whose
        offset is at or above the log start. Only that one segment is searched, as in Kafka.
        Control batches are not skipped (Kafka does not skip them either).
        """
        for i, seg in enumerate(self.segments):
            if seg.max_timestamp >= timestamp:
                for b in self._segment_batches(i):
                    if b.max_timestamp < timestamp or b.last_offset < self.log_start_offset:
                        continue
                    for rec in RecordBatch(b.data):
                        if rec.timestamp >= timestamp and rec.offset >= self.log_start_offset:
                            return rec.offset, rec.timestamp, _batch_epoch(b.data)
                return None
        return None

    def max_timestamp(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, batch leader epoch) for ListOffsets MAX_TIMESTAMP (-3).

        As UnifiedLog.fetchOffsetByTimestamp: the first segment with the largest timestamp,
        in it the first batch whose max timestamp equals it, and in that batch the first
        record carrying it (RecordBatch.offsetOfMaxTimestamp); the timestamp is the batch's.
        """
        segs = self.segments
        if not segs or not self.batches:
            return None
        best = max(range(len(segs)), key=lambda i: segs[i].max_timestamp)
        target = segs[best].max_timestamp
        for b in self._segment_batches(best):
            if b.max_timestamp == target:
                for rec in RecordBatch(b.data):
                    if rec.timestamp == target:
                        return rec.offset, b.max_timestamp, _batch_epoch(b.data)
                return None
        return None

    def replace_cleaned(self, end_offset: int, cleaned: list[StoredBatch]) -> None:
        """The log cleaner's result: ``cleaned`` replaces every batch below ``end_offset`` (offsets
        are kept, never reused); the segments below it are resized and emptied ones dropped, as
        Kafka's replaceSegments does with a cleaned group."""
        rest = self.batches[bisect.bisect_left(self._bases, end_offset):]
        self.batches = cleaned + rest
        self._bases = [b.base_offset for b in self.batches]
        self.size_bytes = sum(len(b.data) for b in self.batches)
        segs = self.segments
        keep: list[Segment] = []
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if seg.base_offset >= end_offset or nxt is None:
                keep.append(seg)
                continue
            lo = bisect.bisect_left(self._bases, seg.base_offset)
            hi = bisect.bisect_left(self._bases, nxt)
            mine = self.batches[lo:hi]
            if not mine:
                continue
            seg.size = sum(len(b.data) for b in mine)
            seg.max_timestamp = max(b.max_timestamp for b in mine)
            keep.append(seg)
        self.segments = keep

    def truncate_before(self, offset: int) -> None:
        """DeleteRecords: move the log start offset forward (whole batches are dropped)."""
        offset = min(offset, self.log_end_offset)
        self.log_start_offset = max(self.log_start_offset, offset)
        keep = [b for b in self.batches if b.last_offset >= self.log_start_offset]
        self.batches = keep
        self._bases = [b.base_offset for b in keep]
        self.size_bytes = sum(len(b.data) for b in keep)
        self._trim_segments()
        # LeaderEpochFileCache.truncateFromStart: the last epoch starting at or before the new
        # start offset now starts there; the ones before it go.
        lso = self.log_start_offset
        before = [(e, s) for e, s in self.epochs if s <= lso]
        if before:
            self.epochs = [(before[-1][0], lso)] + [(e, s) for e, s in self.epochs if s > lso]

    def _trim_segments(self) -> None:
        """After batches left the front: drop segments with nothing left, resize the first."""
        segs = self.segments
        first = self.batches[0].base_offset if self.batches else self.log_end_offset
        while len(segs) > 1 and segs[1].base_offset <= first:
            del segs[0]
        if not segs:
            segs.append(Segment(first))
            return
        nxt = segs[1].base_offset if len(segs) > 1 else None
        end = len(self.batches) if nxt is None else bisect.bisect_left(self._bases, nxt)
        segs[0].size = sum(len(b.data) for b in self.batches[:end])
        if not end:
            segs[0].first_timestamp = segs[0].max_timestamp = -1
