"""Tools for people who run dead-letter queues: read a DLQ topic (from a live cluster over kwire's
own codec, or from a broker's data dir), understand the headers the common conventions write,
and replay records to where they came from.

Conventions understood (``parse_dead_letter``):

* ``kip1191`` — share groups (KIP-1191): ``__dlq.errors.topic/partition/offset/group/
  delivery.count/message``, UTF-8 text.
* ``connect`` — Kafka Connect's ``errors.deadletterqueue.context.headers.enable``:
  ``__connect.errors.topic/partition/offset/connector.name/exception.message`` (text).
* ``spring`` — Spring Kafka's DeadLetterPublishingRecoverer: ``kafka_dlt-original-topic`` (text),
  ``-partition`` (4-byte big-endian int), ``-offset`` (8-byte big-endian long),
  ``-consumer-group``, ``kafka_dlt-exception-message``.
* ``x-original`` — plain ``x-original-topic/partition/offset`` text headers.

Replay (``replay``) re-produces records to their original topic and partition (or another topic)
with every convention's headers stripped and one header added, ``kwire.dlq.replayed-from`` =
``DLQTOPIC/PARTITION/OFFSET``; records already carrying that marker in the destination are
skipped, so a second replay writes nothing. Order is kept per DLQ partition, not across them.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwire.errors import KwireError

if TYPE_CHECKING:
    from kwire.client import WireClient

__all__ = ["DeadLetter", "parse_dead_letter", "read_cluster", "read_data_dir", "replay", "REPLAY_MARKER",
           "ReplayResult"]

REPLAY_MARKER = "kwire.dlq.replayed-from"
_PREFIXES = ("__dlq.errors.", "__connect.errors.", "kafka_dlt-", "x-original-")
FETCH_VERSION = 12  # topics by name
PRODUCE_VERSION = 9


@dataclass(slots=True)
class DeadLetter:
    """One record of a dead-letter topic, with what its headers say about where it came from."""

    dlq_topic: str
    dlq_partition: int
    dlq_offset: int
    convention: str  # kip1191 | connect | spring | x-original | unknown
    source_topic: str | None
    source_partition: int | None
    source_offset: int | None
    group: str | None
    delivery_count: int | None
    error: str | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"dlq_topic": self.dlq_topic, "dlq_partition": self.dlq_partition, "dlq_offset": self.dlq_offset,
                "convention": self.convention, "source_topic": self.source_topic,
                "source_partition": self.source_partition, "source_offset": self.source_offset,
                "group": self.group, "delivery_count": self.delivery_count, "error": self.error,
                "key": None if self.key is None else self.key.decode(errors="replace"),
                "value": None if self.value is None else self.value.decode(errors="replace"),
                "headers": {k: None if v is None else v.decode(errors="replace") for k, v in self.headers}}


def _text(v: bytes | None) -> str | None:
    return None if v is None else v.decode(errors="replace")


def _int(v: bytes | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v.decode())
    except (UnicodeDecodeError, ValueError):
        return None


def _binary_int(v: bytes | None) -> int | None:
    """Spring writes partition as a 4-byte and offset as an 8-byte big-endian number."""
    if v is None:
        return None
    if len(v) == 4:
        return int(struct.unpack(">i", v)[0])
    if len(v) == 8:
        return int(struct.unpack(">q", v)[0])
    return _int(v)


def parse_dead_letter(dlq_topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                      headers: Iterable[tuple[str, bytes | None]]) -> DeadLetter:
    """A DLQ record as the first convention its headers match reads it."""
    hs = list(headers)
    h = {k: v for k, v in hs}
    d = DeadLetter(dlq_topic, partition, offset, "unknown", None, None, None, None, None, None, key, value, hs)
    if "__dlq.errors.topic" in h:
        d.convention = "kip1191"
        d.source_topic, d.source_partition = _text(h["__dlq.errors.topic"]), _int(h.get("__dlq.errors.partition"))
        d.source_offset, d.group = _int(h.get("__dlq.errors.offset")), _text(h.get("__dlq.errors.group"))
        d.delivery_count, d.error = _int(h.get("__dlq.errors.delivery.count")), _text(h.get("__dlq.errors.message"))
    elif "__connect.errors.topic" in h:
        d.convention = "connect"
        d.source_topic = _text(h["__connect.errors.topic"])
        d.source_partition, d.source_offset = _int(h.get("__connect.errors.partition")), \
            _int(h.get("__connect.errors.offset"))
        d.group = _text(h.get("__connect.errors.connector.name"))
        d.error = _text(h.get("__connect.errors.exception.message") or h.get("__connect.errors.exception.class.name"))
    elif "kafka_dlt-original-topic" in h:
        d.convention = "spring"
        d.source_topic = _text(h["kafka_dlt-original-topic"])
        d.source_partition = _binary_int(h.get("kafka_dlt-original-partition"))
        d.source_offset = _binary_int(h.get("kafka_dlt-original-offset"))
        d.group = _text(h.get("kafka_dlt-original-consumer-group"))
        d.error = _text(h.get("kafka_dlt-exception-message") or h.get("kafka_dlt-exception-fqcn"))
    elif "x-original-topic" in h:
        d.convention = "x-original"
        d.source_topic = _text(h["x-original-topic"])
        d.source_partition, d.source_offset = _int(h.get("x-original-partition")), _int(h.get("x-original-offset"))
        d.error = _text(h.get("x-exception-message") or h.get("x-error"))
    return d


def read_cluster(client: WireClient, topic: str) -> Iterator[DeadLetter]:
    """Every record of ``topic`` on a live cluster (Metadata, ListOffsets, Fetch with kwire's codec)."""
    from kwire.cluster_info import describe_topics
    from kwire.protocol.messages.fetch import FetchRequest
    from kwire.records import RecordBatch, iter_batches

    found = describe_topics(client, [topic])
    if not found or found[0].error:
        raise KwireError(f"topic {topic!r}: {found[0].error if found else 'not found'}")
    info = found[0]
    for p in info.partitions:
        offset, end = p.start_offset or 0, p.end_offset or 0
        while offset < end:
            req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                                   FetchRequest.FetchPartition(partition=p.partition, current_leader_epoch=-1,
                                                               fetch_offset=offset, log_start_offset=-1,
                                                               partition_max_bytes=8 << 20)])])
            resp = client.request(req, node=p.leader, version=FETCH_VERSION)
            pd = resp.responses[0].partitions[0]
            if pd.error_code:
                raise KwireError(f"{topic}-{p.partition}: Fetch error {pd.error_code}")
            data = bytes(pd.records or b"")
            if not data:
                break
            moved = False
            for batch in iter_batches(data):
                if not isinstance(batch, RecordBatch):
                    continue  # a legacy message set: not something a DLQ writer produces
                for r in batch:
                    if r.offset >= offset and not batch.is_control:
                        yield _dead_letter(topic, p.partition, r)
                if batch.last_offset >= offset:
                    offset = batch.last_offset + 1
                    moved = True
            if not moved:
                break


