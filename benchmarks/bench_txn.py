"""Transactional throughput: confluent-kafka producing in transactions and consuming with
``isolation.level=read_committed``, through kwire and through librdkafka's in-process mock
cluster, in the same run, with the same client settings.

    python benchmarks/bench_txn.py [--transactions 100] [--per-txn 1000] [--size 100] [--repeat 3]

kwire runs as its own process (``kwire broker``), as users run it; the librdkafka mock runs
inside a helper client's threads (as in bench_broker.py). Each run uses a fresh 4-partition topic
and a fresh ``transactional.id``: ``init_transactions()``, then ``--transactions`` times
begin_transaction, ``--per-txn`` produce() calls (round-robin over the partitions), and
commit_transaction; the time is from the first begin to the last commit's return. Then a
read_committed consumer (assigned to every partition at offset 0, no auto-commit) reads every
record back. 100 x 1,000 records stay within the mock's retained tail of a partition (~300k
records over the topic, see bench_broker.py). Each broker runs ``--repeat`` times, alternating;
the median run is reported with the spread. The first run also reads the clients' statistics:
requests per transaction and the Fetch answers' sizes (where the brokers' answers differ in shape).

A correctness phase, not timed, runs once per broker on its own topic: 20 transactions of 1,000
records, aborted and committed in turn (each aborted one flushed first, so its records are in the
log before the abort), then one transaction left open. A read_committed consumer must return the
10,000 committed records once each and none of the aborted or open ones; a read_uncommitted
consumer shows that all 21,000 were written.
Writes benchmarks/results/txn.json and txn.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from _kwire_process import KwireProcess
from confluent_kafka import Consumer, Producer, TopicPartition, libversion
from confluent_kafka import version as ck_version

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 4
CHECK_TOPIC = "txn-check"
CHECK_TXNS = 20  # aborted and committed in turn, then one left open

# librdkafka's defaults, with what matters spelled out (transactional.id implies idempotence,
# acks=all); the consumer reads committed records only and commits no offsets.
PRODUCER: dict[str, Any] = {"acks": "all", "compression.type": "none"}
CONSUMER: dict[str, Any] = {"group.id": "bench-txn", "enable.auto.commit": False,
                            "isolation.level": "read_committed"}

NOTES = """## Notes

- The mock does not implement read_committed (librdkafka {librdkafka}'s mock, as measured by the
  correctness check above). Its Fetch answer carries no aborted-transaction list and a
  LastStableOffset equal to the high watermark, as `rd_kafka_mock_handle_Fetch` in librdkafka's
  `src/rdkafka_mock_handlers.c` writes them (`#Aborted` 0, `end_offset` as the LSO; later
  librdkafka sources record aborted ranges and an LSO in the mock). So on the mock a read_committed
  consumer gets aborted records, and records of a transaction still open; it does write the
  COMMIT/ABORT markers. kwire keeps the LSO behind the first open transaction and answers the
  aborted transactions of the fetched range, as a Kafka broker does, and the client drops them.
  The consume figures compare a broker that does the read_committed work with one that skips it;
  in this workload no transaction is aborted or open while the consumer reads, so the records
  delivered are the same on both.
- Fetch answers differ in shape, as in bench_broker.py: the mock writes at most one stored batch
  per partition into a Fetch answer; kwire answers whole batches up to the partition's and the
  request's byte limits (KIP-74). See the Fetch columns. Neither broker was changed to look like
  the other.
- Per transaction the producer sends AddPartitionsToTxn (once the first record of each partition
  is queued), its Produce requests and EndTxn; commit_transaction() flushes and then waits for
  EndTxn. The produce figure is therefore a round-trip figure: the per-transaction request counts
  and the median commit_transaction() time are in the table.
