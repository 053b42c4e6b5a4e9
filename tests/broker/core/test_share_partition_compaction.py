"""Share partitions on a compacted topic (AQ-10), driven through the core with kwire's log cleaner:
acquisition starts at the first batch a log read returns, so compaction holes are never acquired,
SPSO steps over them, and in-flight AVAILABLE records the cleaner removed are archived instead of
delivered again (SharePartition ``acquire``, ``maybeArchiveStaleBatches``,
``maybeUpdateCachedStateAndOffsets`` at d79bd502)."""

from __future__ import annotations

from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_partition import RecordState
from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.core.test_log_cleaner import COMPACT, produce
from tests.broker.helpers import CoreClient, make_core
from tests.broker.share_helpers import ShareClient, acquired, partition_data

GAP, ACCEPT, RELEASE = 0, 1, 2


def compacted() -> Any:
    """Topic ``c``: keys k0..k2 written six times, one batch each (offsets 0-17), on 200-byte
    segments. Before cleaning, nothing is compacted."""
    core, _ = make_core()
    core.create_topic("c", 1, configs=COMPACT)
    core.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
    c = CoreClient(core)
    for r in range(6):
        for k in range(3):
            assert produce(c, [(f"k{k}".encode(), f"v{r}".encode())]).error_code == 0
    return core


def clean(core: Any) -> list[int]:
    """Run the cleaner; returns the base offsets of the batches left (the test relies on 0-12 going)."""
    core.subsystems.cleaner.run(force=True)
    bases = [b.base_offset for b in core.cluster.topics["c"].partitions[0].log.batches]
    assert bases == [13, 14, 15, 16, 17], bases
    return bases


def consumer(core: Any) -> ShareClient:
    m = ShareClient(core)
    m.heartbeat(["c"])
    return m


def share_partition(core: Any) -> Any:
    return core.subsystems.share_groups.partitions.get("sg", "c", 0)


@pytest.mark.rule("AQ-10")
def test_acquisition_starts_at_the_first_batch_the_log_returns() -> None:
    """AQ-10: a fresh share partition at the log start (0) reads from 0 and gets 13 first: 0-12,
    compacted away, are never acquired, and SPSO starts at 13."""
    core = compacted()
    clean(core)
    m = consumer(core)
    assert acquired(m.fetch({"c": [0]})) == [(13, 17, 1)]
    sp = share_partition(core)
    assert (sp.start_offset, sp.end_offset, sp.in_flight_count()) == (13, 17, 5)


@pytest.mark.rule("AQ-10, ST-7, AK-9")
def test_a_compaction_hole_inside_the_window_is_skipped() -> None:
    """AQ-10, ST-7: records 0-1 are in flight when 2-12 are compacted away: the next acquisition
    starts at 13, the hole is no in-flight batch (acknowledging it is INVALID_REQUEST, AK-9) and
    SPSO steps over it once 0-1 are finished."""
    core = compacted()
    m = consumer(core)
    assert acquired(m.fetch({"c": [0]}, max_records=2)) == [(0, 1, 1)]
    clean(core)
    assert acquired(m.fetch({"c": [0]})) == [(13, 17, 1)]
    sp = share_partition(core)
    assert [b[:2] for b in sp.statistics().batches] == [(0, 1), (13, 17)]
    assert (sp.start_offset, sp.end_offset, sp.in_flight_count()) == (0, 17, 18)
    r = m.acknowledge({("c", 0): [(2, 12, ACCEPT)]})
    assert partition_data(r).error_code == E.INVALID_REQUEST
    m.acknowledge({("c", 0): [(0, 1, ACCEPT)]})
    assert sp.start_offset == 13
    m.acknowledge({("c", 0): [(13, 17, ACCEPT)]})
    assert (sp.start_offset, sp.in_flight_count()) == (18, 0)


@pytest.mark.rule("AQ-10, ST-4")
def test_available_records_compacted_away_are_archived_not_redelivered() -> None:
    """AQ-10: 3-5 were released (AVAILABLE, delivery count 1) and then compacted away; the next
    fetch reads at 3, the log answers with 13, so 3-5 are archived (count unchanged, ST-4) and
    never delivered again. 0-2, still ACQUIRED by another member, are left alone; SPSO moves past
    the archived records and the hole when they are finished."""
    core = compacted()
    m1, m2, m3 = consumer(core), consumer(core), consumer(core)
    assert acquired(m2.fetch({"c": [0]}, max_records=3)) == [(0, 2, 1)]
    assert acquired(m1.fetch({"c": [0]}, max_records=3)) == [(3, 5, 1)]
    m1.acknowledge({("c", 0): [(3, 5, RELEASE)]})
    sp = share_partition(core)
    assert sp.record_state(3) == (RecordState.AVAILABLE, 1, None)
    clean(core)
    assert acquired(m3.fetch({"c": [0]})) == [(13, 17, 1)]
    assert [sp.record_state(o) for o in (0, 3, 5)] == [
        (RecordState.ACQUIRED, 1, m2.member_id), (RecordState.ARCHIVED, 1, None), (RecordState.ARCHIVED, 1, None)]
    assert sp.start_offset == 0
    m2.acknowledge({("c", 0): [(0, 2, GAP)]})
    assert sp.start_offset == 13
    m3.acknowledge({("c", 0): [(13, 17, RELEASE)]})
    assert acquired(m1.fetch({"c": [0]})) == [(13, 17, 2)]


@pytest.mark.rule("AQ-10, AQ-7")
def test_records_the_cleaner_removed_make_nothing_acquirable() -> None:
    """AQ-10, AQ-7: AVAILABLE records the log no longer holds make nothing acquirable: once they are
    archived the partition has nothing to give until new records arrive."""
    core = compacted()
    m1, m2 = consumer(core), consumer(core)
    assert acquired(m1.fetch({"c": [0]})) == [(0, 17, 1)]
    m1.acknowledge({("c", 0): [(0, 2, RELEASE)]})
    sp = share_partition(core)
    assert sp.has_acquirable()
    clean(core)
    assert not sp.has_acquirable()
    assert [sp.record_state(o)[0] for o in (0, 1, 2)] == [RecordState.ARCHIVED] * 3
    assert acquired(m2.fetch({"c": [0]})) == []
