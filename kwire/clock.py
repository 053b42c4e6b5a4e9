"""Time as the sans-I/O core sees it: ``now_ms()`` is its only source of time."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SteppableClock", "SystemClock", "ManualClock", "JumpClock"]


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SteppableClock(Clock, Protocol):
    """A clock the broker core may move itself, one deadline at a time (``BrokerCore.advance_to``)."""

    def advance_to(self, at_ms: int) -> int: ...


class SystemClock:
    """Wall-clock milliseconds (the CLI's default)."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told.

    ``advance``/``advance_to`` only move the time; firing what became due is the broker
    core's job (``BrokerCore.advance`` steps through the deadlines in between).
    """

    __slots__ = ("_now_ms",)

    def __init__(self, start_ms: int | None = None) -> None:
        # Real clients stamp records with wall time; starting there keeps their timestamps valid.
        self._now_ms = time.time_ns() // 1_000_000 if start_ms is None else start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms``; returns the new time."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now_ms += ms
        return self._now_ms

    def advance_to(self, at_ms: int) -> int:
        """Move time forward to ``at_ms`` (no earlier than now); returns the new time."""
        if at_ms < self._now_ms:
            raise ValueError("time does not go backwards")
        self._now_ms = at_ms
        return self._now_ms


class JumpClock:
    """Wall-clock time that a test may jump forward: time flows as on a real broker (client
    timeouts, heartbeats and long polls behave normally) and ``advance_to`` moves it ahead at once,
    e.g. past a 30-second acquisition lock while real clients stay connected.

    Monotonic underneath: the start is the wall clock, the flow is ``time.monotonic_ns``.
    """

    __slots__ = ("_base_ms", "_start_ns", "_offset_ms")

    def __init__(self) -> None:
        self._base_ms = time.time_ns() // 1_000_000
        self._start_ns = time.monotonic_ns()
        self._offset_ms = 0

    def now_ms(self) -> int:
        return self._base_ms + (time.monotonic_ns() - self._start_ns) // 1_000_000 + self._offset_ms

    def advance(self, ms: int) -> int:
        """Jump forward by ``ms``; returns the new time."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._offset_ms += ms
        return self.now_ms()

    def advance_to(self, at_ms: int) -> int:
        """Jump forward to ``at_ms``; a time already passed leaves the clock alone."""
        now = self.now_ms()
        if at_ms > now:
            self._offset_ms += at_ms - now
        return self.now_ms()