- Where kwire's produce time goes (measured separately, same workload, librdkafka's statistics and
  the kwire process's CPU from `/proc/<pid>/task/*/schedstat`): each transaction is a chain of
  round trips (AddPartitionsToTxn, then four Produce requests of ~27 KB, then EndTxn, each stage
  waiting for the one before), so per-request latency sets the figure, not bulk throughput (in
  bench_broker.py, with large pipelined requests, kwire produces at about the mock's rate).
  Produce round trip p50: 639 us on kwire, 63 us on the mock; AddPartitionsToTxn/EndTxn round trip
  p50: about 300 us on kwire, 24 us on the mock. The kwire process uses 1.0-1.4 ms of CPU per
  transaction (170-230 us per request) on two cores shared with the client's producing thread and
  librdkafka's threads. cProfile of an in-process kwire broker: about a third of the broker
  thread's busy time is `sendmsg` (on loopback the kernel delivers the answer and wakes the
  client's thread inside that call); the rest is Python: request decoding, batch validation and
  append, the COMMIT markers EndTxn writes (one per partition), response encoding. The mock
  answers in C, inside the client's process. kwire was not changed for this benchmark.
- After the per-request work of issue 24 (benchmarks/results/requests.md and requests.notes.md:
  codec lookups once per API version, cached ApiVersions and Metadata answers, the authorizer's and
  the config store's no-op paths, share settings resolved once, a Produce fast path): the Produce
  requests of this benchmark are transactional (a TransactionalId, TV2 verification), so they take
  the general produce path, which the fast path does not cover; its appends got cheaper (the one
  append path is shared), the rest did not change. EndTxn (4 partitions, a COMMIT marker per
  partition) costs about 50-55 µs of broker CPU in process, before and after. The ratio above is a
  consequence of that chain of round trips and of the machine's load during the run (shown in the
  header), not a target.
- The timed phases are short (about 0.2-0.35 s of produce and 0.1 s of consume per run), so the
  consume figures in particular move between runs; see the runs in brackets.
- Two cores here: the client's threads, the mock's thread (in the client process) and kwire's
  process share them, so run-to-run spread is large; the runs in brackets show it.
"""


def _value(tag: bytes, txn: int, i: int, size: int) -> bytes:
    head = tag + b"%05d:%05d:" % (txn, i)
    return head + b"v" * max(0, size - len(head))


def _produce(p: Producer, topic: str, value: bytes, partition: int) -> None:
    while True:
        try:
            p.produce(topic, value, partition=partition)
            return
        except BufferError:
            p.poll(0.01)


def _stats_after(client: Any, latest: list[str], deadline: float) -> dict[str, Any]:
    """The client's next statistics document (librdkafka emits them from poll())."""
    latest.clear()
    while not latest and time.perf_counter() < deadline:
        client.poll(0.05)
    if not latest:
        return {}
    return json.loads(latest[-1])


def _requests(stats: dict[str, Any]) -> Counter[str]:
    """Requests sent, summed over every broker handle (including the coordinator handles)."""
    total: Counter[str] = Counter()
    for b in stats.get("brokers", {}).values():
        total.update({k: v for k, v in b.get("req", {}).items() if v})
    return total


def produce_txns(bootstrap: str, topic: str, txns: int, per_txn: int, size: int, txn_id: str,
                 stats: dict[str, Any] | None = None) -> tuple[float, list[float]]:
    """Seconds from the first begin_transaction to the last commit_transaction's return, and
    each commit_transaction()'s seconds."""
    latest: list[str] = []
    extra: dict[str, Any] = {}
    if stats is not None:
        extra = {"statistics.interval.ms": 200, "stats_cb": latest.append}
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **PRODUCER, **extra})
    p.init_transactions(60)
    md = p.list_topics(topic, timeout=30)
    got = len(md.topics[topic].partitions)
    if got != PARTITIONS:
        raise RuntimeError(f"{topic} has {got} partitions, not {PARTITIONS}")
    before: Counter[str] = Counter()
    if stats is not None:
        before = _requests(_stats_after(p, latest, time.perf_counter() + 10))
    values = [_value(b"C", 0, i, size) for i in range(per_txn)]
    commits: list[float] = []
    t0 = time.perf_counter()
    for _t in range(txns):
        p.begin_transaction()
        for i, v in enumerate(values):
            _produce(p, topic, v, i % PARTITIONS)
        c0 = time.perf_counter()
        p.commit_transaction(60)
        commits.append(time.perf_counter() - c0)
    dt = time.perf_counter() - t0
    if stats is not None:
        after = _requests(_stats_after(p, latest, time.perf_counter() + 10))
        sent = after - before
        stats.update({k: round(sent[k] / txns, 2) for k in ("AddPartitionsToTxn", "Produce", "EndTxn")})
    return dt, commits


