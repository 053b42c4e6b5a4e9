"""The ``traffic`` job on a generated capture: Spark ``local[2]`` against the plain single
process (the same decoder) and against tshark decoding the same exchanges, in the same run.

    python benchmarks/bench_pipeline.py [--size-mb 1024] [--keep]

The capture (pcapng, synthetic TCP/IPv4 through ``kwire.capture.TcpFlow``, MSS 1448) carries a
mix of 16 client connections to one broker port: Produce v11 (1-8 KB record sets), Fetch v16
answers (0-32 KB), Metadata v12 (1-60 topics), Heartbeat v4, OffsetCommit v9, ApiVersions v3,
and the share-group APIs ShareGroupHeartbeat v1 / ShareFetch v1 (keys 76 and 78, which
tshark 4.0 cannot decode). Record sets are opaque bytes to the codec, so they are random.
Every engine must find every exchange. Reported per engine: wall time, CPU seconds of the whole
process tree (sampled from /proc every 0.1 s: the machine is shared, so compare CPU), MB/s and
exchanges/s. Writes benchmarks/results/pipeline.json and pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kwire.capture import PcapngWriter, TcpFlow  # noqa: E402
from kwire.protocol import encode_request, encode_response  # noqa: E402
from kwire.protocol.registry import request_class, response_class  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PLAIN_DECODE = "plain, 1 process: decode (rows counted)"
PLAIN_JOB = "plain, 1 process: traffic job (Parquet, summary, HTML)"
PLAIN_SHARDS = "plain, 2 processes at once (Pool(2)), one connection shard each: decode (rows counted)"
SPARK_ONE = "spark local[1], 1 task: decode (rows counted), warm"
EFFICIENCY_TARGET = 0.85  # the Spark decode's MB per CPU-second over the single process's (issue 24)


def _templates(rng: random.Random) -> list[tuple[int, bytes, bytes]]:
    """(weight, request payload, response payload) with correlation id 0, patched per use."""
    out: list[tuple[int, bytes, bytes]] = []

    def add(weight: int, key: int, version: int, req: Any, resp: Any) -> None:
        r = encode_request(req, version, correlation_id=0, client_id=f"bench-{key}", size_prefix=False)
        a = encode_response(resp, version, correlation_id=0, size_prefix=False)
        out.append((weight, r, a))

    Produce, ProduceResp = request_class(0), response_class(0)
    for size in (1024, 4096, 8192):
        req = Produce(acks=-1, timeout_ms=30000, topic_data=[Produce.TopicProduceData(
            name="orders", partition_data=[Produce.PartitionProduceData(index=p, records=rng.randbytes(size // 2))
                                           for p in range(2)])])
        resp = ProduceResp(responses=[ProduceResp.TopicProduceResponse(name="orders", partition_responses=[
            ProduceResp.PartitionProduceResponse(index=p, base_offset=1000 + p) for p in range(2)])])
        add(3, 0, 11, req, resp)
    Fetch, FetchResp = request_class(1), response_class(1)
    for size in (0, 2048, 16384, 32768):
        req = Fetch(max_wait_ms=500, min_bytes=1, max_bytes=52428800, session_id=7, session_epoch=3, topics=[
            Fetch.FetchTopic(topic_id=__import__("uuid").UUID(int=5), partitions=[
                Fetch.FetchPartition(partition=p, fetch_offset=100, partition_max_bytes=1048576) for p in range(4)])])
        resp = FetchResp(session_id=7, responses=[FetchResp.FetchableTopicResponse(
            topic_id=__import__("uuid").UUID(int=5), partitions=[
                FetchResp.PartitionData(partition_index=p, high_watermark=5000,
                                        records=rng.randbytes(size // 4) if size else None) for p in range(4)])])
        add(4, 1, 16, req, resp)
    Meta, MetaResp = request_class(3), response_class(3)
    for n in (1, 10, 60):
        req = Meta(topics=[Meta.MetadataRequestTopic(name=f"topic-{i}") for i in range(n)])
        resp = MetaResp(brokers=[MetaResp.MetadataResponseBroker(node_id=1, host="broker-1", port=9092)],
                        topics=[MetaResp.MetadataResponseTopic(name=f"topic-{i}", partitions=[
                            MetaResp.MetadataResponsePartition(partition_index=p, leader_id=1, replica_nodes=[1],
                                                               isr_nodes=[1]) for p in range(6)]) for i in range(n)])
        add(1, 3, 12, req, resp)
    for key, version, weight in ((12, 4, 6), (8, 9, 2), (18, 3, 1), (76, 1, 3), (78, 1, 2)):
        add(weight, key, version, request_class(key)(), response_class(key)())
    return out


def generate(path: Path, size_mb: int, seed: int = 1) -> dict[str, int]:
    rng = random.Random(seed)
    templates = _templates(rng)
    weights = [w for w, _, _ in templates]
    flows = [TcpFlow(f"10.0.{i // 200}.{i % 200 + 10}:{40000 + i}", "10.0.9.1:9092") for i in range(16)]
    corr = [0] * len(flows)
    ts = 1_763_900_000_000_000_000
    target = size_mb << 20
    exchanges = 0
    with PcapngWriter(path) as w:
        for f in flows:
            for t, frame in f.handshake(ts):
                w.write_packet(t, frame)
        written = 0
        while written < target:
            i = rng.randrange(len(flows))
            _, req, resp = rng.choices(templates, weights)[0]
            corr[i] += 1
            req_b = bytearray(req)
            struct.pack_into(">i", req_b, 4, corr[i])
            resp_b = bytearray(resp)
            struct.pack_into(">i", resp_b, 0, corr[i])
            ts += rng.randrange(20_000, 400_000)
            pkts = flows[i].send(True, struct.pack(">i", len(req_b)) + req_b, ts)
            pkts += flows[i].send(False, struct.pack(">i", len(resp_b)) + resp_b, ts + rng.randrange(100_000, 3_000_000))
            for t, frame in pkts:
                w.write_packet(t, frame)
                written += len(frame) + 32
            exchanges += 1
    return {"exchanges": exchanges, "bytes": path.stat().st_size}


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(ppid, own CPU s, CPU s of the reaped children) of a process, from /proc/PID/stat."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(f[1]), (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return "other"
    if b"java" in cmd.split(b" ", 1)[0]:
        return "jvm"
    if b"pyspark" in cmd:
        return "python_workers"
    return "other"


class CpuSampler:
    """CPU seconds of a process tree by role (``driver``, ``jvm``, ``python_workers``, ``other``).

    ``roles()`` is a snapshot: each live process's own user+system time (a JVM's counts all its
    threads), plus, for the pyspark daemon, the time of the workers it has already reaped (its
    cutime/cstime). The difference of two snapshots is exactly what the tree spent in between:
    a worker that exits in between shows up in its daemon's reaped time, with its full time, and
    its part before the first snapshot cancels out. Only a process that is born and dies between
    two snapshots *and is not reaped by a pyspark daemon* is missed (none in these runs: the
    pyspark daemon forks every Python worker, planners included). A background thread samples
    every 0.1 s so that ``seconds`` also covers a whole subprocess tree until its end.
    """

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.best: dict[int, float] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _tree(self) -> list[int]:
        kids: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                st = _stat(int(d))
                if st is not None:
                    kids.setdefault(st[0], []).append(int(d))
        out, todo = [], [self.root]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(kids.get(p, []))
        return out

    def roles(self) -> dict[str, float]:
        """CPU seconds per role, now (see the class docstring for what is counted)."""
        out = {"driver": 0.0, "jvm": 0.0, "python_workers": 0.0, "other": 0.0}
        for pid in self._tree():
            st = _stat(pid)
            if st is None:
                continue
            role = _role(pid, self.root)
            reaped = st[2] if role == "python_workers" and b"pyspark.daemon" in _cmd(pid) else 0.0
            out[role] += st[1] + reaped
        return out

    def _sample(self) -> None:
        for pid in self._tree():
            st = _stat(pid)
            if st is not None:
                # own time only: cutime would count reaped children a second time
                self.best[pid] = max(self.best.get(pid, 0.0), st[1])

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def __enter__(self) -> CpuSampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        self._t.join()

    @property
    def seconds(self) -> float:
        return sum(self.best.values())


def _cmd(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_timed(cmd: list[str], env: dict[str, str] | None = None, *, tree: bool = False) -> tuple[float, float, str]:
    """Wall and CPU seconds of a subprocess: its exact rusage once reaped (a single process), or
    with ``tree`` the /proc samples of its whole tree (a Spark driver leaves its JVM unreaped)."""
    start, before = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    with CpuSampler(proc.pid) as cpu:
        out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {err[-2000:]}")
    return wall, cpu.seconds if tree else _children_cpu() - before, out


_PLAIN = """
import sys, time
from kwire.pipeline.traffic import iter_traffic
n = sum(1 for r in iter_traffic(sys.argv[1]) if r["decode_status"] == "ok")
print(n)
"""

# The single process's decode cut into the two connection shards Spark local[2] runs, in two
# processes at once (multiprocessing.Pool(2)): the same sharding and the same two busy cores as
# Spark, without Spark. Separates what Spark costs from what sharing 2 cores costs.
_PLAIN_SHARDS = """
import sys, multiprocessing as mp
from kwire.pipeline.traffic import iter_traffic
def run(shard):
    return sum(1 for r in iter_traffic(sys.argv[1], shard=(shard, 2)) if r["decode_status"] == "ok")
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(sum(pool.map(run, [0, 1])))
"""

_PLAIN_JOB = """
import sys, tempfile, time
from kwire.pipeline.jobs import traffic_job
with tempfile.TemporaryDirectory() as out:
    res = traffic_job([sys.argv[1]], out)
