"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: resources and their entries.

kwire's brokers live in one process and share one ``ConfigStore``: broker settings are
cluster-wide, kept under the resource name "". Values from ``BrokerConfig.settings`` (the
CLI's ``--set``) play the role of ``server.properties``: described as STATIC_BROKER_CONFIG
while unchanged, and kept when AlterConfigs replaces the dynamic set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.core.configs import ConfigDef, ConfigEntry, ConfigSource, ResourceType
from kwire.errors import ConfigError, KafkaError
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import BrokerCore, RequestContext

__all__ = ["Resource", "resolve", "describe", "validate_value", "check_bounds", "SUPPORTED_TYPES",
           "overrides_of", "static_settings", "duplicates", "commit"]

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


def resolve(ctx: RequestContext, resource_type: int, name: str) -> Resource:
    """Check a resource the way ConfigHelper/ConfigAdminManager do; raises KafkaError."""
    try:
        rtype = ResourceType(resource_type)
    except ValueError:
        rtype = ResourceType.UNKNOWN
    if rtype not in SUPPORTED_TYPES:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype.name} ({resource_type})")
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
        return Resource(rtype, "", name)
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty.")
    return Resource(rtype, name, name)


def validate_value(d: ConfigDef | None, key: str, value: str | None, rtype: ResourceType) -> str | None:
    """The value as it would be stored; raises ConfigError with a message for the client."""
    if d is None:
        raise ConfigError(f"Unknown {rtype.name.lower()} config name: {key}")
    if d.read_only:
        raise ConfigError(f"Cannot update these configs dynamically: {key} is read-only")
    return d.validate(value)


def check_bounds(core: BrokerCore, res: Resource, new: dict[str, str]) -> None:
    """Group overrides within the broker's min/max keys (GroupConfig.validate): INVALID_CONFIG."""
    defs = core.configs.definitions(res.rtype)
    try:
        for key, value in new.items():
            d = defs.get(key)
            if d is not None:
                core.configs.check_bounds(d, value)
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
