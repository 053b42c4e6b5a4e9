"""DescribeConfigs through the core: topic, broker and group resources, keys, synonyms, documentation."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import (
    ALL_BROKER_CONFIGS,
    BROKER_CONFIGS,
    DYNAMIC_ONLY_BROKER_CONFIGS,
    GROUP_CONFIGS,
    TOPIC_CONFIGS,
    ConfigSource,
    ResourceType,
)
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
    assert set(got) == set(ALL_BROKER_CONFIGS) - DYNAMIC_ONLY_BROKER_CONFIGS
    assert (got["num.partitions"].value, got["num.partitions"].config_source) == ("3", ConfigSource.STATIC_BROKER_CONFIG)
    assert got["auto.create.topics.enable"].config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert got["offsets.topic.num.partitions"].config_source == ConfigSource.DEFAULT_CONFIG
    assert got["socket.request.max.bytes"].read_only


def test_broker_default_resource_lists_only_dynamic_defaults() -> None:
    core, _ = make_core(settings={"num.partitions": "3"})
    core.configs.set(ResourceType.BROKER, "", "auto.create.topics.enable", "false")
    r = describe(CoreClient(core), ResourceType.BROKER, "")
    # min.insync.replicas: the cluster-level default a new cluster is formatted with (ELR, Kafka 4.1+)
    assert sorted((e.name, e.value, e.config_source) for e in r.configs) == [
        ("auto.create.topics.enable", "false", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("min.insync.replicas", "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]


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


def test_a_broker_log_segment_bytes_is_what_the_topic_reports_and_uses() -> None:
    """Regression (issue 8.7): with log.segment.bytes set on the broker, the broker rolled at it
    while DescribeConfigs reported segment.bytes' default as DEFAULT_CONFIG (two synonym tables)."""
    core, _ = make_core(settings={"log.segment.bytes": "1048576"})
    core.create_topic("t", 1)
    got = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", ["segment.bytes"], synonyms=True))
    seg = got["segment.bytes"]
    assert (seg.value, seg.config_source) == ("1048576", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in seg.synonyms] == [
        ("log.segment.bytes", "1048576", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)]
    assert core.configs.get_int(ResourceType.TOPIC, "t", "segment.bytes") == 1048576  # what the log rolls at


@pytest.mark.parametrize(("topic_key", "broker_key", "value"), [
    ("segment.bytes", "log.segment.bytes", "2097152"),
    ("segment.ms", "log.roll.ms", "60000"),
    ("retention.bytes", "log.retention.bytes", "1000000"),
    ("cleanup.policy", "log.cleanup.policy", "compact"),
])
def test_a_dynamic_broker_value_is_reported_with_its_chain(topic_key: str, broker_key: str, value: str) -> None:
    core, _ = make_core()
    core.create_topic("t", 1, configs={"retention.ms": "1000"})
    core.configs.set(ResourceType.BROKER, "", broker_key, value)
    e = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", [topic_key], synonyms=True))[topic_key]
    assert (e.value, e.config_source) == (value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [(s.name, s.source) for s in e.synonyms] == [
        (broker_key, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG), (broker_key, ConfigSource.DEFAULT_CONFIG)]
    assert core.configs.get(ResourceType.TOPIC, "t", topic_key) == value
    # A topic override wins over both and heads the chain.
    core.configs.set(ResourceType.TOPIC, "t", topic_key, TOPIC_CONFIGS[topic_key].default)
    e = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", [topic_key], synonyms=True))[topic_key]
    assert e.config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert [s.source for s in e.synonyms] == [ConfigSource.DYNAMIC_TOPIC_CONFIG,
                                              ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG]


def test_create_topics_v5_reports_the_same_sources_as_describe_configs() -> None:
    from kwire.protocol.messages.create_topics import CreateTopicsRequest

    core, _ = make_core(settings={"log.segment.bytes": "1048576"})
    c = CoreClient(core)
    resp = c.send(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=1, replication_factor=1)], timeout_ms=1000), 5)
    created = {e.name: (e.value, e.config_source) for e in resp.topics[0].configs}
    described = {e.name: (e.value, e.config_source) for e in describe(c, ResourceType.TOPIC, "t").configs}
    assert created == described
    assert created["segment.bytes"] == ("1048576", ConfigSource.STATIC_BROKER_CONFIG)


def test_every_value_the_broker_reads_is_the_value_describe_reports() -> None:
    """One chain for both: for every topic and group key, with every broker synonym set."""
    core, _ = make_core()
    core.create_topic("t", 1)
    for rtype, name in ((ResourceType.TOPIC, "t"), (ResourceType.GROUP, "g")):
        for d in core.configs.definitions(rtype).values():
            for s in d.synonyms:
                bdef = ALL_BROKER_CONFIGS[s]
                value = (bdef.choices[-1] if bdef.choices else str(bdef.max_value) if bdef.max_value is not None
                         else {"boolean": "false", "list": "sticky"}.get(bdef.type, "4242"))
                core.configs.set(ResourceType.BROKER, "", s, value, static=True)  # Kafka's are read-only
        for e in core.configs.describe(rtype, name):
            assert e.value == core.configs.get(rtype, name, e.name), e.name
            assert e.synonyms[0].value == e.value and e.synonyms[0].source == e.source


@pytest.mark.parametrize("defs", [TOPIC_CONFIGS, GROUP_CONFIGS], ids=["topic", "group"])
def test_synonyms_name_broker_configs_with_the_same_default(defs: dict[str, Any]) -> None:
    for d in defs.values():
        for s in d.synonyms:
            assert s in ALL_BROKER_CONFIGS, f"{d.name}: synonym {s} is not a broker config"
            if d.acted_on:  # kwire acts on the broker key too
                assert s in BROKER_CONFIGS, f"{d.name}: synonym {s} is not a broker config kwire acts on"
            if ALL_BROKER_CONFIGS[s].type != "list":  # streams.assignor.name falls back to the first assignor
                assert ALL_BROKER_CONFIGS[s].default == d.default, (d.name, s)
        assert d.doc, f"{d.name} has no documentation"


def test_group_session_timeout_follows_the_broker_setting_in_describe_too() -> None:
    core, _ = make_core(settings={"group.consumer.session.timeout.ms": "30000",
                                  "group.consumer.min.session.timeout.ms": "30000"})
    e = entries(describe(CoreClient(core), ResourceType.GROUP, "g", ["consumer.session.timeout.ms"],
                         synonyms=True))["consumer.session.timeout.ms"]
    assert (e.value, e.config_source) == ("30000", ConfigSource.STATIC_BROKER_CONFIG)
    assert core.subsystems.groups.consumer.session_timeout_ms("g") == 30000
