"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: resources, sources, docs.

kwire's brokers live in one process and share one ``ConfigStore``: broker settings are
cluster-wide, kept under the resource name "". Values from ``BrokerConfig.settings`` (the
CLI's ``--set``) play the role of ``server.properties``: described as STATIC_BROKER_CONFIG
while unchanged, and kept when AlterConfigs replaces the dynamic set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kwire.broker.core.cluster import TopicError, validate_topic_name
from kwire.broker.core.configs import ConfigDef, ConfigSource, ResourceType
from kwire.errors import ConfigError, KwireError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import BrokerCore, RequestContext

__all__ = ["Resource", "ResourceError", "resolve", "Described", "describe", "validate_value", "SUPPORTED_TYPES",
           "overrides_of", "static_settings", "duplicates", "commit"]

SUPPORTED_TYPES = (ResourceType.TOPIC, ResourceType.BROKER, ResourceType.GROUP)

# Topic keys whose broker-wide setting has another name (ConfigStore.get falls back the same way;
# every other topic key falls back to the broker key of the same name, when there is one).
TOPIC_BROKER_SYNONYMS = {
    "retention.ms": "log.retention.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "max.message.bytes": "message.max.bytes",
}

_DOCS = {
    "cleanup.policy": "How old log segments are handled: \"delete\" (retention) and/or \"compact\" (keep the "
                      "latest value per key).",
    "compression.type": "The final compression of the topic's batches; \"producer\" keeps the producer's codec.",
    "delete.retention.ms": "How long delete tombstones are kept on compacted topics.",
    "file.delete.delay.ms": "How long to wait before deleting a file from the filesystem.",
    "flush.messages": "Force an fsync after this many messages (kwire never fsyncs).",
    "flush.ms": "Force an fsync after this long (kwire never fsyncs).",
    "index.interval.bytes": "How often an offset index entry is added.",
    "max.compaction.lag.ms": "The longest a message stays ineligible for compaction.",
    "max.message.bytes": "The largest record batch size allowed for the topic.",
    "message.timestamp.type": "CreateTime (the producer's timestamp) or LogAppendTime (the broker's clock).",
    "message.timestamp.before.max.ms": "How far a CreateTime timestamp may lie before the broker's time.",
    "message.timestamp.after.max.ms": "How far a CreateTime timestamp may lie after the broker's time.",
    "min.cleanable.dirty.ratio": "How dirty a log must be before it is compacted.",
    "min.compaction.lag.ms": "The least time a message stays uncompacted.",
    "min.insync.replicas": "The least number of in-sync replicas an acks=all produce needs.",
    "preallocate": "Preallocate segment files.",
    "retention.bytes": "The most bytes a partition keeps before old segments go (-1: no limit).",
    "retention.ms": "How long a segment is kept before it is deleted (-1: no limit).",
    "segment.bytes": "The size of one segment file.",
    "segment.index.bytes": "The size of the offset index.",
    "segment.jitter.ms": "Random jitter subtracted from segment.ms.",
    "segment.ms": "Roll a new segment after this long.",
    "unclean.leader.election.enable": "Let an out-of-sync replica become leader.",
    "message.downconversion.enable": "Down-convert batches for old fetch versions.",
    "consumer.session.timeout.ms": "The session timeout of the group's consumer-protocol members.",
    "consumer.heartbeat.interval.ms": "The heartbeat interval of the group's consumer-protocol members.",
    "share.session.timeout.ms": "The session timeout of the share group's members.",
    "share.heartbeat.interval.ms": "The heartbeat interval of the share group's members.",
    "share.record.lock.duration.ms": "How long a share consumer holds a record it fetched.",
    "share.delivery.count.limit": "How often a record is delivered before it is archived.",
    "share.partition.max.record.locks": "The most records one share partition holds locked at once.",
    "share.auto.offset.reset": "Where a share group starts without a start offset: latest, earliest or by_duration.",
    "share.isolation.level": "Whether a share group reads uncommitted or only committed transactional records.",
    "errors.deadletterqueue.topic.name": "The topic that records a share group gives up on are copied to.",
    "errors.deadletterqueue.copy.record.enable": "Copy the record's key and value into the dead letter record.",
    "streams.session.timeout.ms": "The session timeout of the streams group's members.",
    "streams.heartbeat.interval.ms": "The heartbeat interval of the streams group's members.",
    "streams.num.standby.replicas": "How many standby replicas a streams group keeps per task.",
}


class ResourceError(KwireError):
    """A config resource the request cannot act on, with the code a real broker answers."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


@dataclass(slots=True, frozen=True)
class Resource:
    """A resolved config resource: its type and the name it is kept under in the store."""

    rtype: ResourceType
    name: str
    requested_name: str

    @property
    def is_broker_default(self) -> bool:
        """Broker resource "" (the cluster-wide dynamic defaults), not a node id."""
        return self.rtype is ResourceType.BROKER and self.requested_name == ""


def resolve(ctx: RequestContext, resource_type: int, name: str) -> Resource:
    """Check a resource the way ConfigHelper/ConfigAdminManager do; raises ResourceError."""
    try:
        rtype = ResourceType(resource_type)
    except ValueError:
        rtype = ResourceType.UNKNOWN
    if rtype not in SUPPORTED_TYPES:
        raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype.name} ({resource_type})")
    if rtype is ResourceType.TOPIC:
        try:
            validate_topic_name(name)
        except TopicError as exc:
            raise ResourceError(exc.code, exc.message or str(exc)) from None
        if name not in ctx.core.cluster.topics:
            raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        return Resource(rtype, name, name)
    if rtype is ResourceType.BROKER:
        if name == "":
            return Resource(rtype, "", name)
        try:
            node = int(name)
        except ValueError:
            raise ResourceError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        if node != ctx.broker_id:
            raise ResourceError(ErrorCode.INVALID_REQUEST,
                                f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")
        return Resource(rtype, "", name)
    if not name:
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Group name must not be empty.")
    return Resource(rtype, name, name)


def validate_value(d: ConfigDef | None, key: str, value: str | None, rtype: ResourceType) -> str | None:
    """The value as it would be stored; raises ConfigError with a message for the client."""
    if d is None:
        raise ConfigError(f"Unknown {rtype.name.lower()} config name: {key}")
    if d.read_only:
        raise ConfigError(f"Cannot update these configs dynamically: {key} is read-only")
    return d.validate(value)


@dataclass(slots=True)
class Described:
    """One DescribeConfigs entry, with its synonyms in precedence order."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type_id: int
    synonyms: list[tuple[str, str | None, ConfigSource]]
    documentation: str


def _broker_source(core: BrokerCore, key: str, value: str) -> ConfigSource:
    if core.config.settings.get(key) == value:
        return ConfigSource.STATIC_BROKER_CONFIG
    return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def _doc(d: ConfigDef) -> str:
    return _DOCS.get(d.name) or f"{d.name}: a {d.type} setting (default {d.default})."


def _entry(core: BrokerCore, res: Resource, d: ConfigDef) -> Described:
    store = core.configs
    key = d.name
    synonyms: list[tuple[str, str | None, ConfigSource]] = []
    own = store.overrides.get((res.rtype, res.name), {})
    if res.rtype is ResourceType.TOPIC:
        if key in own:
            synonyms.append((key, own[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        broker_key = TOPIC_BROKER_SYNONYMS.get(key, key)
        bdef = store.definitions(ResourceType.BROKER).get(broker_key)
        bover = store.overrides.get((ResourceType.BROKER, ""), {})
        if bdef is not None and broker_key in bover:
            synonyms.append((broker_key, bover[broker_key], _broker_source(core, broker_key, bover[broker_key])))
        synonyms.append((broker_key if bdef is not None else key, d.default, ConfigSource.DEFAULT_CONFIG))
    elif res.rtype is ResourceType.BROKER:
        if key in own:
            synonyms.append((key, own[key], _broker_source(core, key, own[key])))
        synonyms.append((key, d.default, ConfigSource.DEFAULT_CONFIG))
    else:
        if key in own:
            synonyms.append((key, own[key], ConfigSource.GROUP_CONFIG))
        synonyms.append((key, d.default, ConfigSource.DEFAULT_CONFIG))
    _, value, source = synonyms[0]
    if d.sensitive:
        value = None
        synonyms = [(n, None, s) for n, _, s in synonyms]
    return Described(key, value, source, d.read_only, d.sensitive, d.type_id, synonyms, _doc(d))


def describe(core: BrokerCore, res: Resource, keys: list[str] | None) -> list[Described]:
    """The entries of a resource (all, or the named ones that exist, in definition order)."""
    defs = core.configs.definitions(res.rtype)
    # A null or empty key list means every config (ConfigHelper.createResponseConfig).
    wanted = list(defs) if not keys else [k for k in dict.fromkeys(keys) if k in defs]
    out = [_entry(core, res, defs[k]) for k in wanted]
    if res.is_broker_default:
        # Broker "" describes only the cluster-wide dynamic defaults (DynamicBrokerConfig).
        out = [e for e in out if e.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    return out


def overrides_of(core: BrokerCore, res: Resource) -> dict[str, str]:
    """A copy of the resource's current overrides (for brokers: static settings included)."""
    return dict(core.configs.overrides.get((res.rtype, res.name), {}))


def static_settings(core: BrokerCore, res: Resource) -> dict[str, str]:
    """What a broker resource reverts to when a dynamic value goes (``BrokerConfig.settings``)."""
    return dict(core.config.settings) if res.rtype is ResourceType.BROKER else {}


def duplicates(pairs: list[tuple[int, str]]) -> set[tuple[int, str]]:
    seen: set[tuple[int, str]] = set()
    dup: set[tuple[int, str]] = set()
    for p in pairs:
        (dup if p in seen else seen).add(p)
    return dup


def commit(ctx: RequestContext, res: Resource, new: dict[str, str]) -> None:
    """Replace the resource's overrides (already validated) and let persistence know."""
    ctx.core.configs.replace(res.rtype, res.name, new)
    ctx.core.metadata_changed()
