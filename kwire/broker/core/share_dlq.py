"""Share-group dead-letter queues (KIP-1191): the failure archiver of the share partitions.

Theory of operation
-------------------
* A record that a member REJECTs, or that reaches the delivery-count limit when released, moves
  ACQUIRED → ARCHIVING in its share partition (phase 1, DLQ-3) and comes here as an
  ``ArchiveRequest``. The acknowledgement is answered at once (DLQ-11); the write is phase 2,
  run from a deadline at the current broker time, after the answer.
* Phase 2 (DLQ-4): check the destination (DLQ-5: share.version 2 and a group topic name, DLQ-1;
  not internal; the broker prefix; the topic's ``errors.deadletterqueue.group.enable``; or, when
  missing, auto-creation with DLQ-6's configs), then append one record per source offset
  (DLQ-7) to partition ``source partition % partitions`` through the log's one append path
  (``AppendOrigin.DLQ``: no compression, no producer id, the broker clock as timestamp), with
  DLQ-9's headers in order and the original key and value only when copying is on (DLQ-8). A
  write that would pass the DLQ topic's ``max.message.bytes`` goes out in several rounds, each
  one batch of as many records as fit (a record too large on its own is sent alone and refused
  with MESSAGE_TOO_LARGE, as the leader refuses it upstream).
  A NOT_LEADER_OR_FOLLOWER partition error, a disconnect (NETWORK_EXCEPTION) or a timeout
  (REQUEST_TIMED_OUT) is retried, up to 5 attempts a round, after 2 s, 4 s, 8 s and 16 s on the broker
  clock (DLQ-10: ShareGroupDLQStateManager's ExponentialBackoffManager, 1 s base, 30 s cap; its
  ±20 % jitter left out so the window's middle is used); any other error, a storage error
  included, fails the write at once.
* Either way the records then go ARCHIVING → ARCHIVED (``complete_archiving``): a failed write is
  counted and logged once per (group, cause), never reported to the consumer.
* With a data dir, ARCHIVING reaches the disk before the acknowledgement's answer and before the
  write, ARCHIVED right after it. ARCHIVING found on restart resumes phase 2 (DLQ-4), first
  reading the destination partition for dead letters the dead process already wrote (the
  DLQ-9 headers name group, topic, partition and offset), so no record gets two. Kafka would
  write such a record again (its phase 2 enqueues before it persists ARCHIVED).
* Sans-I/O: the clock, deadlines, logs and configs are the core's.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.context import CoreContext
from kwire.broker.core.log import AppendOrigin
from kwire.broker.core.share_partition import ArchiveCause, ArchiveRequest
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.cluster import Topic
    from kwire.broker.core.log import LogConfig

__all__ = ["DlqWriter", "DlqStats", "DLQ_MESSAGES", "HEADER_PREFIX", "MAX_ATTEMPTS", "RETRIABLE", "backoff_ms",
           "record_size"]

log = logging.getLogger("kwire.broker.dlq")


class DlqCore(CoreContext, Protocol):
    """What the dead-letter writer uses of the broker (``BrokerCore`` has it)."""

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> Topic: ...
    def log_config(self, topic: str) -> LogConfig: ...
    def error_code_name(self, code: int) -> str: ...

HEADER_PREFIX = "__dlq.errors."
DLQ_MESSAGES = {  # DLQ-9
    ArchiveCause.REJECTED: "Offset rejected by client.",
    ArchiveCause.DELIVERY_LIMIT: "Offset delivery count exceeded the threshold.",
}
MAX_ATTEMPTS = 5  # DLQ-10: MAX_REQUEST_ATTEMPTS
BACKOFF_MS = 1000  # REQUEST_BACKOFF_MS
MAX_BACKOFF_MS = 30_000  # REQUEST_BACKOFF_MAX_MS
BACKOFF_EXP_BASE = 2  # CommonClientConfigs.RETRY_BACKOFF_EXP_BASE
# DLQ-10 (handleProduceResponse): the NOT_LEADER_OR_FOLLOWER partition error and the client-side
# NETWORK_EXCEPTION (disconnect) and REQUEST_TIMED_OUT; every other error fails the write.
RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT})


RECORD_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD: a v2 batch header


def _varint_size(value: int) -> int:
    """Bytes of ``value`` as a zigzag varint (ByteUtils.sizeOfVarlong)."""
    z = ((value << 1) ^ (value >> 63)) & 0xFFFF_FFFF_FFFF_FFFF
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _field_size(data: bytes | None) -> int:
    return 1 if data is None else _varint_size(len(data)) + len(data)


def record_size(offset_delta: int, key: bytes | None, value: bytes | None,
                headers: list[tuple[str, bytes]]) -> int:
    """A v2 record's encoded size with timestamp delta 0 (DefaultRecord.sizeInBytes): what the DLQ
    writer adds up against max.message.bytes (DLQ-7)."""
    body = 1 + _varint_size(0) + _varint_size(offset_delta) + _field_size(key) + _field_size(value)
    body += _varint_size(len(headers))
    for hk, hv in headers:
        body += _field_size(hk.encode()) + _field_size(hv)
    return _varint_size(body) + body


def backoff_ms(attempts: int) -> int:
    """The wait after ``attempts`` failed attempts: ExponentialBackoff.backoff(attempts) without
    its jitter, so 2 s, 4 s, 8 s and 16 s before attempts 2 to 5 (DLQ-10)."""
    return min(BACKOFF_MS * BACKOFF_EXP_BASE ** attempts, MAX_BACKOFF_MS)


@dataclass(slots=True)
class DlqStats:
    """KIP-1191's per-group metrics, and why writes failed."""

    records_written: int = 0
    produce_requests: int = 0  # every attempt (DeadLetterQueueTotalProduceRequestsPerSec)
    failed_produce_requests: int = 0  # writes given up (DeadLetterQueueFailedProduceRequestsPerSec)
    failures: Counter[str] = field(default_factory=Counter)  # cause -> records not written


