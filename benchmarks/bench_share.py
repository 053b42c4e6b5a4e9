"""Share-group consume throughput: confluent-kafka's ShareConsumer (explicit ACCEPT of every
record) against kwire and against librdkafka's mock cluster (share groups v1), and the Java
KafkaShareConsumer against kwire, in the same run.

    python benchmarks/bench_share.py [--records 1000000] [--size 100] [--repeat 3]

kwire runs as its own process (``kwire broker``). The librdkafka mock keeps a bounded tail of each
partition (it served 45,508 of 100,000 records written to one), so on both brokers the records go
in rounds of 20,000 into a fresh one-partition topic,
produced first (not timed) and then consumed by one share consumer of a fresh share group that
starts at the earliest offset; the time is from the consumer's creation to the commit of the
last acknowledgement. The median run is reported with the spread; the first run also counts the
client's polls that returned records, per round (where the brokers' answers differ in shape).
Writes benchmarks/results/share.json and share.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _kwire_process import KwireProcess
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer, libversion
from confluent_kafka import version as ck_version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ROUND = 20_000  # the mock keeps a bounded tail per partition (it served 45,508 of 100,000)

JAVA_CONSUMER = """
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareBench {
    public static void main(String[] a) {
        int rounds = Integer.parseInt(a[1]), perRound = Integer.parseInt(a[2]);
        long total = 0;
        for (int r = 0; r < rounds; r++) {
            Properties p = new Properties();
            p.put("bootstrap.servers", a[0]);
            p.put("group.id", a[3] + r);
            p.put("share.acknowledgement.mode", "explicit");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            long t0 = System.nanoTime();
            try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
                c.subscribe(List.of(a[4] + r));
                int got = 0;
                while (got < perRound) {
                    for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(500))) {
                        c.acknowledge(rec, AcknowledgeType.ACCEPT);
                        got++;
                    }
                }
                c.commitSync();
            }
            total += System.nanoTime() - t0;
        }
        System.out.println("seconds " + total / 1e9);
    }
}
"""


def produce(bootstrap: str, topic: str, n: int, size: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    value = b"x" * size
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def consume(bootstrap: str, topic: str, group: str, n: int) -> tuple[float, int]:
    """Seconds to share-consume and ACCEPT ``n`` records, and how many polls returned records."""
    t0 = time.perf_counter()
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit",
                       "log_level": 3})
    c.subscribe([topic])
    got = polls = 0
    deadline = time.monotonic() + 300
    while got < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{got} of {n} records in 300 s")
        msgs = c.poll(0.5) or []
        if msgs:
            polls += 1
        for m in msgs:
            if m.error() is None:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                got += 1
    c.commit_sync()
    elapsed = time.perf_counter() - t0
    c.close()
    return elapsed, polls


class KwireBroker(KwireProcess):
    """``kwire broker`` in its own process with the run's topics; share groups start at earliest."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__([f"{t}:1" for t in topics])

    def earliest(self, group: str) -> None:
        from kwire.client import WireClient
        from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC

        with WireClient(self.bootstrap) as c:
            resp = c.request(IAC(resources=[IAC.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
                IAC.AlterableConfig(name="share.auto.offset.reset", config_operation=0, value="earliest")])]))
            assert resp.responses[0].error_code == 0, resp

    def stats(self) -> Any:
        return None


class MockBroker:
    """librdkafka's mock cluster (through ctypes, in this process) with share groups at earliest."""

    def __init__(self) -> None:
        from kwire.conformance.rdkafka_mock import RdkafkaMock

        self.mock = RdkafkaMock(1, proxy=False)
        lib = self.mock._lib
        lib.rd_kafka_mock_sharegroup_set_auto_offset_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_sharegroup_set_auto_offset_reset(self.mock._mc, 1)  # 1 = earliest
        self.bootstrap = self.mock.direct_bootstrap

    def create(self, topic: str) -> None:
        self.mock.create_topic(topic, 1)

    def earliest(self, group: str) -> None:
        """Set cluster-wide in ``__init__``."""

    def close(self) -> None:
        self.mock.close()


