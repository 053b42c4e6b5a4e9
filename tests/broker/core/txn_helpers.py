"""Fakes around a ``TransactionCoordinator``: a manual clock with a real deadline heap, a marker
writer that records calls and fails on demand, and an increasing producer-id allocator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kwire.broker.core.deadlines import Deadlines
from kwire.broker.core.offsets import OffsetStore
from kwire.broker.core.txn_coordinator import TransactionCoordinator, TxnCoordinatorConfig
from kwire.clock import ManualClock
from kwire.protocol.error_codes import ErrorCode

START_MS = 1_750_000_000_000


@dataclass(slots=True, frozen=True)
class MarkerCall:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]


@dataclass
class FakeMarkers:
    """Records every ``write_markers`` call; ``failures[tp]`` > 0 fails that partition that many times."""

    calls: list[MarkerCall] = field(default_factory=list)
    failures: dict[tuple[str, int], int] = field(default_factory=dict)
    fail_all: bool = False

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: list[tuple[str, int]], transaction_version: int = 2) -> Mapping[tuple[str, int], int]:
        self.calls.append(MarkerCall(producer_id, producer_epoch, commit, coordinator_epoch, tuple(partitions)))
        out = {}
        for tp in partitions:
            left = self.failures.get(tp, 0)
            if self.fail_all or left > 0:
                self.failures[tp] = left - 1
                out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                out[tp] = ErrorCode.NONE
        return out


class Ids:
    def __init__(self, first: int = 1000) -> None:
        self.next_id = first

    def __call__(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid


class TxnHarness:
    """A coordinator with every collaborator faked; ``advance`` moves time and fires deadlines."""

    def __init__(self, **config: int) -> None:
        self.clock = ManualClock(START_MS)
        self.deadlines = Deadlines()
        self.markers = FakeMarkers()
        self.ids = Ids()
        self.offsets = OffsetStore()
        self.config = TxnCoordinatorConfig(**config)
        self.coord = self.new_coordinator()

    def new_coordinator(self) -> TransactionCoordinator:
        return TransactionCoordinator(self.clock, self.deadlines.at, self.ids, self.markers, self.offsets,
                                      lambda: self.config)

    def set_config(self, **changes: int) -> None:
        values = {k: getattr(self.config, k) for k in self.config.__slots__}  # type: ignore[attr-defined]
        values.update(changes)
        self.config = TxnCoordinatorConfig(**values)

    def advance(self, ms: int) -> None:
        """Step the clock through every deadline due within ``ms`` (each fires at its own time)."""
        self.deadlines.run_until(self.clock.now_ms() + ms, self.clock)

    def flush(self) -> None:
        """The next tick: deadlines due now fire (the markers an EndTxn left for later, TX-15)."""
        self.advance(0)

    def state(self, tid: str) -> str:
        return self.coord.transactions[tid].state.name
