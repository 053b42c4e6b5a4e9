"""Share state is on disk before the answer (ST-5, ST-3, DLQ-4): a broker killed at any point after
an answer (its core never closed, no metadata sync since) comes back on its data dir with every
confirmed acknowledgement, release, lock expiry, session release and dead-letter step.

Upstream: SharePartition.rollbackOrProcessStateUpdates / writeShareGroupState (an acknowledgement
completes after the persister's write), releaseAcquisitionLockOnTimeout (expiry is written),
initiateDLQAndArchive (ARCHIVING, then ARCHIVED after the DLQ write), ShareCoordinatorShard and
PersisterStateBatch (what is kept: state epoch, start offset, batches with state and count) at d79bd502.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_partition import RecordState
from kwire.broker.core.storage import SHARE_JOURNAL
from tests.broker.handlers.test_produce_fetch import produce
from tests.broker.helpers import CoreClient, batch, make_core
from tests.broker.share_helpers import ShareClient, acquired, rig

ACCEPT, RELEASE, REJECT = 1, 2, 3


def start(data_dir: Path, *, dlq: bool = False, **settings: str) -> Any:
    core, _ = make_core(data_dir=str(data_dir), settings=settings)
    if "t" not in core.cluster.topics:
        core.create_topic("t", 1)
        if dlq:
            core.create_topic("dlq.sg", 1, configs={"errors.deadletterqueue.group.enable": "true"})
        core.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "earliest")
        if dlq:
            core.configs.set(ResourceType.GROUP, "sg", "errors.deadletterqueue.topic.name", "dlq.sg")
        core.metadata_changed()
    return core


def kill_and_restart(data_dir: Path) -> Any:
    """kill -9: the old core is dropped without ``close()`` (no final metadata write, no timer)."""
    core, _ = make_core(data_dir=str(data_dir))
    return core


def states(core: Any, offsets: range) -> list[tuple[str, int] | None]:
    sp = core.subsystems.share_groups.partitions.get("sg", "t", 0)
    out: list[tuple[str, int] | None] = []
    for o in offsets:
        got = sp.record_state(o)
        out.append(None if got is None else (got[0].name, got[1]))
    return out


def spso(core: Any) -> int:
    return core.subsystems.share_groups.partitions.get("sg", "t", 0).start_offset


def dead_letters(core: Any) -> list[str]:
    from kwire.records import RecordBatch

    out = []
    for b in core.cluster.topics["dlq.sg"].partitions[0].log.batches:
        for r in RecordBatch(bytes(b.data)):
            out.append(dict((k, bytes(v).decode()) for k, v in r.headers)["__dlq.errors.offset"])
    return out


@pytest.mark.rule("ST-5, ST-3")
def test_confirmed_acknowledgements_survive_a_kill(tmp_path: Path) -> None:
    """ST-5: an answered ShareAcknowledge is on disk: after a kill (no metadata sync since) the
    accepted records never come back, the released and rejected ones keep their state and count,
    and what was still held comes back as before its acquisition (ST-3: never written)."""
    core = start(tmp_path)
    produce(CoreClient(core), "t", 0, batch([b"%d" % i for i in range(10)]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    assert acquired(m.fetch({"t": [0]})) == [(0, 9, 1)]
    r = m.acknowledge({("t", 0): [(0, 4, ACCEPT), (5, 6, RELEASE), (7, 7, REJECT)]})
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
    again = kill_and_restart(tmp_path)
    assert spso(again) == 5
    assert states(again, range(5, 10)) == [("AVAILABLE", 1), ("AVAILABLE", 1), ("ARCHIVED", 1),
                                           ("AVAILABLE", 0), ("AVAILABLE", 0)]
    n = ShareClient(again)
    n.heartbeat(["t"])
    assert acquired(n.fetch({"t": [0]})) == [(5, 6, 2), (8, 9, 1)]


@pytest.mark.rule("ST-5")
def test_acknowledgements_piggybacked_on_share_fetch_survive_a_kill(tmp_path: Path) -> None:
    """ST-5: acknowledgements carried by a ShareFetch are written before its answer too."""
    core = start(tmp_path)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b", b"c"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.fetch({"t": [0]}, acks={("t", 0): [(0, 2, ACCEPT)]})
    again = kill_and_restart(tmp_path)
    assert spso(again) == 3


@pytest.mark.rule("AQ-12, ST-4")
def test_lock_expiry_is_written_when_it_fires(tmp_path: Path) -> None:
    """AQ-12: a lock that runs out releases the records and the release is written at once
    (releaseAcquisitionLockOnTimeout writes the state): the delivery count survives a kill that
    comes before the next metadata sync."""
    settings = {"group.share.min.record.lock.duration.ms": "1000", "group.share.record.lock.duration.ms": "1000"}
    core = start(tmp_path, **settings)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b"]))
    core.advance(1500)  # the metadata sync ran at +1000; the next ones at +2000, +3000
    m = ShareClient(core)
    m.heartbeat(["t"])
    assert acquired(m.fetch({"t": [0]})) == [(0, 1, 1)]  # locked until +2500
    core.advance(1000)
    assert states(core, range(2)) == [("AVAILABLE", 1)] * 2
    again = kill_and_restart(tmp_path)
    assert states(again, range(2)) == [("AVAILABLE", 1)] * 2


@pytest.mark.rule("SS-8")
def test_session_release_on_disconnect_is_written(tmp_path: Path) -> None:
    """SS-8: a dropped connection releases its session's records, and that is written before
    anything else happens (the data dir's disconnect hook), not with the next request."""
    core = start(tmp_path)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    core.disconnect(m.c.conn.conn_id)
    assert states(core, range(2)) == [("AVAILABLE", 1)] * 2
    again = kill_and_restart(tmp_path)
    assert states(again, range(2)) == [("AVAILABLE", 1)] * 2


@pytest.mark.rule("DLQ-4")
def test_dead_letter_progress_survives_a_kill_without_a_second_write(tmp_path: Path) -> None:
    """DLQ-4: ARCHIVING is on disk before the REJECT's answer and ARCHIVED right after the dead
    letter is written; a kill after both writes nothing again on restart."""
    core = start(tmp_path, dlq=True)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 0, REJECT), (1, 1, ACCEPT)]})
    again = kill_and_restart(tmp_path)  # killed before phase 2 ran
    assert states(again, range(1)) == [("ARCHIVING", 1)]
    again.advance(0)
    assert dead_letters(again) == ["0"] and spso(again) == 2
    third = kill_and_restart(tmp_path)
    third.advance(0)
    assert dead_letters(third) == ["0"] and spso(third) == 2


