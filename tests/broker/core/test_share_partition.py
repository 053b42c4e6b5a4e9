"""The share-partition state machine (sections 1.3-1.8): acquisition, acknowledgements, locks on the
manual clock, SPSO/SPEO, read_committed and log-start moves, the failure-archiving (DLQ) hook."""

from __future__ import annotations

import itertools

import pytest

from kwire.broker.core.log import PartitionLog
from kwire.broker.core.share_config import AutoOffsetReset, IsolationLevel, ShareConfig
from kwire.broker.core.share_partition import (
    CHOICES,
    MOVES,
    AckBatch,
    AcquiredRecords,
    ArchiveCause,
    RecordState,
    ShareAcquireMode,
    SharePartition,
    SharePartitions,
    Trigger,
    next_state,
    validate_ack_batches,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.share_helpers import START_MS, Timeline, abort, append, rig

A, Q, K, AG, AD = (RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVING,
                   RecordState.ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


def code_of(fn, *args, **kwargs) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as ei:
        fn(*args, **kwargs)
    return ei.value.code


# --- the table --------------------------------------------------------------------------------
@pytest.mark.rule("ST-3")
def test_record_state_ids_are_the_persisted_ids():
    """ST-3: AVAILABLE=0, ACQUIRED=1, ACKNOWLEDGED=2, ARCHIVING=3, ARCHIVED=4."""
    assert [(s.name, int(s)) for s in RecordState] == [
        ("AVAILABLE", 0), ("ACQUIRED", 1), ("ACKNOWLEDGED", 2), ("ARCHIVING", 3), ("ARCHIVED", 4)]


@pytest.mark.rule("ST-4")
@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(RecordState, Trigger)))
def test_every_state_trigger_pair_is_a_table_move_or_invalid_record_state(state, trigger):
    """ST-4: each (state, trigger) pair is a row of the table (or a named choice) or fails with
    INVALID_RECORD_STATE; terminal states and AVAILABLE (but for ACQUIRE/log start) move nowhere."""
    if (state, trigger) in MOVES:
        assert next_state(state, trigger) is MOVES[(state, trigger)]
    elif (state, trigger) in CHOICES:
        assert next_state(state, trigger) in (A, AG, AD)
    else:
        assert code_of(next_state, state, trigger) == E.INVALID_RECORD_STATE
        assert state in (K, AD, AG, A) or trigger in (Trigger.ACQUIRE, Trigger.LOG_START_MOVED,
                                                      Trigger.ARCHIVE_DONE)
    if state in (K, AD):
        assert (state, trigger) not in MOVES and (state, trigger) not in CHOICES


# --- acquisition ------------------------------------------------------------------------------
@pytest.mark.rule("ST-6")
@pytest.mark.parametrize(("reset", "expected"), [(AutoOffsetReset.EARLIEST, 2), (AutoOffsetReset.LATEST, 10)])
def test_start_offset_comes_from_auto_offset_reset(reset, expected):
    """ST-6: earliest starts at the log start offset, latest at the log end."""
    r = rig(5, 5, auto_offset_reset=reset)
    r.log.truncate_before(2)
    r.sp.initialize()
    assert r.sp.start_offset == expected == r.sp.end_offset


@pytest.mark.rule("ST-6")
def test_by_duration_starts_at_the_first_record_not_older_than_the_duration():
    """ST-6: by_duration starts at the first record whose timestamp >= now - duration."""
    log = PartitionLog("t", 0)
    tl = Timeline()
    append(log, 3, timestamp_ms=START_MS - 7_200_000)
    append(log, 3, timestamp_ms=START_MS - 600_000)
    cfg = ShareConfig(auto_offset_reset=AutoOffsetReset.BY_DURATION, auto_offset_reset_duration_ms=3_600_000)
    sp = SharePartition("g", "t", 0, log, clock=tl.clock, schedule=tl.schedule, config=lambda: cfg)
    sp.initialize()
    assert sp.start_offset == 3


@pytest.mark.rule("AQ-1")
def test_first_fetch_acquires_new_records_with_delivery_count_one():
    """AQ-1, ST-4: new records become ACQUIRED by the member with delivery count 1."""
    r = rig(3, 2)
    got = r.sp.acquire("m1", 100)
    assert got == [AcquiredRecords(0, 4, 1)]
    assert all(r.state(o) == (Q, 1, "m1") for o in range(5))


@pytest.mark.rule("ST-2")
def test_spso_and_speo_track_the_in_flight_window():
    """ST-2: SPEO is the last acquired offset, SPSO the first unfinished; both equal when nothing is in flight."""
    r = rig(3, 2)
    assert (r.sp.start_offset, r.sp.end_offset, r.sp.in_flight_count()) == (0, 0, 0)
    r.sp.acquire("m1", 3)
    assert (r.sp.start_offset, r.sp.end_offset, r.sp.in_flight_count()) == (0, 2, 3)
    r.ack("m1", 0, 2, ACCEPT)
    assert (r.sp.start_offset, r.sp.end_offset, r.sp.in_flight_count()) == (3, 3, 0)