class DlqWriter:
    """Phase 2 of DLQ archiving for every share partition of one core."""

    def __init__(self, core: DlqCore) -> None:
        self.core = core
        self.stats: dict[str, DlqStats] = {}
        self._logged: set[tuple[str, str]] = set()
        # Fault injection: group -> (error code, remaining writes to fail; None: all).
        self.forced_failures: dict[str, list[Any]] = {}
        # True while the share state is restored: ARCHIVING found then may have been written
        # already (the process died between the write and ARCHIVED reaching the data dir).
        self.resuming = False

    # --- phase 1 → 2 ------------------------------------------------------------------------------
    def archive(self, req: ArchiveRequest) -> None:
        """The share partition's ``failure_archiver``: records entered ARCHIVING."""
        group = req.partition.group_id
        if not self._enabled(group):  # DLQ-1: archived at once, nothing written
            req.partition.complete_archiving(req.offsets)
            return
        now = self.core.clock.now_ms()
        resumed = self.resuming
        # After the acknowledgement's answer (DLQ-11): phase 2 runs from the deadline heap.
        self.core.deadlines.at(now, functools.partial(self._attempt, req, 1, 0, resumed))

    def _enabled(self, group: str) -> bool:
        configs = self.core.configs
        return (configs.get_int(ResourceType.BROKER, "", "share.version") >= 2
                and bool(configs.get(ResourceType.GROUP, group, "errors.deadletterqueue.topic.name")))

    def _attempt(self, req: ArchiveRequest, attempt: int, start: int = 0, resumed: bool = False,
                 todo: ArchiveRequest | None = None) -> None:
        """Write ``todo.offsets[start:]`` in rounds (DLQ-7); ``attempt`` counts the current round's
        tries. ``todo`` is ``req`` less what a dead process already wrote (``resumed``); ``req``'s
        offsets all go ARCHIVED at the end."""
        sp = req.partition
        group = sp.group_id
        stats = self.stats.setdefault(group, DlqStats())
        if todo is None:
            todo = self._unwritten(req) if resumed else req
        while start < len(todo.offsets):
            try:
                written = self._write(todo, start)
            except KafkaError as exc:
                if exc.code in RETRIABLE and attempt < MAX_ATTEMPTS:  # DLQ-10
                    self.core.deadlines.at(self.core.clock.now_ms() + backoff_ms(attempt),
                                           functools.partial(self._attempt, req, attempt + 1, start, False, todo))
                    return
                if exc.code != ErrorCode.NONE:  # a produce that was given up (not a failed precondition)
                    stats.failed_produce_requests += 1
                cause = exc.message or self.core.error_code_name(exc.code)
                stats.failures[cause] += len(todo.offsets) - start
                if (group, cause) not in self._logged:  # once per cause, not per record
                    self._logged.add((group, cause))
                    log.warning("share group %s: dead-letter write of %s-%d offsets %s failed: %s (the records "
                                "are archived without a dead-letter copy)", group, sp.topic, sp.partition,
                                list(todo.offsets[start:]), cause)
                break
            stats.records_written += written
            start += written
            attempt = 1  # produceRequestBackoff.resetAttempts(): each round has its own attempts
        sp.complete_archiving(req.offsets)  # DLQ-4: ARCHIVED whether or not the write worked

    # --- the write ----------------------------------------------------------------------------------
    def _destination(self, group: str) -> Any:
        """DLQ-5's checks and DLQ-6's auto-creation; the topic, or KafkaError (NONE: not an error
        code, only the cause) when nothing may be written."""
        core = self.core
        configs = core.configs
        name = configs.get(ResourceType.GROUP, group, "errors.deadletterqueue.topic.name") or ""
        if not name or name.startswith("__"):
            raise KafkaError(ErrorCode.NONE, f"dead-letter topic {name!r} is not allowed")
        prefix = configs.get(ResourceType.BROKER, "", "errors.deadletterqueue.topic.name.prefix") or ""
        if prefix and not name.startswith(prefix):
            raise KafkaError(ErrorCode.NONE, f"dead-letter topic {name!r} lacks the broker's prefix {prefix!r}")
        topic = core.cluster.topics.get(name)
        if topic is None:
            if not configs.get_bool(ResourceType.BROKER, "", "errors.deadletterqueue.auto.create.topics.enable"):
                raise KafkaError(ErrorCode.NONE, f"dead-letter topic {name!r} does not exist and auto-creation "
                                                 f"is off")
            topic = core.create_topic(name, None, None, {"errors.deadletterqueue.group.enable": "true",
                                                         "message.timestamp.type": "CreateTime"})  # DLQ-6
        if not configs.get_bool(ResourceType.TOPIC, name, "errors.deadletterqueue.group.enable"):
            raise KafkaError(ErrorCode.NONE, f"topic {name!r} does not accept dead-letter records "
                                             f"(errors.deadletterqueue.group.enable is false)")
        return topic

    def _write(self, req: ArchiveRequest, start: int) -> int:
        """One round (one produce request): a batch of the records from ``req.offsets[start]`` on
        that fits the DLQ topic's max.message.bytes (DLQ-7; DLQStateManager ``topicProduceData``).
        Returns how many were written."""
        from kwire.records import BatchBuilder

        core = self.core
        sp = req.partition
        group = sp.group_id
        forced = self.forced_failures.get(group)
        if forced is not None:
            code, left = forced
            if left is not None:
                forced[1] = left - 1
                if forced[1] <= 0:
                    del self.forced_failures[group]
            self.stats.setdefault(group, DlqStats()).produce_requests += 1
            raise KafkaError(code, f"forced by the control API ({core.error_code_name(code)})")
        topic = self._destination(group)
        copy = core.configs.get_bool(ResourceType.GROUP, group, "errors.deadletterqueue.copy.record.enable")
        offsets = req.offsets[start:]
        originals = self._originals(sp, offsets) if copy else {}
        dest = topic.partitions[sp.partition % len(topic.partitions)]  # DLQ-7
        config = core.log_config(topic.name)
        now = core.clock.now_ms()
        b = BatchBuilder()  # DLQ-7: no compression, no producer id
        size = RECORD_BATCH_OVERHEAD
        for i in range(start, len(req.offsets)):
            off, count, cause = req.offsets[i], req.delivery_counts[i], req.causes[i]
            key, value = originals.get(off, (None, None))
            headers = [(HEADER_PREFIX + "topic", sp.topic.encode()),  # DLQ-9, in this order
                       (HEADER_PREFIX + "partition", str(sp.partition).encode()),
                       (HEADER_PREFIX + "offset", str(off).encode()),
                       (HEADER_PREFIX + "group", group.encode()),
                       (HEADER_PREFIX + "delivery.count", str(count).encode()),
                       (HEADER_PREFIX + "message", DLQ_MESSAGES[cause].encode())]
            record = record_size(b.record_count, key, value, headers)
            if size + record > config.max_message_bytes and b.record_count:
                break  # the rest goes in the next round
            b.append(value, key, headers, timestamp_ms=now)
            size += record
            if size > config.max_message_bytes:
                break  # too large on its own: sent alone, and the leader refuses it
        self.stats.setdefault(group, DlqStats()).produce_requests += 1
        if dest.leader_id < 0 or not core.cluster.nodes[dest.leader_id].up:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic.name}-{dest.index} has no live leader")
        if size > config.max_message_bytes:  # LogValidator: RecordTooLargeException
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"a dead-letter batch of {size} bytes exceeds "
                                                          f"max.message.bytes {config.max_message_bytes} of {topic.name}")
        dest.log.append(bytearray(b.build()), AppendOrigin.DLQ, now_ms=now, leader_epoch=dest.leader_epoch,
                        config=config)
        return b.record_count

    def _unwritten(self, req: ArchiveRequest) -> ArchiveRequest:
        """``req`` less the records a dead process already wrote: ARCHIVING found on restart whose
        ARCHIVED had not reached the data dir. Never a second dead letter for one record."""
        try:
            topic = self._destination(req.partition.group_id)
        except KafkaError:
            return req  # nothing can have been written there; the write fails the same way
        dest = topic.partitions[req.partition.partition % len(topic.partitions)]
        done = self._already_written(dest, req.partition, req.offsets)
        keep = [i for i, off in enumerate(req.offsets) if off not in done]
        return dataclasses.replace(req, offsets=tuple(req.offsets[i] for i in keep),
                                   delivery_counts=tuple(req.delivery_counts[i] for i in keep),
                                   causes=tuple(req.causes[i] for i in keep))

    @staticmethod
    def _already_written(dest: Any, sp: Any, offsets: tuple[int, ...]) -> set[int]:
        """Source offsets of ``sp`` that already have a dead letter in ``dest`` (read from the
        DLQ-9 headers; only after a restart, for records found ARCHIVING)."""
        from kwire.records import RecordBatch

        wanted = {str(o).encode(): o for o in offsets}
        ident = {HEADER_PREFIX + "topic": sp.topic.encode(), HEADER_PREFIX + "partition": str(sp.partition).encode(),
                 HEADER_PREFIX + "group": sp.group_id.encode()}
        found: set[int] = set()
        for stored in dest.log.batches:
            if stored.is_control or stored.producer_id != -1:
                continue  # DLQ-7: the broker's dead letters carry no producer id
            for r in RecordBatch(bytes(stored.data)):
                h = {k: bytes(v) for k, v in r.headers if v is not None}
                off = wanted.get(h.get(HEADER_PREFIX + "offset", b""))
                if off is not None and all(h.get(k) == v for k, v in ident.items()):
                    found.add(off)
        return found

    @staticmethod
    def _originals(sp: Any, offsets: tuple[int, ...]) -> dict[int, tuple[bytes | None, bytes | None]]:
        """DLQ-8: the original key and value of each offset still in the log."""
        from kwire.records import RecordBatch

        wanted = set(offsets)
        out: dict[int, tuple[bytes | None, bytes | None]] = {}
        data = sp.log.read(min(offsets), 2**31 - 1, upto=max(offsets) + 1)
        for part in data.parts:
            for r in RecordBatch(bytes(part)):
                if r.offset in wanted:
                    out[r.offset] = (None if r.key is None else bytes(r.key),
                                     None if r.value is None else bytes(r.value))
        return out
