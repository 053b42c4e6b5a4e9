"""Time as the sans-I/O core sees it: ``now_ms()`` is its only source of time."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "ManualClock"]


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock milliseconds (the CLI's default)."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told: tests drive timeouts with ``advance``."""

    __slots__ = ("_now_ms", "_listeners")

    def __init__(self, start_ms: int | None = None) -> None:
        # Real clients stamp records with wall time; starting there keeps their timestamps valid.
        self._now_ms = time.time_ns() // 1_000_000 if start_ms is None else start_ms
        self._listeners: list = []

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms`` and wake whoever waits on deadlines."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now_ms += ms
        for fn in list(self._listeners):
            fn()
        return self._now_ms

    def on_advance(self, fn) -> None:  # type: ignore[no-untyped-def]
        """Register a callback run after every ``advance`` (the trio edge uses it)."""
        self._listeners.append(fn)