@pytest.mark.rule("AQ-1")
def test_records_held_by_another_member_are_not_acquired_again():
    """AQ-1: only new or AVAILABLE records can be acquired."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    assert r.sp.acquire("m2", 10) == []


@pytest.mark.rule("SG-5")
def test_any_member_can_acquire_any_partition():
    """SG-5: the share-partition does not check membership or assignment."""
    r = rig(2)
    assert r.sp.acquire("not-a-member", 10) == [AcquiredRecords(0, 1, 1)]


@pytest.mark.rule("AQ-3")
def test_batch_optimized_max_records_is_a_soft_cap_ending_on_a_log_batch():
    """AQ-3: mode 0 extends the acquired range to the end of the log batch holding the cap."""
    r = rig(4, 4)
    assert r.sp.acquire("m1", 2) == [AcquiredRecords(0, 3, 1)]
    assert r.sp.acquire("m1", 5) == [AcquiredRecords(4, 7, 1)]


@pytest.mark.rule("AQ-3")
def test_record_limit_mode_acquires_exactly_max_records():
    """AQ-3: mode 1 acquires exactly MaxRecords; the in-flight batch still spans the log batch, the
    rest of it AVAILABLE with delivery count 0, and the next fetch starts there (SharePartition
    ``createBatches``, InFlightBatch ``maybeInitializeOffsetStateUpdate(lastOffset, delayMs)``)."""
    r = rig(4, 4)
    assert r.sp.acquire("m1", 3, mode=ShareAcquireMode.RECORD_LIMIT) == [AcquiredRecords(0, 2, 1)]
    assert [r.state(o) for o in range(4)] == [(Q, 1, "m1")] * 3 + [(A, 0, None)]
    assert (r.sp.end_offset, r.sp.in_flight_count()) == (3, 4)
    # Re-acquired offset 3 and new offsets 4-5 are separate entries, as upstream answers them.
    assert r.sp.acquire("m2", 3, mode=ShareAcquireMode.RECORD_LIMIT) == [
        AcquiredRecords(3, 3, 1), AcquiredRecords(4, 5, 1)]
    assert [r.state(o) for o in range(4, 8)] == [(Q, 1, "m2")] * 2 + [(A, 0, None)] * 2
    assert r.sp.statistics().batches == ((0, 3, True), (4, 7, True))
    assert r.sp.acquire("m3", 10) == [AcquiredRecords(6, 7, 1)]


@pytest.mark.rule("AQ-4")
def test_batch_size_cuts_new_records_on_log_batch_boundaries():
    """AQ-4: entries of at least BatchSize records, each ending on a log batch, each its own in-flight batch."""
    r = rig(2, 2, 2, 2, 1)
    got = r.sp.acquire("m1", 100, batch_size=3)
    assert got == [AcquiredRecords(0, 3, 1), AcquiredRecords(4, 7, 1), AcquiredRecords(8, 8, 1)]
    assert [b[:2] for b in r.sp.statistics().batches] == [(0, 3), (4, 7), (8, 8)]


@pytest.mark.rule("AQ-2")
def test_max_record_locks_limits_new_acquisition_but_not_reacquisition():
    """AQ-2: at the lock limit nothing new is acquired and the partition is not fetchable; AVAILABLE
    records inside still are (SharePartition ``canAcquireRecords``, ``lastOffsetAndMaxRecordsToAcquire``)."""
    r = rig(*([1] * 300), partition_max_record_locks=100)
    assert r.sp.acquire("m1", 500) == [AcquiredRecords(0, 99, 1)]
    assert r.sp.acquire("m2", 500) == []
    assert not r.sp.has_acquirable()
    r.ack("m1", 10, 10, RELEASE)
    assert r.sp.has_acquirable()
    assert r.sp.acquire("m2", 500) == [AcquiredRecords(10, 10, 2)]
    assert r.sp.end_offset == 99


@pytest.mark.rule("AQ-2")
def test_lock_limit_is_rounded_up_to_the_end_of_the_log_batch():
    """AQ-2: locks=100, log batches of 95 and 10 records, MaxRecords 500: min(500, 100) records to
    acquire, rounded up to the end of the batch holding offset 99, so 0-104 are acquired
    (SharePartition ``acquireNewBatchRecords``, ``lastOffsetFromBatchWithRequestOffset``)."""
    r = rig(95, 10, 10, partition_max_record_locks=100)
    assert r.sp.acquire("m1", 500) == [AcquiredRecords(0, 104, 1)]
    assert (r.sp.end_offset, r.sp.in_flight_count()) == (104, 105)
    assert not r.sp.has_acquirable()
    assert r.sp.acquire("m2", 500) == []
    r.ack("m1", 0, 9, ACCEPT)  # 95 in flight: room for 5 more, rounded up to the next log batch
    assert r.sp.has_acquirable()
    assert r.sp.acquire("m2", 500) == [AcquiredRecords(105, 114, 1)]
    assert r.sp.in_flight_count() == 105


@pytest.mark.rule("AQ-2")
def test_room_under_the_lock_limit_also_caps_what_the_window_gives_back():
    """AQ-2: the records to acquire are min(MaxRecords, limit - in flight) for re-acquisition too;
    at the limit, AVAILABLE records inside are acquired up to SPEO and nothing new is read."""
    r = rig(*([1] * 20), partition_max_record_locks=10, delivery_count_limit=10)
    assert r.sp.acquire("m1", 4, mode=ShareAcquireMode.RECORD_LIMIT) == [AcquiredRecords(0, 3, 1)]
    r.ack("m1", 0, 3, RELEASE)  # 4 AVAILABLE in a window of 4: room 6
    got = r.sp.acquire("m2", 500, mode=ShareAcquireMode.RECORD_LIMIT)
    assert got == [AcquiredRecords(0, 3, 2), AcquiredRecords(4, 5, 1)]
    assert r.sp.in_flight_count() == 6
    r.ack("m2", 0, 5, RELEASE)  # room 4: the first in-flight batch (4 records) uses all of it
    assert r.sp.acquire("m3", 500) == [AcquiredRecords(0, 3, 3)]
    assert r.sp.acquire("m1", 500) == [AcquiredRecords(4, 5, 2), AcquiredRecords(6, 7, 1)]
    assert r.sp.acquire("m2", 500) == [AcquiredRecords(8, 9, 1)]
    r.ack("m3", 2, 3, RELEASE)
    assert r.sp.in_flight_count() == 10
    assert r.sp.acquire("m1", 500) == [AcquiredRecords(2, 3, 4)]  # up to SPEO, nothing new
    assert r.sp.end_offset == 9


@pytest.mark.rule("AQ-2, AQ-3")
def test_record_limit_at_the_lock_limit_keeps_the_log_batch_in_flight_available():
    """AQ-2, AQ-3: in record_limit mode the in-flight batch still spans the whole log batch: the
    remainder is AVAILABLE with delivery count 0 and counts toward SPEO and the in-flight total,
    so the partition stays fetchable at the limit through those records."""
    r = rig(8, 8, partition_max_record_locks=6)
    assert r.sp.acquire("m1", 500, mode=ShareAcquireMode.RECORD_LIMIT) == [AcquiredRecords(0, 5, 1)]
    assert (r.sp.end_offset, r.sp.in_flight_count()) == (7, 8)
    assert [r.state(o) for o in (5, 6, 7)] == [(Q, 1, "m1"), (A, 0, None), (A, 0, None)]
    assert r.sp.has_acquirable()  # over the limit, but AVAILABLE records inside the window
    assert r.sp.acquire("m2", 500, mode=ShareAcquireMode.RECORD_LIMIT) == [AcquiredRecords(6, 7, 1)]
    assert r.sp.end_offset == 7 and not r.sp.has_acquirable()
    assert r.sp.acquire("m2", 500) == []
    r.ack("m1", 0, 5, ACCEPT)
    r.ack("m2", 6, 6, ACCEPT)  # in flight 7-7: room 5 of a log batch of 8
    assert r.sp.acquire("m3", 500, mode=ShareAcquireMode.RECORD_LIMIT) == [AcquiredRecords(8, 12, 1)]
    assert (r.sp.end_offset, r.sp.in_flight_count()) == (15, 9)
    r.ack("m2", 7, 7, GAP)
    assert r.sp.start_offset == 8


@pytest.mark.rule("AQ-7")
def test_only_what_the_log_read_returns_is_acquired():
    """AQ-7: one log read at the fetch offset, whole batches up to MaxBytes but always the first
    (KIP-74); re-acquisition and new records share it, and an in-flight batch the read cuts is
    split (SharePartition ``acquire``: the sub-map ends at the read's last offset)."""
    r = rig(2, 2, 2, 2)
    sizes = [len(b.data) for b in r.log.batches]
    assert r.sp.acquire("m1", 6) == [AcquiredRecords(0, 5, 1)]
    r.ack("m1", 0, 5, RELEASE)  # one AVAILABLE in-flight batch over three log batches
    assert r.sp.acquire("m2", 100, max_bytes=sizes[0]) == [AcquiredRecords(0, 1, 2)]
    assert r.sp.statistics().batches == ((0, 5, True),)
    # Two log batches' worth: the rest of the window and no new records (SPEO stays 5).
    assert r.sp.acquire("m2", 100, max_bytes=sizes[1] + sizes[2]) == [AcquiredRecords(2, 5, 2)]
    assert r.sp.end_offset == 5
    assert r.sp.acquire("m3", 100, max_bytes=1) == [AcquiredRecords(6, 7, 1)]  # always the first batch


@pytest.mark.rule("SS-11")
def test_max_bytes_zero_acquires_nothing():
    """SS-11: MaxBytes 0 reads no records, so nothing is acquired, AVAILABLE or new."""
    r = rig(2, 2)
    assert r.sp.acquire("m1", 100, max_bytes=0) == []
    assert r.sp.acquire("m1", 2) == [AcquiredRecords(0, 1, 1)]
    r.ack("m1", 0, 1, RELEASE)
    assert r.sp.acquire("m2", 100, max_bytes=0) == []
    assert r.state(0) == (A, 1, None)


@pytest.mark.rule("ST-9")
def test_released_records_are_fetched_before_new_ones():
    """ST-9: after a release the next fetch starts at the lowest AVAILABLE offset."""
    r = rig(2, 2, 2)
    r.sp.acquire("m1", 4)
    r.ack("m1", 1, 1, RELEASE)
    got = r.sp.acquire("m2", 100)
    assert got == [AcquiredRecords(1, 1, 2), AcquiredRecords(4, 5, 1)]


@pytest.mark.rule("AQ-5")
def test_reacquired_offsets_merge_into_ranges_of_equal_delivery_count():
    """AQ-5: re-acquired single offsets are merged into contiguous ranges with equal counts."""
    r = rig(6)
    r.sp.acquire("m1", 10)
    r.sp.acknowledge("m1", [AckBatch(0, 5, (RELEASE, RELEASE, ACCEPT, RELEASE, RELEASE, RELEASE))])
    r.sp.acquire("m1", 10)
    r.ack("m1", 3, 3, RELEASE)
    got = r.sp.acquire("m2", 10)
    assert got == [AcquiredRecords(3, 3, 3)]
    r.ack("m1", 0, 1, RELEASE)
    assert r.sp.acquire("m2", 10) == [AcquiredRecords(0, 1, 3)]


@pytest.mark.rule("AQ-9")
def test_read_committed_stops_at_the_last_stable_offset():
    """AQ-9: under read_committed the log is read only up to the LSO."""
    r = rig(2, isolation_level=IsolationLevel.READ_COMMITTED)
    append(r.log, 2, producer_id=7, transactional=True)
    assert r.sp.acquire("m1", 100) == [AcquiredRecords(0, 1, 1)]
    r.set(isolation_level=IsolationLevel.READ_UNCOMMITTED)
    assert r.sp.acquire("m1", 100) == [AcquiredRecords(2, 3, 1)]


@pytest.mark.rule("AQ-9")
def test_read_committed_archives_aborted_data_but_keeps_the_marker_acquired():
    """AQ-9: aborted data goes straight to ARCHIVED and out of AcquiredRecords; the abort marker stays (GAP)."""
    r = rig(2, isolation_level=IsolationLevel.READ_COMMITTED)
    append(r.log, 3, producer_id=7, transactional=True)
    abort(r.log, 7)
    got = r.sp.acquire("m1", 100)
    assert got == [AcquiredRecords(0, 1, 1), AcquiredRecords(5, 5, 1)]
    assert [r.state(o)[0] for o in range(6)] == [Q, Q, AD, AD, AD, Q]
    assert r.archived == []
    r.ack("m1", 0, 1, ACCEPT)
    r.ack("m1", 5, 5, GAP)
    assert r.sp.start_offset == 6


@pytest.mark.rule("AQ-9")
def test_read_uncommitted_delivers_aborted_records():
    """AQ-9: under read_uncommitted aborted records are delivered."""
    r = rig()
    append(r.log, 3, producer_id=7, transactional=True)
    abort(r.log, 7)
    assert r.sp.acquire("m1", 100) == [AcquiredRecords(0, 3, 1)]


# --- locks and delivery counts ----------------------------------------------------------------
@pytest.mark.rule("AQ-12")
def test_lock_expiry_makes_records_available_with_count_unchanged():
    """AQ-12: on expiry ACQUIRED records become AVAILABLE, the holder is cleared, waiters are woken."""
    r = rig(3, record_lock_duration_ms=30_000)
    r.sp.acquire("m1", 10)
    r.tl.advance(29_999)
    assert r.state(0) == (Q, 1, "m1")
    r.tl.advance(1)
    assert [r.state(o) for o in range(3)] == [(A, 1, None)] * 3
    assert r.wakeups == 1
    assert r.sp.acquire("m2", 10) == [AcquiredRecords(0, 2, 2)]


@pytest.mark.rule("AQ-12")
def test_acknowledgement_cancels_the_lock():
    """AQ-12: ACCEPT/REJECT/RELEASE/GAP cancel the timer."""
    r = rig(2)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, ACCEPT)
    assert len(r.tl.deadlines) == 0


