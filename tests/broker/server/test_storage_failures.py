"""A real file size limit (RLIMIT_FSIZE) under ``kwire broker --data-dir``: writes start failing
with EFBIG mid-stream. Kafka answers KAFKA_STORAGE_ERROR and takes the log dir offline; every
record a producer saw acknowledged must still be there after a restart (issue 12.2)."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kwire.client import WireClient
from kwire.protocol.messages.fetch import FetchRequest
from kwire.records import iter_batches

ck = pytest.importorskip("confluent_kafka")
pytestmark = [pytest.mark.conformance, pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")]

LIMIT = 64 * 1024
TIMEOUT_S = 30.0


def _broker(data_dir: Path, port: int = 0, limit: int | None = None) -> tuple[subprocess.Popen[str], str]:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", str(port), "--quiet",
                             "--data-dir", str(data_dir), "--topic", "t:1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=cap)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"bootstrap servers (\S+)", line)
    assert m, line + (proc.stderr.read() if proc.stderr else "")
    return proc, m.group(1)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return err


def _all_values(bootstrap: str) -> list[bytes]:
    out: list[bytes] = []
    with WireClient(bootstrap) as client:
        offset = 0
        while True:
            req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                   topic="t", partitions=[FetchRequest.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                                       partition_max_bytes=1 << 20)])])
            p = client.request(req, version=11).responses[0].partitions[0]
            assert p.error_code == 0
            batch = [r for b in iter_batches(p.records) for r in b]
            if not batch:
                return out
            out.extend(r.value for r in batch)
            offset = batch[-1].offset + 1


def test_a_file_size_limit_is_a_storage_error_and_loses_no_acknowledged_record(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc, bootstrap = _broker(data, limit=LIMIT)
    acked: list[bytes] = []
    failed: list[str] = []
    try:
        p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                         "message.timeout.ms": 10_000, "log_level": 0})

        def done(err: object, msg: object) -> None:
            if err is None:
                acked.append(msg.value())  # type: ignore[attr-defined]
            else:
                failed.append(str(err))

        deadline = time.monotonic() + TIMEOUT_S
        i = 0
        while not failed and time.monotonic() < deadline:
            p.produce("t", (b"%06d" % i) * 200, partition=0, on_delivery=done)
            i += 1
            p.flush(10)
        assert failed, "the file size limit never made a write fail"
        assert any("KAFKA_STORAGE_ERROR" in f or "storage" in f.lower() for f in failed), failed[:3]
        assert acked, "nothing was written before the limit"
    finally:
        err = _stop(proc)
    assert "offline" in err or "cannot write" in err, err[-2000:]
    port = int(bootstrap.rsplit(":", 1)[1])
    proc2, bootstrap2 = _broker(data, port=port)
    try:
        stored = _all_values(bootstrap2)
    finally:
        _stop(proc2)
    missing = [v[:6] for v in acked if v not in stored]
    assert not missing, f"{len(missing)} acknowledged records lost: {missing[:5]}"
