"""Log compaction: cleanup.policy=compact, as Kafka's log cleaner applies it (sans-I/O).

Theory of operation
-------------------
* Every ``log.cleaner.backoff.ms`` of broker time (a deadline on the injected clock) each
  partition of a topic whose ``cleanup.policy`` includes ``compact`` is checked, as
  LogCleanerManager.grabFilthiestCompactedLog does: the cleanable range runs from the first
  dirty offset (the cleaner's checkpoint, ``PartitionLog.cleaner_checkpoint``) to the first
  uncleanable offset, the least of the active segment's base, the last stable offset and the
  first segment younger than ``min.compaction.lag.ms`` (cleanableOffsets). A log is cleaned when
  its dirty ratio (dirty bytes over clean plus dirty) reaches ``min.cleanable.dirty.ratio``, or
  when a dirty segment's first batch is older than ``max.compaction.lag.ms`` (maxCompactionDelay).
* Cleaning (Cleaner.doClean): an offset map of the latest offset of each key in the dirty range
  (records of aborted transactions and control batches left out), then every batch from the log
  start to the end of the range is filtered (Cleaner.cleanInto, MemoryRecords.filterTo): a record
  stays when no later record has its key, a tombstone (null value) only until its batch's
  delete horizon (set to now + ``delete.retention.ms`` when it is first kept, KIP-534), keyless
  records go, records of aborted transactions go, and a transaction marker stays until its
  transaction's data is gone and then until its own delete horizon (CleanedTransactionMetadata).
  A rewritten batch keeps its base offset, last offset (so the producer's last sequence stays),
  producer fields, codec and timestamp type; an emptied batch stays as an empty batch when it is
  its producer's last, or the last of the cleaning round; offsets are never reused.
* ``run(force=True)`` cleans every compacted partition with anything dirty now (the control
  API's ``Broker.run_cleaner()``); persistence hears of rewritten logs through the storage's
  ``on_log_compacted`` and keeps the checkpoint in the metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.context import CoreContext, Subsystem
from kwire.broker.core.log import PartitionLog, StoredBatch
from kwire.errors import RecordError
from kwire.records import BatchBuilder, ControlRecordType, RecordBatch, parse_control_record

if TYPE_CHECKING:
    from kwire.broker.core.deadlines import Deadline

__all__ = ["CompactionConfig", "CleanResult", "LogCleaner", "clean_log", "cleanable_range"]


@dataclass(slots=True, frozen=True)
class CompactionConfig:
    """A compacted topic's cleaner settings (Kafka's names and defaults)."""

    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = 9223372036854775807
    delete_retention_ms: int = 86_400_000


@dataclass(slots=True, frozen=True)
class CleanableRange:
    first_dirty: int
    first_uncleanable: int  # a segment base: cleaning stops at whole segments
    dirty_bytes: int
    clean_bytes: int
    overdue: bool  # a dirty segment is older than max.compaction.lag.ms

    @property
    def dirty_ratio(self) -> float:
        total = self.dirty_bytes + self.clean_bytes
        return self.dirty_bytes / total if total else 0.0


@dataclass(slots=True, frozen=True)
class CleanResult:
    """One cleaning pass over a partition: the range and what it kept."""

    first_dirty: int
    end_offset: int
    records_read: int
    records_kept: int
    bytes_before: int
    bytes_after: int


def cleanable_range(log: PartitionLog, now_ms: int, cfg: CompactionConfig) -> CleanableRange:
    """LogCleanerManager.cleanableOffsets and calculateCleanableBytes for one log."""
    first_dirty = log.cleaner_checkpoint
    if first_dirty < log.log_start_offset or first_dirty > log.log_end_offset:
        first_dirty = log.log_start_offset
    segs = log.segments
    active_base = segs[-1].base_offset if segs else log.log_end_offset
    bound = min(log.last_stable_offset, active_base)
    dirty_segs = [s for i, s in enumerate(segs[:-1])
                  if (segs[i + 1].base_offset > first_dirty)]
    if cfg.min_compaction_lag_ms > 0:
        for s in dirty_segs:
            if s.max_timestamp > now_ms - cfg.min_compaction_lag_ms:
                bound = min(bound, s.base_offset)
                break
    # The first uncleanable segment is the one holding ``bound``: cleaning works on whole segments.
    uncleanable = active_base
    for i, s in enumerate(segs[:-1]):
        if segs[i + 1].base_offset > bound:
            uncleanable = s.base_offset
            break
    dirty = sum(len(b.data) for b in log.batches if first_dirty <= b.base_offset < uncleanable)
    clean = sum(len(b.data) for b in log.batches if b.base_offset < first_dirty)
    overdue = False
    if cfg.max_compaction_lag_ms < 9223372036854775807:
        firsts = [s.first_timestamp for s in dirty_segs if s.first_timestamp > 0]
        overdue = bool(firsts) and min(firsts) < now_ms - max(cfg.max_compaction_lag_ms, 0)
    return CleanableRange(first_dirty, uncleanable, dirty, clean, overdue)


def _control_type(b: StoredBatch) -> int | None:
    try:
        return int(parse_control_record(next(iter(RecordBatch(b.data)))).type)
    except (StopIteration, RecordError):
        return None


class _TxnTracker:
    """CleanedTransactionMetadata: which batches belong to aborted transactions, and when a
    transaction's marker may go (its data is gone)."""

    def __init__(self, log: PartitionLog, start: int, end: int) -> None:
        self.pending = sorted(log.aborted_in_range(start, end), key=lambda a: a.first_offset)
        self.aborted: dict[int, bool] = {}  # producer id -> data of this aborted txn seen
        self.committed: set[int] = set()

    def _consume(self, offset: int) -> None:
        while self.pending and self.pending[0].first_offset <= offset:
            self.aborted.setdefault(self.pending.pop(0).producer_id, False)

    def data_batch(self, b: StoredBatch) -> bool:
        """True when the batch is part of an aborted transaction (discard it)."""
        self._consume(b.last_offset)
        if not b.is_transactional:
            return False
        if b.producer_id in self.aborted:
            self.aborted[b.producer_id] = True
            return True
        self.committed.add(b.producer_id)
        return False

    def control_batch(self, b: StoredBatch) -> bool:
        """True when the marker's transaction has no data left, so the marker may go (after its
        delete horizon)."""
        self._consume(b.last_offset)
        kind = _control_type(b)
        if kind == ControlRecordType.ABORT:
            had_data = self.aborted.pop(b.producer_id, False)
            return not had_data
        if kind == ControlRecordType.COMMIT:
            if b.producer_id in self.committed:
                self.committed.discard(b.producer_id)
                return False
            return True
        return kind is None  # an emptied control batch: already cleaned