print(res.tables["wire_exchanges"])
"""

# One Spark session: its start-up (cold start), then three jobs in a row: the traffic job cold (the
# session's first job pays the JVM's and the Python workers' warm-up), the traffic job again (warm:
# what every later job of a long-lived session or notebook sees), then the decode alone (read and
# count, warm). Each step's wall time and the CPU of the whole process tree per role (driver, JVM,
# Python daemon and workers; CpuSampler.roles) are reported.
_SPARK = """
import json, os, sys, tempfile, time
sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "benchmarks"))
from bench_pipeline import CpuSampler
tree = CpuSampler(os.getpid())
out = {}
def timed(name, fn):
    c, t = tree.roles(), time.perf_counter()
    n = fn()
    roles = {k: round(v - c[k], 3) for k, v in tree.roles().items()}
    out[name] = {"wall_s": time.perf_counter() - t, "cpu_s": sum(roles.values()), "cpu_by_role": roles, "exchanges": n}
    return n
def start():
    global spark, traffic_job
    from kwire.pipeline.spark import build_session
    from kwire.pipeline.spark.jobs import traffic_job
    spark = build_session(sys.argv[2], shuffle_partitions=2)
    return 0
timed("session_start", start)
with tempfile.TemporaryDirectory() as d:
    for name in ("job_cold", "job_warm") if sys.argv[4] == "jobs" else ("decode_cold",):
        timed(name, lambda: traffic_job(spark, [sys.argv[1]], d, min_partitions=int(sys.argv[3])).tables["wire_exchanges"]
              if name.startswith("job") else spark.read.format("kwire-pcap").option("minPartitions", sys.argv[3])
              .load(sys.argv[1]).where("decode_status = 'ok'").count())