def _dead_letter(topic: str, partition: int, r: Any) -> DeadLetter:
    return parse_dead_letter(topic, partition, r.offset, None if r.key is None else bytes(r.key),
                             None if r.value is None else bytes(r.value),
                             [(k, None if v is None else bytes(v)) for k, v in r.headers])


def read_data_dir(data_dir: str | os.PathLike[str], topic: str) -> Iterator[DeadLetter]:
    """Every record of ``topic`` from a broker's data dir (``<topic>-<partition>/*.log``, Kafka's layout)."""
    from kwire.records import RecordBatch
    from kwire.records.segment import iter_partition_dir, parse_partition_dir_name

    root = Path(data_dir)
    dirs = []
    for d in root.iterdir():
        if not d.is_dir():
            continue
        try:
            name, index = parse_partition_dir_name(d.name)
        except (KwireError, ValueError):
            continue
        if name == topic:
            dirs.append((index, d))
    if not dirs:
        raise KwireError(f"no partition directories of {topic!r} in {root}")
    for index, d in sorted(dirs):
        for batch in iter_partition_dir(d, recover=True):
            rb = batch if isinstance(batch, RecordBatch) else RecordBatch(bytes(batch))
            if rb.is_control:
                continue
            for r in rb:
                yield _dead_letter(topic, index, r)


