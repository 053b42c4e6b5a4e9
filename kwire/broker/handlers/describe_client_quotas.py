"""DescribeClientQuotas — key 48, v0–1 (KafkaApis.handleDescribeClientQuotasRequest, ClientQuotasImage.describe).

Behaviour: needs DESCRIBE_CONFIGS on the cluster (acl_rules); the quota entities (user, client-id,
ip; a null name is the default entity) matching the filter: EXACT, DEFAULT or SPECIFIED
components, ``strict`` keeping only entities with no other entity type. A bad filter answers
INVALID_REQUEST at the top level; an unknown entity type UNSUPPORTED_VERSION (QUO-1).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
VERSIONS = (0, 1)

R = DescribeClientQuotasResponse


def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    quotas = ctx.core.subsystems.quotas
    assert quotas is not None
    try:
        found = quotas.describe([(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    except KafkaError as exc:
        return R(error_code=exc.code, error_message=exc.message, entries=None)
    return R(error_code=ErrorCode.NONE, error_message=None, entries=[
        R.EntryData(entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    values=[R.ValueData(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in found])


def error_response(ctx: RequestContext, req: DescribeClientQuotasRequest, code: int) -> DescribeClientQuotasResponse:
    return R(error_code=code, error_message=None, entries=None)
