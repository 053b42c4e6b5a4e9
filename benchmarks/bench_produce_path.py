"""The broker's produce path, in process: CPU µs per Produce request through ``BrokerCore.handle``.

    python benchmarks/bench_produce_path.py [--requests 20000] [--records 10] [--repeat 9]

What the core does for one Produce request (decode, the one append path, the data dir's
write-ahead, the ``before_answer`` hooks, the answer), without sockets or a client, so that a
change to what runs after every handler (the persistence hooks) shows up in the number rather
than in the noise of a client. Two brokers: without a data dir and with one (the segment write
and flush per batch). Each sample sends ``--requests`` acks=all requests of one batch of
``--records`` 100-byte records to a 1-partition topic; the median of ``--repeat`` samples is
reported, both brokers interleaved. Also the cost of the ``before_answer`` hooks alone (the
data dir's journal checks) per request when nothing changed. Writes benchmarks/results/produce_path.json and .md when
``--write`` is given (a before/after comparison is two runs of this script on two commits).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kwire.broker.config import BrokerConfig  # noqa: E402
from kwire.broker.core.broker_core import BrokerCore  # noqa: E402
from kwire.broker.handlers import load_handlers  # noqa: E402
from kwire.clock import ManualClock  # noqa: E402
from kwire.protocol import encode_request  # noqa: E402
from kwire.protocol.messages.produce import (  # noqa: E402
    ProduceRequest,
    ProduceRequest_PartitionProduceData,
    ProduceRequest_TopicProduceData,
)
from kwire.records import BatchBuilder  # noqa: E402

TOPIC = "bench"


def _frames(n: int, records: int) -> list[bytes]:
    b = BatchBuilder(0)
    for i in range(records):
        b.append(b"v" * 100, key=b"k%d" % i, timestamp_ms=1_750_000_000_000 + i)
    data = b.build()
    out = []
    for corr in range(1, n + 1):
        req = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[ProduceRequest_TopicProduceData(
            name=TOPIC, partition_data=[ProduceRequest_PartitionProduceData(index=0, records=data)])])
        out.append(encode_request(req, 9, correlation_id=corr, client_id="bench", size_prefix=False))
    return out


def _sample(data_dir: str | None, frames: list[bytes]) -> float:
    """CPU µs of this process per request for one fresh core (CPU time, not wall time: other
    processes on a shared machine move wall time far more than the path itself)."""
    core = BrokerCore(BrokerConfig(data_dir=data_dir), ManualClock(1_750_000_000_000), handlers=load_handlers())
    try:
        core.create_topic(TOPIC, 1, 1)
        conn = core.connect(min(core.cluster.nodes))
        gc.collect()
        t0 = time.process_time()
        for f in frames:
            out = core.handle(conn, bytearray(f))
            if out.kind != "send":
                raise RuntimeError(f"produce answered {out.kind}")
        return (time.process_time() - t0) / len(frames) * 1e6
    finally:
        core.close()


def _hooks_ns(data_dir: str, calls: int = 1_000_000) -> float:
    """ns of CPU per run of the core's ``before_answer`` hooks when nothing changed (what every
    Produce pays for the data dir's journals)."""
    core = BrokerCore(BrokerConfig(data_dir=data_dir), ManualClock(1_750_000_000_000), handlers=load_handlers())
    try:
        hooks = list(core.before_answer)
        t0 = time.process_time()
        for _ in range(calls):
            for fn in hooks:
                fn()
        return (time.process_time() - t0) / calls * 1e9
    finally:
        core.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--records", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--write", action="store_true", help="write benchmarks/results/produce_path.{json,md}")
    args = ap.parse_args()
    frames = _frames(args.requests, args.records)
    runs: dict[str, list[float]] = {"memory": [], "data_dir": []}
    for _ in range(args.repeat):
        runs["memory"].append(_sample(None, frames))
        with tempfile.TemporaryDirectory(prefix="kwire-bench-") as d:
            runs["data_dir"].append(_sample(d, frames))
    with tempfile.TemporaryDirectory(prefix="kwire-bench-") as d:
        hooks = sorted(_hooks_ns(d) for _ in range(args.repeat))
    result: dict[str, Any] = {
        "before_answer_ns": {"median": statistics.median(hooks), "runs": hooks},
        "requests": args.requests, "records_per_request": args.records, "repeat": args.repeat,
        "python": platform.python_version(), "machine": platform.platform(),
        "us_per_request": {k: {"median": statistics.median(v), "runs": sorted(v)} for k, v in runs.items()},
    }
    print(f"before_answer hooks: {result['before_answer_ns']['median']:.0f} ns per request when nothing changed")
    for k, v in result["us_per_request"].items():
        spread = ", ".join(f"{x:.1f}" for x in v["runs"])
        print(f"{k:>9}: {v['median']:.1f} µs/request (median of {len(v['runs'])}: {spread})")
    if args.write:
        out = ROOT / "benchmarks" / "results"
        (out / "produce_path.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
