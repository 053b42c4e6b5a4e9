"""Persistence of a broker's data dir: partition logs in Kafka's segment format, metadata as JSON.

Layout of ``BrokerConfig.data_dir``::

    kwire-metadata.json                          topics (ids, partitions, leaders, leader-epoch
                                                 history, log start offsets, configs), dynamic
                                                 broker and group configs, committed offsets,
                                                 altered SCRAM credentials, transactional ids
                                                 and their state, share groups and their
                                                 share-partition state
    kwire-offsets.journal, kwire-transactions.journal, kwire-share.journal
                                                 changes since the metadata was written
    <topic>-<partition>/00000000000000000000.log the batches, back to back, as a broker writes them

Theory of operation
-------------------
* This module is the persistence edge: the only place in the core that touches files. It is
  synchronous and simple: a batch is written and flushed from the log's ``write_ahead`` hook,
  before the log takes it, so it is in the file before the Produce response leaves (no fsync: a
  process crash loses nothing acknowledged, a machine crash may). A write that fails (ENOSPC,
  EIO, a file size limit) takes the data dir offline as Kafka's LogDirFailureChannel does: the
  batch and every later read or write of the partitions is answered KAFKA_STORAGE_ERROR, the
  rest of the broker keeps serving, and nothing unwritten is ever acknowledged.
* Metadata is rewritten whole (temporary file, then rename) whenever it changes: the topic
  hooks, ``BrokerCore.metadata_changed()`` (config changes, DeleteRecords, leader moves) and
  ``on_close``.
* Producer ids continue after a restart from past every id the logs or the metadata know,
  rounded up to the next block of 1000 as the controller's id blocks would.
* ``restore`` runs once, when the core starts: topics come back with their ids, partition
  counts, leaders, epochs and configs; each log is reloaded with ``PartitionLog.load`` and the
  producer state (the last five batches per producer id, open transactions, aborted ones) is
  rebuilt from the batches, so a retried duplicate after a restart is still recognised. A torn
  tail (the process died mid-write, or a batch does not check out) is reported in
  ``torn_tails`` and the log, cut off the file, and everything before it is served.
* Committed offsets are snapshotted from the ``offsets`` subsystem when the metadata is
  written. Between snapshots every change is appended to ``kwire-offsets.journal`` (one JSON
  line, flushed) from the store's ``on_change`` hook, before the OffsetCommit is answered, so a
  process crash loses no acknowledged commit, like a batch. Restore replays the journal over the
  snapshot (a torn last line is reported and skipped); a metadata write that includes the
  offsets empties it. The metadata is re-checked every ``SYNC_INTERVAL_MS`` of broker time (a
  deadline), which keeps the journal short.
* Share-partition state (the state epoch, the start offset, state batches with delivery state
  and count, as Kafka's share coordinator persists them; acquisition is never written, ST-3) is
  part of the metadata snapshot, and every change between snapshots (acknowledgements, releases,
  lock expiry, session release, start-offset moves, dead-letter progress: ARCHIVING, then
  ARCHIVED after the write) is appended to ``kwire-share.journal`` from the core's
  ``before_answer`` hook, one line per changed share partition holding its whole state, before
  the request is answered (or right after the timer), as Kafka completes an acknowledgement only
  once the share coordinator wrote it (ST-5). Restore applies the journal over the snapshot (the
  last line per partition wins). A crash loses no confirmed acknowledgement; what was acquired
  comes back as it was before the acquisition. A line that cannot be written fails the request
  (COORDINATOR_NOT_AVAILABLE); unlike Kafka's rollback the in-memory change stays, and the next
  answered request or metadata write persists it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.core.configs import FORMAT_CLUSTER_DEFAULTS, ResourceType
from kwire.broker.core.context import CoreContext, Subsystem
from kwire.broker.core.log import AppendOrigin
from kwire.errors import ConfigError, KafkaError, RecordError, SegmentError
from kwire.protocol.error_codes import ErrorCode
from kwire.records import (
    BatchInfo,
    RecordBatch,
    SegmentWriter,
    TornTail,
    list_segments,
    partition_dir_name,
    read_segment,
    segment_filename,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from kwire.broker.core.cluster import Partition, Topic
    from kwire.broker.core.deadlines import Deadline
    from kwire.broker.core.log import LogConfig
    from kwire.broker.core.subsystems import Subsystems
    from kwire.protocol.splice import Buffer

__all__ = ["Storage", "StorageHost", "METADATA_FILE", "METADATA_VERSION", "batch_info"]

log = logging.getLogger("kwire.broker.storage")

METADATA_FILE = "kwire-metadata.json"
OFFSETS_JOURNAL = "kwire-offsets.journal"
TXN_JOURNAL = "kwire-transactions.journal"
SHARE_JOURNAL = "kwire-share.journal"
METADATA_VERSION = 1
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
# How often (broker clock) the metadata is re-checked and rewritten when it changed; each rewrite
# folds the offsets journal into it.
SYNC_INTERVAL_MS = 1000


def batch_info(batch: RecordBatch) -> BatchInfo:
    """The ``BatchInfo`` the log keeps, read from a stored batch's header."""
    return BatchInfo(
        batch.base_offset, batch.last_offset, batch.record_count, batch.size_in_bytes, int(batch.compression),
        batch.timestamp_type, batch.base_timestamp, batch.max_timestamp, batch.producer_id, batch.producer_epoch,
        batch.base_sequence, batch.is_transactional, batch.is_control, batch.crc,
    )


