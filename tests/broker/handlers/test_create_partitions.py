"""CreatePartitions through the core: growth, refusals, manual assignments, validate_only."""

from __future__ import annotations

import pytest

from kwire.broker.core.cluster import Partition
from kwire.broker.core.subsystems import Subsystem
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.create_partitions import CreatePartitionsRequest
from tests.broker.helpers import CoreClient, make_core


def req(name: str, count: int, assignments: list[list[int]] | None = None, *,
        validate_only: bool = False) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name=name, count=count,
            assignments=None if assignments is None else [
                CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=a) for a in assignments])],
        timeout_ms=1000, validate_only=validate_only)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_partitions_grow_to_the_requested_count(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    resp = CoreClient(core).send(req("t", 4), version)
    assert (resp.results[0].name, resp.results[0].error_code) == ("t", ErrorCode.NONE)
    assert [p.index for p in core.cluster.topics["t"].partitions] == [0, 1, 2, 3]


def test_new_partitions_accept_appends_and_hear_the_subsystem_hook() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    seen = []

    class Listener(Subsystem):
        def on_partition_created(self, partition: Partition) -> None:
            seen.append(partition)

    core.subsystems.add(Listener())
    CoreClient(core).send(req("t", 3), 3)
    assert [p.index for p in seen] == [1, 2]


def test_equal_count_is_invalid_partitions() -> None:
    core, _ = make_core()
    core.create_topic("t", 2)
    resp = CoreClient(core).send(req("t", 2), 3)
    assert resp.results[0].error_code == ErrorCode.INVALID_PARTITIONS
    assert resp.results[0].error_message == "Topic already has 2 partition(s)."


def test_decreasing_is_invalid_partitions_and_nothing_changes() -> None:
    core, _ = make_core()
    core.create_topic("t", 3)
    resp = CoreClient(core).send(req("t", 2), 3)
    assert resp.results[0].error_code == ErrorCode.INVALID_PARTITIONS
    assert "would not be an increase" in resp.results[0].error_message
    assert len(core.cluster.topics["t"].partitions) == 3


def test_unknown_topic_and_duplicate_names() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert c.send(req("nope", 2), 3).results[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    dup = req("t", 2)
    dup.topics.append(CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=3, assignments=None))
    assert [r.error_code for r in c.send(dup, 3).results] == [ErrorCode.INVALID_REQUEST] * 2
    assert len(core.cluster.topics["t"].partitions) == 1


def test_validate_only_checks_without_creating() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    assert c.send(req("t", 5, validate_only=True), 3).results[0].error_code == ErrorCode.NONE
    assert len(core.cluster.topics["t"].partitions) == 1
    assert c.send(req("t", 1, validate_only=True), 3).results[0].error_code == ErrorCode.INVALID_PARTITIONS


def test_assignment_count_must_match_the_new_partitions() -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1)
    resp = CoreClient(core).send(req("t", 3, [[1]]), 3)
    assert resp.results[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert resp.results[0].error_message == "Attempted to add 2 additional partition(s), but only 1 assignment(s) " \
                                            "were specified."
    assert len(core.cluster.topics["t"].partitions) == 1


@pytest.mark.parametrize("assignment", [[9], [], [2, 2]])
def test_bad_assignments_are_invalid_replica_assignment(assignment: list[int]) -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1, replication_factor=len(assignment) or 1)
    resp = CoreClient(core).send(req("t", 2, [assignment]), 3)
    assert resp.results[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_assignment_with_another_replication_factor_is_refused() -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1, replication_factor=1)
    resp = CoreClient(core).send(req("t", 2, [[1, 2]]), 3)
    assert resp.results[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_manual_assignment_sets_replicas_and_leader() -> None:
    core, _ = make_core(brokers=3)
    core.create_topic("t", 1)
    assert CoreClient(core).send(req("t", 3, [[3], [2]]), 3).results[0].error_code == ErrorCode.NONE
    parts = core.cluster.topics["t"].partitions
    assert [(p.replicas, p.leader_id) for p in parts[1:]] == [([3], 3), ([2], 2)]