def clean_log(log: PartitionLog, now_ms: int, cfg: CompactionConfig, *, force: bool = False) -> CleanResult | None:
    """Clean one log if it is due (or, with ``force``, if anything is dirty); None when not."""
    rng = cleanable_range(log, now_ms, cfg)
    if rng.first_uncleanable <= rng.first_dirty or not rng.dirty_bytes:
        return None
    if not force and rng.dirty_ratio < cfg.min_cleanable_dirty_ratio and not rng.overdue:
        return None
    end = rng.first_uncleanable
    # The offset map: the latest offset of each key in the dirty range (Cleaner.buildOffsetMap).
    latest: dict[bytes, int] = {}
    txns = _TxnTracker(log, rng.first_dirty, end)
    for b in log.batches:
        if b.base_offset >= end:
            break
        if b.last_offset < rng.first_dirty:
            continue
        if b.is_control:
            txns.control_batch(b)
            continue
        if txns.data_batch(b):
            continue
        for rec in RecordBatch(b.data):
            if rec.key is not None and rec.offset >= rng.first_dirty:
                latest[bytes(rec.key)] = rec.offset
    map_end = max(latest.values(), default=rng.first_dirty - 1)
    # The batch each producer must keep (its last sequence and epoch): LastRecord of active producers.
    last_of_producer: dict[int, int] = {}
    for b in log.batches:
        if b.producer_id >= 0:
            last_of_producer[b.producer_id] = b.last_offset
    txns = _TxnTracker(log, log.log_start_offset, end)
    out: list[StoredBatch] = []
    read = kept = 0
    before = sum(len(b.data) for b in log.batches if b.base_offset < end)
    for b in log.batches:
        if b.base_offset >= end:
            break
        discardable = txns.control_batch(b) if b.is_control else txns.data_batch(b)
        rb = RecordBatch(b.data)
        horizon = rb.delete_horizon_ms
        drop_all = discardable and (not b.is_control or (horizon is not None and horizon <= now_ms))
        retained = []
        tombstones = False
        changed = False
        for rec in rb:
            read += 1
            if drop_all:
                keep = False
            elif b.is_control or rec.offset > map_end:
                keep = True
            elif rec.key is None:
                keep = False  # keyless records cannot be compacted (counted invalid by Kafka)
            else:
                newest = rec.offset >= latest.get(bytes(rec.key), -1)
                keep = newest and (rec.value is not None or horizon is None or now_ms < horizon)
            if keep:
                retained.append(rec)
                tombstones = tombstones or (rec.value is None and not b.is_control)
            else:
                changed = True
        kept += len(retained)
        needs_horizon = (tombstones or (discardable and b.is_control)) and horizon is None
        if retained and not changed and not needs_horizon:
            out.append(b)
            continue
        last_of_round = b.last_offset + 1 == end
        if not retained and not ((b.producer_id >= 0 and last_of_producer.get(b.producer_id) == b.last_offset)
                                 or last_of_round):
            continue  # DELETE / DELETE_EMPTY
        builder = BatchBuilder(b.base_offset, compression=rb.compression, producer_id=rb.producer_id,
                               producer_epoch=rb.producer_epoch, base_sequence=rb.base_sequence,
                               is_transactional=rb.is_transactional, is_control=rb.is_control,
                               partition_leader_epoch=rb.partition_leader_epoch, timestamp_type=rb.timestamp_type,
                               delete_horizon_ms=(now_ms + cfg.delete_retention_ms) if needs_horizon and retained
                               else horizon)
        for rec in retained:
            builder.append(rec.value, rec.key, tuple(rec.headers or ()), rec.timestamp, offset=rec.offset)
        builder.last_offset = b.last_offset
        if rb.timestamp_type == 1 or not retained:
            builder.max_timestamp = rb.max_timestamp
        data = bytearray(builder.build())
        out.append(StoredBatch(b.base_offset, b.last_offset, RecordBatch(data).max_timestamp, data, b.producer_id,
                               b.is_transactional, b.is_control))
    log.replace_cleaned(end, out)
    log.cleaner_checkpoint = end
    after = sum(len(b.data) for b in out)
    return CleanResult(rng.first_dirty, end, read, kept, before, after)


