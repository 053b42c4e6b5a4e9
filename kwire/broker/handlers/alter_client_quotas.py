"""AlterClientQuotas — key 49, v0–1 (ControllerApis.handleAlterClientQuotas, ClientQuotaControlManager).

Behaviour: needs ALTER_CONFIGS on the cluster (acl_rules); each entry's entity and values are
validated on their own (ClientQuotaControlManager: entity types user/client-id/ip, ip alone, keys
of the entity's kind, values > 0, integral for the byte rates) and answered per entity;
``validate_only`` changes nothing. Quotas persist in the data dir and apply at once (QUO-1).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS
VERSIONS = (0, 1)

R = AlterClientQuotasResponse


def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    quotas = ctx.core.subsystems.quotas
    assert quotas is not None
    out = []
    for e in req.entries:
        entity = tuple((x.entity_type, x.entity_name) for x in e.entity)
        code: int = ErrorCode.NONE
        message: str | None = None
        try:
            quotas.alter(entity, [(op.key, None if op.remove else op.value) for op in e.ops], req.validate_only)
        except KafkaError as exc:
            code, message = exc.code, exc.message
        out.append(R.EntryData(error_code=code, error_message=message, entity=[
            R.EntityData(entity_type=x.entity_type, entity_name=x.entity_name) for x in e.entity]))
    return R(entries=out)


def error_response(ctx: RequestContext, req: AlterClientQuotasRequest, code: int) -> AlterClientQuotasResponse:
    return R(entries=[R.EntryData(error_code=code, error_message=None, entity=[
        R.EntityData(entity_type=x.entity_type, entity_name=x.entity_name) for x in e.entity]) for e in req.entries])
