"""A share partition on a real ``PartitionLog``, a ``ManualClock`` and the core's ``Deadlines`` heap,
without a BrokerCore: what the sans-I/O share tests drive."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from kwire.broker.core.deadlines import Deadlines
from kwire.broker.core.log import AppendOrigin, PartitionLog
from kwire.broker.core.share_config import ShareConfig
from kwire.broker.core.share_partition import AckBatch, ArchiveRequest, SharePartition
from kwire.clock import ManualClock
from kwire.protocol.messages.share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequest_AcknowledgementBatch,
    ShareAcknowledgeRequest_AcknowledgePartition,
    ShareAcknowledgeRequest_AcknowledgeTopic,
)
from kwire.protocol.messages.share_fetch import (
    ShareFetchRequest,
    ShareFetchRequest_AcknowledgementBatch,
    ShareFetchRequest_FetchPartition,
    ShareFetchRequest_FetchTopic,
    ShareFetchRequest_ForgottenTopic,
)
from kwire.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from kwire.records import BatchBuilder, validate_and_assign

START_MS = 1_750_000_000_000


class Timeline:
    """The injected clock and scheduler: ``advance`` steps through due deadlines in order."""

    def __init__(self, start_ms: int = START_MS) -> None:
        self.clock = ManualClock(start_ms)
        self.deadlines = Deadlines()

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def schedule(self, at_ms: int, fn):  # type: ignore[no-untyped-def]
        return self.deadlines.at(at_ms, fn)

    def advance(self, ms: int) -> None:
        target = self.clock.now_ms() + ms
        while True:
            nxt = self.deadlines.next_ms()
            if nxt is None or nxt > target:
                break
            if nxt > self.clock.now_ms():
                self.clock.advance(nxt - self.clock.now_ms())
            self.deadlines.fire_due(self.clock.now_ms())
        self.clock.advance(target - self.clock.now_ms())


def append(log: PartitionLog, count: int, *, producer_id: int = -1, transactional: bool = False,
           timestamp_ms: int = START_MS) -> tuple[int, int]:
    """Append a real batch of ``count`` records through the log's one append path; returns (base, last)."""
    b = BatchBuilder(producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                     base_sequence=0 if producer_id >= 0 else -1, is_transactional=transactional)
    for i in range(count):
        b.append(b"v%d" % i, b"k%d" % i, timestamp_ms=timestamp_ms)
    buf = bytearray(b.build())
    info = validate_and_assign(buf, log.log_end_offset, -1)
    log.append(buf, AppendOrigin.RESTORE, now_ms=timestamp_ms, info=info)
    return info.base_offset, info.last_offset


def abort(log: PartitionLog, producer_id: int) -> int:
    """End ``producer_id``'s open transaction with an ABORT marker; returns the marker's offset."""
    return log.append_marker(producer_id, 0, False, coordinator_epoch=0, now_ms=START_MS,
                             transaction_version=1).base_offset


@dataclass
class Rig:
    """A share partition and everything around it."""

    log: PartitionLog
    tl: Timeline
    cfg: ShareConfig
    sp: SharePartition
    archived: list[ArchiveRequest] = field(default_factory=list)
    wakeups: int = 0

    def set(self, **changes: object) -> None:
        self.cfg = replace(self.cfg, **changes)  # type: ignore[arg-type]

    def ack(self, member: str, first: int, last: int, *types: int, version: int = 2,
            renew: bool | None = None) -> None:
        is_renew = (4 in types) if renew is None else renew
        self.sp.acknowledge(member, [AckBatch(first, last, tuple(types))], version=version, is_renew_ack=is_renew)

    def state(self, offset: int):  # type: ignore[no-untyped-def]
        return self.sp.record_state(offset)


def rig(*batches: int, archiver: bool = False, **cfg: object) -> Rig:
    """A partition over a log of batches of the given sizes, auto.offset.reset earliest by default."""
    from kwire.broker.core.share_config import AutoOffsetReset

    log = PartitionLog("t", 0)
    for n in batches:
        append(log, n)
    tl = Timeline()
    cfg.setdefault("auto_offset_reset", AutoOffsetReset.EARLIEST)
    r = Rig(log, tl, ShareConfig(**cfg), None)  # type: ignore[arg-type]
    r.sp = SharePartition("g", "t", 0, log, clock=tl.clock, schedule=tl.schedule, config=lambda: r.cfg,
                          failure_archiver=r.archived.append if archiver else None)

    def woke(_sp: SharePartition) -> None:
        r.wakeups += 1

    r.sp.on_available = woke
    return r


