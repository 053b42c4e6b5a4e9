"""CreateTopics through the core: manual replica assignments and the controller's check order.

Relied on (Apache Kafka, read through the search tools): ``ReplicationControlManager.createTopics``
(names, existing topics, then configs, then each topic) and ``createTopic``/
``validateManualPartitionAssignment``/``buildPartitionRegistration`` (manual assignments need
NumPartitions and ReplicationFactor -1; one assignment per partition 0..n-1; non-empty, distinct,
registered brokers, checked in id order; the same replica count everywhere; at least one broker
not fenced; the leader is the first live replica), and ``createPartitions`` for the same checks on
added partitions.
"""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_partitions import CreatePartitionsRequest
from kwire.protocol.messages.create_topics import CreateTopicsRequest
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.helpers import CoreClient, make_core


def _create(c: CoreClient, assignments: dict[int, list[int]] | None, *, partitions: int = -1, rf: int = -1,
            configs: dict[str, str] | None = None, validate_only: bool = False, version: int = 7) -> object:
    t = CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=partitions, replication_factor=rf,
        assignments=[CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=b)
                     for i, b in (assignments or {}).items()],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
    return c.send(CreateTopicsRequest(topics=[t], timeout_ms=1000, validate_only=validate_only), version).topics[0]


def _metadata(c: CoreClient) -> list[tuple[int, int, list[int], list[int]]]:
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 12)
    return [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
            for p in sorted(resp.topics[0].partitions, key=lambda p: p.partition_index)]


def test_manual_assignments_give_each_partition_its_replicas_and_leader() -> None:
    core, _ = make_core(brokers=3)
    c = CoreClient(core)
    res = _create(c, {0: [3, 1], 1: [2, 3], 2: [1, 2]})
    assert (res.error_code, res.num_partitions, res.replication_factor) == (ErrorCode.NONE, 3, 2)
    assert [(i, leader, replicas) for i, leader, replicas, _ in _metadata(c)] == [
        (0, 3, [3, 1]), (1, 2, [2, 3]), (2, 1, [1, 2])]


def test_assignments_may_come_in_any_partition_order() -> None:
    core, _ = make_core(brokers=2)
    c = CoreClient(core)
    assert _create(c, {1: [1], 0: [2]}).error_code == ErrorCode.NONE
    assert [(i, leader) for i, leader, _, _ in _metadata(c)] == [(0, 2), (1, 1)]


def test_the_leader_is_the_first_live_replica() -> None:
    core, _ = make_core(brokers=3)
    core.cluster.set_node_up(2, False)
    c = CoreClient(core, 1)
    assert _create(c, {0: [2, 3]}).error_code == ErrorCode.NONE
    assert core.cluster.topics["t"].partitions[0].leader_id == 3


