"""A Hypothesis state machine over the transaction coordinator and the partition logs together,
through the wire into a real core on a data dir: producer instances of two transactional ids init
(fencing older instances), add partitions, produce (with retried duplicates), add offsets, commit
offsets in the transaction, commit, abort, time out on the broker clock, and the broker restarts,
cleanly or as after a kill -9 (no stop, no metadata write: only what was flushed survives).

What a client can see is read back as a client reads it: Fetch with read_committed, filtered with
the aborted-transactions list as Kafka's consumer does. Invariants: the LSO never passes the high
watermark (TX-20); read_committed never returns aborted or undecided data and returns nothing twice
(TX-21); every committed record is there once all transactions are over; a fenced producer epoch
never writes again (TX-3); a group's committed offset is only ever one a committed transaction
staged (TX-23).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kwire.broker.core.broker_core import BrokerCore
from kwire.protocol.error_codes import ErrorCode as E
from kwire.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kwire.protocol.messages.end_txn import EndTxnRequest
from kwire.protocol.messages.fetch import FetchRequest
from kwire.protocol.messages.init_producer_id import InitProducerIdRequest
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from kwire.records import iter_batches
from tests.broker.helpers import CoreClient, batch, make_core

DEEP = os.environ.get("KWIRE_HYPOTHESIS_PROFILE") == "deep"
TIDS = ("a", "b")
INSTANCES = 2
PARTITIONS = (0, 1)
TIMEOUT_MS = 5_000
GROUP = "g"


@dataclass
class Instance:
    pair: tuple[int, int] | None = None  # (producer id, epoch) this instance holds
    seq: dict[int, int] = field(default_factory=dict)  # next sequence per partition
    last: dict[int, bytes] = field(default_factory=dict)  # last batch sent per partition (for retries)
    values: list[bytes] = field(default_factory=list)  # acknowledged in the open transaction
    offset: int | None = None  # offset staged in the open transaction


def read_committed(c: CoreClient, partition: int) -> tuple[list[bytes], int, int]:
    """(values a read_committed consumer gets, LSO, high watermark), filtered as Kafka's consumer
    filters: a transactional batch of a producer in the aborted list from its first offset on is
    skipped until that producer's abort marker."""
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, isolation_level=1,
                               topics=[FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=0,
                                   log_start_offset=-1, partition_max_bytes=1 << 24)])]), 11)
    p = resp.responses[0].partitions[0]
    assert p.error_code == 0, p.error_code
    aborted = sorted((a.first_offset, a.producer_id) for a in p.aborted_transactions or [])
    skipping: set[int] = set()
    out: list[bytes] = []
    for b in iter_batches(bytes(p.records or b"")):
        while aborted and aborted[0][0] <= b.base_offset + b.last_offset_delta:
            skipping.add(aborted.pop(0)[1])
        if b.is_control:
            for r in b:
                if r.key is not None and struct.unpack(">hh", bytes(r.key)[:4])[1] == 0:  # ABORT marker
                    skipping.discard(b.producer_id)
            continue
        if b.is_transactional and b.producer_id in skipping:
            continue
        out.extend(bytes(r.value or b"") for r in b)
    return out, p.last_stable_offset, p.high_watermark


class TxnLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="kwire-txn-model-"))
        self.core, self.c = self._start()
        self.core.create_topic("t", len(PARTITIONS))
        self.inst = {(tid, i): Instance() for tid in TIDS for i in range(INSTANCES)}
        self.n = 0
        self.committed: list[bytes] = []  # values of transactions whose EndTxn(commit) was answered NONE
        self.aborted: set[bytes] = set()  # values of transactions that ended any other way
        self.fenced: dict[tuple[int, int], int] = {}  # fenced (pid, epoch) -> data batches it had then
        self.good_offsets: set[int] = set()  # offsets staged by transactions that committed

    def _start(self) -> tuple[BrokerCore, CoreClient]:
        core, _ = make_core(data_dir=str(self.dir), settings={"transaction.version": "1"})
        return core, CoreClient(core)

    # --- helpers ----------------------------------------------------------------------------
    def _batches_of(self, pair: tuple[int, int]) -> int:
        n = 0
        for part in PARTITIONS:
            for stored in self.core.cluster.topics["t"].partitions[part].log.batches:
                if stored.producer_id != pair[0] or stored.is_control:
                    continue
                if next(iter_batches(bytes(stored.data))).producer_epoch == pair[1]:
                    n += 1
        return n

    def _fence(self, tid: str, keep: int) -> None:
        """Every other instance of ``tid`` is fenced: its open transaction is over (aborted)."""
        for i in range(INSTANCES):
            other = self.inst[(tid, i)]
            if i == keep or other.pair is None:
                continue
            self.fenced.setdefault(other.pair, self._batches_of(other.pair))
            self._settle(other, commit=False)
            other.pair = None

    def _settle(self, inst: Instance, commit: bool) -> None:
        if commit:
            self.committed.extend(inst.values)
            if inst.offset is not None:
                self.good_offsets.add(inst.offset)
        else:
            self.aborted.update(inst.values)
        inst.values, inst.offset = [], None

    # --- rules ------------------------------------------------------------------------------
    @initialize()
    def two_producers(self) -> None:
        self.init("a", 0)
        self.init("b", 0)

    @rule(tid=st.sampled_from(TIDS), i=st.integers(0, INSTANCES - 1))
    def init(self, tid: str, i: int) -> None:
        r = self.c.send(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=TIMEOUT_MS,
                                              producer_id=-1, producer_epoch=-1), 3)
        if r.error_code != E.NONE:
            assert r.error_code == E.CONCURRENT_TRANSACTIONS, r.error_code
            # TX-3: an open transaction of the previous holder is being aborted: it is over
            for j in range(INSTANCES):
                self._settle(self.inst[(tid, j)], commit=False)
            return
        inst = self.inst[(tid, i)]
        if inst.pair is not None:
            self.fenced.setdefault(inst.pair, self._batches_of(inst.pair))
        self._settle(inst, commit=False)
        inst.pair, inst.seq, inst.last = (r.producer_id, r.producer_epoch), {}, {}
        self._fence(tid, i)

    def _live(self, k: int) -> tuple[str, Instance, int, int] | None:
        """The k-th (mod) instance that holds a producer id and epoch, as a client would use it:
        its transactional id, the instance, its producer id and epoch."""
        live = [(tid, inst, *inst.pair) for (tid, _), inst in sorted(self.inst.items()) if inst.pair is not None]
        return live[k % len(live)] if live else None

    def _produce(self, tid: str, pair: tuple[int, int], part: int, records: bytes) -> int:
        r = self.c.send(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name="t", partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=records)])]), 9)
        return int(r.responses[0].partition_responses[0].error_code)

    @rule(k=st.integers(0, 3), part=st.sampled_from(PARTITIONS), retry=st.booleans(), add_first=st.booleans())
    def send(self, k: int, part: int, retry: bool, add_first: bool) -> None:
        """A client's send: add the partition to the transaction (TV1, TX-11), then produce; or
        retry the last batch (a duplicate must not be written twice)."""
        got = self._live(k)
        if got is None:
            return
        tid, inst, pid, epoch = got
        if retry and part in inst.last:
            code = self._produce(tid, inst.pair, part, inst.last[part])
            event(f"send retry: {E(code).name}")
            return
        if add_first or not inst.values:
            r = self.c.send(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="t", partitions=[part])]),
                3)
            added = r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            event(f"add: {E(added).name}")
            if added != E.NONE:
                # a client sends only to a partition in its transaction (CONCURRENT_TRANSACTIONS while
                # the last one's markers are out, TX-15: under TV1 the leader still has that one
                # open and would take the batch into it, as Kafka's would)
                return
        self.n += 1
        value = f"{tid}-{self.n}".encode()
        records = batch([value], producer_id=pid, producer_epoch=epoch, base_sequence=inst.seq.get(part, 0),
                        is_transactional=True)
        code = self._produce(tid, inst.pair, part, records)
        event(f"send: {E(code).name}")
        if code == E.NONE:
            inst.values.append(value)
            inst.seq[part] = inst.seq.get(part, 0) + 1
            inst.last[part] = records

    @rule(k=st.integers(0, 7), part=st.sampled_from(PARTITIONS))
    def zombie_send(self, k: int, part: int) -> None:
        """A fenced instance keeps producing (TX-3): it must be refused."""
        pairs = sorted(self.fenced)
        if not pairs:
            return
        pid, epoch = pairs[k % len(pairs)]
        self.n += 1
        value = f"zombie-{self.n}".encode()
        code = self._produce("a", (pid, epoch), part, batch([value], producer_id=pid, producer_epoch=epoch,
                                                            base_sequence=0, is_transactional=True))
        event(f"zombie send: {E(code).name}")
        assert code != E.NONE, f"the fenced producer {pid}/{epoch} wrote"
        self.aborted.add(value)

    @rule(k=st.integers(0, 3), offset=st.integers(0, 1000))
    def commit_offset(self, k: int, offset: int) -> None:
        got = self._live(k)
        if got is None:
            return
        tid, inst, pid, epoch = got
        if self.c.send(AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                              group_id=GROUP), 3).error_code != E.NONE:
            return
        r = self.c.send(TxnOffsetCommitRequest(
            transactional_id=tid, group_id=GROUP, producer_id=pid, producer_epoch=epoch,
            topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                       committed_metadata="")])]), 3)
        event(f"txn offset commit: {E(r.topics[0].partitions[0].error_code).name}")
        if r.topics[0].partitions[0].error_code == E.NONE:
            inst.offset = offset

    @rule(k=st.integers(0, 3), commit=st.booleans())
    def end(self, k: int, commit: bool) -> None:
        got = self._live(k)
        if got is None:
            return
        tid, inst, pid, epoch = got
        r = self.c.send(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                      committed=commit), 3)
        event(f"end {'commit' if commit else 'abort'}{' with data' if inst.values else ''}: {E(r.error_code).name}")
        if r.error_code == E.NONE:
            self._settle(inst, commit)
            inst.last = {}

    @rule(ms=st.sampled_from([1, 100, TIMEOUT_MS // 2, TIMEOUT_MS + 1]))
    def advance(self, ms: int) -> None:
        self.core.advance(ms)  # type: ignore[attr-defined]
        # a transaction past its timeout was aborted (with an epoch bump, TX-17): it is over
        coord = self.core.subsystems.transactions
        assert coord is not None
        for (tid, _), inst in self.inst.items():
            meta = coord.transactions.get(tid)
            if inst.pair is not None and meta is not None and (meta.producer_id, meta.producer_epoch) != inst.pair:
                self.fenced.setdefault(inst.pair, self._batches_of(inst.pair))
                self._settle(inst, commit=False)
                inst.pair = None

    @rule(crash=st.booleans())
    def restart(self, crash: bool) -> None:
        if not crash:
            self.core.close()
        self.core, self.c = self._start()

    # --- invariants ---------------------------------------------------------------------------
    @invariant()
    def what_a_read_committed_consumer_sees(self) -> None:
        committed = set(self.committed)
        for part in PARTITIONS:
            values, lso, hw = read_committed(self.c, part)
            assert 0 <= lso <= hw, (part, lso, hw)  # TX-20
            dup = [v for v, n in Counter(values).items() if n > 1]
            assert not dup, f"read twice on partition {part}: {dup}"  # TX-21
            leaked = [v for v in values if v not in committed]
            assert not leaked, f"read_committed returned data of no committed transaction: {leaked}"

    @invariant()
    def fenced_epochs_never_write_again(self) -> None:
        for pair, before in self.fenced.items():
            assert self._batches_of(pair) <= before, f"fenced {pair} wrote after its fencing"  # TX-3

    @invariant()
    def committed_offsets_come_from_committed_transactions(self) -> None:
        got = self.core.subsystems.offsets.get(GROUP, "t", 0)
        assert got is None or got.offset in self.good_offsets, got  # TX-23

    def teardown(self) -> None:
        try:
            # every transaction still open times out and aborts; then all committed data is there
            self.core.advance(TIMEOUT_MS * 3)  # type: ignore[attr-defined]
            seen: list[bytes] = []
            for part in PARTITIONS:
                seen.extend(read_committed(self.c, part)[0])
            assert sorted(seen) == sorted(self.committed), "committed data is missing or doubled"
            event(f"committed records at the end: {min(len(seen), 10)}{'+' if len(seen) >= 10 else ''}")
            self.core.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


TestTxnLogMachine = TxnLogMachine.TestCase
TestTxnLogMachine.settings = settings(max_examples=500 if DEEP else 100, stateful_step_count=50, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
TestTxnLogMachine = pytest.mark.rule("TX-3, TX-17, TX-20, TX-21, TX-23")(TestTxnLogMachine)
