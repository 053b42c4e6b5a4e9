"""Transactions (KIP-98, KIP-890): two transactional producers of one client interleave commits and
aborts over three partitions; the client's own read_committed consumer must see every committed
record exactly once, in order, and no aborted one (TX-20, TX-21).

The plan (``PLAN``) is fixed so a failure names the step: producer A's transactions span all three
partitions while B's are open on the same ones, so markers and aborted ranges interleave in every
log. The last transaction on every partition commits, so a consumer that reads as many records as
were committed has read past every aborted range: an aborted record that leaks shows up in what it
read. Where the broker's control says how long each log is, the scenario also checks that the
aborted records and one marker per partition and transaction are in the logs (TX-18).

The window scenarios (``WINDOW_SCENARIOS``) need a broker that can hold the markers a commit
leaves for later (``TxnWindowControl``: kwire's ``hold_txn_markers``), so every client walks the
path Kafka's marker latency opens (TX-15): the next transaction right after a commit retries
CONCURRENT_TRANSACTIONS, a read_committed consumer sees nothing of a commit until its markers,
offsets sent in the transaction stay pending until then.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kwire.conformance.clients.base import ClientAdapter, Record, TxnProducerSession
from kwire.conformance.scenarios.base import BrokerControl, ClusterControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["transactions", "PLAN", "TxnWindowControl", "WINDOW_SCENARIOS", "txn_commit_then_next",
           "txn_read_committed_window", "txn_offsets_window"]

SCENARIO = "transactions"
PARTITIONS = 3


@dataclass(frozen=True, slots=True)
class Step:
    producer: str  # "a" or "b"
    op: str  # begin, send, commit, abort
    partitions: tuple[int, ...] = ()  # send: one record to each, in order


# Transaction n of a producer is "a1", "a2", ...; its records are named "<txn>-p<partition>-<i>".
PLAN: tuple[Step, ...] = (
    Step("a", "begin"), Step("a", "send", (0, 1)),
    Step("b", "begin"), Step("b", "send", (1, 2)),
    Step("a", "send", (2, 0)),
    Step("a", "commit"),  # a1 committed: p0 x2, p1, p2
    Step("b", "send", (0,)),
    Step("b", "abort"),  # b1 aborted: p1, p2, p0
    Step("a", "begin"), Step("a", "send", (0, 2)),
    Step("b", "begin"), Step("b", "send", (1, 0)),
    Step("a", "abort"),  # a2 aborted: p0, p2
    Step("b", "send", (2,)),
    Step("b", "commit"),  # b2 committed: p1, p0, p2
    Step("a", "begin"), Step("a", "send", (1, 1, 2)),
    Step("a", "commit"),  # a3 committed: the last transaction on p1 and p2
    Step("b", "begin"), Step("b", "send", (0,)),
    Step("b", "commit"),  # b3 committed: the last on p0
)


def transactions(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Two transactional producers interleave commits and aborts on 3 partitions; a read_committed
    consumer reads back every committed record once, in order, and no aborted one."""
    if adapter.no_transactions is not None:
        return ScenarioResult.skipped(adapter.name, SCENARIO, adapter.no_transactions)
    topic = unique_name(f"kw-txn-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    producers: dict[str, TxnProducerSession] = {}
    try:
        for name in ("a", "b"):
            producers[name] = adapter.start_txn_producer(bootstrap, topic, unique_name(f"kw-txn-{name}"))
        committed, aborted, markers = _run_plan(adapter.name, producers)
        for session in producers.values():
            session.stop()
    finally:
        for session in producers.values():
            if not session.closed:
                session.kill()

    got, positions = adapter.consume_committed(bootstrap, topic, count=sum(map(len, committed.values())),
                                               timeout_s=45)
    by_part: dict[int, list[bytes]] = defaultdict(list)
    for r in sorted(got, key=lambda r: (r.partition or 0, r.offset or 0)):
        by_part[r.partition if r.partition is not None else -1].append(r.value or b"")
    leaked = sorted(v.decode() for vs in by_part.values() for v in vs if v in aborted)
    if leaked:
        return ScenarioResult.failed(adapter.name, SCENARIO, f"read_committed returned aborted records (TX-21): {leaked}")
    for part in range(PARTITIONS):
        want = committed.get(part, [])
        have = by_part.get(part, [])
        if have != want:
            return ScenarioResult.failed(
                adapter.name, SCENARIO,
                f"partition {part}: read_committed read {[v.decode() for v in have]}, "
                f"committed in order were {[v.decode() for v in want]}")
    details: dict[str, object] = {"topic": topic, "committed": sum(map(len, committed.values())),
                                  "aborted": len(aborted)}
    if positions is not None:
        # TX-21: a read_committed consumer stands past the last committed record it returned and
        # never past the log end.
        ends = control.end_offsets(topic) if isinstance(control, ClusterControl) else {}
        last = {p: max((r.offset or 0) for r in got if r.partition == p) for p in by_part if p >= 0}
        for p in range(PARTITIONS):
            pos = positions.get(p)
            if pos is None or pos <= last.get(p, -1) or (p in ends and pos > ends[p]):
                return ScenarioResult.failed(
                    adapter.name, SCENARIO, f"partition {p}: read_committed position {pos} after reading up to "
                                            f"offset {last.get(p)} (log end {ends.get(p)})")
        details["positions"] = {str(p): o for p, o in sorted(positions.items())}
    if isinstance(control, ClusterControl):
        ends = control.end_offsets(topic)
        data = {p: len(committed.get(p, [])) + sum(1 for v in aborted if v.split(b"-")[1] == f"p{p}".encode())
                for p in range(PARTITIONS)}
        for p in range(PARTITIONS):
            if ends.get(p) != data[p] + markers[p]:
                return ScenarioResult.failed(
                    adapter.name, SCENARIO,
                    f"partition {p} ends at {ends.get(p)}: {data[p]} records and {markers[p]} markers were "
                    f"expected (one marker per transaction that wrote there, TX-18)")
        details["markers"] = sum(markers.values())
    return ScenarioResult.passed(adapter.name, SCENARIO, **details)


def _run_plan(client: str, producers: dict[str, TxnProducerSession]
              ) -> tuple[dict[int, list[bytes]], set[bytes], dict[int, int]]:
    """Play ``PLAN``: the committed values per partition in log order, the aborted values, and how
    many markers each partition must hold."""
    count = {"a": 0, "b": 0}
    open_txn: dict[str, list[tuple[int, bytes, int]]] = {"a": [], "b": []}  # (partition, value, offset)
    committed_at: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
    aborted: set[bytes] = set()
    markers: dict[int, int] = defaultdict(int)
    for n, step in enumerate(PLAN):
        p = producers[step.producer]
        where = f"step {n + 1} ({step.producer} {step.op})"
        try:
            if step.op == "begin":
                count[step.producer] += 1
                p.begin()
            elif step.op == "send":
                txn = f"{step.producer}{count[step.producer]}"
                base = len(open_txn[step.producer])
                records = [Record(None, f"{txn}-p{part}-{base + i}".encode(), (), partition=part)
                           for i, part in enumerate(step.partitions)]
                acks = p.send(records)
                for rec, ack in zip(records, acks, strict=True):
                    if ack.partition not in (None, rec.partition):
                        raise ConformanceError(f"{client}: {where}: asked for partition {rec.partition}, "
                                               f"acknowledged on {ack.partition}")
                    open_txn[step.producer].append((rec.partition or 0, rec.value or b"", ack.offset or 0))
            else:
                p.commit() if step.op == "commit" else p.abort()
                sent = open_txn[step.producer]
                for part in {part for part, _, _ in sent}:
                    markers[part] += 1
                if step.op == "commit":
                    committed_at.extend((part, off, v) for part, v, off in sent)
                else:
                    aborted.update(v for _, v, _ in sent)
                open_txn[step.producer] = []
        except ConformanceError as exc:
            raise ConformanceError(f"{where}: {exc}") from exc
    committed: dict[int, list[bytes]] = defaultdict(list)
    for part, _, v in sorted(committed_at):
        committed[part].append(v)
    return committed, aborted, markers


# --- the window between EndTxn's answer and the markers (TX-15) ---------------------------------
@runtime_checkable
class TxnWindowControl(Protocol):
    """A broker that can widen the window between EndTxn's answer and the transaction markers
    (kwire's ``Broker.hold_txn_markers``); scenarios that need it skip against other brokers."""

    def hold_txn_markers(self, hold_ms: int | None = None) -> None:
        """Markers of transactions that end from now on wait ``hold_ms`` (None: until released)."""

    def release_txn_markers(self) -> int:
        """Stop holding: waiting markers are written now; returns how many transactions waited."""

    def concurrent_transactions(self) -> int:
        """How many CONCURRENT_TRANSACTIONS answers the coordinator has given so far."""


WINDOW_HOLD_MS = 15_000  # the longest the markers are held while the client retries
WINDOW_RETRIES = 3  # CONCURRENT_TRANSACTIONS answers before they are let go
UNSTABLE_OFFSET_COMMIT = 88


def _window_skip(adapter: ClientAdapter, scenario: str, control: BrokerControl,
                 commit_at_exit: bool = False) -> ScenarioResult | None:
    if adapter.no_transactions is not None and not (commit_at_exit and adapter.txn_commit_at_exit):
        return ScenarioResult.skipped(adapter.name, scenario, adapter.no_transactions)
    if not isinstance(control, TxnWindowControl):
        return ScenarioResult.skipped(adapter.name, scenario,
                                      f"{control.name} cannot hold transaction markers (kwire's control API can)")
    return None


def _values(records: Sequence[Record]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.partition or 0, r.offset or 0)):
        out[r.partition if r.partition is not None else -1].append(r.value or b"")
    return dict(out)


