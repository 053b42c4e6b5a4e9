"""OffsetForLeaderEpoch through the core: end offsets from the partition's leader-epoch history."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from kwire.protocol.messages.produce import ProduceRequest
from tests.broker.helpers import CoreClient, batch, make_core


def produce(c: CoreClient, topic: str, n: int) -> None:
    resp = c.send(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=batch([b"x"] * n))])]), 9)
    assert resp.responses[0].partition_responses[0].error_code == 0


def ask(c: CoreClient, topic: str, epoch: int, *, current: int = -1, partition: int = 0,
        version: int = 4) -> tuple[int, int, int]:
    resp = c.send(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic=topic, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current, leader_epoch=epoch)])]), version)
    r = resp.topics[0].partitions[0]
    return r.error_code, r.leader_epoch, r.end_offset


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_current_epoch_ends_at_the_log_end(version: int) -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 3)
    assert ask(c, "t", 0, current=0, version=version) == (ErrorCode.NONE, 0, 3)


def test_an_older_epoch_ends_where_the_next_one_starts() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1)
    c1, c2 = CoreClient(core, 1), CoreClient(core, 2)
    produce(c1, "t", 3)                       # epoch 0: offsets 0-2
    core.cluster.move_leader("t", 0, 2)       # epoch 1 starts at 3
    produce(c2, "t", 2)                       # epoch 1: offsets 3-4
    core.cluster.move_leader("t", 0, 1)       # epoch 2 starts at 5
    produce(c1, "t", 1)
    assert ask(c1, "t", 0) == (ErrorCode.NONE, 0, 3)
    assert ask(c1, "t", 1) == (ErrorCode.NONE, 1, 5)
    assert ask(c1, "t", 2) == (ErrorCode.NONE, 2, 6)


def test_an_epoch_without_data_reports_the_epoch_before_it() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1)
    c1 = CoreClient(core, 1)
    produce(c1, "t", 2)
    core.cluster.move_leader("t", 0, 2)  # epoch 1 at 2, no data in it
    core.cluster.move_leader("t", 0, 1)  # epoch 2 at 2 replaces it (LeaderEpochFileCache)
    assert ask(c1, "t", 1) == (ErrorCode.NONE, 0, 2)


def test_unknown_newer_epoch_and_minus_one_are_undefined() -> None:
    core, _ = make_core()
    core.create_topic("t", 1)
    c = CoreClient(core)
    produce(c, "t", 1)
    assert ask(c, "t", 5) == (ErrorCode.NONE, -1, -1)
    assert ask(c, "t", -1) == (ErrorCode.NONE, -1, -1)


def test_current_leader_epoch_is_checked() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1)
    core.cluster.move_leader("t", 0, 2)
    core.cluster.move_leader("t", 0, 1)  # epoch 2, led by 1
    c = CoreClient(core, 1)
    assert ask(c, "t", 0, current=1)[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert ask(c, "t", 0, current=3)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert ask(c, "t", 0, current=2)[0] == ErrorCode.NONE


def test_unknown_partition_and_not_leader() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1)
    leader = core.cluster.topics["t"].partitions[0].leader_id
    other = CoreClient(core, 2 if leader == 1 else 1)
    assert ask(other, "t", 0)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ask(other, "t", 0, partition=3)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert ask(other, "nope", 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_records_trims_the_history_front() -> None:
    core, _ = make_core(brokers=2)
    core.create_topic("t", 1)
    c1, c2 = CoreClient(core, 1), CoreClient(core, 2)
    produce(c1, "t", 3)
    core.cluster.move_leader("t", 0, 2)
    produce(c2, "t", 3)
    log = core.cluster.topics["t"].partitions[0].log
    log.truncate_before(4)
    assert log.epochs == [(1, 4)]
    assert ask(c2, "t", 0) == (ErrorCode.NONE, 0, 4)  # below every known epoch: the first known start
