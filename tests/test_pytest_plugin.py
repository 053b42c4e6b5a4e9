"""The pytest plugin as a client developer uses it (runs in a pytester sandbox)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_fixture_gives_a_running_broker_and_its_control_api(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from confluent_kafka import Producer

        def test_produce(kwire_broker):
            kwire_broker.create_topic("orders", partitions=2)
            p = Producer({"bootstrap.servers": kwire_broker.bootstrap})
            p.produce("orders", b"v", partition=1)
            assert p.flush(20) == 0
            assert kwire_broker.stats()["per_api"][0] >= 1

        @pytest.mark.kwire(brokers=3, manual_clock=True)
        def test_marker(kwire_broker):
            assert len(kwire_broker.bootstrap.split(",")) == 3
            kwire_broker.advance(1000)

        def test_factory(kwire_broker_factory):
            a = kwire_broker_factory()
            b = kwire_broker_factory(brokers=2)
            assert a.bootstrap != b.bootstrap
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
