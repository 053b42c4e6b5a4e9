"""DeleteShareGroupOffsets — key 92, v0 (KIP-932).

Behaviour: share.version below 1 → UNSUPPORTED_VERSION; not the coordinator → NOT_COORDINATOR;
unknown or not a share group → GROUP_ID_NOT_FOUND; members present → NON_EMPTY_GROUP. Per topic:
unknown → UNKNOWN_TOPIC_OR_PARTITION; otherwise the group's share state for the topic goes and the
next fetch starts from ``share.auto.offset.reset`` again.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.share_coordinator import share_coordinator, share_enabled
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._groups import fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)
from kwire.protocol.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsResponse_DeleteShareGroupOffsetsResponseTopic as Topic,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


def _top(code: int, message: str | None = None) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(error_code=code, error_message=message)


@fitted
def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    if not share_enabled(ctx.core):
        return _top(ErrorCode.UNSUPPORTED_VERSION)
    if not is_coordinator(ctx, req.group_id):
        return _top(ErrorCode.NOT_COORDINATOR)
    share = share_coordinator(ctx.core)
    try:
        group = share.group_for_offsets(req.group_id, create=False)
    except KafkaError as exc:
        return _top(exc.code, exc.message or None)
    if group.members:
        return _top(ErrorCode.NON_EMPTY_GROUP, f"Share group {req.group_id} has members.")
    topics = ctx.core.cluster.topics
    out = []
    for t in req.topics:
        topic = topics.get(t.topic_name)
        if topic_denied(ctx, AclOperation.READ, t.topic_name):
            out.append(Topic(topic_name=t.topic_name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                             error_message="Topic authorization failed."))
            continue
        if topic is None:
            out.append(Topic(topic_name=t.topic_name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        share.delete_offsets(req.group_id, t.topic_name)
        out.append(Topic(topic_name=t.topic_name, topic_id=topic.topic_id))
    return DeleteShareGroupOffsetsResponse(responses=out)


@fitted
def error_response(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest,
                   code: int) -> DeleteShareGroupOffsetsResponse:
    return _top(code)
