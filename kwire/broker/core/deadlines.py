"""One heap of deadlines on the injected clock: everything in the core that expires later
(long polls, session timeouts, rebalance timeouts, injected latency, and later acquisition
locks and transaction timeouts) is a ``Deadline`` here."""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Deadline", "Deadlines"]

log = logging.getLogger("kwire.broker")


@dataclass(order=True, slots=True)
class Deadline:
    at_ms: int
    seq: int
    fn: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Deadlines:
    """A min-heap of callbacks keyed by due time; ``fire_due`` runs those due at ``now_ms``."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[Deadline] = []
        self._seq = itertools.count()

    def at(self, at_ms: int, fn: Callable[[], None]) -> Deadline:
        d = Deadline(at_ms, next(self._seq), fn)
        heapq.heappush(self._heap, d)
        return d

    def next_ms(self) -> int | None:
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
        return heap[0].at_ms if heap else None

    def fire_due(self, now_ms: int) -> int:
        """Run every callback due at or before ``now_ms`` (in due order); returns how many ran."""
        ran = 0
        heap = self._heap
        while heap and heap[0].at_ms <= now_ms:
            d = heapq.heappop(heap)
            if d.cancelled:
                continue
            d.cancelled = True
            try:
                d.fn()
            except Exception:  # noqa: BLE001 - one failing timer must not stop the others (or the broker)
                log.exception("deadline callback failed")
            ran += 1
        return ran

    def __len__(self) -> int:
        return sum(1 for d in self._heap if not d.cancelled)
