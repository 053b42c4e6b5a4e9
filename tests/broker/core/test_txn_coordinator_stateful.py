"""A Hypothesis state machine over the transaction coordinator alone: producer instances of two
transactional ids init, add partitions (client form and TV2 produce), add offsets, commit
offsets, end (TV1 and TV2), time out, get fenced by a newer instance, and the coordinator is
restored from its snapshot; markers fail and heal at random.

Invariants: a fenced epoch never writes again (TX-2, TX-3, TX-17); every state change is a row
of the table (TX-14); committed offsets appear only after their transaction commits (TX-23);
a Prepare* state reaches Complete* once markers succeed (TX-15)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kwire.broker.core.offsets import CommittedOffset
from kwire.broker.core.txn_coordinator import (
    MARKER_RETRY_BACKOFF_MS,
    MOVES,
    TransactionState,
    Trigger,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode as E
from tests.broker.core.txn_helpers import TxnHarness

DEEP = os.environ.get("KWIRE_HYPOTHESIS_PROFILE") == "deep"
TIDS = ("a", "b")
INSTANCES = 3  # producer instances per transactional id (older ones become zombies)
PARTITIONS = [("t", 0), ("t", 1), ("u", 0)]
OFFSET_TPS = [("in", 0), ("in", 1)]
GROUP = "g"
TIMEOUT_MS = 5_000
PREPARE = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


@dataclass
class Instance:
    pair: tuple[int, int] | None = None  # (producer id, epoch) this instance holds


class TxnCoordinatorMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.h = TxnHarness(transaction_max_timeout_ms=60_000, transactional_id_expiration_ms=10**9)
        self.instances = {tid: [Instance() for _ in range(INSTANCES)] for tid in TIDS}
        self.fenced: dict[str, set[tuple[int, int]]] = {tid: set() for tid in TIDS}
        self.moves: list[tuple[str, TransactionState, Trigger, TransactionState]] = []
        # offsets: (tid) -> staged in its open transaction; committed as the model sees them
        self.staged: dict[str, dict[tuple[str, int], int]] = {tid: {} for tid in TIDS}
        self.committed: dict[tuple[str, int], int] = {}
        self._attach()
        self.states = self._states()

    def _attach(self) -> None:
        self.h.coord.on_move.append(self._on_move)

    def _on_move(self, tid: str, old: TransactionState, trigger: Trigger, new: TransactionState) -> None:
        assert MOVES.get((old, trigger)) is new, f"{tid}: {old.name} --{trigger.value}--> {new.name} not in table"
        self.moves.append((tid, old, trigger, new))
        if trigger is Trigger.FENCE:  # TX-3, TX-17: every instance's epoch is now fenced
            for inst in self.instances[tid]:
                if inst.pair is not None:
                    self.fenced[tid].add(inst.pair)
        if new is TransactionState.COMPLETE_COMMIT:
            self.committed.update(self.staged[tid])
            self.staged[tid] = {}
        elif new is TransactionState.COMPLETE_ABORT:
            self.staged[tid] = {}

    def _states(self) -> dict[str, TransactionState]:
        return {tid: m.state for tid, m in self.h.coord.transactions.items()}

    def _meta_json(self, tid: str):
        meta = self.h.coord.transactions.get(tid)
        return None if meta is None else json.dumps(meta.to_json(), sort_keys=True)

    def _call_fenced_safe(self, tid: str, pair: tuple[int, int], fn, must_fail: bool):
        """Run a write with an instance's pair; a fenced pair must fail (or, EndTxn, change nothing)."""
        fenced = pair in self.fenced[tid]
        before = self._meta_json(tid)
        try:
            result = fn()
        except KafkaError as exc:
            return exc.code
        succeeded = not (isinstance(result, int) and result != E.NONE)
        if fenced and succeeded:
            assert not must_fail, f"fenced {pair} of {tid} was accepted"
            assert self._meta_json(tid) == before, f"fenced {pair} of {tid} changed the transaction"
        return result

    # --- rules ------------------------------------------------------------------------------
    @rule(tid=st.sampled_from(TIDS), i=st.integers(0, INSTANCES - 1), with_current=st.booleans(),
          version=st.sampled_from([3, 4, 5]))
    def init(self, tid, i, with_current, version):
        inst = self.instances[tid][i]
        args = inst.pair if (with_current and inst.pair is not None) else (-1, -1)
        try:
            got = self.h.coord.init_producer_id(tid, TIMEOUT_MS, version, *args)
        except KafkaError as exc:
            assert exc.code in (E.CONCURRENT_TRANSACTIONS, E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH)
            return
        new = (got.producer_id, got.producer_epoch)
        assert new not in self.fenced[tid], "InitProducerId handed out a fenced epoch"
        for other in self.instances[tid]:  # TX-2: every other holder (and the old self) is fenced
            if other.pair is not None and other.pair != new:
                self.fenced[tid].add(other.pair)
        inst.pair = new

    @rule(tid=st.sampled_from(TIDS), i=st.integers(0, INSTANCES - 1),
          tps=st.lists(st.sampled_from(PARTITIONS), min_size=1, max_size=2, unique=True),
          via_produce=st.booleans())
    def add(self, tid, i, tps, via_produce):
        inst = self.instances[tid][i]
        if inst.pair is None:
            return
        pid, epoch = inst.pair
        if via_produce:  # TV2 implicit add (TX-13)
            for tp in tps:
                self._call_fenced_safe(tid, inst.pair, lambda tp=tp: self.h.coord.verify_append(
                    pid, epoch, tp, 12, False), must_fail=True)
        else:
            self._call_fenced_safe(tid, inst.pair, lambda: self.h.coord.add_partitions(
                tid, pid, epoch, tps, api_version=3), must_fail=True)

    @rule(tid=st.sampled_from(TIDS), i=st.integers(0, INSTANCES - 1), tp=st.sampled_from(OFFSET_TPS),
          offset=st.integers(0, 1000), version=st.sampled_from([3, 5]))
    def commit_offsets(self, tid, i, tp, offset, version):
        inst = self.instances[tid][i]
        if inst.pair is None:
            return
        pid, epoch = inst.pair
        if version < 5:
            self._call_fenced_safe(tid, inst.pair, lambda: self.h.coord.add_offsets(tid, pid, epoch, GROUP),
                                   must_fail=True)
        got = self._call_fenced_safe(tid, inst.pair, lambda: self.h.coord.txn_offset_commit(
            tid, pid, epoch, GROUP, {tp: CommittedOffset(offset)}, version), must_fail=True)
        if got is None:
            self.staged[tid][tp] = offset

    @rule(tid=st.sampled_from(TIDS), i=st.integers(0, INSTANCES - 1), commit=st.booleans(),
          version=st.sampled_from([3, 5]))
    def end(self, tid, i, commit, version):
        inst = self.instances[tid][i]
        if inst.pair is None:
            return
        pid, epoch = inst.pair
        got = self._call_fenced_safe(tid, inst.pair, lambda: self.h.coord.end_txn(tid, pid, epoch, commit, version),
                                     must_fail=False)
        if not isinstance(got, int) and inst.pair not in self.fenced[tid]:
            inst.pair = (got.producer_id, got.producer_epoch)  # TV2: adopt the bumped epoch

    @rule(ms=st.sampled_from([1, MARKER_RETRY_BACKOFF_MS, TIMEOUT_MS // 2, TIMEOUT_MS]))
    def advance(self, ms):
        self.h.advance(ms)

    @rule(fail=st.booleans())
    def markers_fail(self, fail):
        self.h.markers.fail_all = fail

    @rule()
    def markers_heal(self):
        """TX-15: once markers succeed, every Prepare* reaches Complete* on the next retry."""
        self.h.markers.fail_all = False
        self.h.advance(MARKER_RETRY_BACKOFF_MS)
        for tid, meta in self.h.coord.transactions.items():
            assert meta.state not in PREPARE, f"{tid} stuck in {meta.state.name}"

    @rule()
    def restore(self):
        snap = json.loads(json.dumps(self.h.coord.snapshot()))
        self.h.coord.on_close()
        self.h.coord = self.h.new_coordinator()
        self._attach()
        self.h.coord.restore(snap)

    # --- invariants ---------------------------------------------------------------------------
    @invariant()
    def state_changes_follow_moves(self):
        """TX-14: a transaction's state changes only through moves of the table."""
        now = self._states()
        moved: dict[str, TransactionState] = {}
        for tid, _old, _trigger, new in self.moves:
            moved[tid] = new
        for tid in set(now) | set(self.states):
            before, after = self.states.get(tid), now.get(tid)
            if before is not after or tid in moved:
                if after is None:
                    assert moved.get(tid) is TransactionState.DEAD
                else:
                    assert before is None or moved.get(tid) is after, f"{tid}: {before} -> {after} without a move"
        self.moves.clear()
        self.states = now

    @invariant()
    def committed_offsets_only_after_commit(self):
        """TX-23: the store shows exactly what committed transactions wrote."""
        seen = {tp: c.offset for tp, c in self.h.offsets.partitions(GROUP).items()}
        assert seen == self.committed
        for tp in OFFSET_TPS:
            pending = any(tp in s for s in self.staged.values())
            assert self.h.offsets.is_pending(GROUP, *tp) == pending

    def teardown(self):
        if hasattr(self, "h"):
            self.h.coord.on_close()


TestTxnCoordinatorMachine = TxnCoordinatorMachine.TestCase
TestTxnCoordinatorMachine.settings = settings(max_examples=500 if DEEP else 120, stateful_step_count=40,
                                              deadline=None, suppress_health_check=list(HealthCheck))
TestTxnCoordinatorMachine = pytest.mark.rule("TX-14")(TestTxnCoordinatorMachine)
