"""FindCoordinator — key 10, v0–6 (KIP-699 batching in v4+, KIP-932 share keys in v6).

Behaviour: group (type 0) and transactional (type 1) keys hash onto a live broker; share keys
(type 2, "group:topicId:partition") use the group part. A null or empty key is INVALID_REQUEST;
an unknown key type INVALID_REQUEST. Version notes: v0–3 carry one key, v4+ a list.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import coordinator_key_denied
from kwire.broker.handlers._common import error_message
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.FIND_COORDINATOR
VERSIONS = (0, 6)

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _lookup(ctx: RequestContext, key: str | None, key_type: int) -> tuple[int, int, str, int]:
    """(error code, node id, host, port)."""
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    denied = coordinator_key_denied(ctx, key_type, key or "")  # KafkaApis.getCoordinator, before the key's checks
    if denied:
        return denied, -1, "", -1
    if not key:
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if key_type == SHARE:
        parts = key.split(":")
        if len(parts) != 3 or not parts[0]:
            return ErrorCode.INVALID_REQUEST, -1, "", -1
        key = parts[0]
    node = ctx.core.coordinator_for(key)
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return ErrorCode.NONE, node.node_id, *node.address(ctx.conn.listener)


def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    if ctx.api_version < 4:
        code, nid, host, port = _lookup(ctx, req.key, req.key_type)
        return FindCoordinatorResponse(error_code=code, error_message=error_message(code), node_id=nid, host=host,
                                       port=port)
    coords = []
    for key in req.coordinator_keys:
        code, nid, host, port = _lookup(ctx, key, req.key_type)
        coords.append(FindCoordinatorResponse.Coordinator(key=key, node_id=nid, host=host, port=port, error_code=code,
                                                          error_message=error_message(code)))
    return FindCoordinatorResponse(coordinators=coords)


def error_response(ctx: RequestContext, req: FindCoordinatorRequest, code: int) -> FindCoordinatorResponse:
    if ctx.api_version < 4:
        return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code)
        for k in req.coordinator_keys])
