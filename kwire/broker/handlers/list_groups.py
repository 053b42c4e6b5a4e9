"""ListGroups — key 16, v0–5 (KIP-518 states filter, KIP-848 types filter).

Behaviour: the groups this broker coordinates, classic and KIP-848 alike, sorted by id,
with their protocol type ("consumer" for KIP-848 groups; "" for groups that only hold
offsets). v4+ filters by state and v5+ by type ("classic", "consumer"), both
case-insensitive; an empty filter lists everything.
Version notes: v4+ GroupState, v5+ GroupType. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import may_list_group
from kwire.broker.handlers._groups import coordinator, fitted
from kwire.protocol.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponse_ListedGroup,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.LIST_GROUPS
VERSIONS = (0, 5)


@fitted
def handle(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    v = ctx.api_version
    states = {s.lower() for s in req.states_filter} if v >= 4 else set()
    types = {t.lower() for t in req.types_filter} if v >= 5 else set()
    listed = coordinator(ctx).list_groups(ctx.broker_id, states or None, types or None)
    listed = [g for g in listed if may_list_group(ctx, g.group_id)]  # ACL-6
    return ListGroupsResponse(groups=[
        ListGroupsResponse_ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                       group_type=g.group_type) for g in listed])


@fitted
def error_response(ctx: RequestContext, req: ListGroupsRequest, code: int) -> ListGroupsResponse:
    return ListGroupsResponse(error_code=code)