def java_run(bootstrap: str, rounds: int, n: int, group: str, topic: str) -> float | None:
    from kwire.conformance.paths import java_lib_dir

    java, javac = shutil.which("java"), shutil.which("javac")
    jars = sorted(java_lib_dir().glob("*.jar"))
    if java is None or javac is None or not jars:
        return None
    build = ROOT / ".cache" / "bench_share"
    build.mkdir(parents=True, exist_ok=True)
    (build / "ShareBench.java").write_text(JAVA_CONSUMER)
    cp = ":".join(map(str, jars))
    subprocess.run([javac, "-cp", cp, "-d", str(build), str(build / "ShareBench.java")], check=True)
    out = subprocess.run([java, "-cp", f"{build}:{cp}", "ShareBench", bootstrap, str(rounds), str(n), group, topic],
                         capture_output=True, text=True, timeout=900, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n, size, repeat = args.records, args.size, args.repeat
    rounds = (n + ROUND - 1) // ROUND
    per_round = min(n, ROUND)
    # kwire's topics exist up front: confluent runs, then the Java runs.
    kwire_topics = [f"k{i}-{r}" for i in range(repeat) for r in range(rounds)]
    kwire_topics += [f"java-t{r}" for r in range(rounds)]
    kwire = KwireBroker(kwire_topics)
    mock = MockBroker()
    seconds: dict[str, list[float]] = {"kwire": [], "librdkafka_mock": []}
    polls: dict[str, float] = {}
    java_s: float | None = None
    try:
        for i in range(repeat):
            order = ["kwire", "librdkafka_mock"] if i % 2 == 0 else ["librdkafka_mock", "kwire"]
            for name in order:
                total = 0.0
                poll_count = 0
                for r in range(rounds):
                    topic, group = (f"k{i}-{r}", f"kg{i}-{r}") if name == "kwire" else (f"m{i}-{r}", f"mg{i}-{r}")
                    broker: Any = kwire if name == "kwire" else mock
                    if name == "librdkafka_mock":
                        mock.create(topic)
                    produce(broker.bootstrap, topic, per_round, size)
                    broker.earliest(group)
                    s, p = consume(broker.bootstrap, topic, group, per_round)
                    total += s
                    poll_count += p
                seconds[name].append(total)
                if i == 0:
                    polls[name] = poll_count / rounds
        for r in range(rounds):
            produce(kwire.bootstrap, f"java-t{r}", per_round, size)
            kwire.earliest(f"java-g{r}")
        java_s = java_run(kwire.bootstrap, rounds, per_round, "java-g", "java-t")
    finally:
        kwire.close()
        mock.close()
    total_records = rounds * per_round
    rates = {name: sorted(total_records / s for s in runs) for name, runs in seconds.items()}
    med = {name: statistics.median(r) for name, r in rates.items()}
    out: dict[str, Any] = {
        "workload": f"share-consume {total_records} records of {size} bytes with explicit ACCEPT of each record, in "
                    f"rounds of {per_round} (one fresh 1-partition topic and share group each, produced first, "
                    f"not timed); median of {repeat} runs per broker, brokers alternating",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {"confluent_kafka": ck_version()[0], "librdkafka": libversion()[0]},
        "confluent_kafka_share_consumer": {
            name: {"records_per_s": round(med[name]), "runs": [round(x) for x in rates[name]],
                   "polls_with_records_per_round": round(polls.get(name, 0))} for name in seconds},
        "ratio_kwire_over_mock": round(med["kwire"] / med["librdkafka_mock"], 2),
        "java_share_consumer_on_kwire_records_per_s": None if java_s is None else round(total_records / java_s),
    }
    res = ROOT / "benchmarks" / "results"
    res.mkdir(parents=True, exist_ok=True)
    (res / "share.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Share-group consume throughput\n\n{out['workload']}.\n",
             "| client | broker | records/s (median; runs) | polls with records per round |", "|---|---|---:|---:|"]
    for name, r in out["confluent_kafka_share_consumer"].items():
        lines.append(f"| confluent-kafka ShareConsumer | {name} | {r['records_per_s']:,} "
                     f"({', '.join(f'{x:,}' for x in r['runs'])}) | {r['polls_with_records_per_round']} |")
    if java_s is not None:
        lines.append(f"| Java KafkaShareConsumer 4.3 | kwire | {out['java_share_consumer_on_kwire_records_per_s']:,} "
                     f"(one run) | |")
    lines.append(f"\nkwire / librdkafka mock (confluent-kafka): {out['ratio_kwire_over_mock']}x\n")
    lines.append("""## Notes

- The shapes differ: kwire acquires as a Kafka broker does (whole log batches up to MaxRecords,
  soft, AQ-3, and MaxBytes), so a ShareFetch answer carries up to the client's max records (500 by
  default for librdkafka) in the batches that hold them; the mock's answers are shaped by its own
  rules (one stored batch per partition, as with its Fetch). The "polls with records" column shows the
  consequence on the client side. Neither broker was changed to look like the other.
- Acknowledgements: kwire applies them through the share-partition state table (per-batch state
  split into per-offset state when a batch is acknowledged in parts) and moves the start offset.
""")
    (res / "share.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
