"""DescribeAcls — key 29, v1–3 (AclApis.handleDescribeAcls).

Behaviour: needs DESCRIBE on the cluster (acl_rules); without an authorizer SECURITY_DISABLED at
the top level; with one, the ACLs matching the filter grouped by resource pattern
(DescribeAclsResponse.aclsResources). A filter with an UNKNOWN part: INVALID_REQUEST.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.acl import AclBinding, filter_from
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_ACLS
VERSIONS = (1, 3)


def handle(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    acl = ctx.core.subsystems.acl
    if acl is None or not acl.enabled:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED,
                                    error_message="No Authorizer is configured on the broker")
    flt = filter_from(req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter,
                      req.principal_filter, req.host_filter, req.operation, req.permission_type)
    try:
        found = acl.describe(flt)
    except KafkaError as exc:
        return DescribeAclsResponse(error_code=exc.code, error_message=exc.message)
    groups: dict[tuple[int, str, int], list[AclBinding]] = {}
    for b in found:
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    resources = [DescribeAclsResponse.DescribeAclsResource(
        resource_type=rt, resource_name=name, pattern_type=pt,
        acls=[DescribeAclsResponse.AclDescription(principal=b.principal, host=b.host, operation=b.operation,
                                                  permission_type=b.permission) for b in bindings])
        for (rt, name, pt), bindings in groups.items()]
    return DescribeAclsResponse(error_code=ErrorCode.NONE, error_message=None, resources=resources)


def error_response(ctx: RequestContext, req: DescribeAclsRequest, code: int) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=code)
