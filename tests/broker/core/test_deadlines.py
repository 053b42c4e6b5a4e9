"""The deadline heap: due order, same-time FIFO, cancel, callbacks that add deadlines, failing
callbacks, and the stepping clock (``run_until``: each deadline fires at its own time)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from kwire.broker.core.deadlines import Deadlines
from kwire.clock import ManualClock

T0 = 1_000_000


def recorder(clock: ManualClock, log: list[tuple[str, int]], name: str) -> Callable[[], None]:
    return lambda: log.append((name, clock.now_ms()))


# --- fire_due: the clock is already where it is ------------------------------------------------
def test_fire_due_runs_in_due_order_not_scheduling_order() -> None:
    d = Deadlines()
    ran: list[str] = []
    d.at(30, lambda: ran.append("c"))
    d.at(10, lambda: ran.append("a"))
    d.at(20, lambda: ran.append("b"))
    assert d.fire_due(25) == 2
    assert ran == ["a", "b"]
    assert d.next_ms() == 30 and len(d) == 1


def test_same_time_deadlines_fire_in_scheduling_order() -> None:
    d = Deadlines()
    ran: list[int] = []
    for i in range(20):
        d.at(5, lambda i=i: ran.append(i))
    d.fire_due(5)
    assert ran == list(range(20))


def test_cancelled_deadline_never_fires_and_is_not_counted() -> None:
    d = Deadlines()
    ran: list[str] = []
    keep = d.at(10, lambda: ran.append("keep"))
    gone = d.at(5, lambda: ran.append("gone"))
    gone.cancel()
    assert len(d) == 1 and d.next_ms() == 10
    assert d.fire_due(100) == 1
    assert ran == ["keep"] and keep.cancelled  # a fired deadline counts as done
    assert d.next_ms() is None


def test_fire_due_runs_deadlines_that_callbacks_add_when_already_due() -> None:
    d = Deadlines()
    ran: list[str] = []
    d.at(10, lambda: (ran.append("first"), d.at(10, lambda: ran.append("same time")),
                      d.at(15, lambda: ran.append("overdue")), d.at(30, lambda: ran.append("later"))))
    assert d.fire_due(20) == 3
    assert ran == ["first", "same time", "overdue"]
    assert d.next_ms() == 30


def test_a_failing_callback_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    d = Deadlines()
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("timer bug")

    d.at(1, lambda: ran.append("before"))
    d.at(2, boom)
    d.at(3, lambda: ran.append("after"))
    with caplog.at_level(logging.ERROR, logger="kwire.broker"):
        assert d.fire_due(3) == 3
    assert ran == ["before", "after"]
    assert "deadline callback failed" in caplog.text


def test_after_hook_runs_after_each_callback_even_a_failing_one() -> None:
    d = Deadlines()
    events: list[str] = []

    def boom() -> None:
        events.append("boom")
        raise RuntimeError("timer bug")

    d.at(1, lambda: events.append("a"))
    d.at(2, boom)
    d.fire_due(2, after=lambda: events.append("after"))
    assert events == ["a", "after", "boom", "after"]


# --- run_until: the stepping clock -----------------------------------------------------------
def test_periodic_timer_fires_at_each_period_seeing_its_own_time() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    seen: list[int] = []

    def tick() -> None:
        seen.append(clock.now_ms())
        d.at(clock.now_ms() + 10, tick)

    d.at(T0 + 10, tick)
    assert d.run_until(T0 + 35, clock) == 3
    assert seen == [T0 + 10, T0 + 20, T0 + 30]
    assert clock.now_ms() == T0 + 35
    assert d.next_ms() == T0 + 40


def test_chained_timers_fire_within_one_run_each_at_its_own_time() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    log: list[tuple[str, int]] = []

    def first() -> None:
        log.append(("first", clock.now_ms()))
        d.at(clock.now_ms() + 7, second)

    def second() -> None:
        log.append(("second", clock.now_ms()))
        d.at(clock.now_ms() + 7, recorder(clock, log, "third"))
        d.at(clock.now_ms() + 100, recorder(clock, log, "too late"))

    d.at(T0 + 5, first)
    d.at(T0 + 13, recorder(clock, log, "independent"))
    d.run_until(T0 + 30, clock)
    assert log == [("first", T0 + 5), ("second", T0 + 12), ("independent", T0 + 13), ("third", T0 + 19)]
    assert d.next_ms() == T0 + 112


def test_callback_scheduling_at_its_own_time_runs_in_the_same_step_after_same_time_peers() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    log: list[tuple[str, int]] = []

    def a() -> None:
        log.append(("a", clock.now_ms()))
        d.at(clock.now_ms(), recorder(clock, log, "a's follow-up"))

    d.at(T0 + 10, a)
    d.at(T0 + 10, recorder(clock, log, "b"))
    d.at(T0 + 11, recorder(clock, log, "c"))
    d.run_until(T0 + 20, clock)
    assert log == [("a", T0 + 10), ("b", T0 + 10), ("a's follow-up", T0 + 10), ("c", T0 + 11)]


def test_cancelling_a_deadline_mid_run_keeps_it_from_firing() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    log: list[tuple[str, int]] = []
    victim = d.at(T0 + 20, recorder(clock, log, "victim"))
    d.at(T0 + 10, lambda: (log.append(("killer", clock.now_ms())), victim.cancel()))
    d.at(T0 + 30, recorder(clock, log, "survivor"))
    assert d.run_until(T0 + 40, clock) == 2
    assert log == [("killer", T0 + 10), ("survivor", T0 + 30)]


def test_overdue_deadlines_fire_at_the_current_time_and_the_clock_never_goes_back() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    log: list[tuple[str, int]] = []
    d.at(T0 - 50, recorder(clock, log, "overdue"))
    d.at(T0 + 5, recorder(clock, log, "due"))
    d.run_until(T0 + 5, clock)
    assert log == [("overdue", T0), ("due", T0 + 5)]


def test_run_until_moves_the_clock_to_the_target_with_nothing_due() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    d.at(T0 + 100, lambda: None)
    assert d.run_until(T0 + 99, clock) == 0
    assert clock.now_ms() == T0 + 99 and d.next_ms() == T0 + 100


def test_run_until_refuses_to_go_back() -> None:
    clock = ManualClock(T0)
    with pytest.raises(ValueError):
        Deadlines().run_until(T0 - 1, clock)
    assert clock.now_ms() == T0


def test_failing_callback_mid_run_does_not_stop_the_stepping() -> None:
    clock = ManualClock(T0)
    d = Deadlines()
    log: list[tuple[str, int]] = []

    def boom() -> None:
        raise RuntimeError("timer bug")

    d.at(T0 + 1, boom)
    d.at(T0 + 2, recorder(clock, log, "next"))
    d.run_until(T0 + 2, clock, after=lambda: log.append(("after", clock.now_ms())))
    assert log == [("after", T0 + 1), ("next", T0 + 2), ("after", T0 + 2)]


def test_a_timer_rearmed_on_every_request_does_not_grow_the_heap():
    """A transaction's expiry is cancelled and scheduled again on each EndTxn: the cancelled entries
    are dropped once they are most of the heap, and what is live still fires in order."""
    dl = Deadlines()
    fired: list[int] = []
    keep = [dl.at(10_000 + i, lambda i=i: fired.append(i)) for i in range(10)]
    expiry = dl.at(7 * 86_400_000, lambda: fired.append(-1))
    for _ in range(100_000):
        expiry.cancel()
        expiry = dl.at(7 * 86_400_000, lambda: fired.append(-1))
    assert len(dl) == 11 and len(dl._heap) < 2_100  # live ones; the heap itself stays small
    keep[3].cancel()
    assert dl.fire_due(20_000) == 9 and fired == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert dl.next_ms() == 7 * 86_400_000
    assert dl.fire_due(7 * 86_400_000) == 1 and fired[-1] == -1 and dl.next_ms() is None
