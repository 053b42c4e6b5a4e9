"""DescribeCluster through the core: brokers, controller, cluster id, endpoint type, authorized operations."""

from __future__ import annotations

import pytest

from kwire.broker.handlers._common import CLUSTER_OPERATIONS
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_cluster import DescribeClusterRequest
from tests.broker.helpers import CoreClient, make_core


@pytest.mark.parametrize("version", [0, 1, 2])
def test_lists_live_brokers_cluster_id_and_controller(version: int) -> None:
    core, _ = make_core(brokers=3, cluster_id="kwire-test")
    resp = CoreClient(core).send(DescribeClusterRequest(), version)
    assert (resp.error_code, resp.cluster_id, resp.controller_id) == (0, "kwire-test", 1)
    assert [(b.broker_id, b.host, b.port) for b in resp.brokers] == [
        (n.node_id, n.host, n.port) for n in core.cluster.live_nodes()]
    assert resp.cluster_authorized_operations == -(2**31)
    if version >= 1:
        assert resp.endpoint_type == 1


def test_authorized_operations_when_asked() -> None:
    core, _ = make_core()
    resp = CoreClient(core).send(DescribeClusterRequest(include_cluster_authorized_operations=True), 2)
    assert resp.cluster_authorized_operations == CLUSTER_OPERATIONS
    # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
    assert [b for b in range(32) if CLUSTER_OPERATIONS >> b & 1] == [5, 7, 8, 9, 10, 11, 12]


def test_a_stopped_broker_is_left_out_unless_fenced_brokers_are_asked_for_v2() -> None:
    core, _ = make_core(brokers=3)
    core.cluster.set_node_up(2, False)
    c = CoreClient(core)
    assert [b.broker_id for b in c.send(DescribeClusterRequest(), 2).brokers] == [1, 3]
    resp = c.send(DescribeClusterRequest(include_fenced_brokers=True), 2)
    assert [(b.broker_id, b.is_fenced) for b in resp.brokers] == [(1, False), (2, True), (3, False)]


def test_controller_endpoint_type_is_unsupported_on_a_broker() -> None:
    resp = CoreClient(make_core()[0]).send(DescribeClusterRequest(endpoint_type=2), 1)
    assert (resp.error_code, resp.endpoint_type) == (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, 2)
    assert resp.error_message and resp.brokers == []


def test_controller_moves_when_its_broker_stops() -> None:
    core, _ = make_core(brokers=2)
    core.cluster.set_node_up(1, False)
    assert CoreClient(core, 2).send(DescribeClusterRequest(), 0).controller_id == 2
