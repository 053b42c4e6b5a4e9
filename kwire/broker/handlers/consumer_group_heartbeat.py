"""ConsumerGroupHeartbeat — key 68, v0–1 (KIP-848; v1: client-generated member ids (KIP-1082)
and SubscribedTopicRegex).

Behaviour: request checks first (INVALID_REQUEST with upstream's messages): an empty member id
when v1+, epoch > 0 or epoch -1; empty group, instance or rack id; on join (epoch 0) no
rebalance timeout, TopicPartitions not an empty list, or neither topic names nor regex;
epoch -2 without an instance id; epoch below -2. An unknown ServerAssignor →
UNSUPPORTED_ASSIGNOR; the consumer protocol missing from
``group.coordinator.rebalance.protocols`` → UNSUPPORTED_VERSION; not the coordinator →
NOT_COORDINATOR. Then ``core.consumer_groups``: epoch 0 joins (and creates the group), -1
leaves, -2 is a static member's temporary leave; unknown member → UNKNOWN_MEMBER_ID; unknown
group with epoch ≠ 0 → GROUP_ID_NOT_FOUND; epoch 0 for a live classic group converts it online
(GM-1; GROUP_ID_NOT_FOUND when ``group.consumer.migration.policy`` or the group forbids it); epoch ahead, or behind and not the previous epoch
with a subset of the assignment → FENCED_MEMBER_EPOCH; a static instance held by a live member
→ UNRELEASED_INSTANCE_ID; a bad regex → INVALID_REGULAR_EXPRESSION. The answer carries the
member epoch, HeartbeatIntervalMs (group ``consumer.heartbeat.interval.ms``, else broker
``group.consumer.heartbeat.interval.ms``) and the assignment when the request was full or the
assignment changed (partitions awaiting revocation are left out until released).
Version notes: v0 lets the coordinator generate the member id; v1 requires the client's.
A new regex is resolved asynchronously as upstream does (see ``core.consumer_groups``): the
heartbeat that brings it answers without its topics; they are assigned after the resolution
has bumped the group epoch. Literal topic names take effect in the heartbeat that brings them.
Deviations: Python ``re`` full matches stand in for RE2/J.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.consumer_groups import (
    ASSIGNORS,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    HeartbeatRequest,
    HeartbeatResult,
)
from kwire.broker.handlers._groups import client_host, coordinator, fitted, is_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponse_Assignment,
    ConsumerGroupHeartbeatResponse_TopicPartitions,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT
VERSIONS = (0, 1)


def _error(code: int, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)


def _invalid(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> str | None:
    """Upstream's throwIfConsumerGroupHeartbeatRequestIsInvalid, as a message (None: valid)."""
    epoch = req.member_epoch
    if (ctx.api_version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and req.member_id == "":
        return "MemberId can't be empty."
    if req.group_id == "":
        return "GroupId can't be empty."
    if req.instance_id == "":
        return "InstanceId can't be empty."
    if req.rack_id == "":
        return "RackId can't be empty."
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if req.topic_partitions is None or req.topic_partitions:
            return "TopicPartitions must be empty when (re-)joining."
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            return "InstanceId can't be null."
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return "MemberEpoch is invalid."
    return None


def _response(r: HeartbeatResult) -> ConsumerGroupHeartbeatResponse:
    assignment = None
    if r.assignment is not None:
        assignment = ConsumerGroupHeartbeatResponse_Assignment(topic_partitions=[
            ConsumerGroupHeartbeatResponse_TopicPartitions(topic_id=tid, partitions=sorted(ps))
            for tid, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0])) if ps])
    return ConsumerGroupHeartbeatResponse(
        error_code=r.error_code, error_message=r.error_message, member_id=r.member_id, member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)


@fitted
def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    message = _invalid(ctx, req)
    if message is not None:
        return _error(ErrorCode.INVALID_REQUEST, message)
    if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
        return _error(ErrorCode.UNSUPPORTED_ASSIGNOR,
                      f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                      f"{', '.join(sorted(ASSIGNORS))}.")
    protocols = ctx.core.configs.get(ResourceType.BROKER, "", "group.coordinator.rebalance.protocols") or ""
    if "consumer" not in {p.strip() for p in protocols.split(",")}:
        return _error(ErrorCode.UNSUPPORTED_VERSION, "The new consumer group protocol is not enabled.")
    if not is_coordinator(ctx, req.group_id):
        return _error(ErrorCode.NOT_COORDINATOR)
    owned: dict[uuid.UUID, frozenset[int]] | None = None
    if req.topic_partitions is not None:
        owned = {}
        for tp in req.topic_partitions:
            owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    result = coordinator(ctx).consumer.heartbeat(HeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch, instance_id=req.instance_id,
        rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=req.server_assignor, owned=owned, client_id=ctx.client_id or "",
        client_host=client_host(ctx)))
    return _response(result)


@fitted
def error_response(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest, code: int) -> ConsumerGroupHeartbeatResponse:
    return _error(code)
