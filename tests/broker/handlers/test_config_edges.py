"""Config edges (issue 26): empty list values as ConfigDef.ValidList takes them, and the
cluster-level dynamic defaults a new Kafka cluster is formatted with (docs/config-edges.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.configs import (
    ALL_BROKER_CONFIGS,
    GROUP_CONFIGS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigSource,
    ResourceType,
)
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_records import DeleteRecordsRequest
from tests.broker.handlers.test_alter_configs import alter as legacy_alter
from tests.broker.handlers.test_describe_configs import describe, entries
from tests.broker.handlers.test_incremental_alter_configs import APPEND, DELETE, SET, SUBTRACT
from tests.broker.handlers.test_incremental_alter_configs import alter as inc_alter
from tests.broker.helpers import CoreClient, make_core

S = ConfigSource


@pytest.mark.rule("CE-1")
def test_set_empty_cleanup_policy_is_the_empty_list() -> None:
    """LogConfig defines cleanup.policy with ValidList.in(compact, delete): empty allowed. An empty
    policy is neither delete nor compact, so DeleteRecords is a POLICY_VIOLATION."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    r = inc_alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", SET, "")])
    assert (r.error_code, r.error_message) == (0, None)
    e = entries(describe(c, ResourceType.TOPIC, "t", ["cleanup.policy"], synonyms=True))["cleanup.policy"]
    assert (e.value, e.config_source) == ("", S.DYNAMIC_TOPIC_CONFIG)
    resp = c.send(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])],
        timeout_ms=1000), 2)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.POLICY_VIOLATION


