"""ShareGroupDescribe — key 77, v1 (KIP-932).

Behaviour, per group: share.version below 1 → UNSUPPORTED_VERSION on every group (SG-2); not
the coordinator → NOT_COORDINATOR; no such group, or a group of another type →
GROUP_ID_NOT_FOUND. Otherwise the state (Empty, Stable), group and assignment epochs, the
assignor ("simple") and each member: epoch, rack, client id and host, subscriptions and its
assignment (topic ids and names).
Version notes: v0 was never released. Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.share_coordinator import share_coordinator, share_enabled
from kwire.broker.core.share_groups import Assignment
from kwire.broker.handlers._auth import (
    DESCRIBED_TOPIC_DENIED,
    AclOperation,
    any_topic_undescribable,
    group_denied,
    group_operations,
)
from kwire.broker.handlers._groups import fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponse_Assignment,
    ShareGroupDescribeResponse_DescribedGroup,
    ShareGroupDescribeResponse_Member,
    ShareGroupDescribeResponse_TopicPartitions,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
VERSIONS = (1, 1)

Group = ShareGroupDescribeResponse_DescribedGroup


def _assignment(ctx: RequestContext, a: Assignment) -> ShareGroupDescribeResponse_Assignment:
    by_id = ctx.core.cluster.topics_by_id
    return ShareGroupDescribeResponse_Assignment(topic_partitions=sorted((
        ShareGroupDescribeResponse_TopicPartitions(topic_id=tid, topic_name=by_id[tid].name, partitions=sorted(ps))
        for tid, ps in a.items() if ps and tid in by_id), key=lambda tp: tp.topic_name))


@fitted
def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    enabled = share_enabled(ctx.core)
    denied = []  # ACL-6: first in the answer, as KafkaApis adds them before the coordinator's results
    out = []
    for gid in req.group_ids:
        if group_denied(ctx, AclOperation.DESCRIBE, gid):
            denied.append(Group(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=gid))
            continue
        ops = group_operations(ctx, gid, req.include_authorized_operations)
        if not enabled:  # SG-2
            out.append(Group(error_code=ErrorCode.UNSUPPORTED_VERSION, group_id=gid))
            continue
        if not is_coordinator(ctx, gid):
            out.append(Group(error_code=ErrorCode.NOT_COORDINATOR, group_id=gid))
            continue
        try:
            d = share_coordinator(ctx.core).groups.describe(gid)
        except KafkaError as exc:
            out.append(Group(error_code=exc.code, error_message=exc.message or None, group_id=gid))
            continue
        by_id = ctx.core.cluster.topics_by_id
        if any_topic_undescribable(ctx, {n for m in d.members for n in m.subscribed_topic_names}
                                   | {by_id[t].name for m in d.members for t in m.assignment if t in by_id}):
            out.append(Group(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=DESCRIBED_TOPIC_DENIED,
                             group_id=gid))
            continue
        out.append(Group(
            group_id=d.group_id, group_state=d.group_state, group_epoch=d.group_epoch,
            assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name, authorized_operations=ops,
            members=[ShareGroupDescribeResponse_Member(
                member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                assignment=_assignment(ctx, m.assignment)) for m in d.members]))
    return ShareGroupDescribeResponse(groups=denied + out)


@fitted
def error_response(ctx: RequestContext, req: ShareGroupDescribeRequest, code: int) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(groups=[Group(error_code=code, group_id=g) for g in req.group_ids])
