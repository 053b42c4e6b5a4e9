"""ConsumerGroupDescribe — key 69, v0–1 (KIP-848; v1 MemberType).

Behaviour, per group: not the coordinator → NOT_COORDINATOR; no such group, or not a KIP-848
group → GROUP_ID_NOT_FOUND with upstream's message. Otherwise the group state (Empty,
Assigning, Reconciling, Stable), group and assignment epochs, the assignor in use, and each
member: epochs, client id/host, subscriptions, current assignment (without partitions pending
revocation) and target assignment, topics named by id and name.
Version notes: v1 MemberType (1 = consumer protocol). Deviations: none.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import (
    DESCRIBED_TOPIC_DENIED,
    AclOperation,
    any_topic_undescribable,
    group_denied,
    group_operations,
)
from kwire.broker.handlers._groups import coordinator, fitted, is_coordinator
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponse_Assignment,
    ConsumerGroupDescribeResponse_DescribedGroup,
    ConsumerGroupDescribeResponse_Member,
    ConsumerGroupDescribeResponse_TopicPartitions,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
VERSIONS = (0, 1)

CONSUMER_MEMBER_TYPE = 1  # MemberType: 0 classic protocol, 1 consumer protocol
CLASSIC_MEMBER_TYPE = 0  # a classic-protocol member inside the group (GM-3; ConsumerGroupMember.asConsumerGroupDescribeMember)


def _assignment(ctx: RequestContext, a: dict[uuid.UUID, frozenset[int]]) -> ConsumerGroupDescribeResponse_Assignment:
    by_id = ctx.core.cluster.topics_by_id
    return ConsumerGroupDescribeResponse_Assignment(topic_partitions=[
        ConsumerGroupDescribeResponse_TopicPartitions(topic_id=tid, topic_name=by_id[tid].name, partitions=sorted(ps))
        for tid, ps in sorted(a.items(), key=lambda kv: by_id[kv[0]].name if kv[0] in by_id else "")
        if ps and tid in by_id])


@fitted
def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    denied = []  # ACL-6: first in the answer, as KafkaApis adds them before the coordinator's results
    out = []
    for gid in req.group_ids:
        if group_denied(ctx, AclOperation.DESCRIBE, gid):
            denied.append(ConsumerGroupDescribeResponse_DescribedGroup(
                error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=gid))
            continue
        ops = group_operations(ctx, gid, req.include_authorized_operations)
        if not is_coordinator(ctx, gid):
            out.append(ConsumerGroupDescribeResponse_DescribedGroup(error_code=ErrorCode.NOT_COORDINATOR, group_id=gid))
            continue
        try:
            g = coordinator(ctx).consumer.group(gid)
        except KafkaError as exc:
            out.append(ConsumerGroupDescribeResponse_DescribedGroup(error_code=exc.code, error_message=exc.message,
                                                                    group_id=gid))
            continue
        members = [ConsumerGroupDescribeResponse_Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex, assignment=_assignment(ctx, m.assigned),
            target_assignment=_assignment(ctx, g.target.get(m.member_id, {})), member_type=CLASSIC_MEMBER_TYPE if m.classic is not None else CONSUMER_MEMBER_TYPE)
            for m in g.members.values()]
        if any_topic_undescribable(ctx, {tp.topic_name for m in members for a in (m.assignment, m.target_assignment)
                                         for tp in a.topic_partitions} | {n for m in members
                                                                          for n in m.subscribed_topic_names}):
            out.append(ConsumerGroupDescribeResponse_DescribedGroup(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=DESCRIBED_TOPIC_DENIED, group_id=gid))
            continue
        out.append(ConsumerGroupDescribeResponse_DescribedGroup(
            error_code=ErrorCode.NONE, group_id=gid, group_state=g.state_name, group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch, assignor_name=g.assignor_name, members=members,
            authorized_operations=ops))
    return ConsumerGroupDescribeResponse(groups=denied + out)


@fitted
def error_response(ctx: RequestContext, req: ConsumerGroupDescribeRequest, code: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[
        ConsumerGroupDescribeResponse_DescribedGroup(error_code=code, group_id=gid) for gid in req.group_ids])