@pytest.mark.rule("AQ-11")
def test_a_record_is_delivered_at_most_limit_times_then_archived():
    """AQ-11: the count rises only on acquisition; a release at the limit archives (via ARCHIVING)."""
    r = rig(1, delivery_count_limit=3, archiver=True)
    counts = []
    for i in range(3):
        got = r.sp.acquire(f"m{i}", 10)
        counts.append(got[0].delivery_count)
        r.tl.advance(r.cfg.record_lock_duration_ms)
    assert counts == [1, 2, 3]
    assert r.state(0) == (AG, 3, None)
    assert r.archived[0].offsets == (0,) and r.archived[0].causes == (ArchiveCause.DELIVERY_LIMIT,)
    assert r.sp.acquire("m9", 10) == []
    assert r.sp.start_offset == 0  # ST-7: ARCHIVING holds the SPSO
    r.sp.complete_archiving([0])
    assert r.sp.start_offset == 1 and r.sp.in_flight_count() == 0


@pytest.mark.rule("AQ-6")
def test_records_that_keep_failing_are_delivered_in_shrinking_groups_and_alone_at_the_end():
    """AQ-6: limit 5, threshold max(2, ceil(5/2)) = 3: below it a released batch comes back whole; from
    delivery count 3 in groups of half the batch (then a quarter), and a record about to get its last
    allowed delivery comes alone; nothing else joins such an acquisition."""
    r = rig(8, delivery_count_limit=5)
    for expected in (1, 2, 3):
        assert r.sp.acquire("m", 100) == [AcquiredRecords(0, 7, expected)]
        r.ack("m", 0, 7, RELEASE)
    assert r.sp.acquire("m", 100) == [AcquiredRecords(0, 3, 4)]  # 8 >> 1
    assert r.sp.acquire("n", 100) == [AcquiredRecords(4, 7, 4)]
    r.ack("m", 0, 3, RELEASE)
    r.ack("n", 4, 7, RELEASE)
    # count 4: the next delivery is the 5th and last, one record at a time
    assert r.sp.acquire("m", 100) == [AcquiredRecords(0, 0, 5)]
    assert r.sp.acquire("m", 100) == [AcquiredRecords(1, 1, 5)]
    append(r.log, 2)  # new records wait behind the throttled ones
    assert r.sp.acquire("n", 100) == [AcquiredRecords(2, 2, 5)]


