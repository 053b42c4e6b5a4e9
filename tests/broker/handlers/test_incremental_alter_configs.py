"""IncrementalAlterConfigs through the core: SET/DELETE/APPEND/SUBTRACT, atomicity, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from tests.broker.helpers import CoreClient, make_core

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def alter(c: CoreClient, rtype: int, name: str, ops: list[tuple[str, int, str | None]], *,
          validate_only: bool = False, version: int = 1) -> Any:
    resp = c.send(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=rtype, resource_name=name,
        configs=[IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v)
                 for k, op, v in ops])], validate_only=validate_only), version)
    return resp.responses[0]


@pytest.mark.parametrize("version", [0, 1])
def test_set_and_delete_touch_only_the_named_keys(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"retention.ms": "1000", "segment.ms": "2000"})
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", [("retention.ms", DELETE, None), ("segment.bytes", SET, "4096")],
              version=version)
    assert (r.error_code, r.error_message) == (0, None)
    assert core.configs.overrides[(ResourceType.TOPIC, "t")] == {"segment.ms": "2000", "segment.bytes": "4096"}


def test_append_and_subtract_work_on_list_configs_from_the_current_value() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", APPEND, "compact")]).error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "cleanup.policy") == "delete,compact"
    assert alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", APPEND, "compact")]).error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "cleanup.policy") == "delete,compact"
    assert alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")]).error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "cleanup.policy") == "compact"


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
def test_append_or_subtract_on_a_non_list_config_is_invalid_request(op: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", [("retention.ms", op, "5")])
    verb = "append" if op == APPEND else "subtract"
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST,
                                               f"Config value {verb} is not allowed for config key: retention.ms")


def test_one_bad_operation_leaves_the_whole_resource_unchanged() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", [("segment.ms", SET, "100"), ("retention.ms", SET, "never")])
    assert r.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in r.error_message
    assert core.configs.overrides.get((ResourceType.TOPIC, "t"), {}) == {}


def test_values_outside_choices_or_below_minimum_are_invalid_config() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", SET, "sometimes")]).error_code == ErrorCode.INVALID_CONFIG
    assert alter(c, ResourceType.TOPIC, "t", [("segment.bytes", SET, "1")]).error_code == ErrorCode.INVALID_CONFIG
    assert alter(c, ResourceType.TOPIC, "t", [("unknown.key", SET, "1")]).error_code == ErrorCode.INVALID_CONFIG


def test_null_set_unknown_operation_and_repeated_key_are_invalid_request() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert alter(c, ResourceType.TOPIC, "t", [("retention.ms", SET, None)]).error_code == ErrorCode.INVALID_REQUEST
    assert alter(c, ResourceType.TOPIC, "t", [("retention.ms", 9, "1")]).error_code == ErrorCode.INVALID_REQUEST
    r = alter(c, ResourceType.TOPIC, "t", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)])
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_validate_only_changes_nothing() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    r = alter(CoreClient(core), ResourceType.TOPIC, "t", [("retention.ms", SET, "10")], validate_only=True)
    assert r.error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "retention.ms") == "604800000"


def test_unknown_topic_and_unsupported_type() -> None:
    c = CoreClient(make_core()[0])
    assert alter(c, ResourceType.TOPIC, "nope", [("retention.ms", SET, "1")]).error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(c, ResourceType.CLIENT_METRICS, "m", [("interval.ms", SET, "1")]).error_code == \
        ErrorCode.INVALID_REQUEST


def test_broker_set_takes_effect_and_delete_reverts_to_the_static_setting() -> None:
    core, _ = make_core(settings={"num.partitions": "3"})
    c = CoreClient(core)
    assert alter(c, ResourceType.BROKER, "1", [("num.partitions", SET, "5")]).error_code == 0
    assert core.create_topic("auto").partitions[-1].index == 4
    assert alter(c, ResourceType.BROKER, "", [("num.partitions", DELETE, None)]).error_code == 0
    assert core.configs.get_int(ResourceType.BROKER, "", "num.partitions") == 3
    assert alter(c, ResourceType.BROKER, "", [("socket.request.max.bytes", SET, "1")]).error_code == \
        ErrorCode.INVALID_REQUEST  # read-only: Kafka's DynamicBrokerConfig.validateConfigs


def test_group_configs_are_what_the_core_reads() -> None:
    core, _ = make_core()
    c = CoreClient(core)
    r = alter(c, ResourceType.GROUP, "share-g", [("share.record.lock.duration.ms", SET, "15000"),
                                                  ("errors.deadletterqueue.topic.name", SET, "dlq.share-g")])
    assert r.error_code == 0
    assert core.configs.get_int(ResourceType.GROUP, "share-g", "share.record.lock.duration.ms") == 15000
    assert core.configs.get(ResourceType.GROUP, "share-g", "errors.deadletterqueue.topic.name") == "dlq.share-g"
    r = alter(c, ResourceType.GROUP, "share-g", [("share.record.lock.duration.ms", SET, "10")])
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert core.configs.get_int(ResourceType.GROUP, "share-g", "share.record.lock.duration.ms") == 15000


def test_duplicate_resources_are_invalid_request() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    res = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=ResourceType.TOPIC, resource_name="t",
                                                              configs=[])
    resp = CoreClient(core).send(IncrementalAlterConfigsRequest(resources=[res, res]), 1)
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 2
