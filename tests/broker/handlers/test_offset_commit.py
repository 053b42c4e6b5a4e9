"""OffsetCommit handler: injected errors at every version, v10 answers by topic id, v2–4
retention ignored. (Round trips per version: tests/broker/core/test_groups_offsets.py.)"""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.offset_commit import OffsetCommitRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, make_core


def request(core, version: int) -> OffsetCommitRequest:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(partitions=[
        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=12)])
    if version >= 10:
        topic.topic_id = core.cluster.topics["t"].topic_id
    else:
        topic.name = "t"
    return OffsetCommitRequest(group_id="g", retention_time_ms=5 if 2 <= version <= 4 else -1, topics=[topic])


@pytest.mark.parametrize("version", range(2, 11))
def test_every_version_commits_and_answers_the_topic_the_way_it_was_named(version):
    core, _ = make_core()
    core.create_topic("t", 1)
    resp = CoreClient(core).send(request(core, version), version)
    (topic,) = resp.topics
    assert topic.partitions[0].error_code == E.NONE
    if version >= 10:
        assert topic.topic_id == core.cluster.topics["t"].topic_id
    else:
        assert topic.name == "t"


@pytest.mark.parametrize("version", range(2, 11))
def test_injected_errors_go_on_every_partition(version):
    core, _ = make_core()
    core.create_topic("t", 1)
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.OFFSET_COMMIT, error_code=E.COORDINATOR_NOT_AVAILABLE))
    resp = CoreClient(core).send(request(core, version), version)
    assert resp.topics[0].partitions[0].error_code == E.COORDINATOR_NOT_AVAILABLE
