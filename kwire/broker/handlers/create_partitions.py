"""CreatePartitions — key 37, v0–3 (KIP-195).

Behaviour, per topic, as the controller checks it: a topic named twice → INVALID_REQUEST;
unknown → UNKNOWN_TOPIC_OR_PARTITION; a count below the current one, or equal to it →
INVALID_PARTITIONS; manual assignments must give one replica list per new partition, each
non-empty, without repeats, of registered brokers and as long as the existing partitions'
lists, with at least one live broker, else INVALID_REPLICA_ASSIGNMENT (brokers checked in id
order, as Kafka sorts them). New partitions are led by the first live replica of their
assignment, or spread round-robin over the live brokers. ``validate_only`` checks
without creating. More than 10,000 new partitions in one request fail it whole with
POLICY_VIOLATION (the controller's bounded record list). Subsystems hear ``on_partition_created`` for each new partition.
Version notes: v2+ is flexible; v3 only changes the throttling behaviour.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.handlers._auth import AclOperation, require_topic
from kwire.broker.handlers._quota import mutation_quota
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

MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController: one record per new partition, at most this many

Result = CreatePartitionsResponse_CreatePartitionsTopicResult


def _check(ctx: RequestContext, t: CreatePartitionsRequest_CreatePartitionsTopic) -> list[list[int]] | None:
    """The manual assignments of the new partitions (None: spread them); raises KafkaError."""
    cluster = ctx.core.cluster
    require_topic(ctx, t.name, AclOperation.ALTER)  # ACL-5: before existence
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
    for i, a in enumerate(t.assignments):
        cluster.check_manual_assignment(list(a.broker_ids), rf, have + i)
        out.append(list(a.broker_ids))
    return out


def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    core = ctx.core
    names = [t.name for t in req.topics]
    results = []
    plans = []
    records = 0
    for t in req.topics:
        res = Result(name=t.name, error_code=ErrorCode.NONE, error_message=None)
        results.append(res)
        try:
            if names.count(t.name) > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            plans.append((t, res, _check(ctx, t)))
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        records += t.count - len(core.cluster.topics[t.name].partitions)
    if records > MAX_RECORDS_PER_USER_OP:
        for t, res in zip(req.topics, results, strict=True):
            if names.count(t.name) == 1:
                res.error_code = ErrorCode.POLICY_VIOLATION
                res.error_message = "Unable to perform excessively large batch operation."
        return CreatePartitionsResponse(results=results)
    quota = mutation_quota(ctx, strict_from=3)  # QUO-4
    if not req.validate_only:
        for t, res, assignments in plans:
            try:
                quota.record(t.count - len(core.cluster.topics[t.name].partitions))
                core.create_partitions(t.name, t.count, assignments)
            except KafkaError as exc:
                res.error_code, res.error_message = exc.code, exc.message
    return CreatePartitionsResponse(results=results, throttle_time_ms=quota.throttle_ms)


def error_response(ctx: RequestContext, req: CreatePartitionsRequest, code: int) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(results=[Result(name=t.name, error_code=code, error_message=None)
                                             for t in req.topics])
