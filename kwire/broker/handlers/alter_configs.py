"""AlterConfigs — key 33, v0–2 (KIP-133; superseded by IncrementalAlterConfigs, KIP-339).

Behaviour, per resource: the configs given replace the resource's whole override set (keys
left out go back to their defaults; for a broker, to ``BrokerConfig.settings``). Resources are
checked as DescribeConfigs checks them: unknown topic → UNKNOWN_TOPIC_OR_PARTITION, broker
other than "" or this node → INVALID_REQUEST, other types → INVALID_REQUEST; the same
resource twice → INVALID_REQUEST for both. An unknown key or a bad value → INVALID_CONFIG with
the reason; on a broker, Kafka's DynamicBrokerConfig refusals are INVALID_REQUEST (a read-only
key, a security key without a listener prefix, a per-broker key on the default resource ""; see
``check_broker_change``). Nothing of a refused resource changes. Null values are
skipped, as Kafka's legacy path skips them. ``validate_only`` checks without changing.
Version notes: none (v1 and v2 only change throttling and flexibility).
Deviations: changes to the broker configs kwire acts on are cluster-wide, whichever resource
name carries them (kwire's brokers share one config store); Kafka's other broker configs are
kept per resource and only stored (docs/broker-configs.md), as are names no definition knows
(custom configs: Kafka stores them unchecked, and so does kwire).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.handlers._auth import AclOperation
from kwire.broker.handlers._configs import (
    check_bounds,
    check_broker_change,
    check_cluster_defaults,
    commit,
    duplicates,
    overrides_of,
    resolve,
    static_settings,
    validate_value,
)
from kwire.errors import ConfigError, KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsRequest_AlterConfigsResource,
    AlterConfigsResponse,
    AlterConfigsResponse_AlterConfigsResourceResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = (0, 2)

Result = AlterConfigsResponse_AlterConfigsResourceResponse


def _alter(ctx: RequestContext, r: AlterConfigsRequest_AlterConfigsResource, validate_only: bool) -> None:
    """Raises KafkaError with the resource's answer."""
    res = resolve(ctx, r.resource_type, r.resource_name, AclOperation.ALTER_CONFIGS)
    defs = ctx.core.configs.definitions(res.rtype)
    new = static_settings(ctx.core, res)
    check_broker_change(ctx.core, res, [(c.name, c.value) for c in r.configs if c.value is not None])
    try:
        for c in r.configs:
            if c.value is None:
                continue
            d = defs.get(c.name)
            if d is None and res.rtype is ResourceType.BROKER:
                new[c.name] = c.value  # a custom broker config, stored unchecked as Kafka does
                continue
            value = validate_value(d, c.name, c.value, res.rtype)
            if value is not None:
                new[c.name] = value
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    check_cluster_defaults(res, overrides_of(ctx.core, res), new)
    check_bounds(ctx.core, res, new)
    if not validate_only:
        commit(ctx, res, new)


def handle(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    dup = duplicates([(r.resource_type, r.resource_name) for r in req.resources])
    out = []
    for r in req.resources:
        result = Result(error_code=ErrorCode.NONE, error_message=None, resource_type=r.resource_type,
                        resource_name=r.resource_name)
        out.append(result)
        try:
            if (r.resource_type, r.resource_name) in dup:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            _alter(ctx, r, req.validate_only)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
    return AlterConfigsResponse(responses=out)


def error_response(ctx: RequestContext, req: AlterConfigsRequest, code: int) -> AlterConfigsResponse:
    return AlterConfigsResponse(responses=[
        Result(error_code=code, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in req.resources
    ])