def _txn_records(name: str, partitions: Sequence[int]) -> list[Record]:
    return [Record(None, f"{name}-p{p}-{i}".encode(), (), partition=p) for i, p in enumerate(partitions)]


def _by_partition(records: Sequence[Record]) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = defaultdict(list)
    for r in records:
        out[r.partition or 0].append(r.value or b"")
    return dict(out)


def txn_commit_then_next(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """TX-15: commit, then at once the next transaction while the broker holds the first one's markers
    (PrepareCommit): the client retries CONCURRENT_TRANSACTIONS and loses nothing."""
    scenario = "txn_commit_then_next"
    skip = _window_skip(adapter, scenario, control)
    if skip is not None:
        return skip
    assert isinstance(control, TxnWindowControl)
    topic = unique_name(f"kw-txnwin-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    first, second = _txn_records("t1", (0, 1, 2)), _txn_records("t2", (0, 1, 2, 0))
    producer = adapter.start_txn_producer(bootstrap, topic, unique_name("kw-txnwin"))
    try:
        producer.begin()
        producer.send(first)
        before = control.concurrent_transactions()
        control.hold_txn_markers()
        started = time.monotonic()
        done = threading.Event()
        releaser = threading.Thread(target=_release_after_retries, args=(control, before, done), daemon=True)
        try:
            producer.commit()  # answered at PrepareCommit: the markers wait
            releaser.start()  # until the client met CONCURRENT_TRANSACTIONS a few times
            producer.begin()
            producer.send(second)  # the next transaction: CONCURRENT_TRANSACTIONS until the markers land
        finally:
            done.set()
            if releaser.is_alive():
                releaser.join()
            control.release_txn_markers()
        waited = time.monotonic() - started
        producer.commit()
        producer.stop()
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, f"the client did not ride out the PrepareCommit "
                                                             f"window (TX-15): {exc}")
    finally:
        if not producer.closed:
            producer.kill()
    retried = control.concurrent_transactions() - before
    if retried == 0:
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"the second transaction's send finished after {waited:.1f}s without one "
                                     f"CONCURRENT_TRANSACTIONS answer: it never met the window (TX-15)")
    want = _by_partition(first + second)
    got = _values(adapter.consume(bootstrap, topic, group_id=None, count=len(first) + len(second), timeout_s=45,
                                  config=adapter.read_committed_config))
    if got != want:
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"read_committed read {_show(got)}, both transactions committed {_show(want)}")
    return ScenarioResult.passed(adapter.name, scenario, topic=topic, concurrent_transactions=retried,
                                 window_s=round(waited, 2))


