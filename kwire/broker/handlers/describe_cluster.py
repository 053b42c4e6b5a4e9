"""DescribeCluster — key 60, v0–2 (KIP-700, KIP-919, KIP-1073).

Behaviour: the live brokers, the cluster id and the controller id (a live broker, as a KRaft
broker reports one since clients cannot reach the controller); the cluster's authorized
operations when ``include_cluster_authorized_operations`` (from the authorizer: ACL-8; 0 without
DESCRIBE on the cluster; every cluster operation without an authorizer), else -2^31.
Version notes: v1+ carries the endpoint type (KIP-919): brokers answer for BROKER (1) only,
anything else → UNSUPPORTED_ENDPOINT_TYPE. v2+ lists stopped brokers too, as fenced, when
``include_fenced_brokers``.
Deviations: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.broker.core.acl import CLUSTER_NAME
from kwire.broker.handlers._auth import AclOperation, ResourceType, allowed, authorized_operations
from kwire.broker.handlers._common import NO_AUTHORIZED_OPERATIONS
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

API_KEY = ApiKey.DESCRIBE_CLUSTER
VERSIONS = (0, 2)

ENDPOINT_TYPE_BROKER = 1  # EndpointType.BROKER (KIP-919); CONTROLLER is 2


def handle(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    cluster = ctx.core.cluster
    v = ctx.api_version
    endpoint_type = req.endpoint_type if v >= 1 else ENDPOINT_TYPE_BROKER
    if endpoint_type != ENDPOINT_TYPE_BROKER:
        return DescribeClusterResponse(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, endpoint_type=endpoint_type,
            error_message=f"The request was sent to an endpoint of type BROKER, but endpoint type "
                          f"{endpoint_type} was asked for",
            cluster_id=cluster.cluster_id)
    nodes = sorted(cluster.nodes.values(), key=lambda n: n.node_id)
    fenced = v >= 2 and req.include_fenced_brokers
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=n.node_id, host=h, port=p,
                                                             rack=n.rack, is_fenced=not n.up)
               for n in nodes if n.up or fenced for h, p in [n.address(ctx.conn.listener)]]
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE, error_message=None, endpoint_type=endpoint_type, cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id, brokers=brokers,
        cluster_authorized_operations=_cluster_operations(ctx) if req.include_cluster_authorized_operations
        else NO_AUTHORIZED_OPERATIONS)


def _cluster_operations(ctx: RequestContext) -> int:
    """AuthHelper.computeDescribeClusterResponse: 0 without DESCRIBE on the cluster."""
    if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