for name in ("decode_warm", "decode_warm_2"):
    timed(name, lambda: spark.read.format("kwire-pcap").option("minPartitions", sys.argv[3]).load(sys.argv[1])
          .where("decode_status = 'ok'").count())
out["tasks"] = spark.read.format("kwire-pcap").option("minPartitions", sys.argv[3]).load(sys.argv[1]).rdd.getNumPartitions()
print(json.dumps(out))
spark.stop()
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default=None, help="where to write the capture (default: a temp dir)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="use the capture already in --dir")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the single-process and Spark runs")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="kwire-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    cap = work / "bench.pcapng"
    t0 = time.perf_counter()
    if args.reuse and cap.exists():
        meta_file = work / "bench.json"
        gen = json.loads(meta_file.read_text())
    else:
        gen = generate(cap, args.size_mb)
        (work / "bench.json").write_text(json.dumps(gen))
    print(f"generated {gen['bytes'] / 1e6:.0f} MB, {gen['exchanges']} exchanges in {time.perf_counter() - t0:.0f} s",
          flush=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    mb = gen["bytes"] / 1e6
    rows: list[dict[str, Any]] = []

    # The engines take turns, --repeat rounds; each row reports the median of its runs (this VM's
    # speed drifts by 10-15% over minutes, so one run each would compare different moments).
    runs: dict[str, list[dict[str, Any]]] = {}
    tasks = 0
    spark_process: dict[str, list[float]] = {"wall_s": [], "cpu_s": []}
    loads: list[float] = []
    for rnd in range(args.repeat):
        wall, cpu, out = run_timed([sys.executable, "-c", _PLAIN, str(cap)], env)
        assert int(out.split()[0]) == gen["exchanges"], (out, gen)
        runs.setdefault(PLAIN_DECODE, []).append({"wall_s": wall, "cpu_s": cpu, "exchanges": int(out.split()[0])})
        wall, cpu, out = run_timed([sys.executable, "-c", _PLAIN_JOB, str(cap)], env)
        assert int(out.split()[0]) == gen["exchanges"], (out, gen)
        runs.setdefault(PLAIN_JOB, []).append({"wall_s": wall, "cpu_s": cpu, "exchanges": int(out.split()[0])})
        wall, cpu, out = run_timed([sys.executable, "-c", _PLAIN_SHARDS, str(cap)], env)
        assert int(out.split()[0]) == gen["exchanges"], (out, gen)
        runs.setdefault(PLAIN_SHARDS, []).append({"wall_s": wall, "cpu_s": cpu, "exchanges": int(out.split()[0])})
        # local[1]: one task, no shards, one busy core: Spark's own cost per core
        _, _, out = run_timed([sys.executable, "-c", _SPARK, str(cap), "local[1]", "1", "decode"], env, tree=True)
        one = json.loads(out.strip().splitlines()[-1])
        for key in ("decode_warm", "decode_warm_2"):
            assert one[key]["exchanges"] == gen["exchanges"], (key, one[key], gen)
            runs.setdefault(SPARK_ONE, []).append(one[key])
        wall, cpu, out = run_timed([sys.executable, "-c", _SPARK, str(cap), "local[2]", "2", "jobs"], env, tree=True)
        spark = json.loads(out.strip().splitlines()[-1])
        tasks = spark["tasks"]
        spark_process["wall_s"].append(wall)
        spark_process["cpu_s"].append(cpu)
        for key, label in (("session_start", "session start-up (cold start: JVM, Python daemon)"),
                           ("job_cold", "traffic job, the session's first (cold)"),
                           ("job_warm", "traffic job, the session's second (warm)"),
                           ("decode_warm", "decode (rows counted), warm"),
                           ("decode_warm_2", "decode (rows counted), warm")):
            if key != "session_start":
                assert spark[key]["exchanges"] == gen["exchanges"], (key, spark[key], gen)
                spark[key]["exchanges"] = gen["exchanges"]
            else:
                spark[key]["exchanges"] = 0
            runs.setdefault(f"spark local[2], {tasks} tasks: {label}", []).append(spark[key])
        loads.append(os.getloadavg()[0])
        print(f"round {rnd + 1} (load {loads[-1]:.1f}):",
              {k: (round(v[-1]["wall_s"], 2), round(v[-1]["cpu_s"], 2)) for k, v in runs.items()}, flush=True)
    for engine, rs in runs.items():
        by_cpu = sorted(rs, key=lambda r: r["cpu_s"])
        row: dict[str, Any] = {"engine": engine, "exchanges": rs[0]["exchanges"],
                               "wall_s": statistics.median(r["wall_s"] for r in rs),
                               "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                               "runs_wall_s": [round(r["wall_s"], 2) for r in rs],
                               "runs_cpu_s": [round(r["cpu_s"], 2) for r in rs]}
        if "cpu_by_role" in rs[0]:  # the roles of the median-CPU run (the lower one of an even count)
            row["cpu_by_role"] = by_cpu[(len(rs) - 1) // 2]["cpu_by_role"]
        rows.append(row)
    spark_median = {k: round(statistics.median(v), 2) for k, v in spark_process.items()}

    if shutil.which("tshark"):
        # one pass: a response names its request (kafka.request_frame) once both were dissected
        wall, cpu, out = run_timed(["tshark", "-r", str(cap), "-Y", "kafka.request_frame", "-T", "fields",
                                    "-e", "kafka.api_key", "-e", "kafka.correlation_id"], env)
        per_key: dict[str, int] = {}
        for line in out.splitlines():
            if line.strip():
                key = line.split("\t")[0]
                per_key[key] = per_key.get(key, 0) + 1
        rows.append({"engine": "tshark (responses paired to their request)", "wall_s": wall, "cpu_s": cpu,
                     "exchanges": sum(per_key.values()), "per_api_key": per_key})
        print(rows[-1], flush=True)
    for r in rows:
        r["mb_per_s"] = round(mb / r["wall_s"], 1) if r["exchanges"] else None
        r["mb_per_cpu_s"] = round(mb / r["cpu_s"], 1) if r["cpu_s"] and r["exchanges"] else None
        r["exchanges_per_s"] = round(r["exchanges"] / r["wall_s"]) if r["exchanges"] else None
        r["wall_s"], r["cpu_s"] = round(r["wall_s"], 2), round(r["cpu_s"], 2)
    load = os.getloadavg()
    meta = {"capture_mb": round(mb, 1), "exchanges": gen["exchanges"], "python": platform.python_version(),
            "cores": os.cpu_count(), "load_avg_1_5_15": [round(x, 2) for x in load],
            "load_avg_1_each_round": [round(x, 2) for x in loads],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "spark_process": spark_median}
    by = {r["engine"].split(": ", 1)[-1] if r["engine"].startswith("spark local[2]") else r["engine"]: r
          for r in rows}
    plain_job = by[PLAIN_JOB]
    plain_decode = by[PLAIN_DECODE]
    decode = by["decode (rows counted), warm"]
    start = by["session start-up (cold start: JVM, Python daemon)"]
    efficiency = decode["mb_per_cpu_s"] / plain_decode["mb_per_cpu_s"]
    meta["per_core_efficiency"] = {
        "spark_decode_mb_per_cpu_s": decode["mb_per_cpu_s"], "plain_decode_mb_per_cpu_s": plain_decode["mb_per_cpu_s"],
        "ratio": round(efficiency, 3), "target": EFFICIENCY_TARGET,
        "plain_two_shards_at_once_mb_per_cpu_s": by[PLAIN_SHARDS]["mb_per_cpu_s"],
        "ratio_over_plain_two_shards_at_once": round(decode["mb_per_cpu_s"] / by[PLAIN_SHARDS]["mb_per_cpu_s"], 3),
        "spark_local1_decode_mb_per_cpu_s": by[SPARK_ONE]["mb_per_cpu_s"],
        "ratio_local1": round(by[SPARK_ONE]["mb_per_cpu_s"] / plain_decode["mb_per_cpu_s"], 3),
        "cold_start_wall_s": start["wall_s"], "cold_start_cpu_s": start["cpu_s"],
        "cold_job_extra_wall_s": round(by["traffic job, the session's first (cold)"]["wall_s"]
                                       - by["traffic job, the session's second (warm)"]["wall_s"], 2)}
    ratios = {
        "traffic job, warm": plain_job["wall_s"] / by["traffic job, the session's second (warm)"]["wall_s"],
        "traffic job, cold": plain_job["wall_s"] / by["traffic job, the session's first (cold)"]["wall_s"],
        "decode alone, warm": plain_decode["wall_s"] / decode["wall_s"],
    }
    meta["speedup_local2_over_plain"] = {k: round(v, 2) for k, v in ratios.items()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    eff = meta["per_core_efficiency"]
    lines = [
        "# traffic job: Spark local[2] vs one process vs tshark",
        "",
        f"Generated capture: {meta['capture_mb']} MB pcapng, {meta['exchanges']} exchanges on 16 connections "
        f"(`benchmarks/bench_pipeline.py`), {meta['date']}. {meta['cores']} cores, Python {meta['python']}; "
        f"the machine was shared: 1-minute load average {meta['load_avg_1_each_round']} after each round, "
        f"{meta['load_avg_1_5_15']} at the end.",
        "",
        f"**Per-core efficiency** (target >= {EFFICIENCY_TARGET}): the warm Spark decode gives "
        f"**{eff['spark_decode_mb_per_cpu_s']} MB per CPU-second** against the single process's "
        f"**{eff['plain_decode_mb_per_cpu_s']}**, **{eff['ratio']:.2f}x**. The same two shards decoded by two plain "
        f"processes at once give {eff['plain_two_shards_at_once_mb_per_cpu_s']} MB/cpu-s (Spark local[2] "
        f"{eff['ratio_over_plain_two_shards_at_once']:.2f}x that); Spark local[1] (one task, one busy core) gives "
        f"{eff['spark_local1_decode_mb_per_cpu_s']} MB/cpu-s, **{eff['ratio_local1']:.2f}x** the single process. "
        f"Cold start beside it: the session "
        f"start-up takes {eff['cold_start_wall_s']} s ({eff['cold_start_cpu_s']} CPU-s), and the session's first "
        f"job {eff['cold_job_extra_wall_s']} s more than the next.",
        "",
        "Wall-time ratios, Spark local[2] over the single process: "
        + ", ".join(f"{k} **{v:.2f}x**" for k, v in ratios.items()) + ".",
        "",
        "| engine | exchanges found | wall s (median) | wall s of each run | cpu s (median) | cpu s of each run | "
        "MB/s | MB/cpu-s | exchanges/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        each = ", ".join(map(str, r.get("runs_wall_s", [])))
        each_cpu = ", ".join(map(str, r.get("runs_cpu_s", [])))
        lines.append(f"| {r['engine']} | {r['exchanges'] or ''} | {r['wall_s']} | {each} | {r['cpu_s']} | {each_cpu} | "
                     f"{r['mb_per_s'] or ''} | {r['mb_per_cpu_s'] or ''} | {r['exchanges_per_s'] or ''} |")
    lines += ["", "Where the Spark rows' CPU went (the median-CPU run; driver = the Python driver process, jvm = "
              "the JVM's threads, python_workers = the pyspark daemon, the planner and task workers, reaped ones "
              "included):", "", "| engine | driver | jvm | python_workers |", "| --- | --- | --- | --- |"]
    for r in rows:
        if "cpu_by_role" in r:
            c = r["cpu_by_role"]
            lines.append(f"| {r['engine']} | {c['driver']:.2f} | {c['jvm']:.2f} | {c['python_workers']:.2f} |")
    ours = rows[0]["exchanges"]
    assert ours == gen["exchanges"]
    lines += ["", f"{args.repeat} rounds, the engines taking turns; each row gives the medians of its runs (the warm "
              f"decode runs twice a round). CPU seconds: the single process's exact rusage once reaped; a Spark "
              f"step's, the difference of two CpuSampler.roles() snapshots of the driver's process tree taken "
              f"around it. The Spark rows are steps timed inside one session; the whole Spark process (session "
              f"start-up included) took "
              f"{spark_median['wall_s']} s and {spark_median['cpu_s']} CPU-s (medians).",
              "", f"Every engine had to find {gen['exchanges']} exchanges. Per api key, tshark paired: "
              + ", ".join(f"{k}: {v}" for k, v in sorted(rows[-1].get("per_api_key", {}).items())) + f" (kwire: all {ours}).",
              "", "tshark version: " + (subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
                                        .splitlines()[0] if shutil.which("tshark") else "not installed")]
    notes = RESULTS / "pipeline.notes.md"
    if notes.exists():
        lines += ["", notes.read_text().rstrip()]
    (RESULTS / "pipeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.keep and not args.dir:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
