"""Two kwire trees side by side: the same requests to a broker from each, in turns.

    python benchmarks/bench_requests_ab.py BASE_DIR [--seq 1500] [--pipelined 10000] [--rounds 3]

A before/after comparison on a shared machine, where bench_requests.py's kwire-vs-bare figures
move with other processes' load: both brokers (``python -m kwire broker`` started in BASE_DIR
and in this tree, bench_requests.py's topics) are up at once and every request kind of
bench_requests.py's stateless set (and a Fetch at the log end) is measured on one, then the
other, ``--rounds`` times; the median of the rounds is printed per tree: sequential round trip
(median µs of ``--seq``) and pipelined requests/s (a burst of ``--pipelined``). BASE_DIR is a
checkout of an older commit (``git archive <commit> | tar -x -C DIR``, with the built C
extensions copied in). Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_requests as br  # noqa: E402


def start(root: Path) -> tuple[subprocess.Popen[str], int]:
    """``kwire broker`` of the tree at ``root`` (its own kwire imported: started there)."""
    topics = ["bench:1", "fetch:1", *(f"{t}:1" for t in br.TOPICS)]
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet",
                             *[a for t in topics for a in ("--topic", t)]], stdout=subprocess.PIPE, text=True,
                            cwd=root)
    assert proc.stdout is not None
    m = re.search(r"bootstrap servers \S+:(\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise RuntimeError(f"kwire in {root} did not start")
    return proc, int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("--seq", type=int, default=1500)
    ap.add_argument("--pipelined", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    trees = {"base": a.base.resolve(), "this": ROOT}
    procs = {name: start(root) for name, root in trees.items()}
    try:
        conns = {name: br.Conn(port) for name, (_, port) in procs.items()}
        cases = {c.name: c.payload for c in br.stateless_cases() if c.payload is not None}
        ids = {name: br.kwire_topic_ids(port) for name, (_, port) in procs.items()}
        seq: dict[tuple[str, str], list[float]] = {}
        rps: dict[tuple[str, str], list[float]] = {}
        for _ in range(a.rounds):
            for cname, payload in [*cases.items(), ("Fetch v17, nothing new (MaxWaitMs 0)", None)]:
                for t, conn in conns.items():
                    if payload is None:
                        hw = br.decode(1, 17, conn.call(br.fetch_payload(ids[t]["fetch"], 0))).responses[0] \
                            .partitions[0].high_watermark
                        body = br.fetch_payload(ids[t]["fetch"], hw)
                    else:
                        body = payload
                    s = [conn.timed(body)[0] for _ in range(a.seq)]
                    seq.setdefault((cname, t), []).append(statistics.median(s) * 1e6)
                    rps.setdefault((cname, t), []).append(a.pipelined / conn.burst(body, a.pipelined))
        print("| request | base µs | this µs | base req/s pipelined | this req/s pipelined |")
        print("|---|---:|---:|---:|---:|")
        for cname in [*cases, "Fetch v17, nothing new (MaxWaitMs 0)"]:
            b, t = (statistics.median(seq[(cname, x)]) for x in ("base", "this"))
            bp, tp = (statistics.median(rps[(cname, x)]) for x in ("base", "this"))
            print(f"| {cname} | {b:.1f} | {t:.1f} | {bp:,.0f} | {tp:,.0f} |")
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
