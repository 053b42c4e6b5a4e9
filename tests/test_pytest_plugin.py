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


def test_only_the_plugin_module_is_assertion_rewritten(pytester: pytest.Pytester) -> None:
    """A regular install declares pytest11, so pytest marks the whole ``kwire`` package for
    rewriting (an editable install does not, so the conftest marks it as pytest would); the
    plugin narrows the mark to itself and the broker's modules import as they are."""
    pytester.makeconftest("""
        import sys
        hook = next(f for f in sys.meta_path if type(f).__name__ == "AssertionRewritingHook")
        assert "kwire" not in sys.modules
        hook.mark_rewrite("kwire")
        pytest_plugins = ["kwire.pytest_plugin"]
    """)
    pytester.makepyfile("""
        import sys

        def test_loaders(kwire_broker):
            name = lambda m: type(sys.modules[m].__loader__).__name__
            assert name("kwire.pytest_plugin") == "AssertionRewritingHook"
            assert name("kwire.control") != "AssertionRewritingHook"
            assert name("kwire.broker.core.broker_core") != "AssertionRewritingHook"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:kwire")
    result.assert_outcomes(passed=1)


def test_fixture_groups_form_without_the_initial_rebalance_delay(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        def test_defaults(kwire_broker):
            from kwire.broker.core.configs import ResourceType
            core = kwire_broker.core
            assert kwire_broker.call(lambda: core.configs.get_int(ResourceType.BROKER, "",
                                                                  "group.initial.rebalance.delay.ms")) == 0

        @pytest.mark.kwire(settings={"group.initial.rebalance.delay.ms": "250"})
        def test_override(kwire_broker):
            from kwire.broker.core.configs import ResourceType
            core = kwire_broker.core
            assert kwire_broker.call(lambda: core.configs.get_int(ResourceType.BROKER, "",
                                                                  "group.initial.rebalance.delay.ms")) == 250
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_jump_clock_runs_in_real_time_and_jumps_on_advance(pytester: pytest.Pytester) -> None:
    """jump_clock=True: a consumer group forms in real time (a frozen manual clock would stall it),
    and advance() moves the broker clock forward at once."""
    pytester.makepyfile("""
        import pytest
        from confluent_kafka import Consumer, Producer

        @pytest.mark.kwire(jump_clock=True)
        def test_group_forms_then_time_jumps(kwire_broker):
            kwire_broker.create_topic("t")
            p = Producer({"bootstrap.servers": kwire_broker.bootstrap})
            p.produce("t", b"v")
            assert p.flush(20) == 0
            c = Consumer({"bootstrap.servers": kwire_broker.bootstrap, "group.id": "g",
                          "auto.offset.reset": "earliest"})
            c.subscribe(["t"])
            m = None
            for _ in range(60):
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    break
            assert m is not None and m.value() == b"v"
            before = kwire_broker.call(kwire_broker.clock.now_ms)
            kwire_broker.advance(3_600_000)
            assert kwire_broker.call(kwire_broker.clock.now_ms) >= before + 3_600_000
            c.close()
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