@pytest.mark.rule("AQ-11")
def test_release_at_the_limit_archives_without_an_archiver():
    """AQ-11: with no DLQ writer the record reaches ARCHIVED at once."""
    r = rig(2, delivery_count_limit=2)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, RELEASE)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, RELEASE)
    assert r.sp.start_offset == 2 and r.sp.acquire("m1", 10) == []


@pytest.mark.rule("ST-1")
def test_split_offsets_inherit_the_batch_lock_deadline():
    """ST-1: a partial acknowledgement splits the batch; offsets keep the batch timer's remaining time."""
    r = rig(4, record_lock_duration_ms=30_000)
    r.sp.acquire("m1", 10)
    r.tl.advance(10_000)
    r.ack("m1", 1, 1, ACCEPT)
    stats = r.sp.statistics()
    assert stats.batches == ((0, 3, True),)
    deadlines = {o.offset: o.lock_deadline_ms for o in stats.offsets}
    assert deadlines == {0: START_MS + 30_000, 1: None, 2: START_MS + 30_000, 3: START_MS + 30_000}
    r.tl.advance(20_000)
    assert [r.state(o)[0] for o in range(4)] == [A, K, A, A]


# --- acknowledgements -------------------------------------------------------------------------
@pytest.mark.rule("AK-12")
@pytest.mark.parametrize(("ack", "state"), [(ACCEPT, K), (RELEASE, A), (REJECT, AD), (GAP, AD)])
def test_acknowledgement_results(ack, state):
    """AK-12: ACCEPT->ACKNOWLEDGED, RELEASE->AVAILABLE, REJECT->ARCHIVED (through ARCHIVING), GAP->ARCHIVED;
    the member id is cleared and the count is unchanged."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 2, ack)
    assert [r.state(o) for o in range(3) if r.state(o) is not None] in ([], [(state, 1, None)] * 3)
    if state is A:
        assert r.wakeups == 1


@pytest.mark.rule("ST-4")
def test_reject_goes_through_archiving_and_gap_does_not():
    """ST-4, DLQ-3 hook: REJECT hands the records to the failure archiver; GAP archives directly."""
    r = rig(4, archiver=True)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, GAP)
    assert r.archived == []
    r.ack("m1", 2, 3, REJECT)
    assert [(a.offsets, a.causes, a.member_id) for a in r.archived] == [
        ((2, 3), (ArchiveCause.REJECTED,) * 2, "m1")]
    assert [r.state(o)[0] for o in (2, 3)] == [AG, AG]
    assert r.sp.start_offset == 2
    r.sp.complete_archiving([2])
    assert r.sp.start_offset == 3 and r.state(3)[0] is AG


@pytest.mark.rule("ST-7")
def test_spso_moves_past_consecutive_terminal_offsets_only():
    """ST-7: the SPSO stops at the first offset that is not ACKNOWLEDGED/ARCHIVED."""
    r = rig(5)
    r.sp.acquire("m1", 10)
    r.ack("m1", 1, 2, ACCEPT)
    assert r.sp.start_offset == 0
    r.ack("m1", 0, 0, GAP)
    assert r.sp.start_offset == 3
    r.ack("m1", 3, 4, ACCEPT)
    assert (r.sp.start_offset, r.sp.end_offset, r.sp.statistics().offsets) == (5, 5, ())


@pytest.mark.rule("ST-5")
def test_a_second_acknowledgement_of_the_same_record_is_invalid_record_state():
    """ST-5 (mock note: changes commit at once): an acknowledged record cannot be acknowledged again."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, ACCEPT)
    r.ack("m1", 2, 2, RELEASE)
    assert code_of(r.ack, "m1", 2, 2, ACCEPT) == E.INVALID_RECORD_STATE


