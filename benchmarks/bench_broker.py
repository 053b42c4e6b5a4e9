"""Broker throughput: confluent-kafka producing and consuming through kwire and through
librdkafka's in-process mock cluster, in the same run, with the same client settings.

    python benchmarks/bench_broker.py [--records 1000000] [--size 100]

kwire runs as its own process (``kwire broker``), as users run it; the librdkafka mock runs
inside a helper client's threads. The mock keeps only a bounded tail of each partition (a
consumer starting at offset 0 after ~300k records gets OFFSET_OUT_OF_RANGE), so the records
go in rounds of 100,000 into a fresh topic each, and every record produced is consumed back on
both brokers. Writes benchmarks/results/broker.json and broker.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition, libversion
from confluent_kafka import version as ck_version

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 4
ROUND = 100_000

PRODUCER_SETTINGS = {"linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000,
                     "queue.buffering.max.kbytes": 2_000_000, "acks": "all", "compression.type": "none"}
CONSUMER_SETTINGS = {"group.id": "bench", "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
                     "max.partition.fetch.bytes": 10_485_760, "queued.max.messages.kbytes": 1_000_000}


def produce(bootstrap: str, topic: str, n: int, size: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    value = b"v" * size
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
        if i % 20_000 == 0:
            p.poll(0)
    left = p.flush(300)
    dt = time.perf_counter() - t0
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return dt


def consume(bootstrap: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, **CONSUMER_SETTINGS})
    c.assign([TopicPartition(topic, i, 0) for i in range(PARTITIONS)])
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + 600
    while got < n and time.perf_counter() < deadline:
        msgs = c.consume(10_000, 1.0)
        got += sum(1 for m in msgs if not m.error())
    dt = time.perf_counter() - t0
    c.close()
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")
    return dt


def rounds(bootstrap: str, n: int, size: int) -> dict[str, float]:
    """Produce then consume ``n`` records in rounds of ROUND, each round in a fresh topic."""
    total = {"produce_s": 0.0, "consume_s": 0.0}
    done = 0
    r = 0
    while done < n:
        k = min(ROUND, n - done)
        topic = f"bench-{r}"
        total["produce_s"] += produce(bootstrap, topic, k, size)
        total["consume_s"] += consume(bootstrap, topic, k)
        done += k
        r += 1
    return total


def run_kwire(n: int, size: int) -> dict[str, float]:
    topics = [a for r in range((n + ROUND - 1) // ROUND) for a in ("--topic", f"bench-{r}:{PARTITIONS}")]
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *topics],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        if not m:
            raise RuntimeError(f"kwire broker did not start: {line!r}")
        return rounds(m.group(1), n, size)
    finally:
        proc.terminate()
        proc.wait(30)


def run_rdkafka_mock(n: int, size: int) -> dict[str, float]:
    # The mock lives as long as this handle; it auto-creates topics with 4 partitions on first use.
    holder = Producer({"test.mock.num.brokers": 1})
    md = holder.list_topics(timeout=10)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    return rounds(bootstrap, n, size)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    n, size = args.records, args.size
    results = {"kwire": run_kwire(n, size), "librdkafka_mock": run_rdkafka_mock(n, size)}
    out = {
        "workload": f"confluent-kafka: produce {n} records of {size} bytes (acks=all, no compression) in rounds "
                    f"of {ROUND} into a fresh {PARTITIONS}-partition topic each, consuming every round back",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {"confluent_kafka": ck_version()[0], "librdkafka": libversion()[0]},
        "results": {},
    }
    for name, r in results.items():
        out["results"][name] = {
            "produce_s": round(r["produce_s"], 3), "consume_s": round(r["consume_s"], 3),
            "produce_records_per_s": round(n / r["produce_s"]), "consume_records_per_s": round(n / r["consume_s"]),
            "produce_mb_per_s": round(n * size / r["produce_s"] / 1e6, 1),
            "consume_mb_per_s": round(n * size / r["consume_s"] / 1e6, 1),
        }
    k, m = out["results"]["kwire"], out["results"]["librdkafka_mock"]
    out["ratios_kwire_over_mock"] = {
        "produce_throughput": round(k["produce_records_per_s"] / m["produce_records_per_s"], 2),
        "consume_throughput": round(k["consume_records_per_s"] / m["consume_records_per_s"], 2),
    }
    res_dir = ROOT / "benchmarks" / "results"
    res_dir.mkdir(parents=True, exist_ok=True)
    (res_dir / "broker.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Broker throughput\n\n{out['workload']}.\n", "| broker | produce rec/s | consume rec/s |",
             "|---|---:|---:|"]
    for name, r in out["results"].items():
        lines.append(f"| {name} | {r['produce_records_per_s']:,} | {r['consume_records_per_s']:,} |")
    rat = out["ratios_kwire_over_mock"]
    lines.append(f"\nkwire / librdkafka mock: produce {rat['produce_throughput']}x, consume {rat['consume_throughput']}x")
    (res_dir / "broker.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