@pytest.mark.rule("DLQ-4")
def test_a_kill_between_the_dead_letter_and_archived_writes_no_second_dead_letter(tmp_path: Path) -> None:
    """DLQ-4: the process dies after the dead letter reached the log but before ARCHIVED reached
    the share journal; on restart the resumed phase 2 finds the letter (DLQ-9 headers) and only
    archives. Kafka would write it again (initiateDLQAndArchive enqueues, then persists)."""
    core = start(tmp_path, dlq=True)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b", b"c"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 1, REJECT)]})
    storage = core.subsystems.storage
    storage._share = None  # the journal write after the dead-letter write never happens
    core.advance(0)
    assert dead_letters(core) == ["0", "1"]
    again = kill_and_restart(tmp_path)
    assert states(again, range(2)) == [("ARCHIVING", 1)] * 2
    again.advance(0)
    assert dead_letters(again) == ["0", "1"]
    assert spso(again) == 2 and again.subsystems.share_groups.dlq.stats["sg"].produce_requests == 0


@pytest.mark.rule("ST-6")
def test_initialisation_and_offset_reset_survive_a_kill(tmp_path: Path) -> None:
    """ST-6: the start offset chosen at initialisation (latest) is written at once, so records
    produced after it are not skipped after a kill; AlterShareGroupOffsets' reset is written with
    a new state epoch."""
    core = start(tmp_path)
    core.configs.set(ResourceType.GROUP, "sg", "share.auto.offset.reset", "latest")
    produce(CoreClient(core), "t", 0, batch([b"old", b"old"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    assert acquired(m.fetch({"t": [0]})) == []
    again = kill_and_restart(tmp_path)
    produce(CoreClient(again), "t", 0, batch([b"new"]))
    n = ShareClient(again)
    n.heartbeat(["t"])
    assert acquired(n.fetch({"t": [0]})) == [(2, 2, 1)]
    n.acknowledge({("t", 0): [(2, 2, ACCEPT)]})
    share = again.subsystems.share_groups
    share.alter_start_offset("sg", "t", 0, 1)
    storage = again.subsystems.storage
    storage._before_answer()  # what the AlterShareGroupOffsets handler's answer runs
    third = kill_and_restart(tmp_path)
    sp = third.subsystems.share_groups.partitions.get("sg", "t", 0)
    assert (sp.start_offset, sp.state_epoch) == (1, 1)


def test_a_torn_last_journal_line_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    """A crash mid-append leaves a torn last line: the lines before it are applied, it is named."""
    core = start(tmp_path)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b", b"c"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    m.acknowledge({("t", 0): [(0, 0, ACCEPT)]})
    with open(tmp_path / SHARE_JOURNAL, "a", encoding="utf-8") as f:
        f.write('{"sp":["sg","t",0],"state":{"sta')
    again = kill_and_restart(tmp_path)
    assert spso(again) == 1
    assert any(SHARE_JOURNAL in p and "unreadable" in p for p in again.subsystems.storage.problems)
    assert not (tmp_path / SHARE_JOURNAL).exists()  # folded into the metadata on start


def test_produce_alone_writes_no_share_journal(tmp_path: Path) -> None:
    """The produce path adds nothing to the data dir but its segment (the share hook is a flag check)."""
    core = start(tmp_path)
    for _ in range(3):
        produce(CoreClient(core), "t", 0, batch([b"x"]))
    assert not (tmp_path / SHARE_JOURNAL).exists()


# --- the persisted form ------------------------------------------------------------------------
@pytest.mark.rule("ST-3")
def test_persisted_state_is_kafkas_state_batches() -> None:
    """ST-3: batches [first, last, state, count] with equal neighbours merged (PersisterStateBatch,
    ShareCoordinatorShard's combiner); ACQUIRED is written as it was before the acquisition."""
    r = rig(5, 5)
    got = r.sp.acquire("m", 10)
    assert [(a.first_offset, a.last_offset) for a in got] == [(0, 9)]
    from kwire.broker.core.share_partition import AckBatch

    r.sp.acknowledge("m", [AckBatch(0, 1, (ACCEPT,)), AckBatch(2, 3, (RELEASE,)), AckBatch(4, 4, (REJECT,))])
    saved = r.sp.persisted()
    assert saved["start"] == 2 and saved["state_epoch"] == 0
    assert saved["batches"] == [[2, 3, int(RecordState.AVAILABLE), 1], [4, 4, int(RecordState.ARCHIVED), 1],
                                [5, 9, int(RecordState.AVAILABLE), 0]]
    r.sp.acquire("m", 2)  # 2-3 again: count 2 in memory, still written as count 1
    assert r.sp.persisted()["batches"][0] == [2, 3, int(RecordState.AVAILABLE), 1]


def test_restore_reads_batches_and_the_earlier_per_offset_form() -> None:
    """Both forms load to the same state; overlapping batches are refused."""
    new, old = rig(10), rig(10)
    new.sp.restore({"start": 2, "next": 6, "batches": [[2, 3, 0, 1], [4, 5, 4, 2]]})
    old.sp.restore({"start": 2, "next": 6, "records": [[2, 0, 1], [3, 0, 1], [4, 4, 2], [5, 4, 2]]})
    for sp in (new.sp, old.sp):
        assert [sp.record_state(o)[:2] for o in range(2, 4)] == [(RecordState.AVAILABLE, 1)] * 2
        assert sp.start_offset == 2
    bad = rig(10)
    with pytest.raises(ValueError):
        bad.sp.restore({"start": 0, "next": 6, "batches": [[0, 3, 0, 1], [3, 5, 4, 2]]})


class _Full:
    """A journal file on a full disk."""

    def write(self, _text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.rule("ST-5")
def test_an_unwritable_share_journal_fails_the_acknowledgement(tmp_path: Path) -> None:
    """ST-5: an acknowledgement whose state cannot be written is not confirmed: the request is
    answered COORDINATOR_NOT_AVAILABLE (Kafka's persister failing the write); the next request
    whose answer goes out writes the partition's state again."""
    from kwire.protocol.error_codes import ErrorCode

    core = start(tmp_path)
    produce(CoreClient(core), "t", 0, batch([b"a", b"b"]))
    m = ShareClient(core)
    m.heartbeat(["t"])
    m.fetch({"t": [0]})
    storage = core.subsystems.storage
    storage._share_journal = _Full()
    r = m.acknowledge({("t", 0): [(0, 0, ACCEPT)]})
    assert r.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    m.session_epoch += 1  # the session moved on before the write failed
    r = m.acknowledge({("t", 0): [(1, 1, ACCEPT)]})
    assert r.error_code == 0
    again = kill_and_restart(tmp_path)
    assert spso(again) == 2