class StorageHost(CoreContext, Protocol):
    """What the data dir reads and drives of the broker (``BrokerCore`` implements it): every
    subsystem's state to save and restore, topic creation on restore, and the hook that makes a
    request's changes durable before its answer."""

    @property
    def subsystems(self) -> Subsystems: ...
    @property
    def before_answer(self) -> list[Callable[[], None]]: ...

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, *, internal: bool = False,
                     topic_id: uuid.UUID | None = None, assignments: list[list[int]] | None = None) -> Topic: ...
    def create_partitions(self, name: str, total: int, assignments: list[list[int]] | None = None) -> Topic: ...
    def log_config(self, topic: str) -> LogConfig: ...


class Storage(Subsystem):
    """Keeps a core's topics, logs and configs in a data dir and brings them back on start."""

    def __init__(self, core: StorageHost, data_dir: str | os.PathLike[str]) -> None:
        self.core = core
        self.root = Path(data_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._writers: dict[tuple[str, int], SegmentWriter] = {}
        self._restoring = False
        self._known_topics: set[str] = set()
        self.torn_tails: list[TornTail] = []
        self.problems: list[str] = []  # everything restore reported (torn tails included)
        self._last_saved = ""
        self._sync: Deadline | None = None
        self._closed = False
        self._journal: Any = None  # open offsets journal (text file), once something was written
        self._txn_journal: Any = None  # open transactions journal, once something was written
        self._share_journal: Any = None  # open share-state journal, once something was written
        self._share: Any = None  # the share coordinator, once restored (checked after every handler)
        self._subsystems: Any = None  # core.subsystems, once restored
        self.offline: str | None = None  # why the data dir went offline (a failed write), if it did

    @property
    def metadata_path(self) -> Path:
        return self.root / METADATA_FILE

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.root / partition_dir_name(topic, partition)

    def _report(self, text: str) -> None:
        log.warning("data dir %s: %s", self.root, text)
        self.problems.append(text)

    # --- hooks (called by the core) ---------------------------------------------------------
    def on_partition_created(self, p: Partition) -> None:
        def persist(buf: Buffer, info: BatchInfo) -> None:
            self._write(p, buf, info)

        p.log.write_ahead = persist
        if self.offline is not None:
            p.log.offline = self.offline
        if not self._restoring and p.topic in self._known_topics:
            self.save_metadata()  # CreatePartitions: the topic hook does not run

    def on_topic_created(self, topic: Topic) -> None:
        self._known_topics.add(topic.name)
        if not self._restoring:
            self.save_metadata()

    def on_topic_deleted(self, topic: Topic) -> None:
        self._known_topics.discard(topic.name)
        for p in topic.partitions:
            w = self._writers.pop((topic.name, p.index), None)
            if w is not None:
                w.close()
            d = self.partition_dir(topic.name, p.index)
            if d.exists():
                try:
                    shutil.rmtree(d)
                except OSError as exc:
                    self._report(f"cannot remove {d} of deleted topic {topic.name!r}: {exc}")
        self.save_metadata()

    def on_metadata_changed(self) -> None:
        if not self._restoring:
            self.save_metadata()

    def on_disconnect(self, conn_id: int) -> None:
        # A dropped connection released its share sessions' records (SS-8; storage runs last):
        # written now, as after a handler, not with the next request.
        try:
            self._journal_share()
        except KafkaError as exc:  # nobody to answer: the next request or timer tries again
            log.error("persisting after a disconnect failed: %s", exc)

    def on_close(self) -> None:
        if self._sync is not None:
            self._sync.cancel()
        self.save_metadata()
        self._closed = True
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        for name in ("_journal", "_txn_journal", "_share_journal"):
            f = getattr(self, name)
            if f is not None:
                f.close()
                setattr(self, name, None)

    def crash(self) -> None:
        """The process died (``Broker.restart(crash=True)``): its files close as the kernel closes
        a killed process's files, and nothing more is written, not even the metadata."""
        self._closed = True
        if self._sync is not None:
            self._sync.cancel()
        for w in self._writers.values():
            with contextlib.suppress(OSError, RecordError):
                w.close()
        self._writers.clear()
        for name in ("_journal", "_txn_journal", "_share_journal"):
            f = getattr(self, name)
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()  # every line was flushed when written: closing adds nothing
                setattr(self, name, None)

    def _schedule_sync(self) -> None:
        self._sync = self.core.deadlines.at(self.core.clock.now_ms() + SYNC_INTERVAL_MS, self._sync_due)

    def _sync_due(self) -> None:
        if self._closed:
            return
        self.save_metadata()  # a no-op unless something changed
        self._schedule_sync()

    # --- logs -------------------------------------------------------------------------------
    def on_log_compacted(self, p: Partition) -> None:
        """The cleaner rewrote part of a log: rewrite the partition's file from the log's batches
        (a temporary file, then rename, as Kafka swaps in cleaned segments), so a restart serves
        the compacted log. A failure takes the data dir offline, as a failed write does."""
        key = (p.topic, p.index)
        w = self._writers.pop(key, None)
        if w is not None:
            w.close()
        d = self.partition_dir(p.topic, p.index)
        old = list_segments(d) if d.is_dir() else []
        base = p.log.batches[0].base_offset if p.log.batches else p.log.log_start_offset
        target = d / segment_filename(base)
        tmp = d / (segment_filename(base) + ".cleaned")
        try:
            d.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                for b in p.log.batches:
                    f.write(b.data)
                f.flush()
            os.replace(tmp, target)
            for _, path in old:
                if path != target:
                    path.unlink(missing_ok=True)
                    for suffix in (".index", ".timeindex"):
                        path.with_suffix(suffix).unlink(missing_ok=True)
        except OSError as exc:
            self._go_offline(f"cannot write the cleaned log of {p.topic}-{p.index}: {exc}")

    def _writer(self, p: Partition) -> SegmentWriter:
        key = (p.topic, p.index)
        w = self._writers.get(key)
        if w is None:
            d = self.partition_dir(p.topic, p.index)
            segments = list_segments(d) if d.is_dir() else []
            base = segments[-1][0] if segments else p.log.log_start_offset
            # Index files are optional in Kafka's format (it rebuilds missing ones); one open file
            # per partition keeps descriptors low.
            w = SegmentWriter(d, base, write_indexes=False)
            self._writers[key] = w
        return w

    def _write(self, p: Partition, buf: Buffer, info: BatchInfo) -> None:
        """Write and flush a batch before the log takes it. A failure takes the data dir offline
        (Kafka's LogDirFailureChannel): this batch and every later read or write of its
        partitions is answered KAFKA_STORAGE_ERROR, so nothing unwritten is acknowledged."""
        try:
            w = self._writer(p)
            w.append(buf)
            w.flush()
        except (OSError, RecordError) as exc:
            self._go_offline(f"cannot write {p.topic}-{p.index} at offset {info.base_offset}: {exc}")
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, self.offline) from None

    def _go_offline(self, reason: str) -> None:
        if self.offline is not None:
            return
        self.offline = f"the data dir {self.root} is offline: {reason}"
        log.error("%s; its partitions answer KAFKA_STORAGE_ERROR until the broker restarts", self.offline)
        self.problems.append(self.offline)
        for t in self.core.cluster.topics.values():
            for part in t.partitions:
                part.log.offline = self.offline
        for w in self._writers.values():
            with contextlib.suppress(OSError):
                w.close()
        self._writers.clear()

    def _load_partition(self, p: Partition, recovery_point: int = 0) -> None:
        """Load a partition's segments as Kafka's log recovery does.

        Batches below ``recovery_point`` (everything written before the last metadata save) are
        trusted as written: one that fails its CRC is kept and reported, as Kafka keeps flushed
        data (a consumer reading it sees the corruption); nothing after it is lost. From the
        recovery point on, every batch is validated, and the first one that is not whole and
        valid cuts the log there (LogSegment.recover): the cut bytes and any later segments are
        kept beside the log as ``*.kwire-cut-<offset>`` files, and the report says what went.
        """
        d = self.partition_dir(p.topic, p.index)
        if not d.is_dir():
            return
        plog = p.log
        config = self.core.log_config(p.topic)
        segments = list_segments(d)
        for n, (_, path) in enumerate(segments):
            try:
                reader = read_segment(path, verify_crc=False, recover=True)
            except SegmentError as exc:
                self._report(f"{path}: {exc}; not loaded")
                self._cut(p, segments[n:], None, f"unreadable: {exc}")
                return
            for batch in reader:
                position = reader.valid_bytes - batch.size_in_bytes
                info = batch_info(batch)
                if batch.last_offset >= recovery_point:
                    try:
                        batch.validate()
                    except RecordError as exc:
                        self._cut(p, segments[n:], (path, position, info.base_offset), str(exc))
                        return
                elif batch.compute_crc() != batch.crc:
                    self._report(f"{path}: the batch at offsets {info.base_offset}-{info.last_offset} (byte "
                                 f"{position}) fails its CRC; kept, as it lies below the recovery point "
                                 f"{recovery_point} (Kafka keeps flushed data; readers will see CORRUPT_MESSAGE)")
                if not plog.batches:
                    plog.log_start_offset = max(plog.log_start_offset, info.base_offset)
                try:
                    # The one append path rebuilds producer state and the transaction index too.
                    plog.append(bytearray(batch.buffer), AppendOrigin.RESTORE, now_ms=self.core.clock.now_ms(),
                                config=config, info=info)
                except KafkaError as exc:
                    self._report(f"{path}: {exc}; skipped")
            if reader.torn_tail is not None:
                tail = reader.torn_tail
                self.torn_tails.append(tail)
                self._cut(p, segments[n:], (path, tail.position, plog.log_end_offset), f"of a torn tail: {tail.reason}")
                return

    def _cut(self, p: Partition, segments: list[tuple[int, Path]], at: tuple[Path, int, int] | None,
             reason: str) -> None:
        """Cut the log at ``at`` (file, byte, offset): the rest of that file and every later
        segment are moved aside, never deleted, and the report names them."""
        first_cut = 0
        if at is not None:
            path, position, offset = at
            size = path.stat().st_size
            copy = path.with_name(f"{path.name}.kwire-cut-{offset}")
            try:
                with open(path, "rb") as src:
                    src.seek(position)
                    copy.write_bytes(src.read())
                os.truncate(path, position)
                self._report(f"{path}: cut at byte {position} (offset {offset}) because {reason}; "
                             f"{size - position} bytes moved to {copy.name}, the batches before it are served")
            except OSError as exc:
                self._report(f"{path}: cannot cut at byte {position}: {exc}")
            first_cut = 1
        for _, later in segments[first_cut:]:
            aside = later.with_name(f"{later.name}.kwire-cut")
            try:
                os.replace(later, aside)
                self._report(f"{later}: follows a cut log; moved to {aside.name}")
            except OSError as exc:
                self._report(f"{later}: cannot move aside: {exc}")

    # --- metadata ---------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The metadata file's content for the core's current state."""
        core = self.core
        overrides = core.configs.overrides
        static = core.config.settings
        topics: dict[str, Any] = {}
        for t in core.cluster.topics.values():
            topics[t.name] = {
                "id": str(t.topic_id),
                "internal": t.internal,
                "configs": dict(overrides.get((ResourceType.TOPIC, t.name), {})),
                "partitions": [{
                    "leader": p.leader_id,
                    "leader_epoch": p.leader_epoch,
                    "replicas": list(p.replicas),
                    "log_start_offset": p.log.log_start_offset,
                    # Everything up to here was written and flushed (Kafka's recovery point).
                    "recovery_point": p.log.log_end_offset,
                    "epochs": [list(e) for e in p.log.epochs],
                    "cleaner_checkpoint": p.log.cleaner_checkpoint,
                } for p in t.partitions],
            }
        # the cluster defaults the cluster was formatted with are dynamic values, kept as written
        broker = {k: v for k, v in overrides.get((ResourceType.BROKER, ""), {}).items()
                  if static.get(k) != v or k in FORMAT_CLUSTER_DEFAULTS}
        groups = {name: dict(v) for (rtype, name), v in overrides.items() if rtype is ResourceType.GROUP and v}
        per_broker = {name: dict(v) for (rtype, name), v in overrides.items()
                      if rtype is ResourceType.BROKER and name and v}
        out: dict[str, Any] = {"version": METADATA_VERSION, "cluster_id": core.cluster.cluster_id, "topics": topics,
                               "broker_configs": broker, "group_configs": groups}
        if per_broker:
            out["broker_configs_by_id"] = per_broker
        out["next_producer_id"] = core.subsystems.producer_ids.next_id
        out["offsets"] = self._offsets_snapshot()
        txn = core.subsystems.transactions
        if txn is not None and txn.transactions:
            out["transactions"] = txn.snapshot()
        pending = core.subsystems.offsets.pending_snapshot()
        if pending:
            out["pending_offsets"] = pending
        share = core.subsystems.share_groups
        if share is not None:
            shared = share.snapshot()
            if shared["groups"] or shared["partitions"]:
                out["share_groups"] = shared
        scram = core.subsystems.scram_credentials.snapshot()
        if scram:
            out["scram_credentials"] = scram
        acl = core.subsystems.acl
        if acl is not None and acl.acls:
            out["acls"] = acl.snapshot()
        quotas = core.subsystems.quotas
        if quotas is not None and quotas.entities:
            out["client_quotas"] = quotas.snapshot()
        return out

    def save_metadata(self) -> None:
        """Rewrite the metadata file (temporary file, then rename) if its content changed."""
        # Share changes not journaled yet go to the journal first, so its last line per share
        # partition is what the snapshot holds even if the process dies before the journal is emptied.
        with contextlib.suppress(KafkaError):
            self._journal_share()
        data = json.dumps(self.snapshot(), indent=1, sort_keys=True)
        if data == self._last_saved:
            return
        tmp = self.metadata_path.with_suffix(".tmp")
        try:
            tmp.write_text(data)
            os.replace(tmp, self.metadata_path)
        except OSError as exc:
            log.error("data dir %s: cannot write %s: %s", self.root, METADATA_FILE, exc)
            return
        self._last_saved = data
        # The snapshot holds every committed offset and transaction: the journals' lines are in it now.
        for f, name in ((self._journal, OFFSETS_JOURNAL), (self._txn_journal, TXN_JOURNAL),
                        (self._share_journal, SHARE_JOURNAL)):
            if f is None:
                continue
            try:
                f.seek(0)
                f.truncate()
            except OSError as exc:
                log.error("data dir %s: cannot empty %s: %s", self.root, name, exc)

    # --- offsets journal --------------------------------------------------------------------
    def _journal_offset(self, group: str, topic: str, partition: int, committed: Any) -> None:
        if self._restoring or self._closed:
            return
        line = json.dumps([group, topic, partition, None if committed is None else dataclasses.asdict(committed)])
        try:
            if self._journal is None:
                self._journal = open(self.root / OFFSETS_JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._journal.write(line + "\n")
            self._journal.flush()
        except OSError as exc:
            # Never acknowledge a commit that is not written: Kafka's coordinator answers a failed
            # __consumer_offsets append (KAFKA_STORAGE_ERROR) with NOT_COORDINATOR.
            log.error("data dir %s: cannot append to %s: %s", self.root, OFFSETS_JOURNAL, exc)
            self._journal = None
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"cannot write the offsets journal: {exc}") from None

    # --- transactions journal -----------------------------------------------------------------
    # Kafka's coordinator appends each transaction state change to __transaction_state, and the
    # group coordinator each TxnOffsetCommit to __consumer_offsets, before answering; here each
    # becomes a line of ``kwire-transactions.journal`` (flushed), folded into the metadata by
    # the next snapshot. A crash loses no acknowledged step: a PrepareCommit found on restart
    # completes, and offsets staged in it become visible then (TX-15, TX-23).
    def _txn_write(self, lines: list[str]) -> None:
        try:
            if self._txn_journal is None:
                self._txn_journal = open(self.root / TXN_JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._txn_journal.write("".join(line + "\n" for line in lines))
            self._txn_journal.flush()
        except OSError as exc:
            log.error("data dir %s: cannot append to %s: %s", self.root, TXN_JOURNAL, exc)
            self._txn_journal = None
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"cannot write the transactions journal: {exc}") from None

    def _journal_transactions(self) -> None:
        txn = self.core.subsystems.transactions
        if txn is None or not txn.dirty or self._restoring or self._closed:
            return
        self._txn_write([json.dumps({"txn": tid, "meta": meta}, sort_keys=True)
                         for tid, meta in txn.take_dirty().items()])

    def _before_answer(self) -> None:
        """The core's ``before_answer`` hook: what the handler or timer changed in transactions
        and share state goes to its journal. Two flag checks when nothing did (every Produce)."""
        txn = self._subsystems.transactions
        if txn is not None and txn.dirty:
            self._journal_transactions()
        share = self._share
        if share is not None and share.dirty:
            self._journal_share()

    # --- share-state journal -------------------------------------------------------------------
    # Kafka completes a share acknowledgement (and a release, a lock expiry, a dead-letter step)
    # only after the share coordinator wrote the new state to __share_group_state (ST-5,
    # SharePartition.writeShareGroupState). Here each changed share partition's whole state
    # becomes a line of ``kwire-share.journal`` (flushed) after the handler or timer and before
    # any answer; the next metadata snapshot folds the lines in. Acquisition writes nothing (ST-3).
    def _journal_share(self) -> None:
        share = self._share
        if share is None or not share.dirty or self._restoring or self._closed:
            return
        lines = [json.dumps(e, separators=(",", ":")) for e in share.take_dirty()]
        try:
            if self._share_journal is None:
                self._share_journal = open(self.root / SHARE_JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._share_journal.write("".join(line + "\n" for line in lines))
            self._share_journal.flush()
        except OSError as exc:
            # Kafka's persister fails the acknowledgement when the state cannot be written
            # (a failed __share_group_state append: COORDINATOR_NOT_AVAILABLE to the client).
            log.error("data dir %s: cannot append to %s: %s", self.root, SHARE_JOURNAL, exc)
            self._share_journal = None
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot write the share-state journal: {exc}") from None

    def _replay_share_journal(self, saved: dict[str, Any] | None) -> dict[str, Any] | None:
        """The snapshot's share state with the journal's lines applied (a torn last line is
        reported and ignored, with anything after it)."""
        path = self.root / SHARE_JOURNAL
        if not path.exists():
            return saved
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self._report(f"{path} is unreadable ({exc}); share-state changes since the last metadata write are lost")
            return saved
        entries: list[dict[str, Any]] = []
        for n, line in enumerate(lines, 1):
            try:
                e = json.loads(line)
                if not isinstance(e, dict) or not ("group" in e or "sp" in e):
                    raise ValueError("not a share-state entry")
            except ValueError as exc:
                self._report(f"{path} line {n} unreadable ({exc}); later lines ignored")
                break
            entries.append(e)
        if not entries:
            return saved
        from kwire.broker.core.share_coordinator import ShareCoordinator

        return ShareCoordinator.replay(saved, entries)

    def _journal_pending(self, group: str, producer_id: int, tp: Any, committed: Any) -> None:
        if self._restoring or self._closed:
            return
        if tp is None:
            line = {"settle": [group, producer_id]}
        else:
            line = {"stage": [group, producer_id, tp[0], tp[1], dataclasses.asdict(committed)]}
        self._txn_write([json.dumps(line)])

    def _replay_txn_journal(self, saved: dict[str, Any] | None, pending: dict[str, Any]
                            ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The snapshot's transactions and staged offsets with the journal's lines applied."""
        path = self.root / TXN_JOURNAL
        if not path.exists():
            return saved, pending
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self._report(f"{path} is unreadable ({exc}); transaction steps since the last metadata write are lost")
            return saved, pending
        data: dict[str, Any] = dict(saved) if saved else {"coordinator_epoch": 0, "transactions": []}
        by_tid = {d["transactional_id"]: d for d in data.get("transactions", [])}
        staged = {g: {pid: list(rows) for pid, rows in by_pid.items()} for g, by_pid in pending.items()}
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                if "txn" in row:
                    if row["meta"] is None:
                        by_tid.pop(row["txn"], None)
                    else:
                        by_tid[row["txn"]] = row["meta"]
                elif "stage" in row:
                    group, pid, topic, partition, fields = row["stage"]
                    rows = staged.setdefault(group, {}).setdefault(str(pid), [])
                    rows[:] = [r for r in rows if (r[0], r[1]) != (topic, partition)] + [[topic, partition, fields]]
                else:
                    group, pid = row["settle"]
                    staged.get(group, {}).pop(str(pid), None)
            except (ValueError, TypeError, KeyError) as exc:
                # A crash mid-append leaves a torn last line; anything after it is not trusted.
                self._report(f"{path} line {n} unreadable ({exc}); later lines ignored")
                break
        data["transactions"] = [by_tid[t] for t in sorted(by_tid)]
        return data, staged

    def _restore_pending(self, pending: dict[str, Any]) -> None:
        store = self.core.subsystems.offsets
        from kwire.broker.core.offsets import CommittedOffset

        for group, by_pid in pending.items():
            for pid, rows in by_pid.items():
                for topic, partition, fields in rows:
                    if topic in self.core.cluster.topics:
                        store.stage(group, int(pid), topic, int(partition), CommittedOffset(**fields))

    def _replay_journal(self) -> None:
        path = self.root / OFFSETS_JOURNAL
        if not path.exists():
            return
        store = self.core.subsystems.offsets
        from kwire.broker.core.offsets import CommittedOffset

        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self._report(f"{path} is unreadable ({exc}); commits since the last metadata write are lost")
            return
        for n, line in enumerate(lines, 1):
            try:
                group, topic, partition, fields = json.loads(line)
                if topic not in self.core.cluster.topics:
                    continue
                if fields is None:
                    store.delete(group, topic, int(partition))
                else:
                    store.commit(group, topic, int(partition), CommittedOffset(**fields))
            except (ValueError, TypeError) as exc:
                # A crash mid-append leaves a torn last line; anything after it is not trusted.
                self._report(f"{path} line {n} unreadable ({exc}); later lines ignored")
                return

    def _read_metadata(self) -> dict[str, Any] | None:
        path = self.metadata_path
        if not path.exists():
            return None
        try:
            meta = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            self._report(f"{path} is unreadable ({exc})")
            self._set_aside(path)
            return None
        if not isinstance(meta, dict) or meta.get("version") != METADATA_VERSION:
            self._report(f"{path} has an unknown format (version {meta.get('version') if isinstance(meta, dict) else '?'})")
            self._set_aside(path)
            return None
        return meta

    def _set_aside(self, path: Path) -> None:
        """Keep an unusable file for inspection instead of overwriting it."""
        aside = path.with_name(f"{path.name}.unreadable-{self.core.clock.now_ms()}")
        try:
            os.replace(path, aside)
            self._report(f"kept as {aside.name}")
        except OSError as exc:
            self._report(f"cannot set {path} aside: {exc}")

    def _rebuild_from_partition_dirs(self) -> None:
        """Without usable metadata, bring the topics back from their partition directories (as
        Kafka recovers logs from its log dirs), so that no new write is acknowledged at offsets
        the old segments hold. What only the metadata knew is lost and said so: topic ids (new
        ones), configs, committed offsets, leader epochs beyond what the batches carry."""
        found: dict[str, set[int]] = {}
        for d in sorted(self.root.iterdir()):
            if not d.is_dir():
                continue
            topic, _, idx = d.name.rpartition("-")
            if topic and idx.isdigit() and list_segments(d):
                found.setdefault(topic, set()).add(int(idx))
        if not found:
            return
        for name, indexes in sorted(found.items()):
            count = max(indexes) + 1
            self._report(f"no metadata: rebuilding topic {name!r} ({count} partitions) from its partition "
                         "directories; its configs, topic id and committed offsets are lost")
            self._restore_topic(name, {"id": None, "partitions": [{} for _ in range(count)]}, quiet_id=True)

    def _offsets_snapshot(self) -> dict[str, Any]:
        store = self.core.subsystems.offsets
        out: dict[str, Any] = {}
        for group in store.groups():
            out[group] = [[t, p, dataclasses.asdict(c)] for (t, p), c in store.partitions(group).items()]
        return out

    def _restore_offsets(self, saved: dict[str, Any]) -> None:
        store = self.core.subsystems.offsets
        from kwire.broker.core.offsets import CommittedOffset

        for group, rows in saved.items():
            for topic, partition, fields in rows:
                if topic not in self.core.cluster.topics:
                    continue
                try:
                    store.commit(group, topic, int(partition), CommittedOffset(**fields))
                except TypeError as exc:
                    self._report(f"committed offset of {group!r} on {topic}-{partition} unreadable: {exc}")

    # --- restore ----------------------------------------------------------------------------
    def restore(self) -> None:
        """Bring back what the data dir holds (called once, after every subsystem is installed)."""
        meta = self._read_metadata()
        self._restoring = True
        try:
            if meta is not None:
                self._restore_metadata(meta)
            else:
                self._rebuild_from_partition_dirs()
            self._report_orphans()
        finally:
            self._restoring = False
        self.core.subsystems.offsets.on_change.append(self._journal_offset)
        self.core.subsystems.offsets.on_pending.append(self._journal_pending)
        self.core.before_answer.append(self._before_answer)
        self._subsystems = self.core.subsystems
        self._share = self.core.subsystems.share_groups
        self.save_metadata()
        if self._last_saved:  # the replayed journals are in the metadata now
            for name in (OFFSETS_JOURNAL, TXN_JOURNAL, SHARE_JOURNAL):
                with contextlib.suppress(OSError):
                    (self.root / name).unlink(missing_ok=True)
        self._schedule_sync()

    def _restore_metadata(self, meta: dict[str, Any]) -> None:
        core = self.core
        saved_cluster = meta.get("cluster_id")
        if saved_cluster:
            if core.config.cluster_id is None:
                core.cluster.cluster_id = saved_cluster
            elif core.config.cluster_id != saved_cluster:
                self._report(f"cluster id {core.config.cluster_id!r} differs from the data dir's {saved_cluster!r}; "
                             "using the configured one")
        for key, value in meta.get("broker_configs", {}).items():
            self._restore_config(ResourceType.BROKER, "", key, value)
        for broker_id, values in meta.get("broker_configs_by_id", {}).items():
            for key, value in values.items():
                self._restore_config(ResourceType.BROKER, str(broker_id), key, value)
        for group, values in meta.get("group_configs", {}).items():
            for key, value in values.items():
                self._restore_config(ResourceType.GROUP, group, key, value)
        for name, t in meta.get("topics", {}).items():
            self._restore_topic(name, t)
        self._restore_offsets(meta.get("offsets", {}))
        self._replay_journal()
        if core.subsystems.transactions is not None:
            try:
                txns, pending = self._replay_txn_journal(meta.get("transactions"), meta.get("pending_offsets") or {})
                self._restore_pending(pending)  # before the coordinator: a Prepare* it finds completes them
                if txns:
                    core.subsystems.transactions.restore(txns)
                core.subsystems.transactions.dirty.clear()  # all of it goes into the metadata below
            except (KeyError, TypeError, ValueError) as exc:
                self._report(f"transaction state unreadable, transactional ids start afresh: {exc}")
        if core.subsystems.share_groups is not None:
            try:
                shared = self._replay_share_journal(meta.get("share_groups"))
                if shared:
                    core.subsystems.share_groups.restore(shared)
            except (KeyError, TypeError, ValueError) as exc:
                self._report(f"share-group state unreadable, share groups start afresh: {exc}")
        self._restore_producer_ids(int(meta.get("next_producer_id", 0)))
        if meta.get("scram_credentials"):
            try:
                core.subsystems.scram_credentials.restore(meta["scram_credentials"])
            except (KeyError, TypeError, ValueError) as exc:
                self._report(f"SCRAM credentials unreadable ({exc}); the configured users remain")
        if meta.get("acls") and core.subsystems.acl is not None:
            try:
                core.subsystems.acl.restore(meta["acls"])
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                self._report(f"ACLs unreadable ({exc}); the cluster starts without ACLs")
        if meta.get("client_quotas") and core.subsystems.quotas is not None:
            try:
                core.subsystems.quotas.restore(meta["client_quotas"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                self._report(f"client quotas unreadable ({exc}); the cluster starts without quotas")

    def _restore_producer_ids(self, saved_next: int) -> None:
        """Never hand out a producer id again that a batch in the logs (or the last run) used.

        Ids allocated after the last metadata write are unknown after a crash; like the
        controller's id blocks, allocation resumes at the next block boundary past them.
        """
        ids = self.core.subsystems.producer_ids
        seen = [pid for t in self.core.cluster.topics.values() for p in t.partitions for pid in p.producers.entries]
        floor = max([saved_next, *(pid + 1 for pid in seen)])
        if floor > ids.next_id:
            ids.next_id = -(-floor // PRODUCER_ID_BLOCK_SIZE) * PRODUCER_ID_BLOCK_SIZE

    def _restore_config(self, rtype: ResourceType, name: str, key: str, value: str) -> None:
        try:
            self.core.configs.set(rtype, name, key, value, custom=True)
        except ConfigError as exc:
            self._report(f"{rtype.name.lower()} config {key}={value!r} not restored: {exc}")

    def _restore_topic(self, name: str, t: dict[str, Any], *, quiet_id: bool = False) -> None:
        core = self.core
        parts = t.get("partitions", [])
        rf = max((len(p.get("replicas", [])) for p in parts), default=1)
        rf = min(max(rf, 1), len(core.cluster.live_nodes()))
        configs = t.get("configs", {})
        try:
            topic_id = uuid.UUID(t["id"])
        except (KeyError, TypeError, ValueError):
            topic_id = None
            if not quiet_id:
                self._report(f"topic {name!r}: no valid topic id saved; a new one is assigned")
        existing = core.cluster.topics.get(name)
        if existing is not None:
            # Created while the core started (an internal topic): keep it, bring its data back.
            if topic_id is not None and existing.topic_id != topic_id:
                self._report(f"topic {name!r} exists with another id than the data dir's; its data is loaded anyway")
            if len(existing.partitions) < len(parts):
                core.create_partitions(name, len(parts))
            for p, saved in zip(existing.partitions, parts, strict=False):
                self._restore_partition(p, saved)
            return
        try:
            try:
                topic = core.create_topic(name, max(1, len(parts)), rf, configs, internal=bool(t.get("internal")),
                                          topic_id=topic_id)
            except KafkaError as exc:
                if exc.code != ErrorCode.INVALID_CONFIG:  # keep the topic, drop its configs
                    raise
                self._report(f"topic {name!r}: configs not restored ({exc.message})")
                topic = core.create_topic(name, max(1, len(parts)), rf, None, internal=bool(t.get("internal")),
                                          topic_id=topic_id)
        except KafkaError as exc:
            self._report(f"topic {name!r} not restored: {exc.message}")
            return
        for p, saved in zip(topic.partitions, parts, strict=False):
            self._restore_partition(p, saved)

    def _restore_partition(self, p: Partition, saved: dict[str, Any]) -> None:
        nodes = self.core.cluster.nodes
        replicas = [int(r) for r in saved.get("replicas", [])]
        if replicas and all(r in nodes for r in replicas):
            p.replicas = replicas
        leader = int(saved.get("leader", p.leader_id))
        if leader in nodes:
            p.leader_id = leader
        self._load_partition(p, int(saved.get("recovery_point", 0)))
        plog = p.log
        # Epoch history: what the batches said, merged with what was saved (leader moves that
        # wrote no batch are known only from the file); the earliest start per epoch wins.
        merged = dict(plog.epochs)
        with contextlib.suppress(TypeError, ValueError):
            for e, s in saved.get("epochs", []):
                merged[int(e)] = min(int(s), merged.get(int(e), int(s)))
        plog.epochs = []
        for e, s in sorted(merged.items()):
            plog.assign_epoch(e, s)
        latest = plog.epochs[-1][0] if plog.epochs else 0
        p.leader_epoch = max(int(saved.get("leader_epoch", 0)), latest)
        if p.leader_epoch > latest:
            plog.assign_epoch(p.leader_epoch, plog.log_end_offset)
        lso = int(saved.get("log_start_offset", 0))
        if lso > plog.log_start_offset:
            plog.truncate_before(lso)
        plog.cleaner_checkpoint = int(saved.get("cleaner_checkpoint", 0))

    def _report_orphans(self) -> None:
        known = {(t.name, p.index) for t in self.core.cluster.topics.values() for p in t.partitions}
        for d in sorted(self.root.iterdir()):
            if not d.is_dir():
                continue
            topic, _, idx = d.name.rpartition("-")
            if idx.isdigit() and (topic, int(idx)) not in known:
                self._report(f"{d.name}: partition directory of no known topic; left alone")
