"""Configuration of brokers, topics and groups: known keys, defaults, synonyms, docs, overrides.

Keys stay Kafka's dotted names here, at the edge of the core; the parts of the core that act
on a value read it through ``ConfigStore.get_int``/``get`` so an override takes effect at once.

Each key is one ``ConfigDef``: type, default, checks, documentation and ``synonyms``, the broker
keys a topic or group key falls back to (``segment.bytes`` -> ``log.segment.bytes``), in
precedence order. ``ConfigStore.synonyms`` walks that chain (own override, broker synonyms,
default) for both the value the broker acts on (``get``) and what DescribeConfigs and
CreateTopics report, so the two cannot disagree.
"""

from __future__ import annotations

import ipaddress
import json
import pkgutil
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import NamedTuple

from kwire.errors import ConfigError

__all__ = ["ResourceType", "ConfigSource", "ConfigDef", "ConfigStore", "ConfigEntry", "Synonym", "TOPIC_CONFIGS",
           "BROKER_CONFIGS", "GROUP_CONFIGS", "KAFKA_BROKER_CONFIGS", "ALL_BROKER_CONFIGS", "DYNAMIC_ONLY_BROKER_CONFIGS",
           "list_items", "FORMAT_CLUSTER_DEFAULTS", "GROUP_SESSION_EXCEEDS_HEARTBEAT", "STANDARD_AUTHORIZER",
           "check_auto_offset_reset", "normal_ip", "parse_ip_overrides", "parse_iso_duration_ms"]


class ResourceType(IntEnum):
    """DescribeConfigs/AlterConfigs resource types (ConfigResource.Type)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """DescribeConfigs config source ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# DescribeConfigs ConfigType ids (0: UNKNOWN, what a name without a definition gets)
# authorizer.class.name: the one authorizer kwire serves (kwire/broker/core/acl.py).
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_UNKNOWN_TYPE = 0
_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7, "class": 8,
          "password": 9}


@dataclass(slots=True, frozen=True)
class ConfigDef:
    name: str
    default: str | None
    type: str = "string"
    choices: tuple[str, ...] = ()
    min_value: int | None = None
    read_only: bool = False
    sensitive: bool = False
    # Broker keys this topic/group key falls back to when not set on the resource, in Kafka's
    # precedence order (LogConfig's TopicConfigSynonyms); each must be a broker ConfigDef.
    synonyms: tuple[str, ...] = ()
    doc: str = ""
    max_value: int | None = None
    # a group config bounded by broker configs (min key, max key; either may be None), checked
    # when set (GroupConfig.validate, section 1.10)
    bounds: tuple[str | None, str | None] | None = None
    # a check beyond type/choices/range (share.auto.offset.reset's by_duration:<ISO-8601>, ST-6)
    check: Callable[[str], None] | None = None
    # False for the Kafka broker configs kwire accepts and reports but does not act on
    acted_on: bool = True
    # broker configs: how Kafka lets it change ("read-only", "per-broker", "cluster-wide"; "" if
    # not a Kafka config) and whether Kafka takes it only with a listener prefix
    kafka_mode: str = ""
    listener_prefix_only: bool = False
    # list configs: whether the empty list is a value (ConfigDef.ValidList's isEmptyAllowed;
    # ValidList.in(...) and anyNonDuplicateValues(true, _) allow it, cleanup.policy="" included)
    list_empty: bool = True

    @property
    def type_id(self) -> int:
        return _TYPES.get(self.type, _UNKNOWN_TYPE)

    @property
    def documentation(self) -> str:
        """DescribeConfigs' documentation (a generic sentence for keys without a text of their own)."""
        return self.doc or f"{self.name}: a {self.type} setting (default {self.default})."

    def validate(self, value: str | None) -> str | None:
        if value is None:
            return None
        if self.type in ("int", "long", "short"):
            try:
                n = int(value)
            except ValueError:
                raise ConfigError(f"{self.name}: {value!r} is not an integer") from None
            if self.min_value is not None and n < self.min_value:
                raise ConfigError(f"{self.name}: {n} is below the minimum {self.min_value}")
            if self.max_value is not None and n > self.max_value:
                raise ConfigError(f"{self.name}: {n} is above the maximum {self.max_value}")
        elif self.type == "boolean":
            if value.lower() not in ("true", "false"):
                raise ConfigError(f"{self.name}: {value!r} is not true/false")
            value = value.lower()
        elif self.type == "double":
            try:
                float(value)
            except ValueError:
                raise ConfigError(f"{self.name}: {value!r} is not a number") from None
        if self.type == "list":
            self._check_list(value)
        elif self.choices and value.strip() not in self.choices:
            raise ConfigError(f"{self.name}: {value!r} is not one of {', '.join(self.choices)}")
        if self.check is not None:
            self.check(value)
        return value

    def _check_list(self, value: str) -> None:
        """ConfigDef.parseType(LIST) then ValidList.ensureValid: a blank value is the empty list
        (allowed unless ``list_empty`` is off); an empty element is refused; repeated elements
        pass (ConfigDef.parseValue drops them before the validator sees the list)."""
        items = list_items(value)
        if not items and not self.list_empty:
            valid = ", ".join(self.choices) if self.choices else "any non-empty value"
            raise ConfigError(f"Configuration '{self.name}' must not be empty. Valid values include: {valid}")
        for item in items:
            if not item:
                raise ConfigError(f"Configuration '{self.name}' values must not be empty.")
            if self.choices and item not in self.choices:
                raise ConfigError(f"{self.name}: {item!r} is not one of {', '.join(self.choices)}")


_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def list_items(value: str | None) -> list[str]:
    """A list config's elements as ConfigDef parses them: a blank value is the empty list, else
    the trimmed value split at commas (with the spaces around them); empty elements are kept."""
    trimmed = (value or "").strip()
    return _LIST_SEPARATOR.split(trimmed) if trimmed else []


