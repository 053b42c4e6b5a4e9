"""A share partition on a real ``PartitionLog``, a ``ManualClock`` and the core's ``Deadlines`` heap,
without a BrokerCore: what the sans-I/O share tests drive."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kwire.broker.core.deadlines import Deadlines
from kwire.broker.core.log import AppendOrigin, PartitionLog
from kwire.broker.core.share_config import ShareConfig
from kwire.broker.core.share_partition import AckBatch, ArchiveRequest, SharePartition
from kwire.clock import ManualClock
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
