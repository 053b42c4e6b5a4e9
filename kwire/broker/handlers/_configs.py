"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: resources and their entries.

kwire's brokers live in one process and share one ``ConfigStore``: the broker settings kwire
acts on are cluster-wide, kept under the resource name "" whichever broker resource carries them.
Kafka's other broker configs (kafka_broker_configs.json) are only stored: under "" when set on
the default resource, under the broker id when set on a broker (DYNAMIC_BROKER_CONFIG). Values from ``BrokerConfig.settings`` (the
CLI's ``--set``) play the role of ``server.properties``: described as STATIC_BROKER_CONFIG
while unchanged, and kept when AlterConfigs replaces the dynamic set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.core.configs import (
    FORMAT_CLUSTER_DEFAULTS,
    ConfigDef,
    ConfigEntry,
    ConfigSource,
    ResourceType,
)
from kwire.broker.handlers._auth import AclOperation, require_config_resource
from kwire.errors import ConfigError, KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import BrokerCore, RequestContext

__all__ = ["Resource", "resolve", "describe", "validate_value", "check_bounds", "SUPPORTED_TYPES",
           "overrides_of", "static_settings", "duplicates", "commit", "check_broker_change", "check_cluster_defaults"]

SUPPORTED_TYPES = (ResourceType.TOPIC, ResourceType.BROKER, ResourceType.GROUP)


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


def resolve(ctx: RequestContext, resource_type: int, name: str,
            op: AclOperation = AclOperation.DESCRIBE_CONFIGS) -> Resource:
    """Check a resource the way ConfigHelper/ConfigAdminManager do (``op`` its ACL); raises KafkaError."""
    try:
        rtype = ResourceType(resource_type)
    except ValueError:
        rtype = ResourceType.UNKNOWN
    if rtype not in SUPPORTED_TYPES:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype.name} ({resource_type})")
    require_config_resource(ctx, rtype.name, name, op)  # ACL-7
    if rtype is ResourceType.TOPIC:
        validate_topic_name(name)
        if name not in ctx.core.cluster.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        return Resource(rtype, name, name)
    if rtype is ResourceType.BROKER:
        if name == "":
            return Resource(rtype, "", name)
        try:
            node = int(name)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        if node != ctx.broker_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")
        return Resource(rtype, str(node), name)
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty.")
    return Resource(rtype, name, name)


def validate_value(d: ConfigDef | None, key: str, value: str | None, rtype: ResourceType) -> str | None:
    """The value as it would be stored; raises ConfigError with a message for the client."""
    if d is None:
        # Kafka's prepareIncrementalConfigs wording (ConfigAdminManager.scala)
        if rtype is ResourceType.BROKER:
            raise ConfigError(f"Unknown config name: {key}")
        raise ConfigError(f"Unknown {rtype.name.lower()} config name: {key}")
    if d.read_only:
        raise ConfigError(f"Cannot update these configs dynamically: {key} is read-only")
    return d.validate(value)


def check_broker_change(core: BrokerCore, res: Resource, changes: list[tuple[str, str | None]]) -> None:
    """The checks Kafka's DynamicBrokerConfig.validateConfigs makes on a broker change, in its order.

    ``changes`` are the (name, value) pairs set (not deleted). A name no definition knows passes
    (Kafka keeps it as a custom config: DynamicConfig.Broker.validate parses only the names it
    defines). Then, as Kafka's ConfigAdminManager turns the ConfigException into
    INVALID_REQUEST: read-only names, security configs without a listener prefix, values of the
    configs kwire only stores, and per-broker configs on the cluster default resource.
    """
    if res.rtype is not ResourceType.BROKER:
        return
    defs = core.configs.definitions(res.rtype)
    changes = [(n, v) for n, v in changes if n in defs]

    def refuse(names: set[str], message: str) -> None:
        if names:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"{message}: [{', '.join(sorted(names))}]")

    refuse({n for n, _ in changes if defs[n].read_only}, "Cannot update these configs dynamically")
    refuse({n for n, _ in changes if defs[n].listener_prefix_only},
           "These security configs can be dynamically updated only per-listener using the listener prefix")
    for name, value in changes:
        d = defs[name]
        if not d.acted_on:
            try:
                d.validate(value)
            except ConfigError as exc:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid value {value} for configuration {name}: "
                                                            f"{exc}") from None
    if res.is_broker_default:
        refuse({n for n, _ in changes if defs[n].kafka_mode == "per-broker" and not defs[n].acted_on},
               "Cannot update these configs at default cluster level, broker id must be specified")


