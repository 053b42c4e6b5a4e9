"""The core's CPU per request, in process: bench_requests.py's frames through ``Connection``.

    python benchmarks/bench_core_requests.py [--requests 10000] [--repeat 5] [--only Produce] [--profile]

No sockets and no client: each sample feeds ``--requests`` size-prefixed copies of one request
(fresh correlation ids) to a ``kwire.broker.connection.Connection`` in 256 KB chunks, as the
server's receive buffer hands them over, and takes the answers out as the server's writer would.
The figure is CPU µs of this process per request (``time.process_time``), the median of
``--repeat`` samples; the cases run in turns within each repetition, so a change of machine
load falls on all of them alike. ``--profile`` runs cProfile over one sample of each case
instead and prints the top functions by own time. The broker is built as ``kwire broker``
builds it (bench_requests.py's topics and settings, a manual clock).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_requests import TOPICS, fetch_payload, stateless_cases  # noqa: E402

from kwire.broker.config import BrokerConfig  # noqa: E402
from kwire.broker.connection import Connection  # noqa: E402
from kwire.broker.core.broker_core import BrokerCore  # noqa: E402
from kwire.broker.handlers import load_handlers  # noqa: E402
from kwire.clock import ManualClock  # noqa: E402

_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
_CHUNK = 256 * 1024


def make_core() -> tuple[BrokerCore, dict[str, str]]:
    core = BrokerCore(BrokerConfig(settings={"group.initial.rebalance.delay.ms": "0"}), ManualClock(1_750_000_000_000),
                      handlers=load_handlers())
    for name, n in [("bench", 1), ("fetch", 1), *((t, 1) for t in TOPICS)]:
        core.create_topic(name, n, 1)
    ids = {t.name: str(t.topic_id) for t in core.cluster.topics.values()}
    return core, ids


def frames(payload: bytearray, n: int) -> list[bytes]:
    """``n`` size-prefixed copies in 256 KB chunks (fresh correlation ids)."""
    p = bytearray(payload)
    buf = bytearray()
    for i in range(n):
        _CORR.pack_into(p, 4, i + 2)
        buf += _SIZE.pack(len(p)) + p
    return [bytes(buf[i:i + _CHUNK]) for i in range(0, len(buf), _CHUNK)]


UNCACHED = "Metadata v12, 10 topics, not from the cache"


def run(conn: Connection, chunks: list[bytes], uncached: bool = False) -> None:
    """Feed the chunks, take the answers. ``uncached``: the Metadata answer cache is bypassed
    (the cost of a first request, or of one after the cluster changed)."""
    from kwire.broker.handlers import metadata

    key = getattr(metadata, "_cache_key", None)  # None: a kwire without the cache
    if uncached and key is not None:
        metadata._cache_key = lambda *a: None
    try:
        for c in chunks:
            conn.receive_data(c)
            conn.pieces_to_send()
    finally:
        if key is not None:
            metadata._cache_key = key
    if conn.closed:
        raise RuntimeError(f"the broker closed the connection: {conn.close_reason}")


def cases(core: BrokerCore, ids: dict[str, str]) -> dict[str, bytearray]:
    out: dict[str, bytearray] = {}
    for c in stateless_cases():
        if c.name.startswith("ApiVersions"):
            continue
        assert c.payload is not None
        out[c.name] = c.payload
        if c.name == "Metadata v12, 10 topics":
            out[UNCACHED] = c.payload
    out["Fetch v17, nothing new"] = fetch_payload(ids["fetch"], 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="only the cases whose name contains this")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    core, ids = make_core()
    conn = Connection(core, min(core.cluster.nodes))
    selected = {k: v for k, v in cases(core, ids).items() if a.only in k}
    todo = {k: frames(v, a.requests) for k, v in selected.items()}
    for k, v in selected.items():  # warm-up (the fetch case reads the empty partition's end: nothing new)
        run(conn, frames(v, 100), k == UNCACHED)
    if a.profile:
        for name, chunks in todo.items():
            prof = cProfile.Profile()
            prof.enable()
            run(conn, chunks, name == UNCACHED)
            prof.disable()
            print(f"=== {name}")
            stats = pstats.Stats(prof)
            stats.sort_stats("tottime").print_stats(a.top)
        return
    samples: dict[str, list[float]] = {k: [] for k in todo}
    for _ in range(a.repeat):
        for name, chunks in todo.items():
            gc.collect()
            t0 = time.process_time()
            run(conn, chunks, name == UNCACHED)
            samples[name].append((time.process_time() - t0) / a.requests * 1e6)
    for name, s in samples.items():
        print(f"{name:45s} {statistics.median(s):7.1f} µs  ({', '.join(f'{x:.1f}' for x in sorted(s))})")


if __name__ == "__main__":
    main()
