"""One heap of deadlines on the injected clock: everything in the core that expires later
(long polls, session timeouts, rebalance timeouts, injected latency, and later acquisition
locks and transaction timeouts) is a ``Deadline`` here.

Two ways to fire them:

* ``fire_due(now_ms)``: the clock is already at ``now_ms`` (wall time, or a test that moved a
  manual clock by hand); everything due at or before it runs, in due order, seeing ``now_ms``.
* ``run_until(target_ms, clock)``: a stepping clock, like trio's autojump clock. The clock is
  moved to each due deadline in turn, so every callback sees its own due time; callbacks may
  add deadlines, which fire within the same run if they fall due by ``target_ms``. The clock
  ends at ``target_ms``. A 10 ms periodic timer fires at 10, 20 and 30 in ``run_until(35)``.

Order: due time, then scheduling order (``seq``) among deadlines due at the same time.
A failing callback is logged and the others still run.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kwire.clock import SteppableClock

__all__ = ["Deadline", "Deadlines"]

_COMPACT_AT = 1024  # cancelled entries before a rebuild is considered

log = logging.getLogger("kwire.broker")


@dataclass(order=True, slots=True)
class Deadline:
    at_ms: int
    seq: int
    fn: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)
    owner: Deadlines | None = field(default=None, compare=False, repr=False)

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            if self.owner is not None:
                self.owner._cancelled += 1


class Deadlines:
    """A min-heap of callbacks keyed by (due time, scheduling order).

    The heap holds ``(at_ms, seq, deadline)`` tuples, the deadline's own order written out, so
    that pushes and pops compare in C (a dataclass ``__lt__`` is a Python call per comparison,
    and cancelled deadlines stay in the heap until they come up). Once cancelled entries are
    more than half of a large heap, it is rebuilt without them: a timer re-armed on every request
    (a transaction's expiry) must not grow the heap for as long as the broker runs."""

    __slots__ = ("_heap", "_seq", "_cancelled")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Deadline]] = []
        self._seq = itertools.count()
        self._cancelled = 0  # cancelled deadlines still in the heap

    def at(self, at_ms: int, fn: Callable[[], None]) -> Deadline:
        seq = next(self._seq)
        d = Deadline(at_ms, seq, fn, False, self)
        heapq.heappush(self._heap, (at_ms, seq, d))
        if self._cancelled > _COMPACT_AT and self._cancelled * 2 > len(self._heap):
            self._heap = [e for e in self._heap if not e[2].cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0
        return d

    def next_ms(self) -> int | None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        return heap[0][0] if heap else None

    def _pop_due(self, now_ms: int) -> Deadline | None:
        """The next live deadline due at or before ``now_ms``, taken off the heap."""
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            d = heapq.heappop(heap)[2]
            if not d.cancelled:
                d.cancelled = True  # fired: a late cancel() is harmless
                return d
            self._cancelled -= 1
        return None

    @staticmethod
    def _run(d: Deadline, after: Callable[[], None] | None) -> None:
        try:
            d.fn()
        except Exception:  # noqa: BLE001 - one failing timer must not stop the others (or the broker)
            log.exception("deadline callback failed")
        if after is not None:
            after()

    def fire_due(self, now_ms: int, after: Callable[[], None] | None = None) -> int:
        """Run every callback due at or before ``now_ms`` (in due order); returns how many ran.

        ``after`` runs after each callback (the core uses it to run the wake-ups it collected).
        """
        ran = 0
        while (d := self._pop_due(now_ms)) is not None:
            self._run(d, after)
            ran += 1
        return ran

    def run_until(self, target_ms: int, clock: SteppableClock, after: Callable[[], None] | None = None) -> int:
        """Step ``clock`` through every deadline due by ``target_ms``, firing each at its own time.

        Deadlines already overdue fire at the clock's current time (it never goes back). The
        clock ends at ``target_ms``; returns how many callbacks ran.
        """
        if target_ms < clock.now_ms():
            raise ValueError("time does not go backwards")
        ran = 0
        while (d := self._pop_due(target_ms)) is not None:
            if d.at_ms > clock.now_ms():
                clock.advance_to(d.at_ms)
            self._run(d, after)
            ran += 1
        clock.advance_to(target_ms)
        return ran

    def __len__(self) -> int:
        return sum(1 for _, _, d in self._heap if not d.cancelled)
