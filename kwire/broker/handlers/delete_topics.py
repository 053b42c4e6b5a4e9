"""DeleteTopics — key 20, v1–6 (KIP-516 topic ids from v6).

Behaviour, as the controller answers (ControllerApis.deleteTopics): a name or id named twice →
INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic id."); v6 entries with both a name
and an id → INVALID_REQUEST, with neither → INVALID_REQUEST; ``delete.topic.enable=false`` →
TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3, which predates that code); unknown name →
UNKNOWN_TOPIC_OR_PARTITION, unknown id → UNKNOWN_TOPIC_ID. A deleted topic's partitions, logs,
configs and committed offsets go at once (subsystems hear ``on_topic_deleted``); the answer
carries both the name and the id.
Version notes: v5+ carries error messages; v6 names topics by name or id.
Deviations: results follow the request's order (the controller lists failures first).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.handlers._auth import AclOperation, require_topic
from kwire.broker.handlers._quota import mutation_quota
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponse_DeletableTopicResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = (1, 6)

ZERO_UUID = uuid.UUID(int=0)
Result = DeleteTopicsResponse_DeletableTopicResult


def _entries(ctx: RequestContext, req: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t.name, t.topic_id) for t in req.topics]
    return [(name, ZERO_UUID) for name in req.topic_names]


def _check(ctx: RequestContext, name: str | None, tid: uuid.UUID, dup_names: set[str],
           dup_ids: set[uuid.UUID]) -> None:
    """Raises KafkaError with the entry's answer; returns when the topic may go."""
    if name is None and tid == ZERO_UUID:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
    if name is not None and tid != ZERO_UUID:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
    if name in dup_names:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    if tid in dup_ids:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    if not ctx.core.configs.get_bool(ResourceType.BROKER, "", "delete.topic.enable"):
        code = ErrorCode.TOPIC_DELETION_DISABLED if ctx.api_version >= 3 else ErrorCode.INVALID_REQUEST
        raise KafkaError(code, "Topic deletion is disabled.")


def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    cluster = ctx.core.cluster
    entries = _entries(ctx, req)
    names = [n for n, t in entries if n is not None and t == ZERO_UUID]
    ids = [t for n, t in entries if n is None and t != ZERO_UUID]
    dup_names = {n for n in names if names.count(n) > 1}
    dup_ids = {t for t in ids if ids.count(t) > 1}
    out = []
    quota = mutation_quota(ctx, strict_from=5)  # QUO-4
    for name, tid in entries:
        res = Result(name=name, topic_id=tid, error_code=ErrorCode.NONE, error_message=None)
        out.append(res)
        try:
            _check(ctx, name, tid, dup_names, dup_ids)
            if name is not None:
                require_topic(ctx, name, AclOperation.DESCRIBE, AclOperation.DELETE)  # ACL-5
                topic = cluster.topics.get(name)
                if topic is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                     "This server does not host this topic-partition.")
            else:
                topic = cluster.topics_by_id.get(tid)
                if topic is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
                require_topic(ctx, topic.name, AclOperation.DESCRIBE, AclOperation.DELETE)
            quota.record(len(topic.partitions))
            ctx.core.delete_topic(topic.name)
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        res.name, res.topic_id = topic.name, topic.topic_id
    return DeleteTopicsResponse(responses=out, throttle_time_ms=quota.throttle_ms)


def error_response(ctx: RequestContext, req: DeleteTopicsRequest, code: int) -> DeleteTopicsResponse:
    return DeleteTopicsResponse(responses=[Result(name=n, topic_id=t, error_code=code, error_message=None)
                                           for n, t in _entries(ctx, req)])
