"""Group configs (DescribeConfigs / IncrementalAlterConfigs on GROUP resources) as Kafka defines them:
every name of GroupConfig.CONFIG_DEF is accepted with its type and range, listed by DescribeConfigs,
bounded by the broker's min/max configs and checked session > heartbeat (GroupConfig.validate).
The data is imported from upstream (tools/import_broker_configs.py -> kafka_group_configs.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.broker.core.configs import GROUP_CONFIGS, ResourceType
from kwire.protocol.error_codes import ErrorCode
from tests.broker.handlers.test_alter_configs import alter as legacy_alter
from tests.broker.handlers.test_describe_configs import describe, entries
from tests.broker.handlers.test_incremental_alter_configs import SET
from tests.broker.handlers.test_incremental_alter_configs import alter as inc_alter
from tests.broker.helpers import CoreClient, make_core

DATA = Path(__file__).resolve().parents[3] / "kwire" / "broker" / "core" / "kafka_group_configs.json"
NEW_IN_THIS_ROUND = ["share.assignment.interval.ms", "share.assignor.offload.enable", "consumer.assignment.interval.ms",
                     "consumer.assignor.offload.enable", "streams.initial.rebalance.delay.ms",
                     "streams.assignment.interval.ms", "streams.assignor.offload.enable",
                     "streams.task.offset.interval.ms", "streams.num.warmup.replicas",
                     "streams.rack.aware.assignment.tags", "streams.acceptable.recovery.lag", "streams.assignor.name"]


def test_every_kafka_group_config_is_listed_with_its_type_and_default() -> None:
    """GroupConfig.CONFIG_DEF: DescribeConfigs(GROUP) lists every name with Kafka's type and default
    (the broker synonym's value, ALL_GROUP_CONFIG_SYNONYMS)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))["configs"]
    assert set(data) == set(GROUP_CONFIGS) and set(NEW_IN_THIS_ROUND) <= set(data)
    core, _ = make_core()
    got = entries(describe(CoreClient(core), ResourceType.GROUP, "g"))
    assert set(got) == set(data)
    types = {"boolean": 1, "string": 2, "int": 3, "long": 5, "list": 7}
    for name, k in data.items():
        assert (got[name].config_type, got[name].value) == (types[k["type"]], k["default"]), name
    assert got["share.assignment.interval.ms"].value == "1000"
    assert got["share.assignor.offload.enable"].value == "true"


@pytest.mark.parametrize(("key", "good", "bad"), [
    ("share.assignment.interval.ms", "0", "15001"),  # group.share.min/max.assignment.interval.ms
    ("consumer.assignment.interval.ms", "15000", "-1"),  # atLeast(0)
    ("share.assignor.offload.enable", "false", "maybe"),
    ("streams.num.standby.replicas", "2", "3"),  # group.streams.max.standby.replicas
    ("streams.task.offset.interval.ms", "15000", "14999"),  # group.streams.min.task.offset.interval.ms
    ("streams.num.warmup.replicas", "20", "21"),  # group.streams.max.warmup.replicas
    ("streams.rack.aware.assignment.tags", "zone,rack", "zone,zone"),  # no duplicates
    ("streams.acceptable.recovery.lag", "0", "-1"),
    ("share.isolation.level", "read_committed", "READ"),
    ("share.auto.offset.reset", "by_duration:PT1H", "middle"),
])
def test_group_configs_are_checked_as_group_config_validate_does(key: str, good: str, bad: str) -> None:
    """GroupConfig.validate: the ConfigDef's type and validator, then the broker-side bounds
    (validateIntRange/Max/Min on GroupCoordinatorConfig's min/max keys)."""
    core, _ = make_core()
    c = CoreClient(core)
    assert inc_alter(c, ResourceType.GROUP, "g", [(key, SET, good)]).error_code == ErrorCode.NONE
    assert core.configs.get(ResourceType.GROUP, "g", key) == good
    r = inc_alter(c, ResourceType.GROUP, "g", [(key, SET, bad)])
    assert r.error_code == ErrorCode.INVALID_CONFIG, r
    assert core.configs.get(ResourceType.GROUP, "g", key) == good


def test_the_bounds_follow_the_broker_configs() -> None:
    """The bounds are the broker's current values: raising group.share.max.assignment.interval.ms
    lets a group use a longer interval."""
    core, _ = make_core(settings={"group.share.max.assignment.interval.ms": "60000"})
    r = inc_alter(CoreClient(core), ResourceType.GROUP, "g", [("share.assignment.interval.ms", SET, "60000")])
    assert r.error_code == ErrorCode.NONE


@pytest.mark.parametrize("prefix", ["consumer", "share", "streams"])
def test_the_session_timeout_must_exceed_the_heartbeat_interval(prefix: str) -> None:
    """GroupConfig.validateSessionExceedsHeartbeat: with the broker's bounds widened, a session
    timeout not above the heartbeat interval (the group's, else the broker's) is refused."""
    core, _ = make_core(settings={f"group.{prefix}.min.session.timeout.ms": "1000",
                                  f"group.{prefix}.max.heartbeat.interval.ms": "60000",
                                  f"group.{prefix}.min.heartbeat.interval.ms": "1000"})
    c = CoreClient(core)
    r = inc_alter(c, ResourceType.GROUP, "g", [(f"{prefix}.session.timeout.ms", SET, "5000")])
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_CONFIG, f"{prefix}.session.timeout.ms must be greater than {prefix}.heartbeat.interval.ms")
    r = inc_alter(c, ResourceType.GROUP, "g", [(f"{prefix}.heartbeat.interval.ms", SET, "45000")])
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert inc_alter(c, ResourceType.GROUP, "g", [(f"{prefix}.heartbeat.interval.ms", SET, "3000")]).error_code == 0
    assert inc_alter(c, ResourceType.GROUP, "g", [(f"{prefix}.session.timeout.ms", SET, "5000")]).error_code == 0
    # AlterConfigs replaces the whole set: the heartbeat interval falls back to the broker's 5000
    r = legacy_alter(c, ResourceType.GROUP, "g", {f"{prefix}.session.timeout.ms": "5000"})
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert core.configs.get(ResourceType.GROUP, "g", f"{prefix}.heartbeat.interval.ms") == "3000"
