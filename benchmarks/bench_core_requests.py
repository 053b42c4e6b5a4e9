"""The core's CPU per request, in process: bench_requests.py's frames through ``Connection``.

    python benchmarks/bench_core_requests.py [--requests 10000] [--repeat 5] [--only Produce] [--profile]
                                             [--stateful 1000]

No sockets and no client: each sample feeds ``--requests`` size-prefixed copies of one request
(fresh correlation ids) to a ``kwire.broker.connection.Connection`` in 256 KB chunks, as the
server's receive buffer hands them over, and takes the answers out as the server's writer would.
The figure is CPU µs of this process per request (``time.process_time``), the median of
``--repeat`` samples; the cases run in turns within each repetition, so a change of machine
load falls on all of them alike. ``--profile`` runs cProfile over one sample of each case
instead and prints the top functions by own time (``SORT=cumulative`` in the environment sorts
otherwise). The broker is built as ``kwire broker`` builds it (bench_requests.py's topics and
settings, a manual clock).

Stateful requests run bench_requests.py's own loops (``TxnLoop``, ``ShareLoop``) over the same
connection, ``--stateful`` iterations per sample, the untimed set-up included but not counted:
EndTxn v5 with 4 partitions (the answer), the broker tick after it that writes its 4 markers
(TX-15: they go out after the answer), the ShareFetch v2 that acquires one 10-record batch and
the ShareAcknowledge v2 that accepts it; the figure is the mean CPU µs of the timed requests.
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

from bench_requests import TOPICS, ShareLoop, TxnLoop, fetch_payload, stateless_cases  # noqa: E402

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
    for name, n in [("bench", 1), ("fetch", 1), ("txn", 4), ("share", 1), *((t, 1) for t in TOPICS)]:
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


class InProc:
    """bench_requests.py's ``Conn`` over an in-process ``Connection``: deferred answers and the
    deadlines a request leaves (transaction markers) run on the manual clock. ``timed`` is the
    CPU time (``time.process_time``) of the request's own handling, with cProfile on if ``prof``."""

    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.conn = Connection(core, min(core.cluster.nodes))
        self.corr = 1
        self.prof: cProfile.Profile | None = None

    def call(self, payload: bytearray) -> bytes:
        self.corr += 1
        _CORR.pack_into(payload, 4, self.corr)
        conn, core = self.conn, self.core
        conn.receive_data(_SIZE.pack(len(payload)) + payload)
        pieces = conn.pieces_to_send()
        while not pieces:  # deferred: let the broker's clock run to the next deadline
            nxt = core.next_deadline_ms()
            if nxt is None:
                raise RuntimeError("a deferred answer with no deadline left")
            core.advance_to(max(nxt, core.clock.now_ms()))
            for _, data in core.take_outbox():
                conn.complete(data)
            pieces = conn.pieces_to_send()
        return b"".join(pieces)[4:]

    def timed(self, payload: bytearray) -> tuple[float, bytes]:
        if self.prof is not None:
            self.prof.enable()
        t0 = time.process_time()
        answer = self.call(payload)
        dt = time.process_time() - t0
        if self.prof is not None:
            self.prof.disable()
        return dt, answer

    def tick(self) -> float:
        """The broker's next tick (what the server runs after an answer): due deadlines fired;
        CPU seconds."""
        if self.prof is not None:
            self.prof.enable()
        t0 = time.process_time()
        self.core.advance(0)
        dt = time.process_time() - t0
        if self.prof is not None:
            self.prof.disable()
        return dt


STATEFUL = ("EndTxn v5, 4 partitions", "EndTxn's markers (4 partitions, next tick)",
            "ShareFetch v2, one batch", "ShareAcknowledge v2, one batch")


def stateful(inproc: InProc, ids: dict[str, str], n: int, txn: TxnLoop, share: ShareLoop) -> dict[str, float]:
    """``n`` iterations of bench_requests.py's EndTxn and share loops; mean CPU µs per request."""
    end = markers = 0.0
    for _ in range(n):
        end += txn(inproc)
        markers += inproc.tick()
    share.fetch_times.clear()
    share.ack_times.clear()
    for _ in range(n):
        share(inproc)
    return dict(zip(STATEFUL, (end / n * 1e6, markers / n * 1e6, sum(share.fetch_times) / n * 1e6,
                               sum(share.ack_times) / n * 1e6), strict=True))


def profile_one(inproc: InProc, ids: dict[str, str], n: int, txn: TxnLoop, share: ShareLoop,
                keep: dict[str, bool]) -> None:
    """One stateful run with cProfile on for the requests ``keep`` names only."""
    prof = inproc.prof
    for _ in range(n):
        inproc.prof = prof if keep[STATEFUL[0]] else None
        txn(inproc)
        inproc.prof = prof if keep[STATEFUL[1]] else None
        inproc.tick()
    fetch_prof, ack_prof = keep[STATEFUL[2]], keep[STATEFUL[3]]
    orig = inproc.timed

    def timed(payload: bytearray) -> tuple[float, bytes]:
        api_key = struct.unpack_from(">h", payload, 0)[0]
        inproc.prof = prof if (api_key == 78 and fetch_prof) or (api_key == 79 and ack_prof) else None
        return orig(payload)

    inproc.timed = timed  # type: ignore[method-assign]
    try:
        for _ in range(n):
            share(inproc)
    finally:
        del inproc.timed
        inproc.prof = prof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="only the cases whose name contains this")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--stateful", type=int, default=1000, help="iterations of the EndTxn and share loops")
    a = ap.parse_args()
    core, ids = make_core()
    conn = Connection(core, min(core.cluster.nodes))
    inproc = InProc(core)
    txn = TxnLoop(inproc, "bench-txn")  # type: ignore[arg-type]
    share = ShareLoop(inproc, ids["share"], "bench-share")  # type: ignore[arg-type]
    do_stateful = any(a.only in k for k in STATEFUL)
    if do_stateful:
        stateful(inproc, ids, 50, txn, share)  # warm-up
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
            stats.sort_stats(__import__("os").environ.get("SORT", "tottime")).print_stats(a.top)
        if do_stateful:
            for name in STATEFUL:
                if a.only not in name:
                    continue
                inproc.prof = cProfile.Profile()
                # only the timed part of each iteration is profiled; all four share the loop
                keep = {k: k == name for k in STATEFUL}
                profile_one(inproc, ids, a.stateful, txn, share, keep)
                print(f"=== {name} ({a.stateful} requests)")
                pstats.Stats(inproc.prof).sort_stats(__import__("os").environ.get("SORT", "tottime")).print_stats(a.top)
                inproc.prof = None
        return
    samples: dict[str, list[float]] = {k: [] for k in todo}
    for _ in range(a.repeat):
        for name, chunks in todo.items():
            gc.collect()
            t0 = time.process_time()
            run(conn, chunks, name == UNCACHED)
            samples[name].append((time.process_time() - t0) / a.requests * 1e6)
        if do_stateful:
            gc.collect()
            for name, us in stateful(inproc, ids, a.stateful, txn, share).items():
                if a.only in name:
                    samples.setdefault(name, []).append(us)
    for name, s in samples.items():
        print(f"{name:45s} {statistics.median(s):7.1f} µs  ({', '.join(f'{x:.1f}' for x in sorted(s))})")


if __name__ == "__main__":
    main()
