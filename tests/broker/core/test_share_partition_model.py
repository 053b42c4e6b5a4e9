"""A model-based test of the share partition: Hypothesis drives one partition shared by three
members with random appends, fetches (both acquire modes), every acknowledgement type over valid
and invalid ranges, renewals, session closes, log-start moves clock advances and dead-letter writes
that succeed or fail, and checks the partition against a plain model after every step.

Invariants (issue 9): no offset is held by two members; delivery counts never decrease; RENEW
changes neither state nor delivery count; the start offset (SPSO) only moves forward; a refused
acknowledgement changes nothing but the locks it renewed before the failing offset (upstream
never rolls a renewal back, issue 20); no record is lost: every offset below the log end is
finished (acknowledged or archived), held, available, or not yet delivered, exactly as the model
says. The lock limit is soft (AQ-2, issue 20): a fetch at the limit reads nothing new, and new
records are min(MaxRecords left, room) rounded up to the end of their log batch, the in-flight
window never passing the limit by more than one log batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kwire.broker.core.share_partition import AckBatch, AckType, RecordState, ShareAcquireMode
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from tests.broker.share_helpers import Rig, append, rig

MEMBERS = ("m1", "m2", "m3")
LOCK_MS = 30_000
LIMIT = 3
LOCKS = 10  # group.share.partition.max.record.locks: small enough to be reached (AQ-2)
MAX_BATCH = 4  # the largest log batch ``produce`` appends


@dataclass
class Offset:
    """The model's view of one offset."""

    count: int = 0
    holder: str | None = None
    deadline: int = 0
    done: bool = False


class SharePartitionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # archiver=True: records entering ARCHIVING wait in r.archived for a dead-letter write.
        self.r: Rig = rig(archiver=True, record_lock_duration_ms=LOCK_MS, delivery_count_limit=LIMIT,
                          partition_max_record_locks=LOCKS)
        self.dlq_written: dict[int, int] = {}  # offset -> dead-letter records written
        self.model: dict[int, Offset] = {}
        self.spso_seen = 0
        self.counts_seen: dict[int, int] = {}
        self.batch_last: dict[int, int] = {}  # offset -> last offset of its log batch

    # --- helpers --------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.r.tl.now_ms()

    def snapshot(self) -> object:
        st_ = self.r.sp.statistics()
        return (st_.start_offset, st_.end_offset, tuple((o.offset, o.state, o.delivery_count, o.member_id,
                                                         o.lock_deadline_ms) for o in st_.offsets))

    def release(self, off: int) -> None:
        """The model's release (RELEASE, expiry, session close): AVAILABLE, or finished at the
        delivery limit or below the log start."""
        m = self.model[off]
        m.holder = None
        if m.count >= LIMIT or off < self.r.log.log_start_offset:
            m.done = True

    def held_by(self, member: str) -> list[int]:
        return sorted(o for o, m in self.model.items() if m.holder == member and not m.done)

    # --- rules ----------------------------------------------------------------------------------
    @rule(n=st.integers(1, 4))
    def produce(self, n: int) -> None:
        base, last = append(self.r.log, n)
        for o in range(base, last + 1):
            self.model[o] = Offset()
            self.batch_last[o] = last

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 6), record_limit=st.booleans(),
          batch_size=st.one_of(st.none(), st.integers(1, 3)), max_bytes=st.sampled_from([None, None, 1, 150]))
    def fetch(self, member: str, max_records: int, record_limit: bool, batch_size: int | None,
              max_bytes: int | None) -> None:
        mode = ShareAcquireMode.RECORD_LIMIT if record_limit else ShareAcquireMode.BATCH_OPTIMIZED
        sp = self.r.sp
        sp.initialize()  # what acquire does first; the window below is then the one it sees
        sp.sync_log_start()
        in_flight = sp.in_flight_count()
        next_new = sp.end_offset + 1 if in_flight else sp.start_offset
        available_inside = any(o.state is RecordState.AVAILABLE and o.offset >= sp.start_offset
                               for o in sp.statistics().offsets)
        got = sp.acquire(member, max_records, batch_size=batch_size, mode=mode, max_bytes=max_bytes)
        total = 0
        new: list[int] = []
        for a in got:
            for off in range(a.first_offset, a.last_offset + 1):
                m = self.model[off]
                assert not m.done and m.holder is None, f"offset {off} acquired while {m}"
                m.count += 1
                m.holder = member
                m.deadline = self.now + LOCK_MS
                assert a.delivery_count == m.count
                total += 1
                if off >= next_new:
                    new.append(off)
        if record_limit:
            assert total <= max_records
        # AQ-2: at the limit the partition is fetched only for AVAILABLE records inside the window.
        if in_flight >= LOCKS:
            assert not new, f"new offsets {new} acquired at the lock limit"
            if not available_inside:
                assert got == []
        if new:  # new records start at the first offset never acquired; the window ends on a log batch
            assert new[0] == next_new and sp.end_offset == self.batch_last[sp.end_offset], (new, next_new)
        if new and max_bytes is None:  # (a MaxBytes read may end earlier, AQ-7)
            # AQ-2, AQ-3: min(MaxRecords left, room), rounded up to the end of the log batch; in
            # record_limit mode only that many are acquired, the rest of the batch stays AVAILABLE.
            want = min(max_records, LOCKS - in_flight) - (total - len(new))
            assert want > 0 and new[0] == next_new, (want, new, next_new)
            last = self.batch_last[next_new + want - 1] if next_new + want - 1 in self.batch_last \
                else self.r.log.log_end_offset - 1
            assert sp.end_offset == last, f"SPEO {sp.end_offset}, expected {last} ({want} wanted from {next_new})"
            expect = list(range(next_new, min(last, next_new + want - 1) + 1)) if record_limit \
                else list(range(next_new, last + 1))
            assert new == expect, f"new offsets {new}, expected {expect}"

    @rule(member=st.sampled_from(MEMBERS), kind=st.sampled_from(list(AckType)), data=st.data())
    def acknowledge(self, member: str, kind: AckType, data: st.DataObject) -> None:
        held = self.held_by(member)
        valid = bool(held) and data.draw(st.booleans())
        if valid:
            # A run of consecutive offsets the member holds, all above the log start.
            start = data.draw(st.sampled_from(held))
            end = start
            while end + 1 in held and data.draw(st.booleans()):
                end += 1
            first, last = start, end
        else:
            hi = max(self.model, default=0) + 2
            first = data.draw(st.integers(0, hi))
            last = data.draw(st.integers(first - 1, hi))
        before = self.snapshot()
        spso_before = self.r.sp.start_offset
        try:
            self.r.sp.acknowledge(member, [AckBatch(first, last, (int(kind),))], version=2,
                                  is_renew_ack=kind is AckType.RENEW)
        except KafkaError:
            assert not valid, f"{kind.name} of held offsets {first}-{last} refused"
            after = self.snapshot()
            if kind is not AckType.RENEW:
                assert after == before, "a refused acknowledgement changed the partition"
                return
            self.renewed_before_refusal(member, first, before, after)
            return
        for off in range(max(first, spso_before), last + 1):  # AK-7, AK-11: below SPSO is skipped
            m = self.model.get(off)
            if m is None or m.done:
                continue
            assert m.holder == member, f"{kind.name} of offset {off} held by {m.holder} accepted for {member}"
            if kind is AckType.RENEW:
                m.deadline = self.now + LOCK_MS
            elif kind is AckType.RELEASE:
                self.release(off)
            else:
                m.holder = None
                m.done = True

    @rule(member=st.sampled_from(MEMBERS), data=st.data())
    def renew_then_fail(self, member: str, data: st.DataObject) -> None:
        """One request: RENEW a run the member holds, then a batch past everything in flight (AK-9).
        The request fails, the renewal stays (RN-4; SharePartition ``acknowledge``)."""
        self.advance(1)  # so that a renewed deadline differs from the one the acquisition set
        held = [o for o in self.held_by(member) if o >= self.r.sp.start_offset]  # below SPSO: ignored (AK-7)
        if not held:
            return
        start = data.draw(st.sampled_from(held))
        end = start
        while end + 1 in held and data.draw(st.booleans()):
            end += 1
        bad = max(self.model) + 1 + data.draw(st.integers(0, 3))
        before = self.snapshot()
        try:
            self.r.sp.acknowledge(member, [AckBatch(start, end, (int(AckType.RENEW),)),
                                           AckBatch(bad, bad, (int(AckType.ACCEPT),))], version=2, is_renew_ack=True)
        except KafkaError as exc:
            assert exc.code == ErrorCode.INVALID_REQUEST
        else:
            raise AssertionError(f"acknowledging {bad}, never acquired, was accepted")
        after = self.snapshot()
        self.renewed_before_refusal(member, start, before, after)
        deadlines = {o[0]: o[4] for o in after[2]}  # type: ignore[index]
        assert all(deadlines[o] == self.now + LOCK_MS for o in range(start, end + 1))

    def renewed_before_refusal(self, member: str, first: int, before: object, after: object) -> None:
        """A refused RENEW keeps what it renewed before the failing offset (RN-4, issue 20): only
        lock deadlines change, to now + duration, on offsets the member holds, and they are every
        in-flight offset of the range from its start up to the last one renewed."""
        spso_b, speo_b, offs_b = before  # type: ignore[misc]
        spso_a, speo_a, offs_a = after  # type: ignore[misc]
        assert (spso_a, speo_a) == (spso_b, speo_b)
        assert [o[:4] for o in offs_a] == [o[:4] for o in offs_b], "a refused RENEW changed a state"
        changed = [a[0] for a, b in zip(offs_a, offs_b, strict=True) if a != b]
        for a in offs_a:
            if a[0] in changed:
                assert a[3] == member and a[4] == self.now + LOCK_MS and a[0] >= first, a
                self.model[a[0]].deadline = self.now + LOCK_MS
        if changed:
            lo = max(first, spso_b)
            in_range = [o[0] for o in offs_a if lo <= o[0] <= max(changed)]
            assert changed == in_range, f"renewed {changed}, not the prefix {in_range}"

    @precondition(lambda self: bool(self.r.archived))
    @rule(write_ok=st.booleans())
    def finish_dead_letter_write(self, write_ok: bool) -> None:
        """Phase 2 of DLQ archiving (DLQ-4): written or failed, the records become ARCHIVED."""
        req = self.r.archived.pop(0)
        if write_ok:
            for off in req.offsets:
                self.dlq_written[off] = self.dlq_written.get(off, 0) + 1
        self.r.sp.complete_archiving(req.offsets)

    @invariant()
    def one_dead_letter_record_at_most(self) -> None:
        """Each record archived for failure is handed over once: at most one DLQ record, and one
        exactly when its write succeeded."""
        pending = [o for req in self.r.archived for o in req.offsets]
        assert len(pending) == len(set(pending)), f"offsets handed to the DLQ twice: {pending}"
        assert all(n == 1 for n in self.dlq_written.values()), self.dlq_written
        assert not set(pending) & set(self.dlq_written), "an offset written and still pending"

    @rule(member=st.sampled_from(MEMBERS))
    def close_session(self, member: str) -> None:
        self.r.sp.release_member(member)
        for off in self.held_by(member):
            self.release(off)

    @rule(ms=st.sampled_from([1_000, 10_000, 29_999, 30_000, 45_000]))
    def advance(self, ms: int) -> None:
        self.r.tl.advance(ms)
        for off, m in sorted(self.model.items()):
            if m.holder is not None and not m.done and m.deadline <= self.now:
                self.release(off)

    @precondition(lambda self: self.r.log.log_start_offset < self.r.log.log_end_offset)
    @rule(k=st.integers(1, 3))
    def delete_records(self, k: int) -> None:
        log = self.r.log
        log.truncate_before(min(log.log_start_offset + k, log.log_end_offset))
        self.r.sp.sync_log_start()
        start = log.log_start_offset
        for off, m in self.model.items():
            if off < start and m.holder is None:
                m.done = True

    # --- invariants -----------------------------------------------------------------------------
    @invariant()
    def matches_the_model(self) -> None:
        sp = self.r.sp
        assert sp.start_offset >= self.spso_seen, "SPSO moved back"
        self.spso_seen = sp.start_offset
        for off, m in self.model.items():
            got = sp.record_state(off)
            if got is None:
                if m.count == 0:  # never delivered: ahead of the window, or deleted before delivery
                    assert not m.done or off < self.r.log.log_start_offset, f"offset {off}: {m}"
                else:  # delivered: it may only leave the window finished
                    assert off < sp.start_offset and m.done, f"offset {off} lost: {m}"
                continue
            state, count, holder = got
            assert count >= self.counts_seen.get(off, 0), f"delivery count of {off} went down"
            self.counts_seen[off] = count
            assert count == m.count, f"offset {off}: count {count}, model {m.count}"
            if state is RecordState.ACQUIRED:
                assert holder == m.holder and not m.done, f"offset {off}: held by {holder}, model {m}"
            elif state is RecordState.AVAILABLE:
                assert m.holder is None and not m.done, f"offset {off}: available, model {m}"
            elif state is RecordState.ARCHIVING:
                assert m.done and any(off in req.offsets for req in self.r.archived), \
                    f"offset {off}: ARCHIVING without a pending dead-letter write, model {m}"
            else:
                assert state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) and m.done, \
                    f"offset {off}: {state.name}, model {m}"


TestSharePartitionModel = SharePartitionModel.TestCase
TestSharePartitionModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