@pytest.mark.rule("AK-1")
def test_backwards_range_is_invalid_request():
    """AK-1: FirstOffset > LastOffset."""
    assert code_of(validate_ack_batches, [AckBatch(5, 4, (1,))], version=2, is_renew_ack=False) == E.INVALID_REQUEST


@pytest.mark.rule("AK-2")
def test_overlapping_batches_are_invalid_request_but_touching_ones_are_accepted():
    """AK-2: a batch starting below the previous batch's last offset is refused; equality passes."""
    bad = [AckBatch(0, 5, (1,)), AckBatch(4, 6, (1,))]
    assert code_of(validate_ack_batches, bad, version=2, is_renew_ack=False) == E.INVALID_REQUEST
    validate_ack_batches([AckBatch(0, 5, (1,)), AckBatch(5, 6, (1,))], version=2, is_renew_ack=False)


@pytest.mark.rule("AK-2")
def test_touching_batches_acknowledging_one_offset_twice_fail_and_roll_back():
    """AK-2, AK-11: the shared offset is acknowledged twice: the second fails and nothing is applied."""
    r = rig(6)
    r.sp.acquire("m1", 10)
    err = code_of(r.sp.acknowledge, "m1", [AckBatch(0, 3, (ACCEPT,)), AckBatch(3, 5, (ACCEPT,))])
    assert err == E.INVALID_RECORD_STATE
    assert all(r.state(o) == (Q, 1, "m1") for o in range(6))


