"""DeleteAcls — key 31, v1–3 (AclApis.handleDeleteAcls, AclControlManager.deleteAcls).

Behaviour: needs ALTER on the cluster (acl_rules); without an authorizer every filter answers
SECURITY_DISABLED; with one each filter deletes the ACLs it matches (MATCH and ANY as in
DescribeAcls) and lists them; a filter with an UNKNOWN part answers INVALID_REQUEST.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.acl import filter_from
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DELETE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    acl = ctx.core.subsystems.acl
    if acl is None or not acl.enabled:
        return error_response(ctx, req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results = []
    for f in req.filters:
        flt = filter_from(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                          f.host_filter, f.operation, f.permission_type)
        try:
            gone = acl.delete(flt)
        except KafkaError as exc:
            results.append(DeleteAclsResponse.DeleteAclsFilterResult(error_code=exc.code, error_message=exc.message))
            continue
        results.append(DeleteAclsResponse.DeleteAclsFilterResult(
            error_code=ErrorCode.NONE, error_message=None,
            matching_acls=[DeleteAclsResponse.DeleteAclsMatchingAcl(
                error_code=ErrorCode.NONE, error_message=None, resource_type=b.resource_type,
                resource_name=b.resource_name, pattern_type=b.pattern_type, principal=b.principal, host=b.host,
                operation=b.operation, permission_type=b.permission) for b in gone]))
    return DeleteAclsResponse(filter_results=results)


def error_response(ctx: RequestContext, req: DeleteAclsRequest, code: int,
                   message: str | None = None) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[DeleteAclsResponse.DeleteAclsFilterResult(
        error_code=code, error_message=message) for _ in req.filters])