def consume(bootstrap: str, topic: str, n: int, fetch_stats: dict[str, Any] | None = None) -> tuple[float, int]:
    """Seconds to read ``n`` records read_committed from offset 0, and how many more arrived in
    the second after (none are expected); ``fetch_stats`` (if given) gets the consumer's Fetch
    request count and received bytes, read after the timed part."""
    latest: list[str] = []
    extra: dict[str, Any] = {}
    if fetch_stats is not None:
        extra = {"statistics.interval.ms": 200, "stats_cb": latest.append}
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER, **extra})
    c.assign([TopicPartition(topic, i, 0) for i in range(PARTITIONS)])
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + 600
    while got < n and time.perf_counter() < deadline:
        msgs = c.consume(10_000, 1.0)
        got += sum(1 for m in msgs if not m.error())
    dt = time.perf_counter() - t0
    if got < n:
        c.close()
        raise RuntimeError(f"consumed {got} of {n}")
    extra_records = got - n
    drain_until = time.perf_counter() + 1.0
    while time.perf_counter() < drain_until:
        extra_records += sum(1 for m in c.consume(10_000, 0.2) if not m.error())
    if fetch_stats is not None:
        s = _stats_after(c, latest, time.perf_counter() + 10)
        brokers = s.get("brokers", {}).values()
        fetches = sum(b["req"].get("Fetch", 0) for b in brokers)
        rx = sum(b["rxbytes"] for b in brokers)
        fetch_stats.update(fetch_requests=fetches, received_bytes=rx,
                           bytes_per_fetch=round(rx / fetches) if fetches else 0)
    c.close()
    return dt, extra_records


def _read_all(bootstrap: str, topic: str, isolation: str, expect: int) -> Counter[bytes]:
    """Every record's value read from offset 0 with ``isolation``: until ``expect`` arrived
    (or 30 s passed), then two more seconds for any that should not be there."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-txn-check", "enable.auto.commit": False,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, i, 0) for i in range(PARTITIONS)])
    seen: Counter[bytes] = Counter()
    deadline = time.perf_counter() + 30
    while sum(seen.values()) < expect and time.perf_counter() < deadline:
        for m in c.consume(10_000, 0.5):
            if not m.error():
                seen[m.value()[:12]] += 1
    drain_until = time.perf_counter() + 2.0
    while time.perf_counter() < drain_until:
        for m in c.consume(10_000, 0.2):
            if not m.error():
                seen[m.value()[:12]] += 1
    c.close()
    return seen


def check_isolation(bootstrap: str, per_txn: int, size: int, txn_id: str) -> dict[str, Any]:
    """Aborted and committed transactions in turn, one left open; what read_committed returns."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **PRODUCER})
    p.init_transactions(60)
    for t in range(CHECK_TXNS):
        tag = b"A" if t % 2 == 0 else b"C"
        p.begin_transaction()
        for i in range(per_txn):
            _produce(p, CHECK_TOPIC, _value(tag, t, i, size), i % PARTITIONS)
        if tag == b"A":
            if p.flush(60):
                raise RuntimeError("aborted transaction's records not written")
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
    p.begin_transaction()  # left open while the consumers read
    for i in range(per_txn):
        _produce(p, CHECK_TOPIC, _value(b"O", CHECK_TXNS, i, size), i % PARTITIONS)
    if p.flush(60):
        raise RuntimeError("open transaction's records not written")
    committed_expected = CHECK_TXNS // 2 * per_txn
    committed = _read_all(bootstrap, CHECK_TOPIC, "read_committed", committed_expected)
    uncommitted = _read_all(bootstrap, CHECK_TOPIC, "read_uncommitted", (CHECK_TXNS + 1) * per_txn)
    p.abort_transaction(60)

    def count(seen: Counter[bytes], tag: bytes) -> int:
        return sum(v for k, v in seen.items() if k[:1] == tag)

    out = {
        "committed_records_expected": committed_expected,
        "read_committed": {"committed": count(committed, b"C"), "aborted": count(committed, b"A"),
                           "open": count(committed, b"O"),
                           "duplicates": sum(v - 1 for v in committed.values() if v > 1)},
        "read_uncommitted_total": sum(uncommitted.values()),
    }
    rc = out["read_committed"]
    out["ok"] = (rc["committed"] == committed_expected and rc["aborted"] == 0 and rc["open"] == 0
                 and rc["duplicates"] == 0)
    return out


