"""``kwire broker`` as a user runs it: prints the bootstrap servers, logs connections, stops on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.server.test_wire_edge_cases import TIMEOUT_S


def test_broker_command_serves_and_stops_cleanly_on_sigterm() -> None:
    import socket
    import struct

    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--brokers", "2",
                             "--topic", "cli:3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        assert m, line
        servers = m.group(1).split(",")
        assert len(servers) == 2
        host, port = servers[0].split(":")
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as s:
            s.sendall(encode_request(MetadataRequest(topics=None), 12, correlation_id=1))
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            body = decode_response(s.recv(size, socket.MSG_WAITALL), 3, 12).body
            assert [(t.name, len(t.partitions)) for t in body.topics] == [("cli", 3)]
        assert "connection 1 from 127.0.0.1" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "bootstrap servers" in line, (line, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        return line + out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_same_command_restarts_on_its_data_dir(tmp_path: object) -> None:
    """A --topic that the restored data dir already holds with the same partitions is a no-op."""
    data = str(tmp_path) + "/d"  # type: ignore[operator]
    _stop(_start("--data-dir", data, "--topic", "a:2"))
    _stop(_start("--data-dir", data, "--topic", "a:2"))
    proc = _start("--data-dir", data, "--topic", "a:3")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1] == ("kwire broker: error: --topic a:3: the topic already exists with "
                                            "2 partition(s)")


def test_bad_topic_specs_are_one_line_errors() -> None:
    for spec, msg in [("a:x", "PARTITIONS must be a whole number"), ("a:0", "at least 1"), (":3", "NAME")]:
        proc = _start("--topic", spec)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and msg in err, err
    proc = _start("--topic", "bad name!")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "bad name!" in err and "Traceback" not in err, err
