"""LeaveGroup — key 13, v0–5 (KIP-345 batch leave by instance id, KIP-800 reason).

Behaviour: empty group id → INVALID_GROUP_ID; not the coordinator → NOT_COORDINATOR (top
level). Each leaving member: a member id handed out by MEMBER_ID_REQUIRED but never used is
forgotten; an unknown member → UNKNOWN_MEMBER_ID; by instance id (v3+), an unknown instance
→ UNKNOWN_MEMBER_ID, a member id that is not the instance's → FENCED_INSTANCE_ID (an empty
member id removes whichever member holds the instance, as the admin client does). A removed
member's waiting JoinGroup gets UNKNOWN_MEMBER_ID, and a Stable or CompletingRebalance group
rebalances. An unknown group answers UNKNOWN_MEMBER_ID for every member.
In a KIP-848 group (GM-6) the valid members are fenced together; when only classic-protocol
members would remain, the group converts back to a classic group (GM-9).
Version notes: v0–2 name one member and carry one ErrorCode (the member's error when the top
level is NONE); v3+ batch Members and always answer the Members array (one peer mock leaves
it out and kafkajs fails to decode); v5 per-member Reason (logged nowhere).
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = (0, 5)


def _leaving(ctx: RequestContext, req: LeaveGroupRequest) -> list[tuple[str, str | None]]:
    if ctx.api_version < 3:
        return [(req.member_id, None)]
    return [(m.member_id, m.group_instance_id) for m in req.members]


@fitted
def handle(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    if not req.group_id:
        return error_response(ctx, req, ErrorCode.INVALID_GROUP_ID)
    if not is_coordinator(ctx, req.group_id):
        return error_response(ctx, req, ErrorCode.NOT_COORDINATOR)
    leaving = _leaving(ctx, req)
    top, codes = coordinator(ctx).classic.leave(req.group_id, leaving)
    if ctx.api_version < 3:
        if top == ErrorCode.NONE and codes:
            top = codes[0]
        return LeaveGroupResponse(error_code=top)
    return LeaveGroupResponse(error_code=top, members=[
        LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=iid, error_code=code)
        for (mid, iid), code in zip(leaving, codes, strict=False)])


@fitted
def error_response(ctx: RequestContext, req: LeaveGroupRequest, code: int) -> LeaveGroupResponse:
    return LeaveGroupResponse(error_code=code, members=[])
