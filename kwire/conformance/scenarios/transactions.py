"""Transactions (KIP-98, KIP-890): two transactional producers of one client interleave commits and
aborts over three partitions; the client's own read_committed consumer must see every committed
record exactly once, in order, and no aborted one (TX-20, TX-21).

The plan (``PLAN``) is fixed so a failure names the step: producer A's transactions span all three
partitions while B's are open on the same ones, so markers and aborted ranges interleave in every
log. The last transaction on every partition commits, so a consumer that reads as many records as
were committed has read past every aborted range: an aborted record that leaks shows up in what it
read. Where the broker's control says how long each log is, the scenario also checks that the
aborted records and one marker per partition and transaction are in the logs (TX-18).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kwire.conformance.clients.base import ClientAdapter, Record, TxnProducerSession
from kwire.conformance.scenarios.base import BrokerControl, ClusterControl, ScenarioResult, unique_name
from kwire.errors import ConformanceError

__all__ = ["transactions", "PLAN"]

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