@pytest.mark.rule("AK-2")
def test_touching_batches_across_two_in_flight_batches_fail_on_the_shared_offset():
    """AK-2, AK-10 (SharePartition.acknowledgeCompleteBatch after acknowledgePerOffsetBatchRecords
    in one request): the second acknowledgement batch covers a whole in-flight batch whose first
    offset the first one already acknowledged: INVALID_RECORD_STATE, nothing applied. A whole
    batch acknowledged after a touching one that ends before it is accepted."""
    r = rig(3, 3)
    r.sp.acquire("m1", 10)
    err = code_of(r.sp.acknowledge, "m1", [AckBatch(0, 3, (ACCEPT,)), AckBatch(3, 5, (ACCEPT,))])
    assert err == E.INVALID_RECORD_STATE
    assert all(r.state(o) == (Q, 1, "m1") for o in range(6))
    r.sp.acknowledge("m1", [AckBatch(0, 2, (ACCEPT,)), AckBatch(3, 5, (RELEASE,))])
    assert r.sp.start_offset == 3
    assert all(r.state(o) == (A, 1, None) for o in range(3, 6))


@pytest.mark.rule("AK-3")
def test_empty_acknowledge_types_are_invalid_request():
    """AK-3: AcknowledgeTypes empty."""
    assert code_of(validate_ack_batches, [AckBatch(0, 1, ())], version=2, is_renew_ack=False) == E.INVALID_REQUEST


@pytest.mark.rule("AK-4")
def test_type_count_must_match_the_range():
    """AK-4: several types must be one per offset."""
    assert code_of(validate_ack_batches, [AckBatch(0, 2, (1, 1))], version=2, is_renew_ack=False) == E.INVALID_REQUEST
    validate_ack_batches([AckBatch(0, 2, (1, 2, 3))], version=2, is_renew_ack=False)


@pytest.mark.rule("AK-5")
@pytest.mark.parametrize(("version", "t", "ok"), [(1, 3, True), (1, 4, False), (2, 4, True), (2, 5, False),
                                                  (2, -1, False)])
def test_acknowledge_type_range_depends_on_version(version, t, ok):
    """AK-5: types < 0, > 3 at v1, > 4 at v2 are INVALID_REQUEST."""
    batches = [AckBatch(0, 0, (t,))]
    if ok:
        validate_ack_batches(batches, version=version, is_renew_ack=t == 4)
    else:
        assert code_of(validate_ack_batches, batches, version=version, is_renew_ack=True) == E.INVALID_REQUEST


@pytest.mark.rule("AK-6")
def test_renew_without_is_renew_ack_is_invalid_request_but_not_the_reverse():
    """AK-6: RENEW needs IsRenewAck; IsRenewAck with other types is accepted and applied."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    assert code_of(r.ack, "m1", 0, 0, RENEW, renew=False) == E.INVALID_REQUEST
    r.ack("m1", 0, 0, ACCEPT, renew=True)
    assert r.state(0)[0] is RecordState.ACKNOWLEDGED and r.sp.start_offset == 1


@pytest.mark.rule("AK-7")
def test_acknowledgement_below_spso_is_ignored():
    """AK-7: a batch entirely below SPSO succeeds without effect."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    r.ack("m1", 0, 1, ACCEPT)
    r.ack("m1", 0, 1, REJECT)
    assert r.sp.start_offset == 2


@pytest.mark.rule("AK-8")
def test_acknowledging_offsets_never_acquired_is_invalid_record_state():
    """AK-8: nothing in flight at or before FirstOffset."""
    fresh = rig(6)
    fresh.sp.initialize(3)
    assert code_of(fresh.ack, "m1", 3, 4, ACCEPT) == E.INVALID_RECORD_STATE


@pytest.mark.rule("AK-9")
def test_range_past_the_acquired_records_is_invalid_request():
    """AK-9: the range runs beyond the last in-flight batch."""
    r = rig(3, 3)
    r.sp.acquire("m1", 1)
    assert code_of(r.ack, "m1", 0, 4, ACCEPT) == E.INVALID_REQUEST
    assert r.state(0) == (Q, 1, "m1")


@pytest.mark.rule("AK-9")
def test_range_into_a_hole_between_in_flight_batches_is_invalid_request():
    """AK-9: a hole between in-flight batches inside the range."""
    r = rig(2, 2, 2)
    r.sp.acquire("m1", 2)
    r.log.truncate_before(4)  # ST-8 leaves the ACQUIRED 0-1 behind and moves past 2-3
    r.sp.acquire("m1", 2)
    stats = r.sp.statistics()
    assert [b[:2] for b in stats.batches] == [(0, 1), (4, 5)]
    r.sp.spso = 0  # look at the hole from below, as a request spanning both would
    assert code_of(r.ack, "m1", 0, 5, ACCEPT) == E.INVALID_REQUEST


