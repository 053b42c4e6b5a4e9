"""DescribeGroups — key 15, v0–6 (KIP-430 authorized operations, KIP-345 instance ids,
KIP-1043 GROUP_ID_NOT_FOUND).

Behaviour, per group: not the coordinator → NOT_COORDINATOR; a classic group answers its
state, protocol type and members (client id, client host "/<ip>"); only a Stable group shows
the selected protocol and each member's metadata and assignment. A group that does not exist
(or is not a classic group) is "Dead" with NONE before v6 and GROUP_ID_NOT_FOUND from v6.
Version notes: v3+ AuthorizedOperations (READ, DELETE, DESCRIBE when asked, else
-2147483648); v4+ GroupInstanceId; v6 ErrorMessage. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, group_denied, group_operations
from kwire.broker.handlers._common import error_message
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponse_DescribedGroup,
    DescribeGroupsResponse_DescribedGroupMember,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = (0, 6)


def _error(group_id: str, code: int, state: str = "", message: str | None = None) -> DescribeGroupsResponse_DescribedGroup:
    return DescribeGroupsResponse_DescribedGroup(error_code=code, error_message=message or error_message(code),
                                                 group_id=group_id, group_state=state, protocol_type="",
                                                 protocol_data="")


@fitted
def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
    v = ctx.api_version
    include_ops = v >= 3 and req.include_authorized_operations
    denied = []  # ACL-6: first in the answer, as KafkaApis adds them before the coordinator's results
    out = []
    for gid in req.groups:
        if group_denied(ctx, AclOperation.DESCRIBE, gid):
            denied.append(_error(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        ops = group_operations(ctx, gid, include_ops)
        if not is_coordinator(ctx, gid):
            out.append(_error(gid, ErrorCode.NOT_COORDINATOR))
            continue
        s = coordinator(ctx).classic.describe(gid)
        if s is None:
            if v >= 6:
                out.append(_error(gid, ErrorCode.GROUP_ID_NOT_FOUND, "Dead", f"Group {gid} not found."))
            else:
                # A successful lookup (error NONE, state Dead) carries the operations too (KafkaApis).
                dead = _error(gid, ErrorCode.NONE, "Dead")
                dead.authorized_operations = ops
                out.append(dead)
            continue
        out.append(DescribeGroupsResponse_DescribedGroup(
            error_code=ErrorCode.NONE, group_id=gid, group_state=s.state, protocol_type=s.protocol_type,
            protocol_data=s.protocol_data, authorized_operations=ops, members=[
                DescribeGroupsResponse_DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                for m in s.members]))
    return DescribeGroupsResponse(groups=denied + out)


@fitted
def error_response(ctx: RequestContext, req: DescribeGroupsRequest, code: int) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[_error(gid, code) for gid in req.groups])
