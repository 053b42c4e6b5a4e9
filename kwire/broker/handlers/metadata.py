"""Metadata — key 3, v0–13.

Behaviour: all topics for a null topic list, none for an empty one; topics by id from v10
(v12+ clients may name either); unknown topics are auto-created when the request allows it
(v4+) and ``auto.create.topics.enable`` is on; only live brokers are listed; a partition
whose leader is down reports LEADER_NOT_AVAILABLE with leader -1. The controller id is
always a live broker's id (one peer mock reports 0 while brokers are 1..N).
Version notes: v13 adds a top-level ErrorCode. Deviations: ISR is the replica list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.acl import CLUSTER_NAME
from kwire.broker.core.cluster import validate_topic_name
from kwire.broker.handlers._auth import (
    AclOperation,
    ResourceType,
    allowed,
    authorized_operations,
    enabled,
    may_create_topic,
    topic_denied,
)
from kwire.broker.handlers._common import NO_AUTHORIZED_OPERATIONS
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponse_MetadataResponseTopic,
)
from kwire.protocol.primitives import ZERO_UUID
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext
    from kwire.broker.core.cluster import Topic

API_KEY = ApiKey.METADATA
VERSIONS = (0, 13)



def _topic(ctx: RequestContext, t: Topic, include_ops: bool) -> MetadataResponse_MetadataResponseTopic:
    nodes = ctx.core.cluster.nodes
    parts = []
    new_partition = MetadataResponse.MetadataResponsePartition
    for p in t.partitions:
        leader = p.leader_id
        code = ErrorCode.NONE
        offline_log = p.log.offline is not None  # its data dir failed: no replica can lead it
        if leader == -1 or not nodes[leader].up or offline_log:
            leader, code = -1, ErrorCode.LEADER_NOT_AVAILABLE
        replicas = p.replicas
        live = [r for r in replicas if r in nodes and nodes[r].up and not offline_log]
        parts.append(new_partition(
            error_code=code, partition_index=p.index, leader_id=leader, leader_epoch=p.leader_epoch,
            replica_nodes=list(replicas), isr_nodes=live,
            offline_replicas=[r for r in replicas if r not in live] if len(live) != len(replicas) else [],
        ))
    return MetadataResponse.MetadataResponseTopic(
        error_code=ErrorCode.NONE, name=t.name, topic_id=t.topic_id, is_internal=t.internal, partitions=parts,
        topic_authorized_operations=(authorized_operations(ctx, ResourceType.TOPIC, t.name) if include_ops
                                     else NO_AUTHORIZED_OPERATIONS),
    )


def _cache_key(ctx: RequestContext, req: MetadataRequest, include_ops: bool,
               check: bool) -> tuple[object, ...] | None:
    """What the answer is a pure function of, when every topic asked for exists and no
    authorizer or authorized operations are involved (the usual metadata refresh): the topics'
    names, ids and partitions (leader, epoch, replicas, offline log), the brokers as this
    listener advertises them, the cluster id and the controller. None: build it as it is."""
    if include_ops or req.include_cluster_authorized_operations or check:
        return None
    cluster = ctx.core.cluster
    if req.topics is None:
        found = list(cluster.topics.values())
    else:
        found = []
        for rt in req.topics:
            t = cluster.topics.get(rt.name) if rt.name is not None else cluster.topics_by_id.get(rt.topic_id)
            if t is None:
                return None  # errors, auto-creation: per request
            found.append(t)
    listener = ctx.conn.listener
    return (listener, cluster.cluster_id, cluster.controller_id,
            tuple((n.node_id, n.up, n.address(listener), n.rack) for n in cluster.nodes.values()),
            tuple((t.name, t.topic_id, t.internal,
                   tuple((p.index, p.leader_id, p.leader_epoch, tuple(p.replicas), p.log.offline is not None)
                         for p in t.partitions)) for t in found))


def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    core = ctx.core
    cluster = core.cluster
    v = ctx.api_version
    include_ops = bool(req.include_topic_authorized_operations)
    allow_create = req.allow_auto_topic_creation if v >= 4 else True
    topics: list[MetadataResponse_MetadataResponseTopic] = []
    unauthorized: list[MetadataResponse_MetadataResponseTopic] = []
    if req.topics is not None and v < 12:
        bad = _ids_before_v12(v, req)
        if bad is not None:
            return bad
    check = enabled(ctx)  # without an authorizer no topic is denied: asked once, not per topic
    key = _cache_key(ctx, req, include_ops, check) if v > 0 else None
    if key is not None:
        cached = core.cached_response(ctx, key)
        if isinstance(cached, MetadataResponse):
            return cached
    if req.topics is None or (v == 0 and not req.topics):
        # v0 has no null: an empty list meant "all topics" there.
        # ACL-3: topics the principal may not describe are left out.
        topics = [_topic(ctx, t, include_ops) for t in cluster.topics.values()
                  if not (check and topic_denied(ctx, AclOperation.DESCRIBE, t.name))]
    else:
        for rt in req.topics:
            if rt.name is None:
                t = cluster.topics_by_id.get(rt.topic_id)
                if t is None:
                    topics.append(MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=rt.topic_id,
                        topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
                elif check and topic_denied(ctx, AclOperation.DESCRIBE, t.name):  # ids are not secret: the id stays
                    unauthorized.append(MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None, topic_id=t.topic_id,
                        topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
                else:
                    topics.append(_topic(ctx, t, include_ops))
                continue
            if check and topic_denied(ctx, AclOperation.DESCRIBE, rt.name):  # ACL-3: existence is not disclosed
                unauthorized.append(MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=rt.name,
                    topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
                continue
            t = cluster.topics.get(rt.name)
            if t is None:
                try:
                    validate_topic_name(rt.name)
                except KafkaError as exc:
                    topics.append(MetadataResponse.MetadataResponseTopic(
                        error_code=exc.code, name=rt.name, topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
                    continue
                if allow_create and core.auto_create_enabled() and not may_create_topic(ctx, rt.name):
                    unauthorized.append(MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=rt.name,
                        topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
                    continue
                if allow_create:
                    t = core.maybe_auto_create(rt.name)
            if t is None:
                topics.append(MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=rt.name,
                    topic_authorized_operations=NO_AUTHORIZED_OPERATIONS))
            else:
                topics.append(_topic(ctx, t, include_ops))
    topics.extend(unauthorized)  # after the others, as KafkaApis lists them
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=n.node_id, host=h, port=p, rack=n.rack)
               for n in cluster.live_nodes() for h, p in [n.address(ctx.conn.listener)]]
    cluster_ops = NO_AUTHORIZED_OPERATIONS
    if 8 <= v <= 10 and req.include_cluster_authorized_operations:
        # v8-10 (KIP-430): librdkafka's DescribeCluster asks here; 0 without DESCRIBE on the cluster.
        cluster_ops = (authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                       if allowed(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0)
    return MetadataResponse(
        brokers=brokers, cluster_id=cluster.cluster_id, controller_id=cluster.controller_id, topics=topics,
        cluster_authorized_operations=cluster_ops,
    )


def _ids_before_v12(v: int, req: MetadataRequest) -> MetadataResponse | None:
    """KafkaApis.handleTopicMetadataRequest: before v12 a topic needs a name and no id, else the
    request fails as a whole with INVALID_REQUEST (MetadataRequest.getErrorResponse: every topic,
    a null name as "", nothing else filled in)."""
    assert req.topics is not None
    if all(rt.name is not None and rt.topic_id == ZERO_UUID for rt in req.topics):
        return None
    return MetadataResponse(brokers=[], cluster_id=None, controller_id=-1, topics=[
        MetadataResponse.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=rt.name or "",
                                               topic_id=rt.topic_id, is_internal=False, partitions=[],
                                               topic_authorized_operations=NO_AUTHORIZED_OPERATIONS)
        for rt in req.topics], cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS)


def error_response(ctx: RequestContext, req: MetadataRequest, code: int) -> MetadataResponse:
    """Every requested topic carries the error (v13+: also the top level)."""
    cluster = ctx.core.cluster
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=n.node_id, host=h, port=p, rack=n.rack)
               for n in cluster.live_nodes() for h, p in [n.address(ctx.conn.listener)]]
    topics = [MetadataResponse.MetadataResponseTopic(error_code=code, name=rt.name, topic_id=rt.topic_id,
                                                     topic_authorized_operations=NO_AUTHORIZED_OPERATIONS)
              for rt in (req.topics or [])]
    resp = MetadataResponse(brokers=brokers, cluster_id=cluster.cluster_id, controller_id=cluster.controller_id,
                            topics=topics, cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS)
    if ctx.api_version >= 13:
        resp.error_code = code
    return resp
