"""IncrementalAlterConfigs — key 44, v0–1 (KIP-339).

Behaviour, per resource (checked as DescribeConfigs checks them; the same resource twice →
INVALID_REQUEST for both): the operations apply in order to the current overrides — SET (a
null value → INVALID_REQUEST), DELETE (back to the default; for a broker, to
``BrokerConfig.settings``), APPEND and SUBTRACT (list configs only, else INVALID_REQUEST; they
start from the current value, inherited or default, and APPEND adds only what is missing). An
unknown operation or a key named twice → INVALID_REQUEST; an unknown key or a bad value →
INVALID_CONFIG with the reason; on a broker, Kafka's DynamicBrokerConfig refusals are
INVALID_REQUEST (a read-only key, a security key without a listener prefix, a per-broker key on
the default resource ""; see ``check_broker_change``). A resource changes all at once or not at all; ``validate_only`` checks without changing.
Group resources hold the group configs (share groups, DLQ) the rest of the core reads.
Version notes: v1 is the flexible version only.
Deviations: changes to the broker configs kwire acts on are cluster-wide, whichever resource
name carries them (kwire's brokers share one config store); Kafka's other broker configs are
kept per resource and only stored (docs/broker-configs.md), as are names no definition knows
(SET and DELETE take them unchecked, as Kafka does; APPEND/SUBTRACT answer INVALID_CONFIG).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.handlers._auth import AclOperation
from kwire.broker.handlers._configs import (
    Resource,
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
from kwire.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequest_AlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponse_AlterConfigsResourceResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = (0, 1)

Result = IncrementalAlterConfigsResponse_AlterConfigsResourceResponse


class OpType(IntEnum):
    """AlterConfigOp.OpType wire ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _items(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def _apply(ctx: RequestContext, res: Resource, r: IncrementalAlterConfigsRequest_AlterConfigsResource) -> dict[str, str]:
    """The resource's overrides after the operations; raises KafkaError."""
    store = ctx.core.configs
    defs = store.definitions(res.rtype)
    static = static_settings(ctx.core, res)
    new = overrides_of(ctx.core, res)
    names = [c.name for c in r.configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    for c in r.configs:
        if c.config_operation not in set(OpType):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown config operation {c.config_operation} for {c.name}")
    check_broker_change(ctx.core, res, [(c.name, c.value) for c in r.configs if c.config_operation != OpType.DELETE])
    for c in r.configs:
        try:
            op = OpType(c.config_operation)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                                f"Unknown config operation {c.config_operation} for {c.name}") from None
        d = defs.get(c.name)
        if d is None and res.rtype is ResourceType.BROKER and op in (OpType.SET, OpType.DELETE):
            # a custom broker config: Kafka stores it unchecked (prepareIncrementalConfigs)
            if op is OpType.SET:
                if c.value is None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c.name}")
                new[c.name] = c.value
            else:
                new.pop(c.name, None)
            continue
        try:
            validate_value(d, c.name, None, res.rtype)  # the key exists and may change
            assert d is not None
            if op is OpType.SET:
                if c.value is None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c.name}")
                value = d.validate(c.value)
                assert value is not None
                new[c.name] = value
            elif op is OpType.DELETE:
                new.pop(c.name, None)
                if c.name in static:
                    new[c.name] = static[c.name]
            else:
                if d.type != "list":
                    raise KafkaError(ErrorCode.INVALID_REQUEST,  # InvalidRequestException in Kafka
                                        f"Config value {op.name.lower()} is not allowed for config key: {c.name}")
                current = _items(new[c.name] if c.name in new else store.get(res.rtype, res.name, c.name))
                given = _items(c.value)
                if op is OpType.APPEND:
                    current += [x for x in given if x not in current]
                else:
                    current = [x for x in current if x not in given]
                value = d.validate(",".join(current))
                assert value is not None
                new[c.name] = value
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return new


def handle(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    dup = duplicates([(r.resource_type, r.resource_name) for r in req.resources])
    out = []
    for r in req.resources:
        result = Result(error_code=ErrorCode.NONE, error_message=None, resource_type=r.resource_type,
                        resource_name=r.resource_name)
        out.append(result)
        try:
            if (r.resource_type, r.resource_name) in dup:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            res = resolve(ctx, r.resource_type, r.resource_name, AclOperation.ALTER_CONFIGS)
            new = _apply(ctx, res, r)
            check_cluster_defaults(res, overrides_of(ctx.core, res), new)
            check_bounds(ctx.core, res, new)
            if not req.validate_only:
                commit(ctx, res, new)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
    return IncrementalAlterConfigsResponse(responses=out)


def error_response(ctx: RequestContext, req: IncrementalAlterConfigsRequest,
                   code: int) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(responses=[
        Result(error_code=code, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in req.resources
    ])
