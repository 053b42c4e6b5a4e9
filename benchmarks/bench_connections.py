"""Broker memory under many connections (issue 12's goal figures), measured on ``kwire broker``.

    python benchmarks/bench_connections.py [--connections 10000] [--prefix-claims 50]

Starts ``kwire broker`` as users run it, then measures its resident memory (VmRSS):
1. idle: after ``--connections`` connections each made one ApiVersions round trip and stay open;
2. after they all closed (memory given back or kept);
3. pre-authentication: on a SASL broker, ``--prefix-claims`` connections each send only a size
   prefix claiming 100 MiB and 10 bytes (before SASL completes frames are capped at
   sasl.server.max.receive.size, 512 KiB, so each is closed; with --no-sasl they are accepted
   and each pins what arrived, not what was claimed).
No peer is compared here: the figures are absolute and go to the README with the machine facts.
Writes benchmarks/results/connections.json and connections.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from kwire.protocol import decode_response, encode_request  # noqa: E402
from kwire.protocol.messages.api_versions import ApiVersionsRequest  # noqa: E402


def rss_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    m = re.search(r"VmRSS:\s+(\d+) kB", text)
    assert m
    return int(m.group(1)) / 1024


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"bootstrap servers (\S+)", line)
    assert m, line + (proc.stderr.read() if proc.stderr else "")
    return proc, m.group(1).split(",")[0]


def round_trip(sock: socket.socket, corr: int) -> None:
    sock.sendall(encode_request(ApiVersionsRequest(client_software_name="bench", client_software_version="1"), 3,
                                correlation_id=corr))
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    decode_response(sock.recv(size, socket.MSG_WAITALL), 18, 3)


def idle_connections(n: int) -> dict[str, float]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * n + 100)), hard))
    proc, addr = start()
    host, port = addr.rsplit(":", 1)
    try:
        base = rss_mb(proc.pid)
        socks = []
        t0 = time.monotonic()
        for i in range(n):
            s = socket.create_connection((host, int(port)), timeout=30)
            round_trip(s, i)
            socks.append(s)
        opened_s = time.monotonic() - t0
        time.sleep(1)  # let the broker settle before reading its memory (a measurement, not a test)
        with_conns = rss_mb(proc.pid)
        for s in socks:
            s.close()
        time.sleep(3)
        after = rss_mb(proc.pid)
        return {"connections": n, "rss_start_mb": round(base, 1), "rss_open_mb": round(with_conns, 1),
                "per_connection_kib": round((with_conns - base) * 1024 / n, 1), "rss_after_close_mb": round(after, 1),
                "open_seconds": round(opened_s, 2)}
    finally:
        proc.terminate()
        proc.wait(30)


def prefix_claims(n: int, sasl: bool) -> dict[str, float]:
    proc, addr = start(*(["--sasl", "u:p"] if sasl else []))
    host, port = addr.rsplit(":", 1)
    try:
        base = rss_mb(proc.pid)
        socks = []
        for _ in range(n):
            s = socket.create_connection((host, int(port)), timeout=30)
            s.sendall(struct.pack(">i", 100 * 1024 * 1024) + b"0123456789")
            socks.append(s)
        time.sleep(2)
        held = rss_mb(proc.pid)
        closed = 0
        for s in socks:
            s.settimeout(0.2)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except (TimeoutError, ConnectionResetError):
                pass
            s.close()
        return {"connections": n, "sasl": sasl, "claimed_mb_each": 100, "rss_start_mb": round(base, 1),
                "rss_held_mb": round(held, 1), "closed_by_broker": closed}
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=10_000)
    ap.add_argument("--prefix-claims", type=int, default=50)
    args = ap.parse_args()
    out = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "idle": idle_connections(args.connections),
        "prefix_claims_sasl": prefix_claims(args.prefix_claims, True),
        "prefix_claims_plain": prefix_claims(args.prefix_claims, False),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "connections.json").write_text(json.dumps(out, indent=2) + "\n")
    i, s, p = out["idle"], out["prefix_claims_sasl"], out["prefix_claims_plain"]
    md = [
        "# Broker memory under many connections",
        "",
        f"Machine: {out['machine']['cpus']} CPUs, Python {out['machine']['python']}.",
        "",
        "| measurement | value |",
        "|---|---:|",
        f"| RSS at start | {i['rss_start_mb']} MB |",
        f"| RSS with {i['connections']} open idle connections | {i['rss_open_mb']} MB |",
        f"| per connection | {i['per_connection_kib']} KiB |",
        f"| RSS after they all closed | {i['rss_after_close_mb']} MB |",
        f"| {s['connections']} prefixes claiming 100 MiB before SASL: RSS | {s['rss_held_mb']} MB "
        f"({s['closed_by_broker']} closed by the broker) |",
        f"| {p['connections']} prefixes claiming 100 MiB, no SASL: RSS | {p['rss_held_mb']} MB |",
        "",
    ]
    (RESULTS / "connections.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
