"""pytest plugin: a kwire broker for a client developer's own test suite.

Installed with kwire (entry point ``pytest11``). Fixtures:

* ``kwire_broker``: a one-broker cluster on a free port, started for the test and stopped
  after it; ``kwire_broker.bootstrap`` is the bootstrap string, the object itself is the
  control API (``create_topic``, ``inject_error``, ``broker_down``, ``advance``...).
* ``kwire_broker_factory``: call it with ``BrokerConfig`` fields (``brokers=3``,
  ``settings={...}``, ``manual_clock=True``) to get more clusters in one test.

Mark a test ``@pytest.mark.kwire(brokers=3, manual_clock=True)`` to configure ``kwire_broker``.

Clocks: by default the broker runs on wall time. ``manual_clock=True`` freezes it: nothing that
waits on the broker clock happens until the test calls ``advance`` (a consumer group never forms,
a long poll never times out), which suits sans-client tests. ``jump_clock=True`` is what tests with
real clients want: time runs normally (clients' own timeouts, heartbeats and long polls behave)
and ``advance(ms)`` jumps it forward at once, e.g. past a 30 s acquisition lock or a transaction
timeout (``kwire.clock.JumpClock``).

Test-friendly defaults (``FIXTURE_SETTINGS``; a test's own ``settings`` win):
``group.initial.rebalance.delay.ms=0``, so a consumer group forms at once instead of after
Kafka's 3 s delay, and connections are not logged.

Only this module is assertion-rewritten by pytest: pytest marks every top-level package of a
distribution that declares a ``pytest11`` entry point, which would rewrite (and recompile) all
of kwire when the fixture imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["kwire_broker", "kwire_broker_factory", "FIXTURE_SETTINGS"]

FIXTURE_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def _rewrite_only_this_module() -> None:
    """Narrow pytest's rewrite mark from the whole ``kwire`` package to this module."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if type(finder).__name__ == "AssertionRewritingHook" and isinstance(marked, set) and "kwire" in marked:
            marked.discard("kwire")
            marked.add(__name__)
            cache = getattr(finder, "_marked_for_rewrite_cache", None)
            if isinstance(cache, dict):
                cache.clear()


_rewrite_only_this_module()

from kwire.control import Broker, BrokerConfig  # noqa: E402 - after narrowing the rewrite mark


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kwire(**options): options for the kwire_broker fixture "
                                       "(BrokerConfig fields, manual_clock=True or jump_clock=True)")


def _start(options: dict[str, Any]) -> Broker:
    options = dict(options)
    manual = bool(options.pop("manual_clock", False))
    jump = bool(options.pop("jump_clock", False))
    if manual and jump:
        raise ValueError("choose manual_clock or jump_clock, not both")
    options.setdefault("log_connections", False)
    options["settings"] = {**FIXTURE_SETTINGS, **options.get("settings", {})}
    if jump:
        from kwire.clock import JumpClock

        return Broker(BrokerConfig(**options), clock=JumpClock()).start()
    return Broker(BrokerConfig(**options), manual_clock=manual).start()


@pytest.fixture
def kwire_broker_factory() -> Iterator[Callable[..., Broker]]:
    """A function that starts a kwire broker per call (``make(brokers=3, jump_clock=True, ...)``:
    BrokerConfig fields and the clock options); every broker it started stops after the test."""
    started: list[Broker] = []

    def make(**options: Any) -> Broker:
        b = _start(options)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def kwire_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A running kwire broker (``kwire.control.Broker``) with test-friendly defaults, options from
    ``@pytest.mark.kwire(...)`` (BrokerConfig fields, ``manual_clock=True`` or ``jump_clock=True``);
    connect clients to ``kwire_broker.bootstrap``."""
    marker = request.node.get_closest_marker("kwire")
    options = dict(marker.kwargs) if marker is not None else {}
    b = _start(options)
    try:
        yield b
    finally:
        b.stop()
