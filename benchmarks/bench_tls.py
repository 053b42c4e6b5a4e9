"""What TLS costs on kwire: handshakes per second, and produce/consume throughput over SSL as a
ratio to PLAINTEXT, in the same run against the same broker.

    python benchmarks/bench_tls.py [--records 50000] [--size 1024] [--handshakes 200] [--repeat 3]

One ``kwire broker --port 0 --tls --quiet`` process (PLAINTEXT and SSL listeners, a throwaway CA),
as users run it. Measured from this process:
- handshakes/s: sequential connects to the SSL listener, each a full TLS handshake (TLS 1.3,
  ECDSA P-256 certificate from trustme) and one ApiVersions round trip, with Python's ``ssl``;
  the same loop against PLAINTEXT gives the connection cost without TLS;
- produce: confluent-kafka (librdkafka) produces ``--records`` records of ``--size`` bytes to a
  1-partition topic (acks=all, linger 5 ms, no compression), MB/s from the first send to the
  last delivery report;
- consume: a groupless consumer reads them all back, MB/s.
Each listener is measured ``--repeat`` times, PLAINTEXT and SSL alternating; the best run of
each counts. The load average is recorded before and after (the machine may be shared).
Writes benchmarks/results/tls.json and tls.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from kwire.protocol import decode_response, encode_request  # noqa: E402
from kwire.protocol.messages.api_versions import ApiVersionsRequest  # noqa: E402

_API_VERSIONS = encode_request(ApiVersionsRequest(client_software_name="bench", client_software_version="1"), 3,
                               correlation_id=1, client_id="bench-tls")


class _Broker:
    """``kwire broker --tls`` in its own process; listeners and the CA file from its ready file."""

    def __init__(self, topics: list[str]) -> None:
        self.ready = Path(os.environ.get("TMPDIR", "/tmp")) / f"kwire-bench-tls-{os.getpid()}.json"
        self.ready.unlink(missing_ok=True)
        args = [a for t in topics for a in ("--topic", t)]
        self.proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--tls", "--quiet",
                                      "--ready-file", str(self.ready), *args],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        deadline = time.monotonic() + 60
        while not self.ready.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("kwire broker --tls did not start")
            time.sleep(0.05)
        info = json.loads(self.ready.read_text())
        self.listeners: dict[str, str] = info["listeners"]
        self.ca_file: str = info["ca_file"]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.ready.unlink(missing_ok=True)


def _addr(servers: str) -> tuple[str, int]:
    host, port = servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _round_trip(sock: Any) -> None:
    sock.sendall(_API_VERSIONS)
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    size = int.from_bytes(head, "big")
    body = b""
    while len(body) < size:
        body += sock.recv(size - len(body))
    assert decode_response(body, 18, 3).body.error_code == 0


def connections_per_second(servers: str, n: int, ctx: ssl.SSLContext | None) -> float:
    addr = _addr(servers)
    start = time.perf_counter()
    for _ in range(n):
        raw = socket.create_connection(addr, timeout=30)
        # Without it the client's Finished and its first request wait out the broker's delayed ACK (40 ms)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s: Any = ctx.wrap_socket(raw, server_hostname="localhost") if ctx is not None else raw
        try:
            _round_trip(s)
        finally:
            s.close()
    return n / (time.perf_counter() - start)


def produce_mb_s(conf: dict[str, Any], topic: str, records: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer({**conf, "linger.ms": 5, "acks": "all", "queue.buffering.max.messages": records + 1000,
                  "batch.size": 1_000_000})
    value = os.urandom(size)
    done = [0]

    def delivered(err: Any, _msg: Any) -> None:
        assert err is None, err
        done[0] += 1

    start = time.perf_counter()
    for _ in range(records):
        p.produce(topic, value, callback=delivered)
        p.poll(0)
    p.flush(120)
    elapsed = time.perf_counter() - start
    assert done[0] == records, f"{done[0]} of {records} delivered"
    return records * size / elapsed / 1e6


def consume_mb_s(conf: dict[str, Any], topic: str, records: int, size: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**conf, "group.id": f"bench-{time.monotonic_ns()}", "enable.auto.commit": False,
                  "fetch.max.bytes": 50_000_000, "max.partition.fetch.bytes": 10_000_000})
    tp = TopicPartition(topic, 0, 0)
    c.get_watermark_offsets(tp, timeout=30)  # connected, metadata known: start-up is not throughput
    c.assign([tp])
    got = 0
    start = time.perf_counter()
    deadline = time.monotonic() + 120
    while got < records and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(10_000, timeout=1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    c.close()
    assert got >= records, f"consumed {got} of {records}"
    return records * size / elapsed / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--handshakes", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)

    load_before = os.getloadavg()
    broker = _Broker([f"bench-{name}-{i}:1" for name in ("PLAINTEXT", "SSL") for i in range(args.repeat)])
    ctx = ssl.create_default_context(cafile=broker.ca_file)
    confs = {"PLAINTEXT": {"bootstrap.servers": broker.listeners["PLAINTEXT"]},
             "SSL": {"bootstrap.servers": broker.listeners["SSL"], "security.protocol": "SSL",
                     "ssl.ca.location": broker.ca_file}}
    runs: dict[str, dict[str, list[float]]] = {k: {"connections_per_s": [], "produce_mb_s": [], "consume_mb_s": []}
                                               for k in confs}
    try:
        for i in range(args.repeat):
            for name, conf in confs.items():
                runs[name]["connections_per_s"].append(
                    connections_per_second(broker.listeners[name], args.handshakes, ctx if name == "SSL" else None))
                topic = f"bench-{name}-{i}"
                runs[name]["produce_mb_s"].append(produce_mb_s(conf, topic, args.records, args.size))
                runs[name]["consume_mb_s"].append(consume_mb_s(conf, topic, args.records, args.size))
                print(f"run {i} {name}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in runs[name].items()), flush=True)
    finally:
        broker.close()
    load_after = os.getloadavg()
    best = {name: {k: max(v) for k, v in r.items()} for name, r in runs.items()}
    ratio = {k: best["SSL"][k] / best["PLAINTEXT"][k] for k in best["SSL"]}
    out = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "openssl": ssl.OPENSSL_VERSION, "loadavg_before": load_before, "loadavg_after": load_after},
        "params": vars(args) | {"no_write": None},
        "runs": runs, "best": best, "ssl_to_plaintext": ratio,
    }
    md = [
        "# TLS cost (benchmarks/bench_tls.py)",
        "",
        f"{args.records} records of {args.size} bytes per run, {args.handshakes} connections per run, best of "
        f"{args.repeat}; confluent-kafka {_ck_version()} against one `kwire broker --tls` process. "
        f"Python {platform.python_version()}, {ssl.OPENSSL_VERSION}, {os.cpu_count()} CPUs. Load average "
        f"before {load_before[0]:.1f} / after {load_after[0]:.1f} (a shared machine: absolute figures are "
        f"low; the ratio is what the run compares).",
        "",
        "| | PLAINTEXT | SSL | SSL / PLAINTEXT |",
        "|---|---|---|---|",
        f"| connections/s (SSL: TLS handshake + ApiVersions) | {best['PLAINTEXT']['connections_per_s']:.0f} | "
        f"{best['SSL']['connections_per_s']:.0f} | {ratio['connections_per_s']:.2f} |",
        f"| produce MB/s | {best['PLAINTEXT']['produce_mb_s']:.1f} | {best['SSL']['produce_mb_s']:.1f} | "
        f"{ratio['produce_mb_s']:.2f} |",
        f"| consume MB/s | {best['PLAINTEXT']['consume_mb_s']:.1f} | {best['SSL']['consume_mb_s']:.1f} | "
        f"{ratio['consume_mb_s']:.2f} |",
        "",
        "Over SSL the broker decrypts through an `ssl.SSLObject` (memory BIOs, driven like the plaintext path) "
        "and copies each request into its frame buffer; answers are encrypted record by record. PLAINTEXT keeps "
        "the zero-copy path (recv_into into the frame buffer, vectored sendmsg of stored batches). "
        "Connections: the client sets TCP_NODELAY (else its Finished and first request wait out the "
        "broker's delayed ACK).",
    ]
    print("\n".join(md))
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "tls.json").write_text(json.dumps(out, indent=2) + "\n")
        (RESULTS / "tls.md").write_text("\n".join(md) + "\n")
    return 0


def _ck_version() -> str:
    from importlib.metadata import version

    return version("confluent-kafka")


if __name__ == "__main__":
    sys.exit(main())
