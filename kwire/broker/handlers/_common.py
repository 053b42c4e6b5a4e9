"""Helpers shared by the partition-oriented handlers (Produce, Fetch, ListOffsets, ...)."""

from __future__ import annotations

import uuid
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.cluster import Partition, Topic

__all__ = ["resolve_topic", "leader_error", "epoch_error", "error_message", "AclOperation", "TOPIC_OPERATIONS",
           "GROUP_OPERATIONS", "CLUSTER_OPERATIONS", "NO_AUTHORIZED_OPERATIONS"]

NO_AUTHORIZED_OPERATIONS = -(2**31)  # "not requested" in Metadata/DescribeCluster


class AclOperation(IntEnum):
    """Kafka's AclOperation codes (the bit numbers of an authorized-operations field)."""

    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


def _bits(*ops: AclOperation) -> int:
    return sum(1 << op for op in ops)


_A = AclOperation
# What a broker without an authorizer reports: every operation AclEntry.supportedOperations
# lists for the resource type (AuthHelper.authorizedOperations). CLUSTER_ACTION and
# IDEMPOTENT_WRITE belong to the cluster only.
TOPIC_OPERATIONS = _bits(_A.READ, _A.WRITE, _A.CREATE, _A.DESCRIBE, _A.DELETE, _A.ALTER, _A.DESCRIBE_CONFIGS,
                         _A.ALTER_CONFIGS)
GROUP_OPERATIONS = _bits(_A.READ, _A.DESCRIBE, _A.DELETE, _A.DESCRIBE_CONFIGS, _A.ALTER_CONFIGS)
CLUSTER_OPERATIONS = _bits(_A.CREATE, _A.CLUSTER_ACTION, _A.DESCRIBE_CONFIGS, _A.ALTER_CONFIGS, _A.IDEMPOTENT_WRITE,
                           _A.ALTER, _A.DESCRIBE)


def resolve_topic(ctx: RequestContext, name: str | None, topic_id: uuid.UUID | None,
                  by_id: bool) -> tuple[Topic | None, int]:
    """The topic a request names (by id from the versions that use ids), or an error code."""
    cluster = ctx.core.cluster
    if by_id:
        t = cluster.topics_by_id.get(topic_id) if topic_id is not None else None
        return t, (ErrorCode.NONE if t is not None else ErrorCode.UNKNOWN_TOPIC_ID)
    t = cluster.topics.get(name or "")
    return t, (ErrorCode.NONE if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def leader_error(ctx: RequestContext, p: Partition) -> int:
    """NOT_LEADER_OR_FOLLOWER when this broker does not lead the partition; KAFKA_STORAGE_ERROR
    when its log is offline (its data dir failed)."""
    if p.leader_id == -1:
        return ErrorCode.LEADER_NOT_AVAILABLE
    if p.leader_id != ctx.broker_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if p.log.offline is not None:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.NONE


def leader_epoch_error(ctx: RequestContext, p: Partition, current_leader_epoch: int) -> int:
    """A read's checks in Kafka's order: a replica of the partition checks the client's leader
    epoch before leadership (Partition.getLocalLog: checkCurrentLeaderEpoch, then isLeader), so a
    stale epoch sent to a follower is FENCED_LEADER_EPOCH; a broker that holds no replica answers
    NOT_LEADER_OR_FOLLOWER (ReplicaManager.getPartitionOrError)."""
    if p.leader_id != -1 and p.leader_id != ctx.broker_id and ctx.broker_id in p.replicas:
        return epoch_error(p, current_leader_epoch) or ErrorCode.NOT_LEADER_OR_FOLLOWER
    return leader_error(ctx, p) or epoch_error(p, current_leader_epoch)


def epoch_error(p: Partition, current_leader_epoch: int) -> int:
    """KIP-320: a client that knows a newer epoch than ours, or an older one."""
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return ErrorCode.NONE
    if current_leader_epoch > p.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.FENCED_LEADER_EPOCH


def error_message(code: int) -> str | None:
    from kwire.protocol.error_codes import error_info

    return None if code == 0 else error_info(code).message


def node_endpoints(ctx: RequestContext, node_ids: set[int], cls: Any) -> list[Any]:
    """NodeEndpoints for the leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951)."""
    out = []
    for nid in sorted(node_ids):
        node = ctx.core.cluster.nodes.get(nid)
        if node is not None and node.up:
            host, port = node.address(ctx.conn.listener)
            out.append(cls(node_id=node.node_id, host=host, port=port, rack=node.rack))
    return out
