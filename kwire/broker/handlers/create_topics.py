"""CreateTopics — key 19, v2–7.

Behaviour: per topic, in the controller's order: duplicate names in one request →
INVALID_REQUEST; illegal name → INVALID_TOPIC_EXCEPTION; existing → TOPIC_ALREADY_EXISTS;
partitions < 1 → INVALID_PARTITIONS; replication factor outside 1..live brokers →
INVALID_REPLICATION_FACTOR; unknown or invalid config → INVALID_CONFIG; manual assignments
give the partition count. ``validate_only`` checks without creating. v5+ answers with the
partition count, replication factor and configs of the topic.
Deviations: assignments only set the partition count (leaders are spread round-robin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.core.configs import ResourceType
from kwire.errors import ConfigError, KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequest_CreatableTopic,
    CreateTopicsResponse,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (2, 7)


def _validate(ctx: RequestContext, t: CreateTopicsRequest_CreatableTopic) -> tuple[int, int]:
    """(partitions, replication factor) after checks; raises KafkaError."""
    core = ctx.core
    validate_topic_name(t.name)
    if t.name in core.cluster.topics:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "both numPartitions or replicationFactor and replicasAssignments were set")
        parts, rf = len(t.assignments), len(t.assignments[0].broker_ids)
    else:
        parts = t.num_partitions if t.num_partitions != -1 else core.configs.get_int(
            ResourceType.BROKER, "", "num.partitions")
        rf = t.replication_factor if t.replication_factor != -1 else core.configs.get_int(
            ResourceType.BROKER, "", "default.replication.factor")
    if parts < 1:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    live = len(core.cluster.live_nodes())
    if rf < 1 or rf > live:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                         f"cannot be reached because only {live} broker(s) are registered.")
    defs = core.configs.definitions(ResourceType.TOPIC)
    for c in t.configs:
        d = defs.get(c.name)
        if d is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {c.name}")
        try:
            d.validate(c.value)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return parts, rf


def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    core = ctx.core
    names = [t.name for t in req.topics]
    results = []
    for t in req.topics:
        res = CreateTopicsResponse.CreatableTopicResult(name=t.name)
        results.append(res)
        if names.count(t.name) > 1:
            res.error_code = ErrorCode.INVALID_REQUEST
            res.error_message = "Create topics request from client contains a duplicate topic"
            continue
        try:
            parts, rf = _validate(ctx, t)
            if req.validate_only:
                res.num_partitions, res.replication_factor = parts, rf
                continue
            topic = core.create_topic(t.name, parts, rf, {c.name: c.value for c in t.configs if c.value is not None})
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
            continue
        res.topic_id = topic.topic_id
        res.num_partitions, res.replication_factor = parts, rf
        if ctx.api_version >= 5:
            res.configs = [
                CreateTopicsResponse.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                                           config_source=int(e.source), is_sensitive=e.sensitive)
                for e in core.configs.describe(ResourceType.TOPIC, t.name)
            ]
    return CreateTopicsResponse(topics=results)


def error_response(ctx: RequestContext, req: CreateTopicsRequest, code: int) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=[CreateTopicsResponse.CreatableTopicResult(name=t.name, error_code=code)
                                        for t in req.topics])
