"""Configuration of brokers, topics and groups: known keys, defaults, validation, overrides.

Keys stay Kafka's dotted names here, at the edge of the core; the parts of the core that act
on a value read it through ``ConfigStore.get_int``/``get`` so an override takes effect at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum

from kwire.errors import ConfigError

__all__ = ["ResourceType", "ConfigSource", "ConfigDef", "ConfigStore", "TOPIC_CONFIGS", "BROKER_CONFIGS",
           "GROUP_CONFIGS"]


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


# DescribeConfigs ConfigType ids
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
    max_value: int | None = None
    # a group config bounded by broker configs (min key, max key), checked when set (section 1.10)
    bounds: tuple[str, str] | None = None
    # a check beyond type/choices/range (share.auto.offset.reset's by_duration:<ISO-8601>, ST-6)
    check: Callable[[str], None] | None = None

    @property
    def type_id(self) -> int:
        return _TYPES.get(self.type, 0)

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
        if self.choices:
            items = value.split(",") if self.type == "list" else [value]
            for item in items:
                if item.strip() not in self.choices:
                    raise ConfigError(f"{self.name}: {item!r} is not one of {', '.join(self.choices)}")
        if self.check is not None:
            self.check(value)
        return value


def _defs(*defs: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in defs}


TOPIC_CONFIGS = _defs(
    ConfigDef("cleanup.policy", "delete", "list", ("delete", "compact")),
    ConfigDef("compression.type", "producer", "string", ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("delete.retention.ms", "86400000", "long", min_value=0),
    ConfigDef("file.delete.delay.ms", "60000", "long", min_value=0),
    ConfigDef("flush.messages", "9223372036854775807", "long", min_value=1),
    ConfigDef("flush.ms", "9223372036854775807", "long", min_value=0),
    ConfigDef("index.interval.bytes", "4096", "int", min_value=0),
    ConfigDef("max.compaction.lag.ms", "9223372036854775807", "long", min_value=1),
    ConfigDef("max.message.bytes", "1048588", "int", min_value=0),
    ConfigDef("message.timestamp.type", "CreateTime", "string", ("CreateTime", "LogAppendTime")),
    ConfigDef("message.timestamp.before.max.ms", "9223372036854775807", "long", min_value=0),
    ConfigDef("message.timestamp.after.max.ms", "3600000", "long", min_value=0),
    ConfigDef("min.cleanable.dirty.ratio", "0.5", "double"),
    ConfigDef("min.compaction.lag.ms", "0", "long", min_value=0),
    ConfigDef("min.insync.replicas", "1", "int", min_value=1),
    ConfigDef("preallocate", "false", "boolean"),
    ConfigDef("retention.bytes", "-1", "long"),
    ConfigDef("retention.ms", "604800000", "long", min_value=-1),
    ConfigDef("segment.bytes", "1073741824", "int", min_value=14),
    ConfigDef("segment.index.bytes", "10485760", "int", min_value=4),
    ConfigDef("segment.jitter.ms", "0", "long", min_value=0),
    ConfigDef("segment.ms", "604800000", "long", min_value=1),
    ConfigDef("unclean.leader.election.enable", "false", "boolean"),
    ConfigDef("message.downconversion.enable", "true", "boolean"),
)

BROKER_CONFIGS = _defs(
    ConfigDef("auto.create.topics.enable", "true", "boolean"),
    ConfigDef("num.partitions", "1", "int", min_value=1),
    ConfigDef("default.replication.factor", "1", "int", min_value=1),
    ConfigDef("offsets.topic.num.partitions", "50", "int", min_value=1),
    ConfigDef("message.max.bytes", "1048588", "int", min_value=0),
    ConfigDef("socket.request.max.bytes", "104857600", "int", min_value=1, read_only=True),
    ConfigDef("group.min.session.timeout.ms", "6000", "int", min_value=0),
    ConfigDef("group.max.session.timeout.ms", "1800000", "int", min_value=0),
    ConfigDef("group.initial.rebalance.delay.ms", "3000", "int", min_value=0),
    ConfigDef("group.max.size", "2147483647", "int", min_value=1),
    ConfigDef("group.consumer.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("group.consumer.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("group.consumer.max.size", "2147483647", "int", min_value=1),
    ConfigDef("group.coordinator.rebalance.protocols", "classic,consumer,share,streams", "list"),
    ConfigDef("offsets.retention.minutes", "10080", "int", min_value=1),
    ConfigDef("transaction.max.timeout.ms", "900000", "int", min_value=1),
    ConfigDef("transactional.id.expiration.ms", "604800000", "int", min_value=1),
    ConfigDef("delete.topic.enable", "true", "boolean"),
    ConfigDef("log.retention.ms", "604800000", "long"),
    ConfigDef("log.retention.bytes", "-1", "long"),
    ConfigDef("log.retention.check.interval.ms", "300000", "long", min_value=1),
    ConfigDef("log.segment.bytes", "1073741824", "int", min_value=14),
    ConfigDef("log.roll.ms", "604800000", "long", min_value=1),
    ConfigDef("log.cleanup.policy", "delete", "list", ("delete", "compact")),
    ConfigDef("compression.type", "producer", "string"),
    ConfigDef("min.insync.replicas", "1", "int", min_value=1),
    ConfigDef("log.message.timestamp.type", "CreateTime", "string", ("CreateTime", "LogAppendTime")),
    ConfigDef("unstable.api.versions.enable", "false", "boolean"),
    ConfigDef("share.version", "2", "int", min_value=0, max_value=2),  # SG-1: 2 = share groups + DLQ
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
    ConfigDef("transaction.version", "2", "int", min_value=0),
    ConfigDef("kwire.legacy.produce.upconvert", "false", "boolean"),
)

def _check_auto_offset_reset(value: str) -> None:
    from kwire.broker.core.share_config import check_auto_offset_reset

    check_auto_offset_reset(value)


GROUP_CONFIGS = _defs(
    ConfigDef("consumer.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("consumer.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("share.session.timeout.ms", "45000", "int", min_value=1,
              bounds=("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
    ConfigDef("share.heartbeat.interval.ms", "5000", "int", min_value=1,
              bounds=("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
    ConfigDef("share.record.lock.duration.ms", "30000", "int", min_value=1000,
              bounds=("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")),
    ConfigDef("share.delivery.count.limit", "5", "int", min_value=2,
              bounds=("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit")),
    ConfigDef("share.partition.max.record.locks", "2000", "int", min_value=100,
              bounds=("group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks")),
    ConfigDef("share.auto.offset.reset", "latest", "string", check=_check_auto_offset_reset),
    ConfigDef("share.isolation.level", "read_uncommitted", "string", ("read_uncommitted", "read_committed")),
    ConfigDef("share.renew.acknowledge.enable", "true", "boolean"),  # RN-6
    ConfigDef("errors.deadletterqueue.topic.name", "", "string"),
    ConfigDef("errors.deadletterqueue.copy.record.enable", "false", "boolean"),
    ConfigDef("streams.session.timeout.ms", "45000", "int", min_value=1),
    ConfigDef("streams.heartbeat.interval.ms", "5000", "int", min_value=1),
    ConfigDef("streams.num.standby.replicas", "0", "int", min_value=0),
)

_DEFS = {ResourceType.TOPIC: TOPIC_CONFIGS, ResourceType.BROKER: BROKER_CONFIGS, ResourceType.GROUP: GROUP_CONFIGS}
_SOURCES = {
    ResourceType.TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ResourceType.BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
    ResourceType.GROUP: ConfigSource.GROUP_CONFIG,
}


@dataclass(slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type_id: int


@dataclass(slots=True)
class ConfigStore:
    """Overrides per (resource type, resource name); a broker-level override feeds topic defaults."""

    overrides: dict[tuple[ResourceType, str], dict[str, str]] = field(default_factory=dict)

    @staticmethod
    def definitions(rtype: ResourceType) -> dict[str, ConfigDef]:
        return _DEFS.get(rtype, {})

    def set(self, rtype: ResourceType, name: str, key: str, value: str | None) -> None:
        defs = self.definitions(rtype)
        d = defs.get(key)
        if d is None:
            raise ConfigError(f"unknown {rtype.name.lower()} config {key!r}")
        if d.read_only:
            raise ConfigError(f"{key} is read-only")
        value = d.validate(value)
        self._check_bounds(d, value)
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
            self._check_bounds(d, checked[k])
        self.overrides[(rtype, name)] = {k: v for k, v in checked.items() if v is not None}

    def _check_bounds(self, d: ConfigDef, value: str | None) -> None:
        """A group override must lie within the broker's min/max for it (GroupConfig.validate)."""
        if d.bounds is None or value is None:
            return
        lo, hi = (self.get_int(ResourceType.BROKER, "", k) for k in d.bounds)
        if not lo <= int(value) <= hi:
            raise ConfigError(f"{d.name}: {value} is outside [{lo}, {hi}] ({d.bounds[0]}, {d.bounds[1]})")

    def get(self, rtype: ResourceType, name: str, key: str) -> str | None:
        over = self.overrides.get((rtype, name), {})
        if key in over:
            return over[key]
        if rtype is ResourceType.TOPIC:
            # A topic without an override follows the broker-wide setting of the same meaning.
            broker_key = {"retention.ms": "log.retention.ms", "retention.bytes": "log.retention.bytes",
                          "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms",
                          "cleanup.policy": "log.cleanup.policy",
                          "message.timestamp.type": "log.message.timestamp.type",
                          "max.message.bytes": "message.max.bytes"}.get(key, key)
            bover = self.overrides.get((ResourceType.BROKER, ""), {})
            if broker_key in bover:
                return bover[broker_key]
        d = self.definitions(rtype).get(key)
        if d is None:
            raise ConfigError(f"unknown {rtype.name.lower()} config {key!r}")
        return d.default

    def get_int(self, rtype: ResourceType, name: str, key: str) -> int:
        v = self.get(rtype, name, key)
        return int(v) if v is not None else 0

    def get_bool(self, rtype: ResourceType, name: str, key: str) -> bool:
        return (self.get(rtype, name, key) or "").lower() == "true"

    def describe(self, rtype: ResourceType, name: str, keys: list[str] | None = None) -> list[ConfigEntry]:
        defs = self.definitions(rtype)
        over = self.overrides.get((rtype, name), {})
        names = list(defs) if keys is None else keys
        out = []
        for key in names:
            d = defs.get(key)
            if d is None:
                continue
            value: str | None
            if key in over:
                value, source = over[key], _SOURCES.get(rtype, ConfigSource.UNKNOWN)
            else:
                value, source = self.get(rtype, name, key), ConfigSource.DEFAULT_CONFIG
            out.append(ConfigEntry(key, None if d.sensitive else value, source, d.read_only, d.sensitive, d.type_id))
        return out

    def drop(self, rtype: ResourceType, name: str) -> None:
        self.overrides.pop((rtype, name), None)