# --- share clients over a BrokerCore (no sockets) ---------------------------------------------
class ShareClient:
    """One share consumer's requests through the core: ShareGroupHeartbeat, ShareFetch and
    ShareAcknowledge in message objects, with its session epoch kept as a client keeps it."""

    def __init__(self, core: Any, *, group: str = "sg", member_id: str | None = None,
                 broker_id: int | None = None) -> None:
        from tests.broker.helpers import CoreClient

        self.core = core
        self.c = CoreClient(core, broker_id)
        self.group = group
        self.member_id = member_id or str(uuid.uuid4())
        self.member_epoch = 0
        self.session_epoch = 0
        self.assignment: dict[uuid.UUID, list[int]] = {}

    def heartbeat(self, topics: list[str] | None = None, *, epoch: int | None = None) -> Any:
        req = ShareGroupHeartbeatRequest(group_id=self.group, member_id=self.member_id,
                                         member_epoch=self.member_epoch if epoch is None else epoch,
                                         subscribed_topic_names=topics)
        resp = self.c.send(req, 1)
        if resp.error_code == 0:
            self.member_epoch = resp.member_epoch
            if resp.assignment is not None:
                self.assignment = {tp.topic_id: list(tp.partitions) for tp in resp.assignment.topic_partitions}
        return resp

    def join(self, topics: list[str], *, wait_ms: int = 1000) -> Any:
        """Join and heartbeat again ``wait_ms`` later on the broker clock, as a client does after
        an empty first assignment (HB-6): by then the share state is initialised and
        ``share.assignment.interval.ms`` (1000 by default) allows a new target."""
        first = self.heartbeat(topics)
        assert first.error_code == 0, first
        self.core.advance(wait_ms)
        return self.heartbeat()

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.core.cluster.topics[topic].topic_id

    def fetch(self, parts: dict[str, list[int]] | None = None, *, acks: dict[tuple[str, int], list[tuple]] | None = None,
              version: int = 2, max_wait_ms: int = 0, max_records: int = 500, batch_size: int = 500,
              max_bytes: int = 1 << 20, min_bytes: int = 1, mode: int = 0, renew: bool = False,
              epoch: int | None = None, forgotten: dict[str, list[int]] | None = None) -> Any:
        """ShareFetch of ``parts`` (topic -> partitions) carrying ``acks`` ((topic, p) -> [(first, last, types...)])."""
        topics: dict[str, dict[int, list[Any]]] = {}
        for t, ps in (parts or {}).items():
            for p in ps:
                topics.setdefault(t, {}).setdefault(p, [])
        for (t, p), batches in (acks or {}).items():
            topics.setdefault(t, {}).setdefault(p, []).extend(
                ShareFetchRequest_AcknowledgementBatch(first_offset=b[0], last_offset=b[1], acknowledge_types=list(b[2:]))
                for b in batches)
        req = ShareFetchRequest(
            group_id=self.group, member_id=self.member_id,
            share_session_epoch=self.session_epoch if epoch is None else epoch, max_wait_ms=max_wait_ms,
            min_bytes=min_bytes, max_bytes=max_bytes, max_records=max_records, batch_size=batch_size,
            share_acquire_mode=mode, is_renew_ack=renew,
            topics=[ShareFetchRequest_FetchTopic(topic_id=self.topic_id(t), partitions=[
                ShareFetchRequest_FetchPartition(partition_index=p, acknowledgement_batches=b) for p, b in ps.items()])
                for t, ps in topics.items()],
            forgotten_topics_data=[ShareFetchRequest_ForgottenTopic(topic_id=self.topic_id(t), partitions=ps)
                                   for t, ps in (forgotten or {}).items()])
        resp = self.c.send(req, version)
        # A parked fetch moved the session on already (its answer comes later, see CoreClient.deferred).
        self._advance(0 if resp is None else resp.error_code, epoch)
        return resp

    def _advance(self, code: int, epoch: int | None) -> None:
        if code == 0 and epoch is None:
            self.session_epoch += 1

    def acknowledge(self, acks: dict[tuple[str, int], list[tuple]], *, version: int = 2, renew: bool = False,
                    epoch: int | None = None) -> Any:
        by_topic: dict[str, dict[int, list[tuple]]] = {}
        for (t, p), batches in acks.items():
            by_topic.setdefault(t, {})[p] = batches
        req = ShareAcknowledgeRequest(
            group_id=self.group, member_id=self.member_id,
            share_session_epoch=self.session_epoch if epoch is None else epoch, is_renew_ack=renew,
            topics=[ShareAcknowledgeRequest_AcknowledgeTopic(topic_id=self.topic_id(t), partitions=[
                ShareAcknowledgeRequest_AcknowledgePartition(partition_index=p, acknowledgement_batches=[
                    ShareAcknowledgeRequest_AcknowledgementBatch(first_offset=b[0], last_offset=b[1],
                                                                 acknowledge_types=list(b[2:])) for b in bs])
                for p, bs in ps.items()]) for t, ps in by_topic.items()])
        resp = self.c.send(req, version)
        self._advance(resp.error_code, epoch)
        return resp


def partition_data(resp: Any, partition: int = 0) -> Any:
    """The response's PartitionData for ``partition`` (of any topic)."""
    for tr in resp.responses:
        for pd in tr.partitions:
            if pd.partition_index == partition:
                return pd
    raise AssertionError(f"partition {partition} not in the response")


def acquired(resp: Any, partition: int = 0) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in partition_data(resp, partition).acquired_records]