@pytest.mark.rule("AK-10")
def test_whole_batch_held_by_another_member_is_invalid_record_state():
    """AK-10: the whole batch must be ACQUIRED by the requesting member."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    assert code_of(r.ack, "m2", 0, 2, ACCEPT) == E.INVALID_RECORD_STATE
    assert r.state(0) == (Q, 1, "m1")


@pytest.mark.rule("AK-11")
def test_per_offset_types_apply_one_per_offset():
    """AK-11, AK-4: N types apply one per offset (the batch is split)."""
    r = rig(4)
    r.sp.acquire("m1", 10)
    r.sp.acknowledge("m1", [AckBatch(0, 3, (ACCEPT, RELEASE, REJECT, GAP))])
    assert [r.state(o)[0] for o in range(1, 4)] == [A, AD, AD]
    assert r.sp.start_offset == 1


@pytest.mark.rule("AK-11")
def test_per_offset_failure_on_one_offset_rolls_back_the_whole_partition():
    """AK-11: one offset not held by the member fails the request and nothing changes."""
    r = rig(4)
    r.sp.acquire("m1", 10)
    r.ack("m1", 1, 1, RELEASE)
    r.sp.acquire("m2", 10)
    err = code_of(r.sp.acknowledge, "m1", [AckBatch(0, 0, (ACCEPT,)), AckBatch(2, 3, (ACCEPT,)),
                                           AckBatch(3, 3, (ACCEPT,))])
    assert err == E.INVALID_RECORD_STATE
    assert r.state(0) == (Q, 1, "m1") and r.state(1) == (Q, 2, "m2")
    assert code_of(r.ack, "m1", 0, 1, ACCEPT) == E.INVALID_RECORD_STATE


@pytest.mark.rule("AK-13")
def test_acknowledging_a_partition_without_share_state_is_unknown_topic_or_partition():
    """AK-13: no share-partition state for the group here."""
    parts = SharePartitions(lambda g, t, p: rig(1).sp)
    assert code_of(parts.for_acknowledge, "g", "t", 0) == E.UNKNOWN_TOPIC_OR_PARTITION
    parts.for_fetch("g", "t", 0)
    assert parts.for_acknowledge("g", "t", 0) is not None


# --- RENEW ------------------------------------------------------------------------------------
@pytest.mark.rule("RN-4")
def test_renew_restarts_the_lock_from_now_and_changes_nothing_else():
    """RN-4: state, count and holder stay; the lock runs the full duration from the renew."""
    r = rig(3, record_lock_duration_ms=30_000)
    r.sp.acquire("m1", 10)
    r.tl.advance(25_000)
    r.ack("m1", 0, 2, RENEW)
    assert [r.state(o) for o in range(3)] == [(Q, 1, "m1")] * 3
    r.tl.advance(29_999)
    assert r.state(0) == (Q, 1, "m1")
    r.ack("m1", 0, 2, ACCEPT)  # still acknowledgeable
    assert r.sp.start_offset == 3


@pytest.mark.rule("RN-4")
def test_per_offset_renew_replaces_only_that_offsets_lock():
    """RN-4: a per-offset renew moves that offset's deadline only."""
    r = rig(3, record_lock_duration_ms=30_000)
    r.sp.acquire("m1", 10)
    r.tl.advance(20_000)
    r.ack("m1", 1, 1, RENEW)
    r.tl.advance(10_000)
    assert [r.state(o)[0] for o in range(3)] == [A, Q, A]
    r.tl.advance(20_000)
    assert r.state(1) == (A, 1, None)


@pytest.mark.rule("RN-5")
def test_renew_of_a_record_not_held_is_invalid_record_state():
    """RN-5: not ACQUIRED or another member's: INVALID_RECORD_STATE."""
    r = rig(2)
    r.sp.acquire("m1", 10)
    assert code_of(r.ack, "m2", 0, 1, RENEW) == E.INVALID_RECORD_STATE
    r.ack("m1", 0, 0, ACCEPT)
    r.ack("m1", 1, 1, RELEASE)
    assert code_of(r.ack, "m1", 1, 1, RENEW) == E.INVALID_RECORD_STATE


@pytest.mark.rule("RN-6")
def test_renew_is_refused_when_disabled_for_the_group():
    """RN-6: share.renew.acknowledge.enable=false makes RENEW INVALID_RECORD_STATE."""
    r = rig(2, renew_acknowledge_enable=False)
    r.sp.acquire("m1", 10)
    assert code_of(r.ack, "m1", 0, 1, RENEW) == E.INVALID_RECORD_STATE


@pytest.mark.rule("RN-4, AK-9, ST-5")
def test_renew_before_a_failing_batch_is_kept_and_the_rest_rolled_back():
    """RN-4, ST-5: upstream renews a lock at once and never puts the renewal on the rollback list,
    so when a later batch of the same request fails (AK-9 here) the renewal stays while the
    ACCEPT before it is rolled back (SharePartition ``acknowledge``, ``acknowledgeCompleteBatch``,
    ``rollbackOrProcessStateUpdates``)."""
    r = rig(2, 2, record_lock_duration_ms=30_000)
    assert r.sp.acquire("m1", 3) == [AcquiredRecords(0, 3, 1)]
    r.tl.advance(20_000)
    batches = [AckBatch(0, 3, (RENEW,)), AckBatch(3, 3, (ACCEPT,)), AckBatch(3, 9, (ACCEPT,))]
    assert code_of(r.sp.acknowledge, "m1", batches, is_renew_ack=True) == E.INVALID_REQUEST
    assert [r.state(o) for o in range(4)] == [(Q, 1, "m1")] * 4
    assert {o.lock_deadline_ms for o in r.sp.statistics().offsets} == {START_MS + 50_000}
    r.tl.advance(29_999)
    assert r.state(3) == (Q, 1, "m1")
    r.tl.advance(1)
    assert [r.state(o) for o in range(4)] == [(A, 1, None)] * 4