def check_cluster_defaults(res: Resource, before: dict[str, str], after: dict[str, str]) -> None:
    """The cluster-level defaults a formatted cluster keeps (ConfigurationControlManager with ELR on).

    On the default resource "" min.insync.replicas may change but not go:
    INVALID_CONFIG "Cluster-level ... cannot be removed". On a broker id it may not be given a
    value (INVALID_CONFIG "Broker-level ... cannot be altered"); a broker id's view holds the
    cluster value here (kwire keeps acted-on configs cluster-wide), so leaving it out of the new
    set keeps it, as Kafka has nothing at broker level to remove. ``after`` may be completed.
    """
    if res.rtype is not ResourceType.BROKER:
        return
    for key in FORMAT_CLUSTER_DEFAULTS:
        if key not in before:
            continue
        if res.is_broker_default:
            if key not in after:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Cluster-level {key} cannot be removed while ELR is enabled.")
        elif key not in after:
            after[key] = before[key]
        elif after[key] != before[key]:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Broker-level {key} cannot be altered while ELR is enabled.")


def check_bounds(core: BrokerCore, res: Resource, new: dict[str, str]) -> None:
    """Group overrides within the broker's min/max keys (GroupConfig.validate): INVALID_CONFIG."""
    defs = core.configs.definitions(res.rtype)
    try:
        for key, value in new.items():
            d = defs.get(key)
            if d is not None:
                core.configs.check_bounds(d, value)
        if res.rtype is ResourceType.GROUP:
            core.configs.check_session_exceeds_heartbeat(res.name, new)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def describe(core: BrokerCore, res: Resource, keys: list[str] | None) -> list[ConfigEntry]:
    """The entries of a resource (all, or the named ones that exist, in definition order)."""
    # A null or empty key list means every config (ConfigHelper.createResponseConfig).
    out = core.configs.describe(res.rtype, res.name, list(dict.fromkeys(keys)) if keys else None)
    if res.is_broker_default:
        # Broker "" describes only the cluster-wide dynamic defaults (DynamicBrokerConfig).
        out = [e for e in out if e.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    return out


def _acted(core: BrokerCore, key: str) -> bool:
    """A broker config kwire acts on (cluster-wide here); Kafka's others and custom names are
    only stored, per resource."""
    d = core.configs.definitions(ResourceType.BROKER).get(key)
    return d is not None and d.acted_on


def overrides_of(core: BrokerCore, res: Resource) -> dict[str, str]:
    """A copy of the resource's current overrides (for brokers: static settings included).

    For a broker id: the cluster-wide configs kwire acts on and the broker's own stored ones.
    """
    own = dict(core.configs.overrides.get((res.rtype, res.name), {}))
    if res.rtype is ResourceType.BROKER and res.name:
        shared = core.configs.overrides.get((res.rtype, ""), {})
        return {**{k: v for k, v in shared.items() if _acted(core, k)}, **own}
    return own


def static_settings(core: BrokerCore, res: Resource) -> dict[str, str]:
    """What a broker resource reverts to when a dynamic value goes (``BrokerConfig.settings``)."""
    if res.rtype is not ResourceType.BROKER:
        return {}
    if res.name:
        return {k: v for k, v in core.config.settings.items() if _acted(core, k)}
    return dict(core.config.settings)


def duplicates(pairs: list[tuple[int, str]]) -> set[tuple[int, str]]:
    seen: set[tuple[int, str]] = set()
    dup: set[tuple[int, str]] = set()
    for p in pairs:
        (dup if p in seen else seen).add(p)
    return dup


def commit(ctx: RequestContext, res: Resource, new: dict[str, str]) -> None:
    """Replace the resource's overrides (already validated) and let persistence know."""
    store = ctx.core.configs
    if res.rtype is ResourceType.BROKER and res.name:
        # a broker id: the acted-on part replaces the shared ones, the rest is this broker's own
        shared = {k: v for k, v in store.overrides.get((res.rtype, ""), {}).items() if not _acted(ctx.core, k)}
        store.overrides[(res.rtype, "")] = {**shared, **{k: v for k, v in new.items() if _acted(ctx.core, k)}}
        store.overrides[(res.rtype, res.name)] = {k: v for k, v in new.items() if not _acted(ctx.core, k)}
    elif res.rtype is ResourceType.BROKER:
        store.overrides[(res.rtype, "")] = dict(new)  # checked by check_broker_change and the handler
    else:
        store.replace(res.rtype, res.name, new)
    ctx.core.metadata_changed()