@pytest.mark.parametrize(("assignments", "kw", "code", "message"), [
    ({0: [1]}, {"rf": 1}, ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but replication factor was not set to -1."),
    ({0: [1]}, {"partitions": 1}, ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
    ({0: []}, {}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes an empty replica list."),
    ({0: [1, 9]}, {}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 9, but no such broker is registered."),
    ({0: [9, 2, 2]}, {}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes the broker 2 more than once."),
    ({0: [1, 2], 1: [3]}, {}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with "
     "previous partitions, which have 2 replica(s)."),
    ({0: [1], 2: [2]}, {}, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
])
def test_bad_assignments_get_kafkas_error_and_create_nothing(assignments: dict[int, list[int]], kw: dict[str, int],
                                                              code: int, message: str) -> None:
    core, _ = make_core(brokers=3)
    res = _create(CoreClient(core), assignments, **kw)  # type: ignore[arg-type]
    assert (res.error_code, res.error_message) == (code, message)
    assert "t" not in core.cluster.topics


def test_an_assignment_on_fenced_brokers_only_is_refused() -> None:
    core, _ = make_core(brokers=3)
    core.cluster.set_node_up(3, False)
    res = _create(CoreClient(core, 1), {0: [1], 1: [3]})
    assert (res.error_code, res.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled "
        "shutdown.")


def test_configs_are_checked_before_the_partitions() -> None:
    core, _ = make_core()
    res = _create(CoreClient(core), None, partitions=0, configs={"no.such.config": "1"})
    assert res.error_code == ErrorCode.INVALID_CONFIG


def test_replication_factor_zero_is_checked_before_partitions() -> None:
    core, _ = make_core()
    res = _create(CoreClient(core), None, partitions=0, rf=0)
    assert (res.error_code, res.error_message) == (
        ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value.")


def test_validate_only_with_assignments_reports_counts_and_creates_nothing() -> None:
    core, _ = make_core(brokers=2)
    res = _create(CoreClient(core), {0: [1, 2], 1: [2, 1]}, validate_only=True)
    assert (res.error_code, res.num_partitions, res.replication_factor) == (ErrorCode.NONE, 2, 2)
    assert "t" not in core.cluster.topics


def test_create_partitions_assignment_on_fenced_brokers_only_is_refused() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1, replication_factor=1)
    core.cluster.set_node_up(2, False)
    req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="t", count=2, assignments=[CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=[2])])],
        timeout_ms=1000, validate_only=False)
    res = CoreClient(core, 1).send(req, 3).results[0]
    assert (res.error_code, res.error_message) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled "
        "shutdown.")
    assert len(core.cluster.topics["t"].partitions) == 1


def test_more_than_ten_thousand_records_fail_the_whole_request_with_policy_violation() -> None:
    """QuorumController.MAX_RECORDS_PER_USER_OP and EventHandlerExceptionInfo: a flipped bit asking
    for 2^31-1 partitions is refused at once, allocates nothing, and other topics in the request
    fail with it; 9,999 partitions (+ the topic record) still fit."""
    core, _ = make_core()
    c = CoreClient(core)
    huge = CreateTopicsRequest.CreatableTopic(name="huge", num_partitions=2**31 - 1, replication_factor=1)
    small = CreateTopicsRequest.CreatableTopic(name="small", num_partitions=1, replication_factor=1)
    dup = CreateTopicsRequest.CreatableTopic(name="dup", num_partitions=1, replication_factor=1)
    resp = c.send(CreateTopicsRequest(topics=[huge, small, dup, dup], timeout_ms=1000), 7)
    assert [(r.name, r.error_code) for r in resp.topics] == [
        ("huge", ErrorCode.POLICY_VIOLATION), ("small", ErrorCode.POLICY_VIOLATION),
        ("dup", ErrorCode.INVALID_REQUEST), ("dup", ErrorCode.INVALID_REQUEST)]
    assert resp.topics[0].error_message == "Unable to perform excessively large batch operation."
    assert not core.cluster.topics
    edge = CreateTopicsRequest.CreatableTopic(name="edge", num_partitions=9_999, replication_factor=1)
    assert c.send(CreateTopicsRequest(topics=[edge], timeout_ms=1000, validate_only=True), 7).topics[0] \
        .error_code == ErrorCode.NONE
    edge.configs = [CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="1000")]
    assert c.send(CreateTopicsRequest(topics=[edge], timeout_ms=1000, validate_only=True), 7).topics[0] \
        .error_code == ErrorCode.POLICY_VIOLATION


def test_create_partitions_beyond_ten_thousand_new_partitions_is_policy_violation() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="t", count=2**31 - 1, assignments=None)], timeout_ms=1000, validate_only=False)
    res = CoreClient(core).send(req, 3).results[0]
    assert res.error_code == ErrorCode.POLICY_VIOLATION
    assert len(core.cluster.topics["t"].partitions) == 1


@pytest.mark.parametrize("name", ["t\n", "t\r\n", "\nt", "t\x00"])
def test_a_name_with_a_newline_or_control_character_is_an_invalid_topic(name: str) -> None:
    """Topic.validate (clients/.../internals/Topic.java) allows only [a-zA-Z0-9._-] over the whole
    name: CreateTopics and Metadata auto-creation answer INVALID_TOPIC_EXCEPTION for a trailing
    newline (which a regex ending in "$" lets through) and create nothing."""
    core, _ = make_core()
    c = CoreClient(core)
    resp = c.send(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1)], timeout_ms=1000), 7)
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    resp = c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                  allow_auto_topic_creation=True), 9)
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert name not in core.cluster.topics and name.strip() not in core.cluster.topics