class LogCleaner(Subsystem):
    """The periodic cleaning pass over compacted topics (Kafka's cleaner threads)."""

    def __init__(self, core: CoreContext) -> None:
        self.core = core
        self._next: Deadline | None = None
        self.passes = 0
        self.cleaned: list[tuple[str, int, CleanResult]] = []  # the latest pass's results
        self._schedule()

    def _schedule(self) -> None:
        backoff = self.core.configs.get_int(ResourceType.BROKER, "", "log.cleaner.backoff.ms")
        self._next = self.core.deadlines.at(self.core.clock.now_ms() + max(1, backoff), self._due)

    def _due(self) -> None:
        if self.core.configs.get_bool(ResourceType.BROKER, "", "log.cleaner.enable"):
            self.run()
        self._schedule()

    def config_for(self, topic: str) -> CompactionConfig:
        c = self.core.configs
        t = ResourceType.TOPIC
        return CompactionConfig(
            min_cleanable_dirty_ratio=float(c.get(t, topic, "min.cleanable.dirty.ratio") or 0.5),
            min_compaction_lag_ms=c.get_int(t, topic, "min.compaction.lag.ms"),
            max_compaction_lag_ms=c.get_int(t, topic, "max.compaction.lag.ms"),
            delete_retention_ms=c.get_int(t, topic, "delete.retention.ms"),
        )

    def run(self, *, force: bool = False) -> list[tuple[str, int, CleanResult]]:
        """One pass now; ``force`` cleans whatever is dirty regardless of the ratio and lags'
        ratio rule (the lags still bound what is cleanable). Returns what was cleaned."""
        core = self.core
        now = core.clock.now_ms()
        done: list[tuple[str, int, CleanResult]] = []
        for name, topic in list(core.cluster.topics.items()):
            policy = core.configs.get(ResourceType.TOPIC, name, "cleanup.policy") or ""
            if "compact" not in policy.split(","):
                continue
            cfg = self.config_for(name)
            for p in topic.partitions:
                if p.log.offline is not None:
                    continue
                res = clean_log(p.log, now, cfg, force=force)
                if res is None:
                    continue
                done.append((name, p.index, res))
                core.log_compacted(p)
        self.passes += 1
        self.cleaned = done
        if done:
            core.metadata_changed()
        return done

    def on_close(self) -> None:
        if self._next is not None:
            self._next.cancel()
