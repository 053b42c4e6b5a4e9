"""The group scenarios' duplicate judgement (kwire.conformance.scenarios.group.committed_redeliveries).

Kafka's classic and KIP-848 groups deliver at least once: a consumer resumes a partition from the
committed offset an OffsetFetch answered (GroupCoordinatorService.fetchOffsets), and the broker
never answers an offset below one it accepted (OffsetMetadataManager.commitOffset). A record
reported before its commit reached the broker (confluent_js's commitOffsets resolves once
librdkafka queued the commit) is legitimately read again after a rebalance; a committed one is not.
These build recordings by hand, one frame an exchange, in the broker's order.
"""

from __future__ import annotations

from typing import Any

from kwire.conformance.rules import Frame
from kwire.conformance.scenarios.group import committed_redeliveries
from kwire.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kwire.protocol.registry import ApiKey

GROUP = "g"
TOPIC = "t"


def _commit(index: int, partition: int, offset: int, error: int = 0) -> Frame:
    req = OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=2, member_id="m", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)])])
    resp = OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name=TOPIC, partitions=[
        OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=partition, error_code=error)])])
    return _frame(index, ApiKey.OFFSET_COMMIT, 9, req, resp)


def _fetch(index: int, partition: int, committed: int) -> Frame:
    req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=GROUP, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[partition])])],
        require_stable=True)
    resp = OffsetFetchResponse(groups=[OffsetFetchResponse.OffsetFetchResponseGroup(group_id=GROUP, topics=[
        OffsetFetchResponse.OffsetFetchResponseTopics(name=TOPIC, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartitions(partition_index=partition,
                                                              committed_offset=committed)])])])
    return _frame(index, ApiKey.OFFSET_FETCH, 9, req, resp)


def _frame(index: int, api_key: int, version: int, req: Any, resp: Any) -> Frame:
    # One exchange a millisecond, answered at once, like kwire's offset handlers.
    return Frame(index, 1000 + index, 1, 1, api_key, version, index, "c", req, resp, response_at_ms=1000 + index)


def test_a_record_reported_before_its_commit_landed_may_be_read_again() -> None:
    """Offset 2 was reported, its commit (3) had not reached the broker when the partition's next
    owner asked for the committed offset (2): reading offset 2 again is what Kafka does."""
    frames = [_fetch(0, 0, -1), _commit(1, 0, 1), _commit(2, 0, 2), _fetch(3, 0, 2), _commit(4, 0, 3)]
    assert committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 1}) == []


def test_a_rejected_commit_leaves_the_record_uncommitted() -> None:
    """The commit of 3 was refused (REBALANCE_IN_PROGRESS, 27): offset 2 was never committed, and
    the next owner's OffsetFetch answer 2 explains the second read."""
    frames = [_fetch(0, 0, -1), _commit(1, 0, 3, error=27), _fetch(2, 0, 2), _commit(3, 0, 3)]
    assert committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 0}) == []


def test_a_committed_record_read_again_after_the_broker_answered_an_older_offset_fails() -> None:
    """The broker accepted 3 and then answered OffsetFetch 2 (a lost commit): a committed record
    was delivered again."""
    frames = [_fetch(0, 0, -1), _commit(1, 0, 3), _fetch(2, 0, 2)]
    bad = committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 0})
    assert len(bad) == 1
    assert "the broker accepted commit 3, then answered OffsetFetch 2 (recording index 2)" in bad[0]


def test_a_committed_record_read_again_without_any_older_answer_fails() -> None:
    """Every OffsetFetch answer after the record existed was past it: the client read offset 2
    again on its own (or from an answer older than the record's batch)."""
    frames = [_fetch(0, 0, -1), _commit(2, 0, 3), _fetch(3, 0, 3)]
    bad = committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 1})
    assert len(bad) == 1 and "accepted commit 3 (recording index 2) and no OffsetFetch answer" in bad[0]
    # ... and an answer of an uncommitted offset from before the batch was produced explains nothing.
    frames = [_fetch(0, 0, -1), _fetch(1, 0, -1)]
    bad = committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 2})
    assert len(bad) == 1 and "no OffsetFetch answer at or below it" in bad[0]


def test_other_groups_topics_and_partitions_are_not_mixed_in() -> None:
    frames = [_commit(0, 0, 3), _fetch(1, 1, -1)]
    other = _fetch(2, 0, -1)
    other.response.groups[0].group_id = "another group"
    frames.append(other)
    bad = committed_redeliveries([(0, 2)], frames, GROUP, TOPIC, {(0, 2): 0})
    assert len(bad) == 1


def test_a_late_commit_below_the_last_one_uncommits_the_records_above_it() -> None:
    """A member whose commit of 3 lands after another's commit of 4 moves the group back to 3
    (Kafka accepts any commit of the current generation): offset 3 is uncommitted again, and the
    answer 3 explains reading it a second time."""
    frames = [_fetch(0, 0, -1), _commit(1, 0, 4), _commit(2, 0, 3), _fetch(3, 0, 3)]
    assert committed_redeliveries([(0, 3)], frames, GROUP, TOPIC, {(0, 3): 0}) == []
