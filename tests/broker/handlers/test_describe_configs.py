"""DescribeConfigs through the core: topic, broker and group resources, keys, synonyms, documentation."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import BROKER_CONFIGS, GROUP_CONFIGS, TOPIC_CONFIGS, ConfigSource, ResourceType
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_configs import DescribeConfigsRequest
from tests.broker.helpers import CoreClient, make_core


def describe(c: CoreClient, rtype: int, name: str, keys: list[str] | None = None, *, version: int = 4,
             synonyms: bool = False, docs: bool = False) -> Any:
    resp = c.send(DescribeConfigsRequest(
        resources=[DescribeConfigsRequest.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                                  configuration_keys=keys)],
        include_synonyms=synonyms, include_documentation=docs), version)
    return resp.results[0]


def entries(result: Any) -> dict[str, Any]:
    return {e.name: e for e in result.configs}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_topic_lists_every_key_with_overrides_as_dynamic_topic_config(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"retention.ms": "1000"})
    r = describe(CoreClient(core), ResourceType.TOPIC, "t", version=version)
    assert (r.error_code, r.resource_type, r.resource_name) == (0, ResourceType.TOPIC, "t")
    got = entries(r)
    assert set(got) == set(TOPIC_CONFIGS)
    assert (got["retention.ms"].value, got["retention.ms"].config_source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert (got["cleanup.policy"].value, got["cleanup.policy"].config_source) == ("delete", ConfigSource.DEFAULT_CONFIG)
    assert not got["retention.ms"].read_only and not got["retention.ms"].is_sensitive
    if version >= 3:
        assert got["retention.ms"].config_type == 5  # LONG
        assert got["cleanup.policy"].config_type == 7  # LIST
        assert got["retention.ms"].documentation is None  # not asked for


def test_named_keys_only_and_unknown_keys_left_out() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    r = describe(CoreClient(core), ResourceType.TOPIC, "t", ["segment.ms", "no.such.key", "retention.ms"])
    assert [e.name for e in r.configs] == ["segment.ms", "retention.ms"]


def test_an_empty_key_list_describes_everything_as_null_does() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    assert {e.name for e in describe(CoreClient(core), ResourceType.TOPIC, "t", []).configs} == set(TOPIC_CONFIGS)


def test_unknown_topic_and_illegal_name() -> None:
    c = CoreClient(make_core()[0])
    r = describe(c, ResourceType.TOPIC, "missing")
    assert (r.error_code, r.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert r.error_message == "The topic 'missing' does not exist."
    assert describe(c, ResourceType.TOPIC, "bad/name").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_topic_falls_back_to_broker_settings_with_synonyms_in_precedence_order() -> None:
    core, _ = make_core(settings={"log.retention.ms": "5000"})
    core.create_topic("t", 1, configs={"max.message.bytes": "2000"})
    core.configs.set(ResourceType.BROKER, "", "compression.type", "gzip")
    got = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", synonyms=True))
    ret = got["retention.ms"]
    assert (ret.value, ret.config_source) == ("5000", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in ret.synonyms] == [
        ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]
    comp = got["compression.type"]
    assert (comp.value, comp.config_source) == ("gzip", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    mmb = got["max.message.bytes"]
    assert [s.source for s in mmb.synonyms] == [ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DEFAULT_CONFIG]
    assert mmb.synonyms[1].name == "message.max.bytes"


def test_synonyms_are_empty_unless_asked() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    assert all(e.synonyms == [] for e in describe(CoreClient(core), ResourceType.TOPIC, "t").configs)


def test_documentation_only_when_asked_v3_plus() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    got = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", docs=True))
    assert "deleted" in got["retention.ms"].documentation
    assert all(isinstance(e.documentation, str) and e.documentation for e in got.values())


def test_broker_by_node_id_lists_every_broker_config() -> None:
    core, _ = make_core(settings={"num.partitions": "3"})
    core.configs.set(ResourceType.BROKER, "", "auto.create.topics.enable", "false")
    got = entries(describe(CoreClient(core), ResourceType.BROKER, "1"))
    assert set(got) == set(BROKER_CONFIGS)
    assert (got["num.partitions"].value, got["num.partitions"].config_source) == ("3", ConfigSource.STATIC_BROKER_CONFIG)
    assert got["auto.create.topics.enable"].config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert got["offsets.topic.num.partitions"].config_source == ConfigSource.DEFAULT_CONFIG
    assert got["socket.request.max.bytes"].read_only


def test_broker_default_resource_lists_only_dynamic_defaults() -> None:
    core, _ = make_core(settings={"num.partitions": "3"})
    core.configs.set(ResourceType.BROKER, "", "auto.create.topics.enable", "false")
    r = describe(CoreClient(core), ResourceType.BROKER, "")
    assert [(e.name, e.value, e.config_source) for e in r.configs] == [
        ("auto.create.topics.enable", "false", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]


@pytest.mark.parametrize("name", ["2", "x"])
def test_another_broker_id_or_a_non_number_is_invalid_request(name: str) -> None:
    core, _ = make_core(brokers=2)
    r = describe(CoreClient(core, 1), ResourceType.BROKER, name)
    assert r.error_code == ErrorCode.INVALID_REQUEST and r.error_message


def test_each_broker_answers_for_its_own_id() -> None:
    core, _ = make_core(brokers=2)
    assert describe(CoreClient(core, 2), ResourceType.BROKER, "2").error_code == ErrorCode.NONE


def test_group_configs_defaults_and_overrides() -> None:
    core, _ = make_core()
    core.configs.set(ResourceType.GROUP, "g", "share.record.lock.duration.ms", "15000")
    c = CoreClient(core)
    got = entries(describe(c, ResourceType.GROUP, "g"))
    assert set(got) == set(GROUP_CONFIGS)
    assert (got["share.record.lock.duration.ms"].value, got["share.record.lock.duration.ms"].config_source) == (
        "15000", ConfigSource.GROUP_CONFIG)
    assert got["share.delivery.count.limit"].config_source == ConfigSource.DEFAULT_CONFIG
    other = entries(describe(c, ResourceType.GROUP, "never-seen"))
    assert other["share.record.lock.duration.ms"].value == "30000"
    assert describe(c, ResourceType.GROUP, "").error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("rtype", [ResourceType.UNKNOWN, ResourceType.BROKER_LOGGER, ResourceType.CLIENT_METRICS, 99])
def test_unsupported_resource_types_are_invalid_request(rtype: int) -> None:
    r = describe(CoreClient(make_core()[0]), rtype, "x")
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_several_resources_answer_independently() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    resp = CoreClient(core).send(DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=ResourceType.TOPIC, resource_name="nope",
                                                       configuration_keys=None),
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=ResourceType.TOPIC, resource_name="t",
                                                       configuration_keys=["retention.ms"]),
    ]), 4)
    assert [(r.error_code, len(r.configs)) for r in resp.results] == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
                                                                       (0, 1)]
