"""OffsetFetch handler: where a group error goes in each version (v1 partitions, v2–7 top
level, v8+ per group) and injected errors at every version."""

from __future__ import annotations

import pytest

from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.offset_fetch import OffsetFetchRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, make_core


def request(version: int) -> OffsetFetchRequest:
    if version < 8:
        return OffsetFetchRequest(group_id="g", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
    return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", topics=None)])


def group_error(resp, version: int) -> int:
    if version >= 8:
        return resp.groups[0].error_code
    if version >= 2:
        return resp.error_code
    return resp.topics[0].partitions[0].error_code


@pytest.mark.parametrize("version", range(1, 11))
def test_not_coordinator_lands_where_the_version_keeps_group_errors(version):
    core, _ = make_core(brokers=3)
    wrong = next(n for n in core.cluster.nodes if n != core.coordinator_for("g").node_id)
    assert group_error(CoreClient(core, wrong).send(request(version), version), version) == E.NOT_COORDINATOR


@pytest.mark.parametrize("version", range(1, 11))
def test_unknown_groups_read_minus_one_without_error(version):
    core, _ = make_core()
    core.create_topic("t", 1)
    resp = CoreClient(core).send(request(version), version)
    assert group_error(resp, version) == E.NONE
    if version < 8:
        p = resp.topics[0].partitions[0]
        assert (p.committed_offset, p.metadata, p.error_code) == (-1, "", E.NONE)
    else:
        assert resp.groups[0].topics == []


@pytest.mark.parametrize("version", range(1, 11))
def test_injected_errors_answer_in_every_version(version):
    core, _ = make_core()
    core.faults.add(FaultRule(FaultAction.ERROR, api_key=ApiKey.OFFSET_FETCH, error_code=E.COORDINATOR_LOAD_IN_PROGRESS))
    resp = CoreClient(core).send(request(version), version)
    if version == 1:
        assert resp.topics == []  # v1 has no top-level error: the injected answer is empty
    else:
        assert group_error(resp, version) == E.COORDINATOR_LOAD_IN_PROGRESS