def _release_after_retries(control: TxnWindowControl, before: int, done: threading.Event) -> None:
    """Let the held markers go once the client has been answered CONCURRENT_TRANSACTIONS
    ``WINDOW_RETRIES`` times (it walked its retry path), after ``WINDOW_HOLD_MS`` at most, or
    not at all when the scenario is done first (it releases them itself)."""
    deadline = time.monotonic() + WINDOW_HOLD_MS / 1000
    while not done.is_set() and time.monotonic() < deadline:
        if control.concurrent_transactions() - before >= WINDOW_RETRIES:
            control.release_txn_markers()
            return
        done.wait(0.02)
    if not done.is_set():
        control.release_txn_markers()


def txn_read_committed_window(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """TX-15, TX-20: a committed transaction whose markers the broker holds is invisible to a
    read_committed consumer (the LSO stays at its first offset) until the markers land; then all of it."""
    scenario = "txn_read_committed_window"
    skip = _window_skip(adapter, scenario, control, commit_at_exit=True)
    if skip is not None:
        return skip
    assert isinstance(control, TxnWindowControl)
    topic = unique_name(f"kw-txnrc-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    tid = unique_name("kw-txnrc")
    if adapter.no_transactions is not None:
        # kcat commits one transaction per run, at exit: one partition per run here
        visible, held = _txn_records("t1", (0,)), _txn_records("t2", (0, 0))
        producer = None
    else:
        visible, held = _txn_records("t1", (0, 1, 2)), _txn_records("t2", (2, 1, 0, 1))
        producer = adapter.start_txn_producer(bootstrap, topic, tid)

    def commit(records: list[Record]) -> None:
        if producer is None:
            adapter.produce(bootstrap, topic, records, config={"transactional.id": tid})
            return
        producer.begin()
        producer.send(records)
        producer.commit()

    released = False
    total = len(visible) + len(held)
    try:
        commit(visible)  # markers on the next tick: read_committed reads it (shows the consumer reads)
        control.hold_txn_markers()
        commit(held)  # answered; the markers wait until released
        early = _values(adapter.consume(bootstrap, topic, group_id=None, count=total, timeout_s=10,
                                        config=adapter.read_committed_config))
        control.release_txn_markers()
        released = True
        if producer is not None:
            producer.stop()
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, str(exc))
    finally:
        if not released:
            control.release_txn_markers()
        if producer is not None and not producer.closed:
            producer.kill()
    if early != _by_partition(visible):
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"with the second commit's markers held, read_committed read {_show(early)}; "
                                     f"only the first transaction {_show(_by_partition(visible))} is decided (TX-15, "
                                     f"TX-20)")
    want = _by_partition(visible + held)
    late = _values(adapter.consume(bootstrap, topic, group_id=None, count=total, timeout_s=45,
                                   config=adapter.read_committed_config))
    if late != want:
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"after the markers, read_committed read {_show(late)}, committed were "
                                     f"{_show(want)}")
    return ScenarioResult.passed(adapter.name, scenario, topic=topic, held=len(held))