@dataclass(slots=True)
class ReplayResult:
    produced: int = 0
    skipped_already: int = 0  # a previous replay wrote them (the marker is in the destination)
    skipped_unknown: int = 0  # no original topic known and no --to
    # no key and no value: the DLQ did not copy the record (KIP-1191 errors.deadletterqueue.copy.record.enable
    # false, the default); replaying it would write an empty record into the original topic
    skipped_no_payload: int = 0
    planned: list[tuple[str, int, DeadLetter]] = field(default_factory=list)  # (topic, partition, record)


def replay(client: WireClient, letters: Iterable[DeadLetter], *, to_topic: str | None = None,
           keep: Callable[[DeadLetter], bool] = lambda _d: True, dry_run: bool = False,
           allow_empty: bool = False) -> ReplayResult:
    """Re-produce dead letters to their original topic and partition (or ``to_topic``, partition
    ``source % partitions``), convention headers stripped, idempotently (see the module docstring).
    Records that carry neither key nor value (the DLQ did not copy the payload) are skipped unless
    ``allow_empty``."""
    from kwire.cluster_info import describe_topics

    result = ReplayResult()
    by_dest: dict[str, list[DeadLetter]] = {}
    for d in letters:
        if not keep(d):
            continue
        if d.key is None and d.value is None and not allow_empty:
            result.skipped_no_payload += 1
            continue
        dest = to_topic or d.source_topic
        if dest is None:
            result.skipped_unknown += 1
            continue
        by_dest.setdefault(dest, []).append(d)
    for dest, items in by_dest.items():
        found = describe_topics(client, [dest])
        if not found or found[0].error or not found[0].partitions:
            raise KwireError(f"destination topic {dest!r}: {found[0].error if found else 'not found'}")
        info = found[0]
        done = {m for m in _markers(client, dest)}
        count = len(info.partitions)
        for d in items:
            marker = f"{d.dlq_topic}/{d.dlq_partition}/{d.dlq_offset}"
            if marker in done:
                result.skipped_already += 1
                continue
            part = (d.source_partition or 0) % count if to_topic else (d.source_partition or 0)
            if part >= count:
                part %= count
            result.planned.append((dest, part, d))
        if not dry_run:
            for dest_t, part, d in [x for x in result.planned if x[0] == dest]:
                _produce(client, dest_t, part, info.partitions[part].leader, d)
                result.produced += 1
    return result


def _markers(client: WireClient, topic: str) -> Iterator[str]:
    for d in read_cluster(client, topic):
        for k, v in d.headers:
            if k == REPLAY_MARKER and v is not None:
                yield v.decode(errors="replace")


def _produce(client: WireClient, topic: str, partition: int, leader: int, d: DeadLetter) -> None:
    from kwire.protocol.messages.produce import ProduceRequest
    from kwire.records import BatchBuilder

    headers = [(k, v) for k, v in d.headers if not k.startswith(_PREFIXES)]
    headers.append((REPLAY_MARKER, f"{d.dlq_topic}/{d.dlq_partition}/{d.dlq_offset}".encode()))
    b = BatchBuilder()
    b.append(d.value, d.key, headers)
    req = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=b.build())])])
    resp = client.request(req, node=leader, version=PRODUCE_VERSION)
    code = resp.responses[0].partition_responses[0].error_code
    if code:
        raise KwireError(f"produce to {topic}-{partition} failed with error {code}")
