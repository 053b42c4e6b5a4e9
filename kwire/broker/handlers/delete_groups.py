"""DeleteGroups — key 42, v0–3 (KIP-229).

Behaviour, per group: not the coordinator → NOT_COORDINATOR; no such group →
GROUP_ID_NOT_FOUND; a classic group that is not Empty, or a KIP-848 group with members →
NON_EMPTY_GROUP; otherwise the group and all its committed offsets are removed.
Version notes: v3 ErrorMessage. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, group_denied
from kwire.broker.handlers._common import error_message
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponse_DeletableGroupResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 3)


def _result(gid: str, code: int) -> DeleteGroupsResponse_DeletableGroupResult:
    return DeleteGroupsResponse_DeletableGroupResult(group_id=gid, error_code=code, error_message=error_message(code))


@fitted
def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    out = []
    for gid in req.groups_names:
        if group_denied(ctx, AclOperation.DELETE, gid):
            out.append(_result(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif not is_coordinator(ctx, gid):
            out.append(_result(gid, ErrorCode.NOT_COORDINATOR))
        else:
            out.append(_result(gid, coordinator(ctx).delete_group(gid)))
    return DeleteGroupsResponse(results=out)


@fitted
def error_response(ctx: RequestContext, req: DeleteGroupsRequest, code: int) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=[_result(gid, code) for gid in req.groups_names])