def txn_offsets_window(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """TX-15, TX-23: offsets sent with sendOffsetsToTransaction stay pending while the commit's markers
    are held (OffsetFetch with RequireStable: UNSTABLE_OFFSET_COMMIT) and become the group's
    committed offsets when they land."""
    scenario = "txn_offsets_window"
    skip = _window_skip(adapter, scenario, control)
    if skip is not None:
        return skip
    assert isinstance(control, TxnWindowControl)
    topic = unique_name(f"kw-txnoff-{adapter.name}")
    group = unique_name(f"kw-txnoff-{adapter.name}")
    control.create_topic(topic, PARTITIONS)
    offsets = {(topic, 0): 5, (topic, 2): 9}
    producer = adapter.start_txn_producer(bootstrap, topic, unique_name("kw-txnoff"))
    released = False
    try:
        producer.begin()
        producer.send(_txn_records("t1", (1,)))
        producer.send_offsets(group, offsets)
        control.hold_txn_markers()
        producer.commit()
        during = _stable_offsets(bootstrap, group, topic, [0, 2])
        control.release_txn_markers()
        released = True
        producer.stop()
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, str(exc))
    finally:
        if not released:
            control.release_txn_markers()
        if not producer.closed:
            producer.kill()
    if during != {0: (UNSTABLE_OFFSET_COMMIT, -1), 2: (UNSTABLE_OFFSET_COMMIT, -1)}:
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"with the commit's markers held, OffsetFetch(RequireStable) answered {during}; "
                                     f"the transaction's offsets must stay pending: UNSTABLE_OFFSET_COMMIT (TX-23)")
    deadline = time.monotonic() + 15
    after = _stable_offsets(bootstrap, group, topic, [0, 2])
    while after != {0: (0, 5), 2: (0, 9)} and time.monotonic() < deadline:
        time.sleep(0.1)
        after = _stable_offsets(bootstrap, group, topic, [0, 2])
    if after != {0: (0, 5), 2: (0, 9)}:
        return ScenarioResult.failed(adapter.name, scenario,
                                     f"after the markers, OffsetFetch(RequireStable) answered {after}; the committed "
                                     f"transaction staged offsets 5 and 9 (TX-23)")
    return ScenarioResult.passed(adapter.name, scenario, topic=topic, group=group)


def _stable_offsets(bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    """(error code, committed offset) per partition from OffsetFetch v7 with RequireStable, asked of
    the group's coordinator."""
    from kwire.client import WireClient
    from kwire.protocol.messages.find_coordinator import FindCoordinatorRequest
    from kwire.protocol.messages.offset_fetch import OffsetFetchRequest

    with WireClient(bootstrap, client_id="kwire-conformance") as wc:
        found = wc.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), version=4)
        node = found.coordinators[0].node_id
        wc.metadata_nodes()
        resp = wc.request(OffsetFetchRequest(group_id=group, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]),
            node=node, version=7)
    if resp.error_code:
        raise ConformanceError(f"OffsetFetch for {group} answered error {resp.error_code}")
    return {p.partition_index: (p.error_code, p.committed_offset) for t in resp.topics for p in t.partitions}


def _show(by_part: dict[int, list[bytes]]) -> str:
    return str({p: [v.decode() for v in vs] for p, vs in sorted(by_part.items())})


WINDOW_SCENARIOS = {
    "txn_commit_then_next": txn_commit_then_next,
    "txn_read_committed_window": txn_read_committed_window,
    "txn_offsets_window": txn_offsets_window,
}
