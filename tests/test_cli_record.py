"""``kwire broker --record FILE.pcapng`` and ``kwire decode --pcap``: the broker's traffic as a capture
that tshark opens, decoded back by kwire including the API keys Wireshark cannot (68 and up)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ck = pytest.importorskip("confluent_kafka")


def run_broker(tmp_path: Path, record: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", "--topic", "t:1",
                             "--record", record], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"bootstrap servers (\S+)", line)
    assert m, line
    return proc, m.group(1)


def traffic(bootstrap: str) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap})
    p.produce("t", b"hello")
    assert p.flush(20) == 0
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "sg", "log_level": 0})
    c.subscribe(["t"])
    # The first heartbeat of a new share group assigns nothing (HB-6): the partition comes with a
    # later heartbeat, then ShareFetch from the log end (share.auto.offset.reset=latest); keep
    # producing and polling (bounded) until a record arrives.
    for _ in range(60):
        p.produce("t", b"again")
        p.flush(5)
        if any(m.error() is None for m in c.poll(0.5) or []):
            break
    else:
        raise AssertionError("the share consumer never received the record")
    c.close()


def test_record_pcapng_opens_in_tshark_and_decodes_with_kwire(tmp_path: Path) -> None:
    out = tmp_path / "traffic.pcapng"
    proc, bootstrap = run_broker(tmp_path, str(out))
    try:
        traffic(bootstrap)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "recorded" in err and out.stat().st_size > 0
    decoded = subprocess.run([sys.executable, "-m", "kwire", "decode", "--pcap", str(out)],
                             capture_output=True, text=True, timeout=60, check=True)
    rows = [json.loads(line) for line in decoded.stdout.splitlines()]
    names = {r["api_name"] for r in rows}
    assert {"ApiVersions", "Metadata", "Produce", "ShareGroupHeartbeat", "ShareFetch"} <= names
    produce = next(r for r in rows if r["api_name"] == "Produce")
    assert produce["response"]["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0
    sghb = next(r for r in rows if r["api_name"] == "ShareGroupHeartbeat")
    assert sghb["api_key"] == 76 and "MemberEpoch" in sghb["response"]
    tshark = shutil.which("tshark")
    if tshark is not None:
        listed = subprocess.run([tshark, "-r", str(out), "-d", "tcp.port==9092,kafka", "-Y", "kafka"],
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert "Produce" in listed.stdout or "kafka" in listed.stdout.lower()


def test_record_fixtures_directory_replays(tmp_path: Path) -> None:
    """--record DIR writes request fixtures that `kwire replay` takes."""
    fixtures = tmp_path / "fx"
    proc, bootstrap = run_broker(tmp_path, str(fixtures))
    try:
        p = ck.Producer({"bootstrap.servers": bootstrap})
        p.produce("t", b"x")
        assert p.flush(20) == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert any(fixtures.iterdir())
