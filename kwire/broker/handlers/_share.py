"""What ShareFetch and ShareAcknowledge share: the request pre-checks (SG-3), partition lookup
(SG-4) and applying one partition's acknowledgement batches (AK-, RN- rules)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kwire.broker.core.share_coordinator import ShareCoordinator, share_coordinator, share_enabled
from kwire.broker.core.share_groups import MAX_MEMBER_ID_LENGTH
from kwire.broker.core.share_partition import AckBatch
from kwire.broker.handlers._auth import AclOperation, topic_denied
from kwire.broker.handlers._common import leader_error
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.cluster import Partition

__all__ = ["precheck", "Target", "resolve", "acknowledge_partition", "ack_batches", "dropped"]


def dropped(ctx: RequestContext, api_key: int, target: Target) -> bool:
    """Fault injection: leave this partition out of the response (``Broker.drop_partition``)."""
    faults = ctx.core.faults
    return bool(faults.rules) and target.name is not None and faults.partition_dropped(
        api_key, ctx.broker_id, target.name, target.partition)


def precheck(ctx: RequestContext, group_id: str | None, member_id: str | None) -> tuple[int, str | None]:
    """SG-3, in upstream's order: (error code, message); (0, None) when the request may go on."""
    if not share_enabled(ctx.core):
        return ErrorCode.UNSUPPORTED_VERSION, "The share group protocol is not enabled."
    if group_id is None:
        return ErrorCode.INVALID_REQUEST, "GroupId can't be null."
    if not member_id or len(member_id) > MAX_MEMBER_ID_LENGTH:
        return ErrorCode.INVALID_REQUEST, "Invalid MemberId."
    return ErrorCode.NONE, None


@dataclass(slots=True)
class Target:
    """One (topic id, partition) of a request, resolved against the cluster."""

    topic_id: uuid.UUID
    partition: int
    name: str | None  # None: the topic id is unknown
    error: int = ErrorCode.NONE
    leader_id: int = -1
    leader_epoch: int = -1

    @property
    def key(self) -> tuple[str, int]:
        return (self.name if self.name is not None else f"id:{self.topic_id}", self.partition)


def resolve(ctx: RequestContext, topic_id: uuid.UUID, partition: int) -> Target:
    """SG-4: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION; then leadership (NOT_LEADER_OR_FOLLOWER
    with the current leader, KAFKA_STORAGE_ERROR for an offline log)."""
    topic = ctx.core.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return Target(topic_id, partition, None, ErrorCode.UNKNOWN_TOPIC_ID)
    if topic_denied(ctx, AclOperation.READ, topic.name):  # ACL-9: READ on each topic, before the partition
        return Target(topic_id, partition, topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if partition < 0 or partition >= len(topic.partitions):
        return Target(topic_id, partition, topic.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    p: Partition = topic.partitions[partition]
    t = Target(topic_id, partition, topic.name, leader_error(ctx, p))
    t.leader_id, t.leader_epoch = p.leader_id, p.leader_epoch
    return t


def ack_batches(raw: Iterable[Any]) -> list[AckBatch]:
    return [AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types or ())) for b in raw]


def acknowledge_partition(share: ShareCoordinator, group_id: str, member_id: str, target: Target,
                          batches: list[AckBatch], *, version: int, is_renew_ack: bool,
                          broker_id: int) -> tuple[int, str | None]:
    """Apply one partition's batches, all or nothing: (error code, message)."""
    if target.error:
        return target.error, None
    if not batches:
        return ErrorCode.NONE, None  # AK-14: an empty batch list is NONE
    assert target.name is not None
    core = share.core
    if core.faults.rules:
        # Injected acknowledgement errors use ShareAcknowledge rules, piggy-backed or not.
        injected = core.faults.partition_error(ApiKey.SHARE_ACKNOWLEDGE, broker_id, target.name, target.partition)
        if injected is not None:
            return injected, "injected by the control API"
    try:
        sp = share.partitions.for_acknowledge(group_id, target.name, target.partition)  # AK-13
        sp.acknowledge(member_id, batches, version=version, is_renew_ack=is_renew_ack)
    except KafkaError as exc:
        return exc.code, exc.message or None
    return ErrorCode.NONE, None


def coordinator(ctx: RequestContext) -> ShareCoordinator:
    return share_coordinator(ctx.core)
