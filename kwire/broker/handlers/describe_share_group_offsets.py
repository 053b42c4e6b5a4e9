"""DescribeShareGroupOffsets — key 90, v0–1 (KIP-932; v1 Lag).

Behaviour, per group: share.version below 1 → UNSUPPORTED_VERSION (SG-2); not the coordinator
→ NOT_COORDINATOR; unknown or not a share group → GROUP_ID_NOT_FOUND. Topics null lists every
partition the group has share state for. Per partition: StartOffset is the share-partition start
offset (SPSO), -1 without share state; LeaderEpoch the partition's; Lag (v1) the records from the
SPSO to the high watermark not yet acknowledged or archived (-1 without share state); an unknown
topic or partition → UNKNOWN_TOPIC_OR_PARTITION.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.share_coordinator import share_coordinator, share_enabled
from kwire.broker.handlers._auth import AclOperation, group_denied, topic_denied
from kwire.broker.handlers._groups import fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from kwire.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseGroup as Group,
)
from kwire.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponsePartition as Part,
)
from kwire.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsResponse_DescribeShareGroupOffsetsResponseTopic as Topic,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 1)


def _group(ctx: RequestContext, req_group: object) -> Group:
    gid: str = req_group.group_id  # type: ignore[attr-defined]
    share = share_coordinator(ctx.core)
    try:
        share.group_for_offsets(gid, create=False)
    except KafkaError as exc:
        return Group(group_id=gid, error_code=exc.code, error_message=exc.message or None)
    topics = ctx.core.cluster.topics
    wanted: list[tuple[str, list[int]]]
    req_topics = req_group.topics  # type: ignore[attr-defined]
    if req_topics is None:
        by_topic: dict[str, list[int]] = {}
        for held in share.partitions.of_group(gid):
            by_topic.setdefault(held.topic, []).append(held.partition)
        wanted = [(t, sorted(ps)) for t, ps in sorted(by_topic.items())
                  if not topic_denied(ctx, AclOperation.DESCRIBE, t)]  # ACL-9: left out
    else:
        wanted = [(t.topic_name, list(t.partitions)) for t in req_topics]
    out = []
    for name, parts in wanted:
        topic = topics.get(name)
        tr = Topic(topic_name=name, topic_id=topic.topic_id if topic is not None else Topic().topic_id)
        for index in parts:
            if topic_denied(ctx, AclOperation.DESCRIBE, name):
                tr.partitions.append(Part(partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1,
                                          error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                          error_message="Topic authorization failed."))
                continue
            if topic is None or not 0 <= index < len(topic.partitions):
                tr.partitions.append(Part(partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1,
                                          error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            sp = share.partitions.get(gid, name, index)
            initialized = sp is not None and sp.initialized
            tr.partitions.append(Part(
                partition_index=index, start_offset=sp.start_offset if sp is not None and initialized else -1,
                leader_epoch=topic.partitions[index].leader_epoch,
                lag=sp.lag() if sp is not None and initialized else -1))
        out.append(tr)
    return Group(group_id=gid, topics=out)


@fitted
def handle(ctx: RequestContext, req: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    enabled = share_enabled(ctx.core)
    groups = []
    for g in req.groups:
        if not enabled:  # SG-2
            groups.append(Group(group_id=g.group_id, error_code=ErrorCode.UNSUPPORTED_VERSION))
        elif group_denied(ctx, AclOperation.DESCRIBE, g.group_id):
            groups.append(Group(group_id=g.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
        elif not is_coordinator(ctx, g.group_id):
            groups.append(Group(group_id=g.group_id, error_code=ErrorCode.NOT_COORDINATOR))
        else:
            groups.append(_group(ctx, g))
    return DescribeShareGroupOffsetsResponse(groups=groups)


@fitted
def error_response(ctx: RequestContext, req: DescribeShareGroupOffsetsRequest,
                   code: int) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(groups=[Group(group_id=g.group_id, error_code=code) for g in req.groups])
