"""AlterConfigs (legacy) through the core: the given set replaces the overrides; refusals change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_configs import AlterConfigsRequest
from tests.broker.helpers import CoreClient, make_core


def alter(c: CoreClient, rtype: int, name: str, configs: dict[str, str | None], *, validate_only: bool = False,
          version: int = 2) -> Any:
    resp = c.send(AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=rtype, resource_name=name,
        configs=[AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()])],
        validate_only=validate_only), version)
    return resp.responses[0]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_the_given_set_replaces_every_topic_override(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"retention.ms": "1000", "segment.ms": "2000"})
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", {"retention.ms": "3000"}, version=version)
    assert (r.error_code, r.error_message, r.resource_type, r.resource_name) == (0, None, ResourceType.TOPIC, "t")
    assert core.configs.overrides[(ResourceType.TOPIC, "t")] == {"retention.ms": "3000"}
    assert core.configs.get(ResourceType.TOPIC, "t", "segment.ms") == "604800000"


def test_invalid_value_is_invalid_config_and_nothing_changes() -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"retention.ms": "1000"})
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", {"segment.ms": "2000", "retention.ms": "soon"})
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert "retention.ms" in r.error_message and "soon" in r.error_message
    assert core.configs.overrides[(ResourceType.TOPIC, "t")] == {"retention.ms": "1000"}


def test_unknown_key_is_invalid_config() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", {"no.such.config": "1"})
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.config")


def test_unknown_topic_is_unknown_topic_or_partition() -> None:
    r = alter(CoreClient(make_core()[0]), ResourceType.TOPIC, "missing", {"retention.ms": "1"})
    assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_validate_only_changes_nothing() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert alter(c, ResourceType.TOPIC, "t", {"retention.ms": "5"}, validate_only=True).error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "retention.ms") == "604800000"
    assert alter(c, ResourceType.TOPIC, "t", {"retention.ms": "x"}, validate_only=True).error_code == \
        ErrorCode.INVALID_CONFIG


def test_broker_replacement_keeps_static_settings_and_takes_effect() -> None:
    core, _ = make_core(settings={"num.partitions": "3"})
    c = CoreClient(core)
    core.configs.set(ResourceType.BROKER, "", "offsets.topic.num.partitions", "7")
    r = alter(c, ResourceType.BROKER, "1", {"auto.create.topics.enable": "false"})
    assert r.error_code == 0
    assert not core.auto_create_enabled()
    assert core.configs.get_int(ResourceType.BROKER, "", "num.partitions") == 3
    assert core.configs.get_int(ResourceType.BROKER, "", "offsets.topic.num.partitions") == 50


def test_read_only_broker_config_is_invalid_request() -> None:
    """Kafka: DynamicBrokerConfig.validateConfigs' ConfigException, made INVALID_REQUEST by
    ConfigAdminManager.validateBrokerConfigChange."""
    core, _ = make_core()
    r = alter(CoreClient(core), ResourceType.BROKER, "", {"socket.request.max.bytes": "1"})
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [socket.request.max.bytes]")


def test_another_broker_id_is_invalid_request() -> None:
    r = alter(CoreClient(make_core(brokers=2)[0], 1), ResourceType.BROKER, "2", {"num.partitions": "2"})
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_group_configs_are_replaced() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    assert alter(c, ResourceType.GROUP, "g", {"share.delivery.count.limit": "3"}).error_code == 0
    assert core.configs.get_int(ResourceType.GROUP, "g", "share.delivery.count.limit") == 3
    r = alter(c, ResourceType.GROUP, "g", {"share.delivery.count.limit": "1"})
    assert r.error_code == ErrorCode.INVALID_CONFIG and "minimum" in r.error_message


def test_duplicate_resources_are_invalid_request() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    res = AlterConfigsRequest.AlterConfigsResource(resource_type=ResourceType.TOPIC, resource_name="t", configs=[
        AlterConfigsRequest.AlterableConfig(name="retention.ms", value="1")])
    resp = CoreClient(core).send(AlterConfigsRequest(resources=[res, res]), 2)
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 2
    assert core.configs.get(ResourceType.TOPIC, "t", "retention.ms") == "604800000"


def test_unsupported_resource_type_is_invalid_request() -> None:
    assert alter(CoreClient(make_core()[0]), ResourceType.BROKER_LOGGER, "1", {"root": "DEBUG"}).error_code == \
        ErrorCode.INVALID_REQUEST
