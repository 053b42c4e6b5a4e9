"""Time as the sans-I/O core sees it: ``now_ms()`` is its only source of time."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SteppableClock", "SystemClock", "ManualClock"]


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
