"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets through the core."""

from __future__ import annotations

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.alter_share_group_offsets import AlterShareGroupOffsetsRequest
from kwire.protocol.messages.delete_share_group_offsets import DeleteShareGroupOffsetsRequest
from kwire.protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest
from tests.broker.handlers.test_produce_fetch import produce
from tests.broker.helpers import CoreClient, batch, make_core
from tests.broker.share_helpers import ShareClient, acquired

Desc = DescribeShareGroupOffsetsRequest
Alter = AlterShareGroupOffsetsRequest
Delete = DeleteShareGroupOffsetsRequest


@pytest.fixture
def core():  # type: ignore[no-untyped-def]
    c, _ = make_core()
    c.create_topic("t", 2)
    c.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    produce(CoreClient(c), "t", 0, batch([b"a", b"b", b"c", b"d"]))
    return c


def describe(core, topics=None, version=1):  # type: ignore[no-untyped-def]
    req = Desc(groups=[Desc.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=topics)])
    (g,) = CoreClient(core).send(req, version).groups
    return g


def test_describe_reports_the_start_offset_and_lag(core) -> None:  # type: ignore[no-untyped-def]
    """StartOffset is the SPSO (-1 without share state), Lag counts what is not yet finished."""
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 0, 1), (1, 1, 2)]})  # 0 accepted, 1 released
    g = describe(core, [Desc.DescribeShareGroupOffsetsRequestTopic(topic_name="t", partitions=[0, 1, 7])])
    got = [(p.partition_index, p.start_offset, p.lag, p.error_code) for p in g.topics[0].partitions]
    assert got == [(0, 1, 3, 0), (1, -1, -1, 0), (7, -1, -1, E.UNKNOWN_TOPIC_OR_PARTITION)]
    every = describe(core)  # Topics null: every partition with share state
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in every.topics] == [("t", [0])]
    assert describe(core, version=0).topics[0].partitions[0].start_offset == 1


def test_alter_only_while_empty_then_fetch_starts_there(core) -> None:  # type: ignore[no-untyped-def]
    """AlterShareGroupOffsets: NON_EMPTY_GROUP while members are there; once empty the partition starts
    at the new offset and forgets its in-flight records."""
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    alter = Alter(group_id="sg", topics=[Alter.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
        Alter.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=3)])])
    assert CoreClient(core).send(alter, 0).error_code == E.NON_EMPTY_GROUP
    m.heartbeat(epoch=-1)
    r = CoreClient(core).send(alter, 0)
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
    n = ShareClient(core)
    n.heartbeat(["t"])
    assert acquired(n.fetch({"t": [0]})) == [(3, 3, 1)]


def test_delete_resets_to_auto_offset_reset(core) -> None:  # type: ignore[no-untyped-def]
    """DeleteShareGroupOffsets: the share state goes; the next fetch starts from share.auto.offset.reset."""
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 3, 1)]})
    m.heartbeat(epoch=-1)
    r = CoreClient(core).send(Delete(group_id="sg", topics=[Delete.DeleteShareGroupOffsetsRequestTopic(
        topic_name="t"), Delete.DeleteShareGroupOffsetsRequestTopic(topic_name="nope")]), 0)
    assert [(t.topic_name, t.error_code) for t in r.responses] == [("t", 0), ("nope", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert describe(core).topics == []
    n = ShareClient(core)
    n.heartbeat(["t"])
    assert acquired(n.fetch({"t": [0]})) == [(0, 3, 1)]


def test_unknown_groups_and_other_types(core) -> None:  # type: ignore[no-untyped-def]
    """Describe/Delete of an unknown group → GROUP_ID_NOT_FOUND; a classic group's id too."""
    from tests.broker.groups_helpers import ClassicClient

    assert describe(core).error_code == E.GROUP_ID_NOT_FOUND
    assert CoreClient(core).send(Delete(group_id="sg", topics=[]), 0).error_code == E.GROUP_ID_NOT_FOUND
    ClassicClient(core, group="cg").join_with_id()
    alter = Alter(group_id="cg", topics=[])
    assert CoreClient(core).send(alter, 0).error_code == E.GROUP_ID_NOT_FOUND


@pytest.mark.rule("ST-3")
def test_share_state_survives_a_restart_on_the_data_dir(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """ST-3: with a data dir the SPSO, states and delivery counts come back after a restart; what was
    ACQUIRED comes back as it was before the acquisition, which is never persisted (SharePartition.acquire
    writes nothing at d79bd502): records acquired for the first time are delivered as new (count 1
    again); the group is Empty."""
    core, _ = make_core(data_dir=str(tmp_path))
    core.create_topic("t", 1)
    core.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    produce(CoreClient(core), "t", 0, batch([b"a", b"b", b"c", b"d", b"e"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 0, 1), (1, 1, 2), (2, 2, 3)]})  # accept, release, reject; 3-4 still held
    core.close()
    again, _ = make_core(data_dir=str(tmp_path))
    sp = again.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert sp is not None and sp.start_offset == 1
    assert [(sp.record_state(o)[0].name, sp.record_state(o)[1]) for o in (1, 2, 3, 4)] == [
        ("AVAILABLE", 1), ("ARCHIVED", 1), ("AVAILABLE", 0), ("AVAILABLE", 0)]
    assert again.subsystems.share_groups.groups.get("sg").state_name == "Empty"
    n = ShareClient(again)
    n.heartbeat(["t"])
    assert acquired(n.fetch({"t": [0]})) == [(1, 1, 2), (3, 4, 1)]



@pytest.mark.rule("AQ-12, AQ-11")
def test_group_share_configs_are_bounded_by_the_broker(core) -> None:  # type: ignore[no-untyped-def]
    """AQ-12/AQ-11: IncrementalAlterConfigs on a GROUP: a lock duration outside
    [group.share.min.record.lock.duration.ms, ...max...] (15000..60000) or a delivery limit outside
    [2, 10] → INVALID_CONFIG; a value inside applies to the next fetch (AcquisitionLockTimeoutMs)."""
    from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC

    def alter(key: str, value: str) -> int:
        req = IAC(resources=[IAC.AlterConfigsResource(resource_type=32, resource_name="sg", configs=[
            IAC.AlterableConfig(name=key, config_operation=0, value=value)])])
        return CoreClient(core).send(req, 1).responses[0].error_code

    assert alter("share.record.lock.duration.ms", "10000") == E.INVALID_CONFIG
    assert alter("share.delivery.count.limit", "11") == E.INVALID_CONFIG
    assert alter("share.auto.offset.reset", "by_duration:PT1H") == E.NONE
    assert alter("share.auto.offset.reset", "sometimes") == E.INVALID_CONFIG
    assert alter("share.record.lock.duration.ms", "20000") == E.NONE
    m = ShareClient(core)
    m.heartbeat(["t"])
    assert m.fetch({"t": [0]}).acquisition_lock_timeout_ms == 20_000