@pytest.mark.rule("RN-4, RN-5, ST-5")
def test_per_offset_renews_before_the_failing_offset_are_kept():
    """RN-4, RN-5: per-offset types 0-3 = RENEW, ACCEPT, RENEW, RENEW where offset 3 is another
    member's: offsets 0 and 2 stay renewed, the ACCEPT of 1 is rolled back and 3 is untouched
    (SharePartition ``acknowledgePerOffsetBatchRecords``: each renewal is applied when reached)."""
    r = rig(1, 1, 1, 1, record_lock_duration_ms=30_000)
    assert r.sp.acquire("m1", 3) == [AcquiredRecords(0, 2, 1)]
    r.tl.advance(10_000)
    assert r.sp.acquire("m2", 1) == [AcquiredRecords(3, 3, 1)]
    r.tl.advance(10_000)
    batch = AckBatch(0, 3, (RENEW, ACCEPT, RENEW, RENEW))
    assert code_of(r.sp.acknowledge, "m1", [batch], is_renew_ack=True) == E.INVALID_RECORD_STATE
    deadlines = {o.offset: o.lock_deadline_ms for o in r.sp.statistics().offsets}
    assert deadlines == {0: START_MS + 50_000, 1: START_MS + 30_000, 2: START_MS + 50_000, 3: START_MS + 40_000}
    r.tl.advance(10_000)
    assert [r.state(o) for o in range(4)] == [(Q, 1, "m1"), (A, 1, None), (Q, 1, "m1"), (Q, 1, "m2")]


# --- releases and log start -------------------------------------------------------------------
@pytest.mark.rule("SS-8")
def test_release_member_frees_only_that_members_records():
    """SS-8, SS-4: the member's ACQUIRED records go back to AVAILABLE; others' stay."""
    r = rig(2, 2)
    r.sp.acquire("m1", 2)
    r.sp.acquire("m2", 2)
    assert r.sp.release_member("m1") == 2
    assert [r.state(o) for o in range(4)] == [(A, 1, None)] * 2 + [(Q, 1, "m2")] * 2
    assert r.wakeups == 1


@pytest.mark.rule("ST-8")
def test_log_start_move_archives_available_records_below_and_keeps_acquired_ones_until_released():
    """ST-8: SPSO jumps to the log start; AVAILABLE below it archive; ACQUIRED below archive on release."""
    r = rig(2, 2, 2, archiver=True)
    r.sp.acquire("m1", 4)
    r.ack("m1", 2, 3, RELEASE)
    r.log.truncate_before(4)
    r.sp.sync_log_start()
    assert r.sp.start_offset == 4
    assert [r.state(o)[0] for o in range(2)] == [Q, Q]
    assert r.sp.acquire("m2", 10) == [AcquiredRecords(4, 5, 1)]
    r.ack("m1", 0, 1, ACCEPT)  # AK-7: below SPSO, ignored
    assert r.state(0) == (Q, 1, "m1")
    r.tl.advance(r.cfg.record_lock_duration_ms)
    assert r.archived == []  # DLQ-3: nothing goes through the failure archiver
    assert [b[:2] for b in r.sp.statistics().batches] == [(4, 5)] or r.sp.statistics().batches == ()


@pytest.mark.rule("AK-11")
def test_ack_range_starting_below_spso_skips_the_offsets_below():
    """AK-8, AK-11: SPSO inside the range: the offsets below it are skipped."""
    r = rig(4, 4)
    r.sp.acquire("m1", 8)
    r.log.truncate_before(4)
    r.sp.sync_log_start()
    r.ack("m1", 0, 7, ACCEPT)
    assert r.sp.start_offset == 4 or r.sp.start_offset == 8
    assert all(r.state(o) is None or r.state(o)[0] is not Q or o < 4 for o in range(8))


def test_statistics_is_a_frozen_snapshot():
    """statistics(): SPSO, SPEO and per-offset state, count, holder and deadline, frozen."""
    r = rig(2, record_lock_duration_ms=30_000)
    r.sp.acquire("m1", 10)
    s = r.sp.statistics()
    assert (s.start_offset, s.end_offset, s.in_flight_records) == (0, 1, 2)
    assert s.offsets[0].member_id == "m1" and s.offsets[0].lock_deadline_ms == START_MS + 30_000
    with pytest.raises(AttributeError):
        s.start_offset = 5  # type: ignore[misc]
    r.ack("m1", 0, 1, ACCEPT)
    assert s.in_flight_records == 2


def test_expire_now_releases_the_named_offsets():
    """Fault injection: a lock expired now."""
    r = rig(3)
    r.sp.acquire("m1", 10)
    assert r.sp.expire_now([1]) == 1
    assert [r.state(o)[0] for o in range(3)] == [Q, A, Q]
