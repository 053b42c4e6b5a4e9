"""CreateTopics — key 19, v2–7.

Behaviour: per topic, in the controller's order: duplicate names in one request →
INVALID_REQUEST; illegal name → INVALID_TOPIC_EXCEPTION; existing → TOPIC_ALREADY_EXISTS;
partitions < 1 → INVALID_PARTITIONS; replication factor outside 1..live brokers →
INVALID_REPLICATION_FACTOR; unknown or invalid config → INVALID_CONFIG (checked before the
partitions, as the controller does); manual assignments (with NumPartitions and
ReplicationFactor -1, else INVALID_REQUEST) give each partition its replicas, led by the first
live one; they must cover partitions 0..n-1 once each with the same number of distinct,
registered brokers, at least one of them live (INVALID_REPLICA_ASSIGNMENT with Kafka's
messages). A request whose topics would take more than 10,000 metadata records (a topic, its
configs and its partitions each count one) fails whole with POLICY_VIOLATION, as the
controller's bounded record list makes it. ``validate_only`` checks without creating. v5+ answers with the partition count,
replication factor and configs of the topic.
Deviations: none known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.core.configs import ResourceType
from kwire.broker.handlers._auth import AclOperation, may_create_topic, topic_denied
from kwire.broker.handlers._quota import mutation_quota
from kwire.errors import ConfigError, KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequest_CreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponse_CreatableTopicResult,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (2, 7)

# QuorumController.MAX_RECORDS_PER_USER_OP: one request may create at most this many metadata
# records (a topic, its configs, one per partition); more fails the whole request with
# POLICY_VIOLATION, which also bounds what one request can make the broker allocate.
MAX_RECORDS_PER_USER_OP = 10_000


def _validate(ctx: RequestContext, t: CreateTopicsRequest_CreatableTopic) -> tuple[int, int, list[list[int]] | None]:
    """(partitions, replication factor, manual assignments) after the controller's checks, in
    its order (ReplicationControlManager.createTopics/createTopic); raises KafkaError."""
    core = ctx.core
    validate_topic_name(t.name)
    if t.name in core.cluster.topics:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
    defs = core.configs.definitions(ResourceType.TOPIC)
    for c in t.configs:
        d = defs.get(c.name)
        if d is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {c.name}")
        try:
            d.validate(c.value)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if t.assignments:
        if t.replication_factor != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                        "replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                        "numPartitions was not set to -1.")
        by_index: dict[int, list[int]] = {}
        rf: int | None = None
        for a in t.assignments:
            if a.partition_index in by_index:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Found multiple manual partition assignments for partition {a.partition_index}")
            core.cluster.check_manual_assignment(list(a.broker_ids), rf, a.partition_index)
            rf = len(a.broker_ids)
            by_index[a.partition_index] = list(a.broker_ids)
        if sorted(by_index) != list(range(len(by_index))):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence")
        assignments = [by_index[i] for i in range(len(by_index))]
        return len(assignments), len(assignments[0]), assignments
    if t.replication_factor < -1 or t.replication_factor == 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         "Replication factor must be larger than 0, or -1 to use the default value.")
    if t.num_partitions < -1 or t.num_partitions == 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    parts = t.num_partitions if t.num_partitions != -1 else core.configs.get_int(
        ResourceType.BROKER, "", "num.partitions")
    rf = t.replication_factor if t.replication_factor != -1 else core.configs.get_int(
        ResourceType.BROKER, "", "default.replication.factor")
    live = len(core.cluster.live_nodes())
    if rf > live:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                         f"cannot be reached because only {live} broker(s) are registered.")
    return parts, rf, None


def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    core = ctx.core
    names = [t.name for t in req.topics]
    results = []
    plans: list[tuple[CreateTopicsRequest_CreatableTopic, CreateTopicsResponse_CreatableTopicResult, int, int,
                      list[list[int]] | None]] = []
    records = 0
    for t in req.topics:
        res = CreateTopicsResponse.CreatableTopicResult(name=t.name)
        results.append(res)
        if names.count(t.name) > 1:
            res.error_code = ErrorCode.INVALID_REQUEST
            res.error_message = "Create topics request from client contains a duplicate topic"
            continue
        if not may_create_topic(ctx, t.name):  # ACL-5
            res.error_code, res.error_message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            continue
        try:
            parts, rf, assignments = _validate(ctx, t)
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        plans.append((t, res, parts, rf, assignments))
        records += 1 + len(t.configs) + parts  # TopicRecord, ConfigRecords, PartitionRecords
    if records > MAX_RECORDS_PER_USER_OP:
        # The controller's record list is bounded; the whole operation fails (EventHandlerExceptionInfo).
        for t, res in zip(req.topics, results, strict=True):
            if names.count(t.name) == 1:
                res.error_code = ErrorCode.POLICY_VIOLATION
                res.error_message = "Unable to perform excessively large batch operation."
                res.num_partitions = res.replication_factor = -1
        return CreateTopicsResponse(topics=results)
    quota = mutation_quota(ctx, strict_from=6)  # QUO-4
    for t, res, parts, rf, assignments in plans:
        try:
            quota.record(parts)
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            res.num_partitions = res.replication_factor = -1
            continue
        if req.validate_only:
            res.num_partitions, res.replication_factor = parts, rf
            continue
        try:
            topic = core.create_topic(t.name, parts, rf, {c.name: c.value for c in t.configs if c.value is not None},
                                      assignments=assignments)
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        res.topic_id = topic.topic_id
        res.num_partitions, res.replication_factor = parts, rf
        if ctx.api_version >= 5 and topic_denied(ctx, AclOperation.DESCRIBE_CONFIGS, t.name):
            res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # created; its configs not shown
        elif ctx.api_version >= 5:
            res.configs = [
                CreateTopicsResponse.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                                           config_source=int(e.source), is_sensitive=e.sensitive)
                for e in core.configs.describe(ResourceType.TOPIC, t.name)
            ]
    return CreateTopicsResponse(topics=results, throttle_time_ms=quota.throttle_ms)


def error_response(ctx: RequestContext, req: CreateTopicsRequest, code: int) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=[CreateTopicsResponse.CreatableTopicResult(name=t.name, error_code=code)
                                        for t in req.topics])