class KwireBroker(KwireProcess):
    """``kwire broker`` in its own process, with every topic the run will use created up front."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__([f"{t}:{PARTITIONS}" for t in topics])


class RdkafkaMock:
    """librdkafka's mock cluster; it lives as long as this handle and auto-creates topics
    (with 4 partitions, its default; checked before each run)."""

    def __init__(self) -> None:
        self.holder = Producer({"test.mock.num.brokers": 1})
        md = self.holder.list_topics(timeout=10)
        self.bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())


def _rates(values: list[float]) -> dict[str, Any]:
    rates = sorted(values)
    return {"median": round(statistics.median(rates)), "runs": [round(x) for x in rates]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transactions", type=int, default=100)
    ap.add_argument("--per-txn", type=int, default=1_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    txns, per_txn, size, repeat = args.transactions, args.per_txn, args.size, args.repeat
    n = txns * per_txn
    names = ["kwire", "librdkafka_mock"]
    kwire = KwireBroker([f"txn-{i}" for i in range(repeat)] + [CHECK_TOPIC])
    mock = RdkafkaMock()
    bootstrap = {"kwire": kwire.bootstrap, "librdkafka_mock": mock.bootstrap}
    tag = uuid.uuid4().hex[:8]
    produce_s: dict[str, list[float]] = {name: [] for name in names}
    consume_s: dict[str, list[float]] = {name: [] for name in names}
    commit_s: dict[str, list[float]] = {name: [] for name in names}
    extra_records: dict[str, int] = {name: 0 for name in names}
    producer_requests: dict[str, dict[str, Any]] = {name: {} for name in names}
    fetches: dict[str, dict[str, Any]] = {name: {} for name in names}
    checks: dict[str, Any] = {}
    try:
        for i in range(repeat):
            order = names if i % 2 == 0 else list(reversed(names))
            for name in order:
                topic = f"txn-{i}"
                dt, commits = produce_txns(bootstrap[name], topic, txns, per_txn, size, f"bench-txn-{tag}-{name}-{i}",
                                           producer_requests[name] if i == 0 else None)
                produce_s[name].append(dt)
                commit_s[name] += commits
                ct, extra = consume(bootstrap[name], topic, n, fetches[name] if i == 0 else None)
                consume_s[name].append(ct)
                extra_records[name] += extra
        for name in names:
            checks[name] = check_isolation(bootstrap[name], per_txn, size, f"bench-txn-{tag}-{name}-check")
    finally:
        kwire.close()
    results: dict[str, Any] = {}
    for name in names:
        prod = _rates([n / s for s in produce_s[name]])
        results[name] = {
            "produce_records_per_s": prod["median"],
            "produce_records_per_s_runs": prod["runs"],
            "produce_transactions_per_s": round(prod["median"] / per_txn, 1),
            "commit_transaction_ms_median": round(statistics.median(commit_s[name]) * 1000, 2),
            "consume_records_per_s": (cons := _rates([n / s for s in consume_s[name]]))["median"],
            "consume_records_per_s_runs": cons["runs"],
            "records_beyond_expected": extra_records[name],
            "producer_requests_per_txn_run_0": producer_requests[name],
            "fetch_run_0": fetches[name],
        }
    k, m = results["kwire"], results["librdkafka_mock"]
    ratios = {"produce_throughput": round(k["produce_records_per_s"] / m["produce_records_per_s"], 2),
              "consume_throughput": round(k["consume_records_per_s"] / m["consume_records_per_s"], 2)}
    ck = ck_version()
    out: dict[str, Any] = {
        "workload": f"confluent-kafka: {txns} transactions of {per_txn} records of {size} bytes (acks=all, no "
                    f"compression), each committed, into a fresh {PARTITIONS}-partition topic, timed from the first "
                    f"begin_transaction to the last commit_transaction; then all {n} records read back with "
                    f"isolation.level=read_committed from offset 0; median of {repeat} runs per broker, "
                    f"brokers alternating",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load": os.getloadavg()[0]},
        "versions": {"confluent_kafka": ck if isinstance(ck, str) else ck[0], "librdkafka": libversion()[0]},
        "clients": {"producer": PRODUCER, "consumer": CONSUMER},
        "results": results,
        "ratios_kwire_over_mock": ratios,
        "isolation_check": {
            "workload": f"{CHECK_TXNS} transactions of {per_txn} records, aborted (flushed first) and committed "
                        f"in turn, then one left open; read back from offset 0 with read_committed and "
                        f"read_uncommitted",
            **checks,
        },
    }
    res_dir = ROOT / "benchmarks" / "results"
    res_dir.mkdir(parents=True, exist_ok=True)
    (res_dir / "txn.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Transactional throughput\n\n{out['workload']}. Load average at the end: "
             f"{out['machine']['load']:.1f} on {out['machine']['cpus']} CPUs.\n",
             "| broker | produce rec/s (median; runs) | transactions/s | commit_transaction() ms (median) "
             "| consume read_committed rec/s (median; runs) | AddPartitionsToTxn / Produce / EndTxn per txn "
             f"| Fetch requests for {n // 1000}k records | bytes per Fetch answer |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        r = results[name]
        q = r["producer_requests_per_txn_run_0"]
        f = r["fetch_run_0"]
        lines.append(
            f"| {name} | {r['produce_records_per_s']:,} ({', '.join(f'{x:,}' for x in r['produce_records_per_s_runs'])}) "
            f"| {r['produce_transactions_per_s']} | {r['commit_transaction_ms_median']} "
            f"| {r['consume_records_per_s']:,} ({', '.join(f'{x:,}' for x in r['consume_records_per_s_runs'])}) "
            f"| {q.get('AddPartitionsToTxn', '?')} / {q.get('Produce', '?')} / {q.get('EndTxn', '?')} "
            f"| {f.get('fetch_requests', '?')} | {f.get('bytes_per_fetch', 0):,} |")
    lines.append(f"\nkwire / librdkafka mock: produce {ratios['produce_throughput']}x, "
                 f"consume {ratios['consume_throughput']}x\n")
    lines += ["## Correctness: aborted and open transactions under read_committed\n",
              f"{out['isolation_check']['workload']}. Expected from read_committed: "
              f"{CHECK_TXNS // 2 * per_txn:,} committed records, each once, and nothing else.\n",
              "| broker | committed | aborted | open | duplicates | read_uncommitted total | verdict |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for name in names:
        c = checks[name]
        rc = c["read_committed"]
        lines.append(f"| {name} | {rc['committed']:,} | {rc['aborted']:,} | {rc['open']:,} | {rc['duplicates']:,} "
                     f"| {c['read_uncommitted_total']:,} | {'pass' if c['ok'] else 'FAIL'} |")
    beyond = {name: results[name]["records_beyond_expected"] for name in names}
    lines.append(f"\nIn the timed runs each consumer read {n:,} records; records that arrived in the second after "
                 f"the last expected one (none expected), summed over the runs: "
                 f"{', '.join(f'{k} {v}' for k, v in beyond.items())}.\n")
    lines.append(NOTES.format(librdkafka=libversion()[0]))
    (res_dir / "txn.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
