"""CreatePartitions — key 37, v0–3 (KIP-195).

Behaviour, per topic, as the controller checks it: a topic named twice → INVALID_REQUEST;
unknown → UNKNOWN_TOPIC_OR_PARTITION; a count below the current one, or equal to it →
INVALID_PARTITIONS; manual assignments must give one replica list per new partition, each
non-empty, without repeats, of registered brokers and as long as the existing partitions'
lists, else INVALID_REPLICA_ASSIGNMENT. New partitions are led by the first replica of
their assignment, or spread round-robin over the live brokers. ``validate_only`` checks
without creating. Subsystems hear ``on_partition_created`` for each new partition.
Version notes: v2+ is flexible; v3 only changes the throttling behaviour.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequest_CreatePartitionsTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponse_CreatePartitionsTopicResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = (0, 3)

Result = CreatePartitionsResponse_CreatePartitionsTopicResult


def _check(ctx: RequestContext, t: CreatePartitionsRequest_CreatePartitionsTopic) -> list[list[int]] | None:
    """The manual assignments of the new partitions (None: spread them); raises KafkaError."""
    cluster = ctx.core.cluster
    topic = cluster.topics.get(t.name)
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")
    have = len(topic.partitions)
    if t.count < have:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                         f"The topic {t.name} currently has {have} partition(s); {t.count} would not be an increase.")
    if t.count == have:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
    if t.assignments is None:
        return None
    additional = t.count - have
    if len(t.assignments) != additional:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Attempted to add {additional} additional partition(s), but only "
                         f"{len(t.assignments)} assignment(s) were specified.")
    rf = len(topic.partitions[0].replicas)
    out = []
    for a in t.assignments:
        ids = list(a.broker_ids)
        if not ids:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        for b in ids:
            if b not in cluster.nodes:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {b}, but no such broker is "
                                 "registered.")
            if ids.count(b) > 1:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {b} more than once.")
        if len(ids) != rf:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(ids)} replica(s), "
                             f"but this is not consistent with previous partitions, which have {rf} replica(s).")
        out.append(ids)
    return out


def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    core = ctx.core
    names = [t.name for t in req.topics]
    results = []
    for t in req.topics:
        res = Result(name=t.name, error_code=ErrorCode.NONE, error_message=None)
        results.append(res)
        try:
            if names.count(t.name) > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            assignments = _check(ctx, t)
            if req.validate_only:
                continue
            before = len(core.cluster.topics[t.name].partitions)
            topic = core.create_partitions(t.name, t.count)
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        if assignments is not None:
            for p, replicas in zip(topic.partitions[before:], assignments, strict=True):
                p.replicas = replicas
                live = [r for r in replicas if core.cluster.nodes[r].up]
                p.leader_id = live[0] if live else -1
            core.metadata_changed()
    return CreatePartitionsResponse(results=results)


def error_response(ctx: RequestContext, req: CreatePartitionsRequest, code: int) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(results=[Result(name=t.name, error_code=code, error_message=None)
                                             for t in req.topics])