def _defs(*defs: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in defs}


TOPIC_CONFIGS = _defs(
    ConfigDef("cleanup.policy", "delete", "list", ("delete", "compact"),
              synonyms=("log.cleanup.policy",),
              doc="How old log segments are handled: \"delete\" (retention) and/or \"compact\" (keep the "
                  "latest value per key)."),
    ConfigDef("compression.type", "producer", "string", ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
              synonyms=("compression.type",),
              doc="The final compression of the topic's batches; \"producer\" keeps the producer's codec."),
    ConfigDef("delete.retention.ms", "86400000", "long", min_value=0,
              doc="How long delete tombstones are kept on compacted topics."),
    ConfigDef("file.delete.delay.ms", "60000", "long", min_value=0,
              doc="How long to wait before deleting a file from the filesystem."),
    ConfigDef("flush.messages", "9223372036854775807", "long", min_value=1,
              doc="Force an fsync after this many messages (kwire never fsyncs)."),
    ConfigDef("flush.ms", "9223372036854775807", "long", min_value=0,
              doc="Force an fsync after this long (kwire never fsyncs)."),
    ConfigDef("index.interval.bytes", "4096", "int", min_value=0,
              doc="How often an offset index entry is added."),
    ConfigDef("max.compaction.lag.ms", "9223372036854775807", "long", min_value=1,
              doc="The longest a message stays ineligible for compaction."),
    ConfigDef("max.message.bytes", "1048588", "int", min_value=0,
              synonyms=("message.max.bytes",),
              doc="The largest record batch size allowed for the topic."),
    ConfigDef("message.timestamp.type", "CreateTime", "string", ("CreateTime", "LogAppendTime"),
              synonyms=("log.message.timestamp.type",),
              doc="CreateTime (the producer's timestamp) or LogAppendTime (the broker's clock)."),
    ConfigDef("message.timestamp.before.max.ms", "9223372036854775807", "long", min_value=0,
              doc="How far a CreateTime timestamp may lie before the broker's time."),
    ConfigDef("message.timestamp.after.max.ms", "3600000", "long", min_value=0,
              doc="How far a CreateTime timestamp may lie after the broker's time."),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", "double",
              doc="How dirty a log must be before it is compacted."),
    ConfigDef("min.compaction.lag.ms", "0", "long", min_value=0,
              doc="The least time a message stays uncompacted."),
    ConfigDef("min.insync.replicas", "1", "int", min_value=1,
              synonyms=("min.insync.replicas",),
              doc="The least number of in-sync replicas an acks=all produce needs."),
    ConfigDef("preallocate", "false", "boolean",
              doc="Preallocate segment files."),
    ConfigDef("retention.bytes", "-1", "long",
              synonyms=("log.retention.bytes",),
              doc="The most bytes a partition keeps before old segments go (-1: no limit)."),
    ConfigDef("retention.ms", "604800000", "long", min_value=-1,
              synonyms=("log.retention.ms",),
              doc="How long a segment is kept before it is deleted (-1: no limit)."),
    ConfigDef("segment.bytes", "1073741824", "int", min_value=14,
              synonyms=("log.segment.bytes",),
              doc="The size of one segment file."),
    ConfigDef("segment.index.bytes", "10485760", "int", min_value=4,
              doc="The size of the offset index."),
    ConfigDef("segment.jitter.ms", "0", "long", min_value=0,
              doc="Random jitter subtracted from segment.ms."),
    ConfigDef("segment.ms", "604800000", "long", min_value=1,
              synonyms=("log.roll.ms",),
              doc="Roll a new segment after this long."),
    ConfigDef("unclean.leader.election.enable", "false", "boolean",
              doc="Let an out-of-sync replica become leader."),
    ConfigDef("errors.deadletterqueue.group.enable", "false", "boolean",
              doc="Whether share groups may write dead-letter records to this topic (KIP-1191)."),
)

