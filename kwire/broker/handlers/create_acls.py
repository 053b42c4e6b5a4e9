"""CreateAcls — key 30, v1–3 (AclApis.handleCreateAcls, AclControlManager.validateNewAcl).

Behaviour: needs ALTER on the cluster (acl_rules); without an authorizer every creation answers
SECURITY_DISABLED; with one each binding is validated on its own (a CLUSTER resource must be
named ``kafka-cluster``; UNKNOWN/ANY parts, an empty name, a principal without ``:`` or a bad
host: INVALID_REQUEST) and stored (persisted in the data dir). Creating an existing ACL succeeds.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.acl import CLUSTER_NAME, ResourceType, binding_from
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_acls import CreateAclsRequest, CreateAclsResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CREATE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    acl = ctx.core.subsystems.acl
    if acl is None or not acl.enabled:
        return error_response(ctx, req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results = []
    for c in req.creations:
        b = binding_from(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
                         c.permission_type)
        try:
            if b.resource_type is ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
            if not b.resource_name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
            acl.create(b)
        except KafkaError as exc:
            results.append(CreateAclsResponse.AclCreationResult(error_code=exc.code, error_message=exc.message))
            continue
        results.append(CreateAclsResponse.AclCreationResult(error_code=ErrorCode.NONE, error_message=None))
    return CreateAclsResponse(results=results)


def error_response(ctx: RequestContext, req: CreateAclsRequest, code: int,
                   message: str | None = None) -> CreateAclsResponse:
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=code, error_message=message)
                                       for _ in req.creations])
