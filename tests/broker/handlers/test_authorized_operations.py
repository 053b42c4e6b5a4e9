"""Authorized operations in Metadata, DescribeCluster and DescribeGroups: exactly Kafka's sets.

Kafka without an authorizer reports every operation ``AclEntry.supportedOperations`` lists for the
resource type (``AuthHelper.authorizedOperations``, read through the search tools): a topic READ,
WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS (never CLUSTER_ACTION or
IDEMPOTENT_WRITE, which belong to the cluster); a group READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS,
ALTER_CONFIGS; the cluster CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE,
ALTER, DESCRIBE.
"""

from __future__ import annotations

from kwire.broker.handlers._common import NO_AUTHORIZED_OPERATIONS
from kwire.protocol.messages.describe_cluster import DescribeClusterRequest
from kwire.protocol.messages.describe_groups import DescribeGroupsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.helpers import CoreClient, make_core


def _names(bits: int) -> set[str]:
    names = {3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE", 9: "CLUSTER_ACTION",
             10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE"}
    assert bits >= 0 and not bits & ~sum(1 << b for b in names), f"unknown bits in {bits:b}"
    return {n for b, n in names.items() if bits >> b & 1}


TOPIC = {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
GROUP = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
CLUSTER = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"}


def test_metadata_topic_operations_are_the_topic_set_only() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                  include_topic_authorized_operations=True,
                                  include_cluster_authorized_operations=True), 9)
    assert _names(resp.topics[0].topic_authorized_operations) == TOPIC
    assert _names(resp.cluster_authorized_operations) == CLUSTER
    plain = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 12)
    assert plain.topics[0].topic_authorized_operations == NO_AUTHORIZED_OPERATIONS


def test_describe_cluster_operations_are_the_cluster_set() -> None:
    core, _ = make_core()
    resp = CoreClient(core).send(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    assert _names(resp.cluster_authorized_operations) == CLUSTER


def test_describe_groups_operations_are_the_group_set() -> None:
    core, _ = make_core()
    resp = CoreClient(core).send(DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), 5)
    assert _names(resp.groups[0].authorized_operations) == GROUP