BROKER_CONFIGS = _defs(
    ConfigDef("auto.create.topics.enable", "true", "boolean"),
    ConfigDef("num.partitions", "1", "int", min_value=1),
    ConfigDef("default.replication.factor", "1", "int", min_value=1),
    ConfigDef("offsets.topic.num.partitions", "50", "int", min_value=1),
    ConfigDef("message.max.bytes", "1048588", "int", min_value=0),
    ConfigDef("socket.request.max.bytes", "104857600", "int", min_value=1, read_only=True),
    # SocketServer limits (enforced by the trio edge): connections per broker and per client
    # address (dynamic in Kafka), idle connections closed, frames before SASL completes.
    ConfigDef("max.connections", "2147483647", "int", min_value=0),
    ConfigDef("max.connections.per.ip", "2147483647", "int", min_value=0),
    # ConnectionQuotas (kwire.broker.core.connection_quotas): SocketServerConfigs at d79bd502
    ConfigDef("max.connections.per.ip.overrides", "", "string",
              doc="host:count,... overrides of max.connections.per.ip (a host name is resolved once)."),
    ConfigDef("max.connection.creation.rate", "2147483647", "int", min_value=0,
              doc="Connections accepted per second, broker-wide (listener.name.<l>. prefix: per listener)."),
    ConfigDef("connection.failed.authentication.delay.ms", "100", "int", min_value=0, read_only=True,
              doc="How long a failed SASL authentication's answer and close are delayed (SEC-14)."),
    # QuotaConfig: the Rate windows of client quotas and connection rates (QUO-2..QUO-9)
    ConfigDef("quota.window.num", "11", "int", min_value=1, read_only=True),
    ConfigDef("quota.window.size.seconds", "1", "int", min_value=1, read_only=True),
    ConfigDef("controller.quota.window.num", "11", "int", min_value=1, read_only=True),
    ConfigDef("controller.quota.window.size.seconds", "1", "int", min_value=1, read_only=True),
    ConfigDef("connections.max.idle.ms", "600000", "long", read_only=True),
    ConfigDef("sasl.server.max.receive.size", "524288", "int", read_only=True),
    ConfigDef("group.min.session.timeout.ms", "6000", "int", min_value=0),
    ConfigDef("group.max.session.timeout.ms", "1800000", "int", min_value=0),
    ConfigDef("group.initial.rebalance.delay.ms", "3000", "int", min_value=0),
    ConfigDef("group.max.size", "2147483647", "int", min_value=1),
    ConfigDef("group.consumer.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("group.consumer.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("group.consumer.max.size", "2147483647", "int", min_value=1),
    ConfigDef("group.coordinator.rebalance.protocols", "classic,consumer,share,streams", "list",
              ("classic", "consumer", "share", "streams"), list_empty=False),
    ConfigDef("offsets.retention.minutes", "10080", "int", min_value=1),
    ConfigDef("transaction.max.timeout.ms", "900000", "int", min_value=1),
    ConfigDef("transactional.id.expiration.ms", "604800000", "int", min_value=1),
    # TX-15: how a leader retries a TV2 produce's verification that met CONCURRENT_TRANSACTIONS
    ConfigDef("add.partitions.to.txn.retry.backoff.ms", "20", "int", min_value=1),
    ConfigDef("add.partitions.to.txn.retry.backoff.max.ms", "100", "int", min_value=0),
    # TX-17: how often the coordinator scans for timed-out transactions
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", "int", min_value=1),
    ConfigDef("delete.topic.enable", "true", "boolean"),
    ConfigDef("log.retention.ms", "604800000", "long"),
    ConfigDef("log.retention.bytes", "-1", "long"),
    ConfigDef("log.retention.check.interval.ms", "300000", "long", min_value=1),
    ConfigDef("log.segment.bytes", "1073741824", "int", min_value=14),
    ConfigDef("log.roll.ms", "604800000", "long", min_value=1),
    ConfigDef("log.cleanup.policy", "delete", "list", ("delete", "compact")),
    ConfigDef("log.cleaner.enable", "true", "boolean"),
    ConfigDef("log.cleaner.backoff.ms", "15000", "long", min_value=0),
    ConfigDef("compression.type", "producer", "string"),
    ConfigDef("min.insync.replicas", "1", "int", min_value=1),
    ConfigDef("log.message.timestamp.type", "CreateTime", "string", ("CreateTime", "LogAppendTime")),
    ConfigDef("unstable.api.versions.enable", "false", "boolean"),
    ConfigDef("share.version", "2", "int", min_value=0, max_value=2),
    ConfigDef("errors.deadletterqueue.topic.name.prefix", "dlq.", "string"),  # DLQ-5
    ConfigDef("errors.deadletterqueue.auto.create.topics.enable", "false", "boolean"),  # DLQ-5, DLQ-6  # SG-1: 2 = share groups + DLQ
    # share groups (broker-semantics 1.10)
    ConfigDef("group.share.record.lock.duration.ms", "30000", "int", min_value=1000, max_value=3600000),
    ConfigDef("group.share.min.record.lock.duration.ms", "15000", "int", min_value=1000, max_value=30000),
    ConfigDef("group.share.max.record.lock.duration.ms", "60000", "int", min_value=30000, max_value=3600000),
    ConfigDef("group.share.delivery.count.limit", "5", "int", min_value=2, max_value=10),
    ConfigDef("group.share.min.delivery.count.limit", "2", "int", min_value=2, max_value=5),
    ConfigDef("group.share.max.delivery.count.limit", "10", "int", min_value=5, max_value=25),
    ConfigDef("group.share.partition.max.record.locks", "2000", "int", min_value=100, max_value=10000),
    ConfigDef("group.share.min.partition.max.record.locks", "100", "int", min_value=100, max_value=10000),
    ConfigDef("group.share.max.partition.max.record.locks", "4000", "int", min_value=100, max_value=10000),
    ConfigDef("group.share.max.share.sessions", "2000", "int", min_value=1),
    ConfigDef("group.share.max.size", "200", "int", min_value=1, max_value=1000),
    ConfigDef("group.share.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("group.share.min.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("group.share.max.session.timeout.ms", "60000", "int", min_value=1),
    ConfigDef("group.share.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("group.share.min.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("group.share.max.heartbeat.interval.ms", "15000", "int", min_value=1),
    # HB-4: target recomputation is paced by this interval (a group may override it in the bounds)
    ConfigDef("group.share.assignment.interval.ms", "1000", "int", min_value=0),
    ConfigDef("group.share.min.assignment.interval.ms", "0", "int", min_value=0),
    ConfigDef("group.share.max.assignment.interval.ms", "15000", "int", min_value=0),
    # HB-6: how long share-state initialisation takes on the broker clock after the heartbeat that
    # asked for it (Kafka: a share-coordinator write, a few ms); tests widen it
    ConfigDef("kwire.share.initialize.delay.ms", "0", "int", min_value=0,
              doc="kwire: how long share-state initialisation of newly subscribed partitions takes on the "
                  "broker clock; until then a share group assigns them to nobody (HB-6)."),
    ConfigDef("transaction.version", "2", "int", min_value=0, max_value=2),
    ConfigDef("kwire.legacy.produce.upconvert", "false", "boolean"),
    # TX-15: broker time between EndTxn's answer and the markers (0: the next tick); widens the
    # PrepareCommit/PrepareAbort window for tests
    ConfigDef("kwire.transaction.marker.delay.ms", "0", "int", min_value=0),
    # Kafka answers the classic leader's SyncGroup once the assignment record is committed
    # (GroupMetadataManager.classicGroupSyncToLeader); this is that write on the broker clock
    ConfigDef("kwire.group.assignment.write.delay.ms", "0", "int", min_value=0,
              doc="kwire: how long the write of a classic group's assignment takes on the broker clock after the "
                  "leader's SyncGroup; until then the group stays CompletingRebalance and SyncGroups wait."),
)

# The listener and security settings kwire acts on (docs/security.md, SEC-1..13): read once at
# start, so read-only here where Kafka changes some per broker (keystore reloads, new listeners).
_SECURITY = "Read at start (docs/security.md)."
BROKER_CONFIGS.update(_defs(
    ConfigDef("listeners", "PLAINTEXT://:9092", "list", read_only=True, list_empty=False,
              doc=f"The listeners, NAME://HOST:PORT each (SEC-1). {_SECURITY}"),
    ConfigDef("advertised.listeners", None, "list", read_only=True, list_empty=False,
              doc=f"What each listener tells clients in Metadata (SEC-2). {_SECURITY}"),
    ConfigDef("listener.security.protocol.map",
              "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", "string", read_only=True,
              doc=f"Listener name to security protocol (SEC-1). {_SECURITY}"),
    *(ConfigDef(name, default, kind, read_only=True, listener_prefix_only=True, sensitive=kind == "password",
                doc=f"The TLS listeners' key and certificates, PEM only (SEC-3). {_SECURITY}")
      for name, default, kind in (("ssl.keystore.type", "JKS", "string"), ("ssl.keystore.location", None, "string"),
                                  ("ssl.keystore.key", None, "password"),
                                  ("ssl.keystore.certificate.chain", None, "password"),
                                  ("ssl.key.password", None, "password"), ("ssl.truststore.type", "JKS", "string"),
                                  ("ssl.truststore.location", None, "string"),
                                  ("ssl.truststore.certificates", None, "password"))),
    ConfigDef("ssl.client.auth", "NONE", "string", read_only=True,
              doc=f"required, requested or none: client certificates on TLS listeners (SEC-3). {_SECURITY}"),
    ConfigDef("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", "list", read_only=True,
              doc=f"The TLS versions the TLS listeners accept (SEC-3). {_SECURITY}"),
    ConfigDef("ssl.principal.mapping.rules", "DEFAULT", "string", read_only=True,
              doc=f"RULE:pattern/replacement/[LU] and DEFAULT: the mTLS principal (SEC-6). {_SECURITY}"),
    ConfigDef("sasl.enabled.mechanisms", "GSSAPI", "list", read_only=True,
              doc=f"The SASL mechanisms offered; unset: kwire's PLAIN, SCRAM-SHA-256/512, OAUTHBEARER (SEC-7). "
                  f"{_SECURITY}"),
    ConfigDef("connections.max.reauth.ms", "0", "long", min_value=0, read_only=True,
              doc=f"The longest SASL session before re-authentication (KIP-368, SEC-11). {_SECURITY}"),
))


# Kafka's list broker configs whose ValidList refuses the empty list (anyNonDuplicateValues(false, _)
# or in(false, ...)): SocketServerConfigs, LogConfig, KRaftConfigs, GroupCoordinatorConfig at d79bd502.
# Every other list broker config allows it.
_NON_EMPTY_LISTS = frozenset({
    "listeners", "advertised.listeners", "log.dir", "log.dirs", "controller.listener.names", "process.roles",
    "group.consumer.assignors", "group.share.assignors", "group.streams.assignors",
    "group.coordinator.rebalance.protocols",
})


def _package_data(name: str) -> bytes:
    """A data file next to this module; through pkgutil so it also loads from a zip (kwire shipped
    to Spark executors as ``--py-files``)."""
    data = pkgutil.get_data(__name__, name)
    if data is None:
        raise FileNotFoundError(name)
    return data


def _kafka_broker_configs() -> tuple[dict[str, ConfigDef], frozenset[str]]:
    """Kafka's broker configs from the imported data (tools/import_broker_configs.py), and the
    dynamic-only ones (broker quotas: outside Kafka's CONFIG_DEF, so set but never listed)."""
    data = json.loads(_package_data("kafka_broker_configs.json"))
    out = {}
    for name, k in data["configs"].items():
        out[name] = ConfigDef(name, k["default"], k["type"], read_only=k["mode"] == "read-only",
                              list_empty=name not in _NON_EMPTY_LISTS,
                              sensitive=k["sensitive"], acted_on=False, kafka_mode=k["mode"],
                              listener_prefix_only=bool(k.get("listener_prefix_only")),
                              doc=f"Kafka broker config ({k['mode']}); kwire stores and reports it, it changes "
                                  f"nothing in kwire.")
    return out, frozenset(n for n, k in data["configs"].items() if k.get("dynamic_only"))


_KAFKA_ALL, DYNAMIC_ONLY_BROKER_CONFIGS = _kafka_broker_configs()
# kwire's own broker configs keep their flags and learn Kafka's mode for them
BROKER_CONFIGS = {n: replace(d, kafka_mode=_KAFKA_ALL[n].kafka_mode) if n in _KAFKA_ALL else d
                  for n, d in BROKER_CONFIGS.items()}
# Kafka's broker configs that kwire only stores (the ones it acts on are BROKER_CONFIGS)
KAFKA_BROKER_CONFIGS = {n: d for n, d in _KAFKA_ALL.items() if n not in BROKER_CONFIGS}
ALL_BROKER_CONFIGS = {**BROKER_CONFIGS, **KAFKA_BROKER_CONFIGS}


def _check_dlq_topic_name(value: str) -> None:
    """DLQ-2: an internal ("__") topic cannot be a share group's dead-letter queue."""
    if value.startswith("__"):
        raise ConfigError(f"errors.deadletterqueue.topic.name: {value!r} is an internal topic name (it starts "
                          f"with '__')")


# java.time.Duration.parse: PnDTnHnMn.nS, each part optional, an optional sign on each.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_iso_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration as ``java.time.Duration.parse`` reads it (``PT1H``, ``P1DT2M``).

    Raises:
        ConfigError: not a duration, or a negative one (by_duration looks back in time only).
    """
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper().endswith("T") or not any(m.group(i) for i in range(2, 6)):
        raise ConfigError(f"{text!r} is not an ISO-8601 duration")
    sign, days, hours, minutes, seconds, frac = m.groups()
    ms = (int(days or 0) * 86_400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)) * 1000
    if frac:
        part = int((frac + "000")[:3])
        ms += -part if (seconds or "").startswith("-") else part
    if sign == "-":
        ms = -ms
    if ms < 0:
        raise ConfigError(f"{text!r}: the duration must not be negative")
    return ms


def check_auto_offset_reset(value: str) -> None:
    """ST-6: ``latest``, ``earliest`` or ``by_duration:<ISO-8601 duration>``; anything else is refused."""
    if value in ("latest", "earliest"):
        return
    if value.startswith("by_duration:"):
        parse_iso_duration_ms(value[len("by_duration:"):])
        return
    raise ConfigError(f"share.auto.offset.reset: {value!r} is not latest, earliest or by_duration:<duration>")


def _check_no_duplicates(value: str) -> None:
    """ConfigDef.ValidList.anyNonDuplicateValues (GroupConfig's raw-value check as well)."""
    items = [x.strip() for x in value.split(",")] if value.strip() else []
    if len(set(items)) != len(items):
        raise ConfigError(f"{value!r} must not contain duplicate values")


# Kafka's custom validators (by the class the data names) and kwire's own extra checks (by key)
_GROUP_VALIDATORS: dict[str, Callable[[str], None]] = {
    "ShareGroupAutoOffsetResetStrategy.Validator": check_auto_offset_reset,  # ST-6
    "ValidList.anyNonDuplicateValues": _check_no_duplicates,
}
_GROUP_EXTRA_CHECKS: dict[str, Callable[[str], None]] = {
    "errors.deadletterqueue.topic.name": _check_dlq_topic_name,  # DLQ-2
}
# Group configs that change what kwire does; the rest (streams groups, assignor offload, the
# consumer-group assignment interval) are accepted, validated, stored and reported only.
_GROUP_ACTED_ON = frozenset({
    "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
    "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.delivery.count.limit",
    "share.partition.max.record.locks", "share.auto.offset.reset", "share.isolation.level",
    "share.renew.acknowledge.enable", "share.assignment.interval.ms", "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.copy.record.enable",
})


def _kafka_group_configs() -> tuple[dict[str, ConfigDef], tuple[tuple[str, str], ...]]:
    """Kafka's group configs from the imported data (tools/import_broker_configs.py writes
    kafka_group_configs.json from GroupConfig at the pinned commit).

    The data's shape: ``{"kafka": {"repository", "commit"}, "configs": {name: entry},
    "session_exceeds_heartbeat": [[session key, heartbeat key], ...]}``, each entry having
    ``type`` (ConfigDef type name), ``default`` (as DescribeConfigs renders it, or null),
    ``synonym`` (the broker config it falls back to, GroupConfig.ALL_GROUP_CONFIG_SYNONYMS, or
    null), ``bounds`` (``[min key, max key]``: broker configs GroupConfig.validate bounds a set value
    by, either may be null; or null), ``doc`` (Kafka's documentation), ``source`` (the defining
    file) and, from its ConfigDef validator, ``min``/``max`` (a Range), ``choices`` (a
    ValidString) or ``validator`` (a custom validator class). Returns the definitions and the
    session/heartbeat pairs GroupConfig.validateSessionExceedsHeartbeat checks.
    """
    data = json.loads(_package_data("kafka_group_configs.json"))
    out = {}
    for name, k in data["configs"].items():
        checks = [c for c in (_GROUP_VALIDATORS.get(k.get("validator", "")), _GROUP_EXTRA_CHECKS.get(name)) if c]
        if k.get("validator") and k["validator"] not in _GROUP_VALIDATORS:
            raise RuntimeError(f"group config {name}: no kwire check for Kafka's validator {k['validator']}")

        def check(value: str, checks: list[Callable[[str], None]] = checks) -> None:
            for c in checks:
                c(value)

        bounds = tuple(k["bounds"]) if k["bounds"] else None
        out[name] = ConfigDef(name, k["default"], k["type"], tuple(k.get("choices", ())), k.get("min"),
                              synonyms=(k["synonym"],) if k["synonym"] else (), doc=k["doc"],
                              max_value=k.get("max"), bounds=bounds,  # type: ignore[arg-type]
                              check=check if checks else None, acted_on=name in _GROUP_ACTED_ON)
    return out, tuple((s, h) for s, h in data["session_exceeds_heartbeat"])


GROUP_CONFIGS, GROUP_SESSION_EXCEEDS_HEARTBEAT = _kafka_group_configs()

# The cross-key rules Kafka's broker checks when it builds its config (a broker that breaks one does
# not start): GroupCoordinatorConfig.checkConstraints (consumer, share and streams groups) and
# ShareGroupConfig.validate at d79bd502. (left key, relation, right key), Kafka's order and words.
_RELATIONS = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}
BROKER_CONSTRAINTS: tuple[tuple[str, str, str], ...] = tuple(
    rule for kind in ("consumer", "share", "streams") for rule in (
        (f"group.{kind}.max.heartbeat.interval.ms", ">=", f"group.{kind}.min.heartbeat.interval.ms"),
        (f"group.{kind}.heartbeat.interval.ms", ">=", f"group.{kind}.min.heartbeat.interval.ms"),
        (f"group.{kind}.heartbeat.interval.ms", "<=", f"group.{kind}.max.heartbeat.interval.ms"),
        (f"group.{kind}.max.session.timeout.ms", ">=", f"group.{kind}.min.session.timeout.ms"),
        (f"group.{kind}.session.timeout.ms", ">=", f"group.{kind}.min.session.timeout.ms"),
        (f"group.{kind}.session.timeout.ms", "<=", f"group.{kind}.max.session.timeout.ms"),
        (f"group.{kind}.heartbeat.interval.ms", "<", f"group.{kind}.session.timeout.ms"),
        (f"group.{kind}.max.assignment.interval.ms", ">=", f"group.{kind}.min.assignment.interval.ms"),
        (f"group.{kind}.assignment.interval.ms", ">=", f"group.{kind}.min.assignment.interval.ms"),
        (f"group.{kind}.assignment.interval.ms", "<=", f"group.{kind}.max.assignment.interval.ms"),
    )) + (
    ("group.streams.num.standby.replicas", "<=", "group.streams.max.standby.replicas"),
    ("group.streams.task.offset.interval.ms", ">=", "group.streams.min.task.offset.interval.ms"),
    ("group.streams.num.warmup.replicas", "<=", "group.streams.max.warmup.replicas"),
    # ShareGroupConfig.validate
    ("group.share.max.delivery.count.limit", ">=", "group.share.delivery.count.limit"),
    ("group.share.delivery.count.limit", ">=", "group.share.min.delivery.count.limit"),
    ("group.share.max.partition.max.record.locks", ">=", "group.share.partition.max.record.locks"),
    ("group.share.partition.max.record.locks", ">=", "group.share.min.partition.max.record.locks"),
    ("group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms"),
    ("group.share.max.record.lock.duration.ms", ">=", "group.share.record.lock.duration.ms"),
    ("group.share.max.share.sessions", ">=", "group.share.max.size"),
)
for _rule in BROKER_CONSTRAINTS:
    assert _rule[0] in ALL_BROKER_CONFIGS and _rule[2] in ALL_BROKER_CONFIGS, _rule

_DEFS = {ResourceType.TOPIC: TOPIC_CONFIGS, ResourceType.BROKER: ALL_BROKER_CONFIGS, ResourceType.GROUP: GROUP_CONFIGS}
_SOURCES = {
    ResourceType.TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ResourceType.BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
    ResourceType.GROUP: ConfigSource.GROUP_CONFIG,
}


class Synonym(NamedTuple):
    """One link of a config's synonym chain, as DescribeConfigs lists it."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(slots=True)
class ConfigEntry:
    """A config as a resource sees it: the value in force, where it comes from, and the chain."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type_id: int
    synonyms: list[Synonym]
    documentation: str


# Broker keys the controller writes as cluster-level dynamic defaults (broker resource "") when
# it formats a new cluster: with ELR on (the default since Kafka 4.1, KIP-966),
# ActivationRecordsGenerator.recordsForEmptyLog writes min.insync.replicas from the controller's
# static value, and ConfigurationControlManager keeps it (no removal, no broker-level value).
FORMAT_CLUSTER_DEFAULTS = ("min.insync.replicas",)


@dataclass(slots=True)
class ConfigStore:
    """Overrides per (resource type, resource name); a broker-level override feeds topic defaults.

    ``static_broker`` is what the broker was started with (``BrokerConfig.settings``, kwire's
    ``server.properties``): a broker value equal to it is STATIC_BROKER_CONFIG, any other
    DYNAMIC_DEFAULT_BROKER_CONFIG (broker settings are cluster-wide here).
    """

    overrides: dict[tuple[ResourceType, str], dict[str, str]] = field(default_factory=dict)
    static_broker: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def definitions(rtype: ResourceType) -> dict[str, ConfigDef]:
        return _DEFS.get(rtype, {})

    def format_cluster(self) -> None:
        """Write the cluster-level dynamic defaults a new cluster starts with (FORMAT_CLUSTER_DEFAULTS),
        from the static setting when there is one, else the default; a value already there stays."""
        bover = self.overrides.setdefault((ResourceType.BROKER, ""), {})
        for key in FORMAT_CLUSTER_DEFAULTS:
            bover.setdefault(key, self.static_broker.get(key, BROKER_CONFIGS[key].default or ""))

    def set(self, rtype: ResourceType, name: str, key: str, value: str | None, *, static: bool = False,
            custom: bool = False) -> None:
        """Set an override; ``static`` (the broker's start-up settings) may set read-only keys,
        as a broker's properties file does, where a dynamic change may not. ``custom`` lets a
        broker resource keep a name no definition knows, unchecked, as Kafka keeps one."""
        defs = self.definitions(rtype)
        d = defs.get(key)
        if d is None and custom and rtype is ResourceType.BROKER:
            over = self.overrides.setdefault((rtype, name), {})
            if value is None:
                over.pop(key, None)
            else:
                over[key] = value
            return
        if d is None:
            raise ConfigError(f"unknown {rtype.name.lower()} config {key!r}")
        if d.read_only and not static:
            raise ConfigError(f"{key} is read-only")
        value = d.validate(value)
        self.check_bounds(d, value)
        over = self.overrides.setdefault((rtype, name), {})
        if value is None:
            over.pop(key, None)
        else:
            over[key] = value

    def replace(self, rtype: ResourceType, name: str, values: dict[str, str]) -> None:
        """AlterConfigs (legacy): the given set replaces every override."""
        defs = self.definitions(rtype)
        checked = {}
        for k, v in values.items():
            d = defs.get(k)
            if d is None:
                raise ConfigError(f"unknown {rtype.name.lower()} config {k!r}")
            if d.read_only:
                raise ConfigError(f"{k} is read-only")
            checked[k] = d.validate(v)
            self.check_bounds(d, checked[k])
        if rtype is ResourceType.GROUP:
            self.check_session_exceeds_heartbeat(name, {k: v for k, v in checked.items() if v is not None})
        self.overrides[(rtype, name)] = {k: v for k, v in checked.items() if v is not None}

    def check_broker_constraints(self) -> None:
        """BROKER_CONSTRAINTS over the cluster-wide values in force, as Kafka's broker checks them
        when it starts (GroupCoordinatorConfig, ShareGroupConfig).

        Raises:
            ConfigError: the first rule broken, in Kafka's words, with the two values.
        """
        for left, rel, right in BROKER_CONSTRAINTS:
            x, y = self.get_int(ResourceType.BROKER, "", left), self.get_int(ResourceType.BROKER, "", right)
            if not (x >= y if rel == ">=" else x <= y if rel == "<=" else x < y):
                raise ConfigError(f"{left} must be {_RELATIONS[rel]} {right} ({x} and {y})")
        assignors = [a for a in (self.get(ResourceType.BROKER, "", "group.share.assignors") or "").split(",")
                     if a.strip()]
        if len(assignors) != 1:
            raise ConfigError(f"group.share.assignors must contain exactly one assignor, but found {len(assignors)}")
        self._check_authorizer()
        self._check_connection_limits()

    def _check_connection_limits(self) -> None:
        """KafkaConfig.validateValues: max.connections.per.ip may be 0 only with overrides, and
        every override must name a host."""
        overrides = parse_ip_overrides(self.get(ResourceType.BROKER, "", "max.connections.per.ip.overrides") or "")
        if self.get_int(ResourceType.BROKER, "", "max.connections.per.ip") == 0 and not overrides:
            raise ConfigError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                              "property is set.")

    def _check_authorizer(self) -> None:
        """kwire's authorizer is StandardAuthorizer; any other class Kafka would load (or fail to),
        so a name kwire cannot honour stops the start rather than turning StandardAuthorizer on."""
        name = (self.get(ResourceType.BROKER, "", "authorizer.class.name") or "").strip()
        if name and name != STANDARD_AUTHORIZER:
            raise ConfigError(f"authorizer.class.name {name!r}: kwire serves only {STANDARD_AUTHORIZER} "
                              f"(empty: no authorizer)")

    def check_bounds(self, d: ConfigDef, value: str | None) -> None:
        """A group override must lie within the broker's min/max for it (GroupConfig.validate)."""
        if d.bounds is None or value is None:
            return
        lo_key, hi_key = d.bounds
        n = int(value)
        if lo_key is not None and hi_key is not None:
            lo, hi = self.get_int(ResourceType.BROKER, "", lo_key), self.get_int(ResourceType.BROKER, "", hi_key)
            if not lo <= n <= hi:
                raise ConfigError(f"{d.name} must be in the range {lo} to {hi} inclusive ({lo_key}, {hi_key}).")
        elif hi_key is not None and n > (hi := self.get_int(ResourceType.BROKER, "", hi_key)):
            raise ConfigError(f"{d.name} must be less than or equal to {hi} ({hi_key}).")
        elif lo_key is not None and n < (lo := self.get_int(ResourceType.BROKER, "", lo_key)):
            raise ConfigError(f"{d.name} must be greater than or equal to {lo} ({lo_key}).")

    def check_session_exceeds_heartbeat(self, name: str, values: dict[str, str]) -> None:
        """GroupConfig.validateSessionExceedsHeartbeat: with either set, a group's session timeout
        must exceed its heartbeat interval (an unset one is the broker's value). ``values`` is the
        group's whole new override set (AlterConfigs and IncrementalAlterConfigs check it; a single
        ``set``, as a restore or the control API makes, does not, as its order is arbitrary).

        Raises:
            ConfigError: the session timeout is not above the heartbeat interval.
        """
        for session_key, heartbeat_key in GROUP_SESSION_EXCEEDS_HEARTBEAT:
            if session_key not in values and heartbeat_key not in values:
                continue

            def effective(key: str) -> int:
                if key in values:
                    return int(values[key])
                return self.get_int(ResourceType.BROKER, "", GROUP_CONFIGS[key].synonyms[0])

            if effective(session_key) <= effective(heartbeat_key):
                raise ConfigError(f"{session_key} must be greater than {heartbeat_key}")

    def overrides_key(self, rtype: ResourceType, name: str) -> Hashable:
        """What settings resolved for ``name`` depend on, as a cache key: its own overrides and the
        cluster-wide broker ones, by their current items (both are changed in place and replaced).
        For the cluster-wide broker settings themselves, only the latter."""
        bover = self.overrides.get((ResourceType.BROKER, ""))
        shared = tuple(bover.items()) if bover else None
        if rtype is ResourceType.BROKER and not name:
            return shared
        over = self.overrides.get((rtype, name))
        return (name, tuple(over.items()) if over else None, shared)

    def get(self, rtype: ResourceType, name: str, key: str) -> str | None:
        """The value in force: the head of ``synonyms`` (written out: it is on every append's path)."""
        over = self.overrides.get((rtype, name))
        if over is not None and key in over:
            return over[key]
        d = self.definitions(rtype).get(key)
        if d is None:
            raise ConfigError(f"unknown {rtype.name.lower()} config {key!r}")
        if rtype is ResourceType.BROKER and name:
            # a broker id's value falls back to the cluster-wide one
            bover = self.overrides.get((ResourceType.BROKER, ""))
            if bover is not None and key in bover:
                return bover[key]
        if d.synonyms:
            bover = self.overrides.get((ResourceType.BROKER, ""))
            if bover is not None:
                for s in d.synonyms:
                    if s in bover:
                        return bover[s]
        return d.default

    def synonyms(self, rtype: ResourceType, name: str, key: str) -> list[Synonym]:
        """The chain DescribeConfigs reports, in precedence order; its head is what ``get`` returns.

        The resource's own override, then each broker synonym that is set (static or dynamic),
        then the default under the first synonym's name (Kafka names the broker key there).
        """
        d = self.definitions(rtype).get(key)
        if d is None:
            raise ConfigError(f"unknown {rtype.name.lower()} config {key!r}")
        out: list[Synonym] = []
        over = self.overrides.get((rtype, name), {})
        bover = self.overrides.get((ResourceType.BROKER, ""), {})
        if rtype is ResourceType.BROKER and name and key in over:
            out.append(Synonym(key, over[key], ConfigSource.DYNAMIC_BROKER_CONFIG))  # this broker's own
        if rtype is ResourceType.BROKER and name:
            over = bover  # then the cluster-wide value
        if rtype is ResourceType.BROKER:
            out.extend(self._broker_links(key, over))
        elif key in over:
            out.append(Synonym(key, over[key], _SOURCES[rtype]))
        for s in d.synonyms:
            out.extend(self._broker_links(s, bover))
        out.append(Synonym(d.synonyms[0] if d.synonyms else key, d.default, ConfigSource.DEFAULT_CONFIG))
        return out

    def broker_source(self, key: str, value: str) -> ConfigSource:
        """STATIC_BROKER_CONFIG while a broker value is the start-up one, else dynamic (always
        dynamic for a key the cluster was formatted with)."""
        if self.static_broker.get(key) == value and key not in FORMAT_CLUSTER_DEFAULTS:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG

    def _broker_links(self, key: str, bover: dict[str, str]) -> list[Synonym]:
        """A cluster-wide broker key's links: its value, and under a dynamic one the static
        setting it shadows (ConfigHelper lists both, dynamic first)."""
        if key not in bover:
            return []
        head = Synonym(key, bover[key], self.broker_source(key, bover[key]))
        if head.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG and key in self.static_broker:
            return [head, Synonym(key, self.static_broker[key], ConfigSource.STATIC_BROKER_CONFIG)]
        return [head]

    def get_int(self, rtype: ResourceType, name: str, key: str) -> int:
        v = self.get(rtype, name, key)
        return int(v) if v is not None else 0

    def get_bool(self, rtype: ResourceType, name: str, key: str) -> bool:
        return (self.get(rtype, name, key) or "").lower() == "true"

    def describe(self, rtype: ResourceType, name: str, keys: list[str] | None = None) -> list[ConfigEntry]:
        """The entries of a resource (every key, or the named ones that exist, in definition order)."""
        defs = self.definitions(rtype)
        names = list(defs) if keys is None else keys
        if keys is None and rtype is ResourceType.BROKER:
            # Kafka lists its CONFIG_DEF; a dynamic-only quota appears once it is set
            set_ = {*self.overrides.get((rtype, ""), {}), *self.overrides.get((rtype, name), {})}
            names = [n for n in names if n not in DYNAMIC_ONLY_BROKER_CONFIGS or n in set_]
        out = []
        for key in names:
            d = defs.get(key)
            if d is None:
                continue
            chain = self.synonyms(rtype, name, key)
            if d.sensitive:
                chain = [Synonym(s.name, None, s.source) for s in chain]
            out.append(ConfigEntry(key, chain[0].value, chain[0].source, d.read_only, d.sensitive, d.type_id, chain,
                                   d.documentation))
        if rtype is ResourceType.BROKER:
            out.extend(self._custom_entries(name, keys))
        return out

    def _custom_entries(self, name: str, keys: list[str] | None) -> list[ConfigEntry]:
        """Broker names no definition knows, as Kafka's ConfigHelper describes them: no known type,
        so sensitive (value null), read-only, type UNKNOWN; the broker's own value before the
        cluster-wide one in the chain."""
        defs = self.definitions(ResourceType.BROKER)
        own = self.overrides.get((ResourceType.BROKER, name), {}) if name else {}
        shared = self.overrides.get((ResourceType.BROKER, ""), {})
        custom = sorted({k for k in (*own, *shared) if k not in defs})
        out = []
        for key in custom if keys is None else [k for k in keys if k in custom]:
            chain = [Synonym(key, None, src) for over, src in ((own, ConfigSource.DYNAMIC_BROKER_CONFIG),
                                                               (shared, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
                     if key in over]
            out.append(ConfigEntry(key, None, chain[0].source, True, True, _UNKNOWN_TYPE, chain, ""))
        return out

    def drop(self, rtype: ResourceType, name: str) -> None:
        self.overrides.pop((rtype, name), None)


_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Utils.VALID_HOST_CHARACTERS (validHostPattern)


def normal_ip(host: str) -> str:
    """An IP address in its canonical text (zone id dropped); anything else unchanged."""
    try:
        return str(ipaddress.ip_address(host.split("%")[0]))
    except ValueError:
        return host


def parse_ip_overrides(text: str, resolve: Callable[[str], str] | None = None) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,...`` (KafkaConfig's getMap, hosts checked
    with Utils.validHostPattern); a host name is resolved with ``resolve`` (the I/O edge's
    lookup, as Kafka's InetAddress.getByName when the config is read), else kept as written."""
    out: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        host, sep, count = item.strip().rpartition(":")
        if not sep or not host:
            raise ConfigError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        try:
            n = int(count)
        except ValueError:
            raise ConfigError(f"max.connections.per.ip.overrides: {count!r} is not a number") from None
        host = host.strip("[]")
        if not _VALID_HOST.fullmatch(host):
            raise ConfigError(f"max.connections.per.ip.overrides contains invalid addresses : {host}")
        ip = normal_ip(host)
        if not _is_ip(host) and resolve is not None:
            try:
                ip = normal_ip(resolve(host))
            except OSError:
                raise ConfigError(f"max.connections.per.ip.overrides: {host} does not resolve") from None
        out[ip] = n
    return out


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