@pytest.mark.rule("CE-1")
def test_subtract_of_the_last_element_leaves_the_empty_list() -> None:
    """ConfigAdminManager.prepareIncrementalConfigs: SUBTRACT sets the rest joined with "," ("")."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert inc_alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")]).error_code == 0
    assert core.configs.overrides[(ResourceType.TOPIC, "t")] == {"cleanup.policy": ""}
    assert core.configs.get(ResourceType.TOPIC, "t", "cleanup.policy") == ""
    # APPEND starts from the empty list; the broker-level list takes the empty value too
    assert inc_alter(c, ResourceType.TOPIC, "t", [("cleanup.policy", APPEND, "compact")]).error_code == 0
    assert core.configs.get(ResourceType.TOPIC, "t", "cleanup.policy") == "compact"
    assert inc_alter(c, ResourceType.BROKER, "", [("log.cleanup.policy", SET, " ")]).error_code == 0
    core.create_topic("u", 1)
    assert core.configs.get(ResourceType.TOPIC, "u", "cleanup.policy") == " "  # blank: the empty list
    assert legacy_alter(c, ResourceType.TOPIC, "t", {"cleanup.policy": ""}).error_code == 0


@pytest.mark.rule("CE-2")
@pytest.mark.parametrize("value", ["delete,", ",compact", "delete,,compact"])
def test_an_empty_element_is_refused(value: str) -> None:
    """ValidList.validateIndividualValues: "Configuration 'X' values must not be empty."."""
    core, _ = make_core()
    core.create_topic("t", 1)
    r = inc_alter(CoreClient(core), ResourceType.TOPIC, "t", [("cleanup.policy", SET, value)])
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_CONFIG,
                                               "Configuration 'cleanup.policy' values must not be empty.")


@pytest.mark.rule("CE-2")
def test_repeated_elements_pass_as_configdef_drops_them_before_validating() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    assert inc_alter(CoreClient(core), ResourceType.TOPIC, "t", [("cleanup.policy", SET, "delete, delete")]
                     ).error_code == 0


def _list_defs() -> list[tuple[ResourceType, ConfigDef]]:
    out = []
    for rtype, defs in ((ResourceType.TOPIC, TOPIC_CONFIGS), (ResourceType.BROKER, ALL_BROKER_CONFIGS),
                        (ResourceType.GROUP, GROUP_CONFIGS)):
        out += [(rtype, d) for d in defs.values() if d.type == "list" and not d.read_only]
    return out


@pytest.mark.rule("CE-1, CE-2")
@pytest.mark.parametrize(("rtype", "d"), _list_defs(), ids=lambda x: getattr(x, "name", str(x)))
def test_every_changeable_list_config_takes_empty_as_its_validator_does(rtype: ResourceType, d: ConfigDef) -> None:
    """Every list topic, broker and group config kwire lets change: the empty value passes where
    Kafka's ValidList allows it (cleanup.policy, log.cleanup.policy, ssl.cipher.suites,
    config.providers...) and is refused where it does not (listeners, group.coordinator.rebalance.protocols)."""
    core, _ = make_core()
    core.create_topic("t", 1)
    name = {ResourceType.TOPIC: "t", ResourceType.BROKER: "" if d.kafka_mode != "per-broker" else "1",
            ResourceType.GROUP: "g"}[rtype]
    r = inc_alter(CoreClient(core), rtype, name, [(d.name, SET, "")])
    if d.list_empty:
        assert (r.error_code, r.error_message) == (0, None), d.name
        return
    # a refused config Kafka only stores is INVALID_REQUEST (DynamicBrokerConfig), kwire's own INVALID_CONFIG
    assert r.error_code == (ErrorCode.INVALID_CONFIG if d.acted_on else ErrorCode.INVALID_REQUEST), d.name
    assert f"Configuration '{d.name}' must not be empty." in r.error_message


def test_the_non_empty_lists_are_the_ones_kafka_defines_so() -> None:
    """GroupCoordinatorConfig (in(false, ...), anyNonDuplicateValues(false, false) for the assignors),
    SocketServerConfigs (listeners, advertised.listeners), LogConfig (log.dir, log.dirs), KRaftConfigs."""
    refused = {n for n, d in ALL_BROKER_CONFIGS.items() if d.type == "list" and not d.list_empty}
    assert refused == {"listeners", "advertised.listeners", "log.dir", "log.dirs", "controller.listener.names",
                       "process.roles", "group.consumer.assignors", "group.share.assignors",
                       "group.streams.assignors", "group.coordinator.rebalance.protocols"}
    assert all(d.list_empty for d in (*TOPIC_CONFIGS.values(), *GROUP_CONFIGS.values()))


def _chain(e: Any) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in e.synonyms]


@pytest.mark.rule("CE-3")
def test_a_fresh_topic_and_broker_describe_as_a_fresh_kafka_4_1_cluster() -> None:
    """The comparison with d79bd502 for a new cluster: ActivationRecordsGenerator.recordsForEmptyLog
    writes one cluster-level ConfigRecord (BROKER "", min.insync.replicas = the controller's value)
    because ELR is on by default (EligibleLeaderReplicasVersion.LATEST_PRODUCTION = ELRV_1); every
    other key of a fresh topic is DEFAULT_CONFIG under its broker synonym's name, and a fresh
    broker's only dynamic default is min.insync.replicas."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    topic = entries(describe(c, ResourceType.TOPIC, "t", synonyms=True))
    mir = topic["min.insync.replicas"]
    assert (mir.value, mir.config_source) == ("1", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert _chain(mir) == [("min.insync.replicas", "1", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
                           ("min.insync.replicas", "1", S.DEFAULT_CONFIG)]
    for name, e in topic.items():
        if name == "min.insync.replicas":
            continue
        d = TOPIC_CONFIGS[name]
        assert (e.value, e.config_source) == (d.default, S.DEFAULT_CONFIG), name
        assert _chain(e) == [(d.synonyms[0] if d.synonyms else name, d.default, S.DEFAULT_CONFIG)], name
    broker = entries(describe(c, ResourceType.BROKER, "1", synonyms=True))
    dynamic = {n for n, e in broker.items() if e.config_source != S.DEFAULT_CONFIG}
    assert dynamic == {"min.insync.replicas"}
    assert _chain(broker["min.insync.replicas"]) == [("min.insync.replicas", "1", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
                                                     ("min.insync.replicas", "1", S.DEFAULT_CONFIG)]
    default = describe(c, ResourceType.BROKER, "", synonyms=True)
    assert [(e.name, e.value, e.config_source) for e in default.configs] == [
        ("min.insync.replicas", "1", S.DYNAMIC_DEFAULT_BROKER_CONFIG)]


# LogConfig's topic CONFIG at d79bd502 (defineInternal internal.segment.bytes is never described),
# and the ones kwire does not describe: remote storage, per-codec compression levels and
# replication throttles have no meaning in a single-replica, local-only broker.
KAFKA_TOPIC_CONFIGS = frozenset({
    "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "flush.messages", "flush.ms",
    "retention.bytes", "retention.ms", "max.message.bytes", "index.interval.bytes", "delete.retention.ms",
    "min.compaction.lag.ms", "max.compaction.lag.ms", "file.delete.delay.ms", "min.cleanable.dirty.ratio",
    "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "preallocate",
    "message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas", "remote.storage.enable",
    "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable", "remote.copy.lag.ms",
    "remote.copy.lag.bytes", "remote.log.delete.on.disable", "errors.deadletterqueue.group.enable",
})
NOT_DESCRIBED = frozenset({
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas", "remote.storage.enable",
    "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable", "remote.copy.lag.ms",
    "remote.copy.lag.bytes", "remote.log.delete.on.disable",
})


@pytest.mark.rule("CE-3")
def test_a_fresh_topic_describes_kafkas_topic_keys_and_no_other() -> None:
    """Every key a fresh topic describes is one LogConfig defines (message.downconversion.enable
    went with Kafka 4.0); the rest is the recorded NOT_DESCRIBED set."""
    core, _ = make_core()
    core.create_topic("t", 1)
    described = set(entries(describe(CoreClient(core), ResourceType.TOPIC, "t")))
    assert described <= KAFKA_TOPIC_CONFIGS
    assert KAFKA_TOPIC_CONFIGS - described == NOT_DESCRIBED
    r = inc_alter(CoreClient(core), ResourceType.TOPIC, "t", [("message.downconversion.enable", SET, "true")])
    assert r.error_code == ErrorCode.INVALID_CONFIG


@pytest.mark.rule("CE-3")
def test_the_formatted_value_comes_from_the_static_setting_and_shadows_it() -> None:
    """The controller writes its own min.insync.replicas; the static value stays below it in the chain."""
    core, _ = make_core(settings={"min.insync.replicas": "2"})
    core.create_topic("t", 1)
    e = entries(describe(CoreClient(core), ResourceType.TOPIC, "t", ["min.insync.replicas"],
                         synonyms=True))["min.insync.replicas"]
    assert (e.value, e.config_source) == ("2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert _chain(e) == [("min.insync.replicas", "2", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
                         ("min.insync.replicas", "2", S.STATIC_BROKER_CONFIG),
                         ("min.insync.replicas", "1", S.DEFAULT_CONFIG)]
    assert core.configs.get_int(ResourceType.TOPIC, "t", "min.insync.replicas") == 2


@pytest.mark.rule("CE-3")
def test_the_formatted_value_is_kept_with_the_data_dir(tmp_path: Path) -> None:
    """Written once, when the cluster is formatted (recordsForEmptyLog); a restart with another
    static value finds the metadata log non-empty and keeps what was written."""
    from tests.broker.core.test_storage import start

    core, _, _ = start(tmp_path, settings={"min.insync.replicas": "2"})
    core.close()
    core2, _, _ = start(tmp_path, settings={"min.insync.replicas": "3"})
    assert core2.configs.get(ResourceType.BROKER, "", "min.insync.replicas") == "2"
    assert core2.configs.broker_source("min.insync.replicas", "2") is S.DYNAMIC_DEFAULT_BROKER_CONFIG
    core2.close()


@pytest.mark.rule("CE-4")
def test_the_cluster_min_isr_changes_but_cannot_go_and_a_broker_cannot_have_one() -> None:
    """ConfigurationControlManager.validateAlterConfig with ELR on: DISALLOWED_CLUSTER_MIN_ISR_REMOVAL_ERROR
    (DELETE, or a legacy AlterConfigs set without it) and DISALLOWED_BROKER_MIN_ISR_TRANSITION_ERROR."""
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    removal = (ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    r = inc_alter(c, ResourceType.BROKER, "", [("min.insync.replicas", DELETE, None)])
    assert (r.error_code, r.error_message) == removal
    r = legacy_alter(c, ResourceType.BROKER, "", {"auto.create.topics.enable": "false"})
    assert (r.error_code, r.error_message) == removal
    assert core.auto_create_enabled()  # nothing of the refused set was applied
    r = inc_alter(c, ResourceType.BROKER, "1", [("min.insync.replicas", SET, "2")])
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    # the cluster-level value itself may change, and a broker id's set without it keeps it
    assert inc_alter(c, ResourceType.BROKER, "", [("min.insync.replicas", SET, "2")]).error_code == 0
    assert legacy_alter(c, ResourceType.BROKER, "1", {"auto.create.topics.enable": "false"}).error_code == 0
    assert inc_alter(c, ResourceType.BROKER, "1", [("min.insync.replicas", DELETE, None)]).error_code == 0
    e = entries(describe(c, ResourceType.TOPIC, "t", ["min.insync.replicas"]))["min.insync.replicas"]
    assert (e.value, e.config_source) == ("2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
