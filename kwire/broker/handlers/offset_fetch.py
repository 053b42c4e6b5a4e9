"""OffsetFetch — key 9, v1–10 (KIP-88 all topics, KIP-447 RequireStable, KIP-709 batched
groups, KIP-848 member epochs, topic ids in v10).

Behaviour, per group: not the coordinator → NOT_COORDINATOR; a KIP-848 group checks the
member id and epoch when given (v9+: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). Null topics → every
committed offset of the group; otherwise each requested partition, -1 (leader epoch -1,
metadata "") when nothing is committed, also for unknown groups and topics. RequireStable with
a transactional commit still pending on the partition → UNSTABLE_OFFSET_COMMIT (offsets staged
by the transaction work through ``OffsetStore.stage``).
Version notes: v1 has no top-level ErrorCode (a group error goes on every partition); v2–7
carry it top level; v5+ CommittedLeaderEpoch; v7 RequireStable; v8+ a Groups array, each with
its own ErrorCode; v9 MemberId/MemberEpoch; v10 topics by id (unknown id → UNKNOWN_TOPIC_ID).
Deviations: none.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kwire.broker.core.offsets import offset_store
from kwire.broker.handlers._auth import AclOperation, group_denied, topic_denied
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponse_OffsetFetchResponseGroup,
    OffsetFetchResponse_OffsetFetchResponsePartition,
    OffsetFetchResponse_OffsetFetchResponsePartitions,
    OffsetFetchResponse_OffsetFetchResponseTopic,
    OffsetFetchResponse_OffsetFetchResponseTopics,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.OFFSET_FETCH
VERSIONS = (1, 10)

_ZERO = uuid.UUID(int=0)


@dataclass(slots=True)
class _Row:
    partition: int
    offset: int = -1
    leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = ErrorCode.NONE


@dataclass(slots=True)
class _TopicRows:
    name: str
    topic_id: uuid.UUID
    rows: list[_Row]


_Wanted = list[tuple[str | None, uuid.UUID, list[int]]]


def _fetch_group(ctx: RequestContext, group_id: str, wanted: _Wanted | None,
                 member_id: str | None, member_epoch: int, require_stable: bool,
                 by_id: bool) -> tuple[int, list[_TopicRows]]:
    """(group error, topics); ``wanted`` is None for "every committed offset"."""
    if group_denied(ctx, AclOperation.DESCRIBE, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if not is_coordinator(ctx, group_id):
        return ErrorCode.NOT_COORDINATOR, []
    try:
        coordinator(ctx).validate_offset_fetch(group_id, member_id, member_epoch)
    except KafkaError as exc:
        return exc.code, []
    store = offset_store(ctx.core)
    cluster = ctx.core.cluster

    def row(topic: str, partition: int) -> _Row:
        if require_stable and store.is_pending(group_id, topic, partition):
            return _Row(partition, error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
        c = store.get(group_id, topic, partition)
        return _Row(partition) if c is None else _Row(partition, c.offset, c.leader_epoch, c.metadata)

    out: list[_TopicRows] = []
    if wanted is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in store.partitions(group_id):
            by_topic.setdefault(topic, []).append(partition)
        for topic, parts in by_topic.items():
            t = cluster.topics.get(topic)
            if (by_id and t is None) or topic_denied(ctx, AclOperation.DESCRIBE, topic):  # ACL-4: left out
                continue
            out.append(_TopicRows(topic, t.topic_id if t is not None else _ZERO, [row(topic, p) for p in parts]))
        return ErrorCode.NONE, out
    for name, topic_id, parts in wanted:
        if by_id:
            t = cluster.topics_by_id.get(topic_id)
            if t is None:
                out.append(_TopicRows("", topic_id, [_Row(p, error_code=ErrorCode.UNKNOWN_TOPIC_ID) for p in parts]))
                continue
            name = t.name
        if topic_denied(ctx, AclOperation.DESCRIBE, name):
            out.append(_TopicRows(name or "", topic_id, [_Row(p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                                                         for p in parts]))
            continue
        out.append(_TopicRows(name or "", topic_id, [row(name or "", p) for p in parts]))
    return ErrorCode.NONE, out


@fitted
def handle(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    v = ctx.api_version
    stable = bool(req.require_stable) if v >= 7 else False
    if v < 8:
        wanted: _Wanted | None = None if req.topics is None else [(t.name, _ZERO, list(t.partition_indexes)) for t in req.topics]
        code, topics = _fetch_group(ctx, req.group_id, wanted, None, -1, stable, False)
        if code and v < 2:
            # v1 has nowhere else to put a group error: every requested partition carries it.
            topics = [_TopicRows(n or "", _ZERO, [_Row(p, error_code=code) for p in parts]) for n, _, parts in wanted or []]
        return OffsetFetchResponse(error_code=code, topics=[
            OffsetFetchResponse_OffsetFetchResponseTopic(name=t.name, partitions=[
                OffsetFetchResponse_OffsetFetchResponsePartition(
                    partition_index=r.partition, committed_offset=r.offset, committed_leader_epoch=r.leader_epoch,
                    metadata=r.metadata, error_code=r.error_code) for r in t.rows]) for t in topics])
    by_id = v >= 10
    groups = []
    for g in req.groups:
        wanted_g: _Wanted | None = None if g.topics is None else [(t.name, t.topic_id, list(t.partition_indexes)) for t in g.topics]
        code, topics = _fetch_group(ctx, g.group_id, wanted_g, g.member_id if v >= 9 else None,
                                    g.member_epoch if v >= 9 else -1, stable, by_id)
        groups.append(OffsetFetchResponse_OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
            OffsetFetchResponse_OffsetFetchResponseTopics(name=t.name, topic_id=t.topic_id, partitions=[
                OffsetFetchResponse_OffsetFetchResponsePartitions(
                    partition_index=r.partition, committed_offset=r.offset, committed_leader_epoch=r.leader_epoch,
                    metadata=r.metadata, error_code=r.error_code) for r in t.rows]) for t in topics]))
    return OffsetFetchResponse(groups=groups)


@fitted
def error_response(ctx: RequestContext, req: OffsetFetchRequest, code: int) -> OffsetFetchResponse:
    if ctx.api_version < 8:
        return OffsetFetchResponse(error_code=code)
    return OffsetFetchResponse(groups=[OffsetFetchResponse_OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                                       for g in req.groups])
