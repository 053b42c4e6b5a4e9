"""DescribeConfigs — key 32, v1–4 (KIP-133, KIP-226, KIP-569, KIP-848 group resources).

Behaviour, per resource: TOPIC (unknown → UNKNOWN_TOPIC_OR_PARTITION, illegal name →
INVALID_TOPIC_EXCEPTION), BROKER ("" = the cluster-wide dynamic defaults only; this broker's
node id = every broker config; another id or a non-number → INVALID_REQUEST, as the broker
that receives the request answers for itself only) and GROUP (any group, existing or not;
empty name → INVALID_REQUEST). Other resource types → INVALID_REQUEST. A null or empty key
list describes every config, a list only those that exist (unknown keys are left out). Each entry
carries its value, source (DYNAMIC_TOPIC_CONFIG, GROUP_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG for ``BrokerConfig.settings``, DEFAULT_CONFIG), read-only and sensitive
flags (sensitive values are null).
Version notes: v1+ answers synonyms when ``include_synonyms`` (the entry's own override, the
broker-wide setting a topic falls back to, the default: highest precedence first); v3+ adds the
config type and, when ``include_documentation``, a documentation string.
A broker lists Kafka's broker configs (kafka_broker_configs.json) with Kafka's read-only flags,
next to the configs kwire acts on; docs/broker-configs.md says which is which.
Deviations: the configs kwire acts on are cluster-wide (one process, one store), so their dynamic
values are reported as DYNAMIC_DEFAULT_BROKER_CONFIG even when set on a broker id (the configs
kwire only stores are DYNAMIC_BROKER_CONFIG there);
BROKER_LOGGER and CLIENT_METRICS resources are not supported (INVALID_REQUEST).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._configs import describe, resolve
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponse_DescribeConfigsResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_CONFIGS
VERSIONS = (1, 4)

R = DescribeConfigsResponse


def _result(ctx: RequestContext, req: DescribeConfigsRequest, resource_type: int, name: str,
            keys: list[str] | None) -> DescribeConfigsResponse_DescribeConfigsResult:
    out = R.DescribeConfigsResult(error_code=ErrorCode.NONE, error_message=None, resource_type=resource_type,
                                  resource_name=name)
    try:
        res = resolve(ctx, resource_type, name)
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
        return out
    v = ctx.api_version
    docs = v >= 3 and req.include_documentation
    for e in describe(ctx.core, res, keys):
        entry = R.DescribeConfigsResourceResult(name=e.name, value=e.value, read_only=e.read_only,
                                                config_source=int(e.source), is_sensitive=e.sensitive)
        if req.include_synonyms:
            entry.synonyms = [R.DescribeConfigsSynonym(name=n, value=val, source=int(src)) for n, val, src in e.synonyms]
        if v >= 3:
            entry.config_type = e.type_id
            entry.documentation = e.documentation if docs else None
        out.configs.append(entry)
    return out


def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(results=[
        _result(ctx, req, r.resource_type, r.resource_name, r.configuration_keys) for r in req.resources
    ])


def error_response(ctx: RequestContext, req: DescribeConfigsRequest, code: int) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(results=[
        R.DescribeConfigsResult(error_code=code, error_message=None, resource_type=r.resource_type,
                                resource_name=r.resource_name)
        for r in req.resources
    ])
